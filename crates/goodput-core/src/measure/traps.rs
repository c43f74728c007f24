//! Warnings about the classic traps: runs whose honest numbers mislead
//! anyway. Each is computed from the finished run alone (pure), printed
//! under the summary and saved under `warnings` in the results.

use serde::{Deserialize, Serialize};

use crate::load::schedule::Load;
use crate::measure::metrics::{Metric, RunMetrics};

/// One trap the run fell into.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub kind: Trap,
    pub message: String,
}

/// Which trap: saved as its stable snake_case name (`concurrency_one`,
/// `too_few_for_percentile`, ...), which scripts may match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trap {
    /// A closed loop of one: the latency floor, nothing about capacity.
    ConcurrencyOne,
    /// Most prompt tokens came from the server's prefix cache.
    PrefixCache,
    /// Output lengths were not pinned (`min_tokens`/`ignore_eos`).
    UnpinnedOutput,
    /// Pinned, yet many requests ended before `max_tokens`.
    EarlyStops,
    /// The client's own delays or CPU may have shaped the figures.
    ClientLimited,
    /// Queues grew through the run.
    Saturated,
    /// Too few requests for a reported percentile's interval to close.
    TooFewForPercentile,
}

/// What the checks need beyond the metrics.
pub struct RunFacts {
    pub load: Load,
    /// `min_tokens`/`ignore_eos` were sent.
    pub pinned: bool,
    /// The client's own CPU over the run, in cores (user + system / wall).
    pub client_cpu_cores: Option<f64>,
    /// Cores the client's requests can run on: the machine's, or fewer when
    /// its runtime has fewer threads (`--client-threads`).
    pub cores: usize,
}

fn warn(kind: Trap, message: String) -> Warning {
    Warning { kind, message }
}

