//! The client's live figures in Prometheus' format (`--metrics-listen`), so a
//! long run, a sweep or a soak can be watched in Grafana while it runs.
//!
//! Updated by the aggregator thread from each finished record (off the
//! request path: a request task never touches these), plus the in-flight
//! and sent counts read from the executor's [`Progress`] when scraped.
//! Counters never go backwards: across the runs of a sweep they keep adding
//! up, and `goodput_run` says which run (point) is under way. Every figure
//! is labelled with the phase (`warmup` or `measure`) so the measured ones
//! can be read apart and checked against the final results.
//!
//! The series, with the `goodput_` prefix:
//! - `requests_total{phase, outcome, kind}`: finished requests; outcome
//!   `completed`, `failed` or `incomplete`; kind `ok` or the error kind;
//! - `requests_sent_total{phase}` and `in_flight`;
//! - `ttft_seconds`, `tpot_seconds`, `e2el_seconds`, `itl_seconds`,
//!   `schedule_lag_seconds`: histograms (`{phase}`) as the metrics define them
//!   (`docs/metrics.md#per-request-figures`), completed requests only, ITL one value per token;
//! - `input_tokens_total`, `output_tokens_total{phase}`: of completed
//!   requests, counted as the metrics count them;
//! - `run` (the 1-based run or sweep point under way), `offered_rate`
//!   (requests/s, open loop) and `target_concurrency` (closed loop, or the
//!   open loop's cap).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::load::executor::Progress;
use crate::load::schedule::Load;
use crate::measure::metrics::{Metric, RequestMetrics};
use crate::request::record::RequestRecord;

/// The content type of [`LiveMetrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum PhaseLabel {
    warmup,
    measure,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Phase {
    phase: PhaseLabel,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    phase: PhaseLabel,
    outcome: &'static str,
    kind: &'static str,
}

type Hists = Family<Phase, Histogram, fn() -> Histogram>;

/// The current run's send counters, and what earlier runs sent.
#[derive(Default)]
struct Runs {
    current: Option<Arc<Progress>>,
    /// Sent by finished runs, per phase (warm-up, measure).
    before: [u64; 2],
}

/// The live registry; cheap to share.
pub struct LiveMetrics {
    registry: Registry,
    requests: Family<Outcome, Counter>,
    sent: Family<Phase, Counter>,
    in_flight: Gauge,
    /// The registry's live histograms, in its order.
    hists: Vec<(Metric, Hists)>,
    input_tokens: Family<Phase, Counter>,
    output_tokens: Family<Phase, Counter>,
    run: Gauge,
    offered_rate: Gauge<f64, AtomicU64>,
    target_concurrency: Gauge,
    runs: Mutex<Runs>,
}

impl Default for LiveMetrics {
    fn default() -> Self {
        Self::new()
    }
}

/// The record's phase as a label value.
impl From<crate::request::record::Phase> for PhaseLabel {
    fn from(p: crate::request::record::Phase) -> Self {
        match p {
            crate::request::record::Phase::Warmup => PhaseLabel::warmup,
            crate::request::record::Phase::Measure => PhaseLabel::measure,
        }
    }
}

impl LiveMetrics {
    /// The live histogram of `metric` (one the registry exposes live).
    fn hist(&self, metric: Metric) -> &Hists {
        &self
            .hists
            .iter()
            .find(|(m, _)| *m == metric)
            .expect("the registry exposes it live")
            .1
    }

    /// An empty registry with every series registered, all at zero.
    pub fn new() -> Self {
        let mut live = LiveMetrics {
            registry: Registry::with_prefix("goodput"),
            requests: Family::default(),
            sent: Family::default(),
            in_flight: Gauge::default(),
            hists: Metric::live()
                .map(|(m, l)| (m, Family::new_with_constructor(l.histogram)))
                .collect(),
            input_tokens: Family::default(),
            output_tokens: Family::default(),
            run: Gauge::default(),
            offered_rate: Gauge::default(),
            target_concurrency: Gauge::default(),
            runs: Mutex::new(Runs::default()),
        };
        live.register();
        live
    }

