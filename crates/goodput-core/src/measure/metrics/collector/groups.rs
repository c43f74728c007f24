//! Figures per group of requests: per model of a model mix (`--model
//! base:0.5,adapter-a:0.5`) and per class of a priority mix
//! (`--priority-mix`).
//!
//! One mechanism for every grouping: each group has a [`Collector`] of its
//! own, fed the group's records, and summarized by the same code as the
//! run's figures, so a group's TTFT or goodput cannot be defined apart from
//! the run's. A group's figures are the compact subset a user compares
//! across groups ([`GroupFigures`]): counts, throughputs, the four latency
//! distributions and the SLO verdict.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Collector;
use crate::measure::metrics::{Metric, RequestMetrics};
use crate::measure::slo::{Slo, Threshold};
use crate::measure::stats::{Distribution, Estimate};
use crate::request::record::RequestRecord;

/// The groupings, as the results JSON names them.
pub const GROUPINGS: [&str; 2] = ["by_model", "by_class"];

/// One collector per group, created when a group's first record arrives.
#[derive(Debug, Default)]
pub(super) struct GroupCollectors {
    /// Off in a group's own collector (groups do not nest).
    enabled: bool,
    thresholds: Vec<Threshold>,
    open_loop: bool,
    origin_ns: Option<u64>,
    by_model: BTreeMap<Arc<str>, Collector>,
    by_class: BTreeMap<Arc<str>, Collector>,
}

impl GroupCollectors {
    pub(super) fn new(thresholds: Vec<Threshold>, open_loop: bool) -> Self {
        GroupCollectors {
            enabled: true,
            thresholds,
            open_loop,
            ..Default::default()
        }
    }

    pub(super) fn measure_start(&mut self, t_sched_ns: u64) {
        self.origin_ns = Some(t_sched_ns);
        for c in self.by_model.values_mut().chain(self.by_class.values_mut()) {
            c.measure_start(t_sched_ns);
        }
    }

    /// Add a record to its model's and its class's group (warm-up records
    /// are ignored there as in the run's collector).
    pub(super) fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics) {
        if !self.enabled || rec.warmup {
            return;
        }
        let (thresholds, open_loop, origin) = (&self.thresholds, self.open_loop, self.origin_ns);
        let new = || {
            let mut c = Collector::new(thresholds.clone(), open_loop);
            c.groups.enabled = false;
            if let Some(o) = origin {
                c.measure_start(o);
            }
            c
        };
        if let Some(model) = &rec.model {
            self.by_model
                .entry(model.clone())
                .or_insert_with(new)
                .add(rec, m);
        }
        if let Some(class) = &rec.class {
            self.by_class
                .entry(class.clone())
                .or_insert_with(new)
                .add(rec, m);
        }
    }

    /// Each group's figures; `None` when no record had a group.
    pub(super) fn summarize(
        &self,
        percentiles: &[f64],
        ramp_end_ns: Option<u64>,
        seed: u64,
        slo: Option<&Slo>,
        run_requests: u64,
    ) -> Option<Groups> {
        if self.by_model.is_empty() && self.by_class.is_empty() {
            return None;
        }
        let each = |map: &BTreeMap<Arc<str>, Collector>| -> BTreeMap<String, GroupFigures> {
            map.iter()
                .map(|(name, c)| {
                    let m = c.summarize(percentiles, ramp_end_ns, seed, slo);
                    (name.to_string(), GroupFigures::of(&m, run_requests))
                })
                .collect()
        };
        Some(Groups {
            by_model: each(&self.by_model),
            by_class: each(&self.by_class),
        })
    }
}

/// The run's figures per group. A grouping the run did not have is empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Groups {
    /// Per model (or LoRA adapter), for a run of `--model a,b` or `a:w,b:w`.
    #[serde(default)]
    pub by_model: BTreeMap<String, GroupFigures>,
    /// Per priority class, for a run of `--priority-mix`.
    #[serde(default)]
    pub by_class: BTreeMap<String, GroupFigures>,
}