/// The traps `m` shows, given the run's facts and reported percentiles.
pub fn check(m: &RunMetrics, facts: &RunFacts, percentiles: &[f64]) -> Vec<Warning> {
    let mut w = Vec::new();
    if let Load::Closed { concurrency: 1 } = facts.load {
        w.push(warn(
            Trap::ConcurrencyOne,
            "a concurrency-1 run measures the latency floor only: it says nothing about capacity (sweep the load for that)".into(),
        ));
    }
    if let Some(share) = m.workload.cached_share.filter(|&s| s >= 0.5) {
        w.push(warn(
            Trap::PrefixCache,
            format!(
                "{:.0}% of prompt tokens were served from the server's prefix cache: these figures describe the cache (use --cache-bust or fewer shared prefixes to measure prefill)",
                share * 100.0
            ),
        ));
    }
    // A pooling run (embeddings, rerank, score) generates nothing to pin.
    if !facts.pinned && m.completed > 0 && m.inputs.is_none() {
        w.push(warn(
            Trap::UnpinnedOutput,
            "output lengths were not pinned (min_tokens/ignore_eos not sent or not accepted): they vary with the model's answers, so TPOT, E2EL and throughput are not comparable across servers".into(),
        ));
    } else if let Some(share) = m
        .tokens
        .stopped_before_max_tokens_share
        .filter(|&s| s > 0.05)
    {
        w.push(warn(
            Trap::EarlyStops,
            format!(
                "{:.1}% of requests ended before max_tokens: output lengths differ from the plan, so E2EL and throughput are not comparable",
                share * 100.0
            ),
        ));
    }
    let lag_p99 = m.get(Metric::ScheduleLag).and_then(|d| {
        d.percentiles
            .iter()
            .find(|(p, _)| *p == 99.0)
            .map(|(_, e)| e.value)
    });
    let busy = facts
        .client_cpu_cores
        .filter(|&c| c >= 0.9 * facts.cores.max(1) as f64);
    if facts.load.is_open() && lag_p99.is_some_and(|l| l > 10.0) || busy.is_some() {
        let mut why = Vec::new();
        if let Some(l) = lag_p99.filter(|&l| l > 10.0 && facts.load.is_open()) {
            why.push(format!("p99 schedule lag {l:.1} ms"));
        }
        if let Some(c) = busy {
            why.push(format!("the client used {c:.2} of {} cores", facts.cores));
        }
        w.push(warn(
            Trap::ClientLimited,
            format!(
                "the client may have limited the run ({}): its own delays are in the figures; give it more cores (--client-threads) or a lower load",
                why.join(", ")
            ),
        ));
    }
    if m.saturation.saturated {
        w.push(warn(
            Trap::Saturated,
            "the server was saturated (queues grew through the run): latency figures depend on how long the run lasted, not only on the load".into(),
        ));
    }
    for &p in percentiles {
        // The same count the sweep plans with: the first at which the
        // percentile's own binomial interval is closed (368 for p99).
        let need = crate::measure::verdict::requests_to_bound(p / 100.0);
        let n = m.completed;
        if p > 50.0 && n > 0 && n < need {
            w.push(warn(
                Trap::TooFewForPercentile,
                format!(
                    "p{} was asked of {n} requests: its interval cannot close above the estimate before about {need} requests",
                    crate::measure::stats::pct_label(p)
                ),
            ));
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::metrics::Collector;

    fn facts() -> RunFacts {
        RunFacts {
            load: Load::Closed { concurrency: 8 },
            pinned: true,
            client_cpu_cores: None,
            cores: 2,
        }
    }

    fn too_few(completed: u64, p: f64) -> Option<Warning> {
        let mut m = Collector::default().summarize(&[p], None, 0, None);
        m.completed = completed;
        check(&m, &facts(), &[p])
            .into_iter()
            .find(|w| w.kind == Trap::TooFewForPercentile)
    }

    /// Each kind is saved under the name earlier results and scripts use.
    #[test]
    fn kinds_are_saved_as_their_stable_names() {
        let kinds = [
            Trap::ConcurrencyOne,
            Trap::PrefixCache,
            Trap::UnpinnedOutput,
            Trap::EarlyStops,
            Trap::ClientLimited,
            Trap::Saturated,
            Trap::TooFewForPercentile,
        ];
        let names: Vec<serde_json::Value> = kinds
            .iter()
            .map(|k| serde_json::to_value(k).unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "concurrency_one",
                "prefix_cache",
                "unpinned_output",
                "early_stops",
                "client_limited",
                "saturated",
                "too_few_for_percentile"
            ]
        );
        for (k, name) in kinds.iter().zip(&names) {
            assert_eq!(&serde_json::from_value::<Trap>(name.clone()).unwrap(), k);
        }
    }

    /// The warning fires exactly while the percentile's reported interval
    /// is still open above: one threshold, the interval's own.
    #[test]
    fn too_few_for_a_percentile_is_while_its_interval_is_open() {
        assert_eq!(crate::measure::verdict::requests_to_bound(0.99), 368);
        for p in [99.0, 95.0, 90.0, 99.9] {
            let need = crate::measure::verdict::requests_to_bound(p / 100.0);
            let closed = |n: u64| {
                // Independent values (no order to read dependence from):
                // the binomial ranks alone.
                let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
                let d = crate::measure::stats::describe_ordered(
                    values.as_slice(),
                    None,
                    0.0,
                    0.0,
                    &[p],
                    crate::measure::stats::Level::TwoSided,
                );
                d.percentiles[0].1.hi.is_some()
            };
            assert!(closed(need) && !closed(need - 1), "p{p}: {need}");
            let w = too_few(need - 1, p).expect("warned below the bound");
            assert!(
                w.message.contains(&format!("about {need} requests")),
                "{}",
                w.message
            );
            assert_eq!(too_few(need, p), None, "p{p} at {need}");
        }
        // Sample-size p99s the old 3 / (1 − p) rule let through.
        assert!(too_few(300, 99.0).is_some());
        assert!(too_few(3000, 99.9).is_some());
    }
}