    /// Register every series with its help text, in the exposition's order.
    fn register(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "requests",
            "Finished requests by phase, outcome (completed, failed, incomplete) and kind (ok or the error kind)",
            self.requests.clone(),
        );
        registry.register(
            "requests_sent",
            "Requests sent, by phase",
            self.sent.clone(),
        );
        registry.register(
            "in_flight",
            "Requests sent and not yet finished",
            self.in_flight.clone(),
        );
        for (m, h) in &self.hists {
            let help = m.info().live.as_ref().map_or("", |l| l.help);
            registry.register_with_unit(m.key(), help, Unit::Seconds, h.clone());
        }
        registry.register(
            "input_tokens",
            "Prompt tokens of completed requests (the server's count where reported)",
            self.input_tokens.clone(),
        );
        registry.register(
            "output_tokens",
            "Output tokens of completed requests, as the metrics count them",
            self.output_tokens.clone(),
        );
        registry.register(
            "run",
            "The run (sweep point) under way, from 1",
            self.run.clone(),
        );
        registry.register(
            "offered_rate",
            "Offered request rate of the run under way, requests/s (0: closed loop; +Inf: all at once)",
            self.offered_rate.clone(),
        );
        registry.register(
            "target_concurrency",
            "Concurrency of the closed loop under way, or the open loop's cap (0: none)",
            self.target_concurrency.clone(),
        );
    }

    /// A run (or sweep point) starts, its sends counted by `progress`.
    pub fn begin_run(&self, load: &Load, progress: Arc<Progress>) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = runs.current.take() {
            runs.before[0] += p.sent.load(Relaxed) - p.sent_measured.load(Relaxed);
            runs.before[1] += p.sent_measured.load(Relaxed);
        }
        runs.current = Some(progress);
        self.run.inc();
        self.offered_rate.set(load.offered_rate().unwrap_or(0.0));
        self.target_concurrency
            .set(load.concurrency_cap().map_or(0, |c| c as i64));
    }

    /// Count one finished request (called by the aggregator).
    pub fn observe(&self, rec: &RequestRecord, m: &RequestMetrics) {
        let phase = PhaseLabel::from(rec.phase());
        let (outcome, kind) = match &rec.error {
            None => ("completed", "ok"),
            Some(e) if rec.incomplete() => ("incomplete", e.kind.as_str()),
            Some(e) => ("failed", e.kind.as_str()),
        };
        self.requests
            .get_or_create(&Outcome {
                phase,
                outcome,
                kind,
            })
            .inc();
        let labels = Phase { phase };
        if let Some(lag) = m.schedule_lag_ms {
            self.hist(Metric::ScheduleLag)
                .get_or_create(&labels)
                .observe(lag.max(0.0) / 1e3);
        }
        if !rec.ok() {
            return;
        }
        let secs = |h: &Hists, v: Option<f64>| {
            if let Some(v) = v {
                h.get_or_create(&labels).observe(v / 1e3);
            }
        };
        secs(self.hist(Metric::Ttft), m.ttft_ms);
        secs(self.hist(Metric::Tpot), m.tpot_ms);
        secs(self.hist(Metric::E2el), m.e2el_ms);
        if !m.itl_ms.is_empty() {
            let itl = self.hist(Metric::Itl).get_or_create(&labels);
            for v in &m.itl_ms {
                itl.observe(f64::from(*v) / 1e3);
            }
        }
        self.output_tokens
            .get_or_create(&labels)
            .inc_by(u64::from(m.output_tokens));
        if let Some(n) = m.input_tokens {
            self.input_tokens
                .get_or_create(&labels)
                .inc_by(u64::from(n));
        }
    }

    /// The exposition text, with the send counts as of now.
    pub fn render(&self) -> String {
        {
            let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
            let (mut warm, mut measured) = (runs.before[0], runs.before[1]);
            let mut in_flight = 0;
            if let Some(p) = &runs.current {
                let (sent, sent_m) = (p.sent.load(Relaxed), p.sent_measured.load(Relaxed));
                warm += sent - sent_m;
                measured += sent_m;
                in_flight = sent.saturating_sub(p.finished.load(Relaxed));
            }
            self.in_flight.set(in_flight as i64);
            for (phase, total) in [(PhaseLabel::warmup, warm), (PhaseLabel::measure, measured)] {
                let c = self.sent.get_or_create(&Phase { phase });
                let now = c.get();
                if total > now {
                    c.inc_by(total - now);
                }
            }
        }
        let mut out = String::with_capacity(16 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::record::{ErrorKind, Event, RequestError};

    fn record(warmup: bool, error: Option<ErrorKind>) -> RequestRecord {
        let ms = 1_000_000;
        let mut r = RequestRecord {
            warmup,
            t_sched: 0,
            t_send: Some(ms),
            prompt_tokens_client: Some(10),
            ..Default::default()
        };
        for (i, t) in [101, 111, 121].iter().enumerate() {
            r.output_text.push_str("ab");
            r.events.push(Event {
                at_ns: t * ms,
                text_end: 2 * (i as u32 + 1),
                usage_completion_tokens: None,
                reasoning: false,
            });
        }
        r.t_done = 121 * ms;
        r.streamed = true;
        r.error = error.map(|kind| RequestError {
            kind,
            message: String::new(),
            retry_after: None,
        });
        r
    }

    fn observe(live: &LiveMetrics, r: &RequestRecord) {
        let tok = crate::tokenizer::Tokenizer::from_spec("none").unwrap();
        live.observe(r, &RequestMetrics::derive(r, &tok));
    }

    #[test]
    fn counts_by_phase_and_outcome_and_histograms_in_seconds() {
        let live = LiveMetrics::new();
        let progress = Arc::new(Progress::default());
        progress.sent.store(5, Relaxed);
        progress.sent_measured.store(4, Relaxed);
        progress.finished.store(4, Relaxed);
        live.begin_run(&Load::Closed { concurrency: 2 }, progress.clone());
        observe(&live, &record(true, None));
        observe(&live, &record(false, None));
        observe(&live, &record(false, None));
        observe(&live, &record(false, Some(ErrorKind::Timeout)));
        let text = live.render();
        let v = |s: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(s)?.strip_prefix(' '))
                .unwrap_or_else(|| panic!("no {s} in\n{text}"))
                .to_string()
        };
        assert_eq!(
            v("goodput_requests_total{phase=\"measure\",outcome=\"completed\",kind=\"ok\"}"),
            "2"
        );
        assert_eq!(
            v("goodput_requests_total{phase=\"measure\",outcome=\"failed\",kind=\"timeout\"}"),
            "1"
        );
        assert_eq!(
            v("goodput_requests_total{phase=\"warmup\",outcome=\"completed\",kind=\"ok\"}"),
            "1"
        );
        assert_eq!(v("goodput_requests_sent_total{phase=\"measure\"}"), "4");
        assert_eq!(v("goodput_in_flight"), "1");
        // TTFT 100 ms twice (failed requests are not in the latency histograms).
        assert_eq!(v("goodput_ttft_seconds_count{phase=\"measure\"}"), "2");
        assert_eq!(v("goodput_ttft_seconds_sum{phase=\"measure\"}"), "0.2");
        assert_eq!(
            v("goodput_ttft_seconds_bucket{le=\"0.1\",phase=\"measure\"}"),
            "2"
        );
        assert_eq!(
            v("goodput_ttft_seconds_bucket{le=\"0.075\",phase=\"measure\"}"),
            "0"
        );
        // Two gaps of 10 ms per request: four ITL values.
        assert_eq!(v("goodput_itl_seconds_count{phase=\"measure\"}"), "4");
        assert_eq!(v("goodput_output_tokens_total{phase=\"measure\"}"), "6");
        assert_eq!(v("goodput_target_concurrency"), "2");
        // A second run: counters go on adding up.
        let next = Arc::new(Progress::default());
        next.sent.store(3, Relaxed);
        next.sent_measured.store(3, Relaxed);
        live.begin_run(&Load::Closed { concurrency: 4 }, next);
        let text = live.render();
        assert!(text.contains("goodput_requests_sent_total{phase=\"measure\"} 7"));
        assert!(text.contains("goodput_run 2"));
        assert!(text.ends_with("# EOF\n"));
    }

    /// Every series the shipped Grafana dashboard queries is one this
    /// exposition serves.
    #[test]
    fn the_grafana_dashboard_queries_only_series_that_exist() {
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../../../../dashboards/goodput-grafana.json"))
                .unwrap();
        let live = LiveMetrics::new();
        live.begin_run(
            &Load::Closed { concurrency: 1 },
            Arc::new(Progress::default()),
        );
        observe(&live, &record(false, None));
        observe(&live, &record(false, Some(ErrorKind::Timeout)));
        let text = live.render();
        let mut checked = 0;
        for panel in dashboard["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                for (i, _) in expr.match_indices("goodput_") {
                    let name: String = expr[i..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    assert!(
                        text.lines().any(|l| l.starts_with(&format!("{name}{{"))
                            || l.starts_with(&format!("{name} "))),
                        "panel '{}' queries {name}, which is not exposed",
                        panel["title"]
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 20, "{checked}");
    }
}