impl Groups {
    /// `("by_model", its groups)`, then `("by_class", …)`; empty groupings left out.
    pub fn groupings(&self) -> Vec<(&'static str, &BTreeMap<String, GroupFigures>)> {
        [("by_model", &self.by_model), ("by_class", &self.by_class)]
            .into_iter()
            .filter(|(_, g)| !g.is_empty())
            .collect()
    }
}

/// A group's SLO verdict: the run's SLO judged on the group's requests alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSlo {
    /// Every term passes, the error rate is within bounds and the attainment is reached.
    pub meets: bool,
    /// Some term's interval straddles its threshold.
    pub inconclusive: bool,
    /// Good / all requests of the group.
    pub attainment: f64,
    /// Good requests of the group / the group's duration (req/s).
    pub request_goodput: f64,
    /// Why the group does not meet the SLO, in words.
    pub reasons: Vec<String>,
}

impl GroupSlo {
    /// `meets`, `fails`, with ` (inconclusive)` when an interval straddles
    /// a threshold: as the run's headline says it.
    pub fn words(&self) -> &'static str {
        match (self.meets, self.inconclusive) {
            (true, false) => "meets",
            (true, true) => "meets (inconclusive)",
            (false, false) => "fails",
            (false, true) => "fails (inconclusive)",
        }
    }
}

/// One group's figures, each defined as the run's is (docs/metrics.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupFigures {
    /// Measured requests of the group: completed, failed and incomplete.
    pub requests: u64,
    /// The group's share of the run's measured requests, 0–1.
    pub share: f64,
    pub completed: u64,
    pub failed: u64,
    pub incomplete: u64,
    /// Completed requests/s over the group's own duration, with its interval.
    pub request_throughput: Estimate,
    /// Output tokens/s over the group's own duration, with its interval.
    pub output_throughput: Estimate,
    pub ttft: Option<Distribution>,
    pub tpot: Option<Distribution>,
    pub itl: Option<Distribution>,
    pub e2el: Option<Distribution>,
    /// The SLO verdict on the group's requests, when an SLO was given.
    pub slo: Option<GroupSlo>,
}

impl GroupFigures {
    fn of(m: &super::RunMetrics, run_requests: u64) -> GroupFigures {
        let requests = m.completed + m.failed + m.incomplete;
        let get = |metric| m.get(metric).filter(|d| d.count > 0).cloned();
        GroupFigures {
            requests,
            share: if run_requests > 0 {
                requests as f64 / run_requests as f64
            } else {
                0.0
            },
            completed: m.completed,
            failed: m.failed,
            incomplete: m.incomplete,
            request_throughput: m.throughput.request,
            output_throughput: m.throughput.output,
            ttft: get(Metric::Ttft),
            tpot: get(Metric::Tpot),
            itl: get(Metric::Itl),
            e2el: get(Metric::E2el),
            slo: m.slo.as_ref().map(|s| GroupSlo {
                meets: s.meets,
                inconclusive: s.inconclusive,
                attainment: s.attainment,
                request_goodput: s.request_goodput,
                reasons: s.reasons.clone(),
            }),
        }
    }

    /// The distribution of `metric` (one of [`Metric::headline`]).
    pub fn get(&self, metric: Metric) -> Option<&Distribution> {
        match metric {
            Metric::Ttft => self.ttft.as_ref(),
            Metric::Tpot => self.tpot.as_ref(),
            Metric::Itl => self.itl.as_ref(),
            Metric::E2el => self.e2el.as_ref(),
            _ => None,
        }
    }

    /// The `p`th percentile of `metric`, ms.
    pub fn percentile(&self, metric: Metric, p: f64) -> Option<f64> {
        self.get(metric)?
            .percentiles
            .iter()
            .find(|x| x.0 == p)
            .map(|x| x.1.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::slo::parse_terms;
    use crate::request::record::Event;
    use goodput_common::tokenizer::Tokenizer;

    const MS: u64 = 1_000_000;

    /// A request sent at `send` ms whose three events came `ttft` ms later
    /// and then 10 ms apart.
    fn rec(send: u64, ttft: u64, model: &str, class: &str) -> RequestRecord {
        let events = (0..3)
            .map(|i| Event {
                at_ns: (send + ttft + 10 * i) * MS,
                text_end: 4 * (i as u32 + 1),
                usage_completion_tokens: None,
                reasoning: false,
            })
            .collect::<Vec<_>>();
        RequestRecord {
            t_sched: send * MS,
            t_send: Some(send * MS),
            t_done: (send + ttft + 20) * MS,
            output_text: " the the the".into(),
            events,
            model: Some(model.into()),
            class: Some(class.into()),
            ..Default::default()
        }
    }

    fn run(recs: &[RequestRecord], slo: Option<&Slo>, grouped: bool) -> super::super::RunMetrics {
        let tok = Tokenizer::from_spec("none").unwrap();
        let thresholds = slo.map(Slo::request_thresholds).unwrap_or_default();
        let mut c = Collector::new(thresholds, false);
        c.groups.enabled = grouped;
        c.measure_start(0);
        for r in recs {
            c.add(r, &RequestMetrics::derive(r, &tok));
        }
        c.summarize(&[50.0, 99.0], None, 0, slo)
    }

    /// A group's figures are the run's figures of the group's records
    /// alone: same code, same numbers. The shares add up to 1, and the SLO
    /// is judged per group.
    #[test]
    fn a_groups_figures_are_the_run_figures_of_its_records() {
        let slo = Slo {
            terms: parse_terms(&["ttft:p99<=100ms".into()]).unwrap(),
            per_request: Vec::new(),
            attainment: None,
            max_error_rate: 0.01,
            ..Default::default()
        };
        let mut recs = Vec::new();
        for i in 0..40 {
            let (model, class, ttft) = match i % 4 {
                0 => ("a", "hi", 20),
                1 => ("b", "lo", 300 + i),
                _ => ("b", "hi", 30 + i),
            };
            recs.push(rec(i * 50, ttft, model, class));
        }
        let m = run(&recs, Some(&slo), true);
        let g = m.groups.as_ref().unwrap();
        assert_eq!(g.by_model.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(g.by_class.keys().collect::<Vec<_>>(), ["hi", "lo"]);
        let share: f64 = g.by_model.values().map(|x| x.share).sum();
        assert!((share - 1.0).abs() < 1e-12);
        let lo: Vec<RequestRecord> = recs
            .iter()
            .filter(|r| r.class.as_deref() == Some("lo"))
            .cloned()
            .collect();
        let alone = run(&lo, Some(&slo), false);
        let group = &g.by_class["lo"];
        assert_eq!(group.completed, 10);
        assert_eq!(group.ttft.as_ref(), alone.get(Metric::Ttft));
        assert_eq!(group.tpot.as_ref(), alone.get(Metric::Tpot));
        assert_eq!(group.request_throughput, alone.throughput.request);
        assert_eq!(group.slo.as_ref().map(|s| s.meets), Some(false));
        assert_eq!(g.by_class["hi"].slo.as_ref().map(|s| s.meets), Some(true));
        assert!(alone.groups.is_none(), "groups do not nest");
    }

    /// Warm-up requests are in no group; a run without mixes has none.
    #[test]
    fn warm_up_and_unmixed_runs_have_no_groups() {
        let mut warm = rec(0, 20, "a", "hi");
        warm.warmup = true;
        assert!(run(&[warm], None, true).groups.is_none());
        let mut plain = rec(0, 20, "a", "hi");
        (plain.model, plain.class) = (None, None);
        assert!(run(&[plain], None, true).groups.is_none());
    }
}
