//! The metric registry: each per-request metric's name, unit, JSON key,
//! console label, whether an SLO can judge it and how its value is read off a
//! request, defined once. The console table, the results JSON (and its
//! reader), the CSV, the SLO grammar, compare's figures and `--fail-on`'s
//! names, the HTML report's CDFs and headline rows, the repeat summary, the
//! vLLM result file and the live histograms all iterate this list, so
//! adding a metric touches this file, the derivation of its value (and, to
//! expose it live, where the live registry observes it) and its definition
//! in docs/metrics.md. `tests/house.rs` fails when a second list appears.

use serde::{Deserialize, Serialize};

use super::RequestMetrics;

/// Every distribution goodput reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Time to first token, `t_1 − t_send`, ms.
    Ttft,
    /// TTFT from the scheduled arrival, `t_1 − t_sched`, ms.
    TtftFromSchedule,
    /// From `t_send` to the first content event that is not reasoning, ms;
    /// only requests that reasoned.
    TimeToFirstOutputToken,
    /// From `t_send` to the first reasoning event, ms; only requests that reasoned.
    TimeToFirstReasoningToken,
    /// Time per output token after the first, `(t_last − t_1) / (N − 1)`, ms.
    Tpot,
    /// Time per reasoning token after the first, ms.
    ReasoningTpot,
    /// Time per answer token after the first, over the answer after the reasoning, ms.
    AnswerTpot,
    /// Inter-token latency: each gap split over the tokens its event carried,
    /// one value per token, pooled over requests, ms.
    Itl,
    /// Inter-chunk latency: each gap between content events once, pooled, ms.
    Icl,
    /// End-to-end latency, `t_last − t_send`, ms.
    E2el,
    /// E2EL from the scheduled arrival, `t_last − t_sched`, ms.
    E2elFromSchedule,
    /// Generation time, `t_last − t_1`, ms.
    Generation,
    /// How late the client sent the request, `t_send − t_sched`, ms.
    ScheduleLag,
    /// Connection setup, `t_send − t_connect`, ms; new connections only.
    Connect,
    /// From `t_send` to the first piece of a tool call's arguments, ms.
    TimeToFirstToolCall,
}

/// When the console shows a metric's section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Always,
    /// Only for open-loop runs (from-schedule latencies).
    OpenLoop,
    /// Only when its count differs from ITL's (ICL equals ITL at one token per event).
    UnlessSameAsItl,
    /// Not a section of its own (client health, shown in the Client block).
    Never,
}

/// What the registry says of one metric.
#[derive(Debug)]
pub struct Info {
    /// The metric this row describes.
    pub metric: Metric,
    /// JSON key of its distribution object.
    pub key: &'static str,
    /// The short name in console labels (`Mean TTFT (ms):`).
    pub short: &'static str,
    /// The console section title.
    pub title: &'static str,
    /// A line under the section, saying what the figure is.
    pub note: &'static str,
    /// The name an SLO term uses (`ttft:p99<=200ms`), if an SLO can judge it.
    pub slo_name: Option<&'static str>,
    /// Written also as vLLM's flat keys (`mean_ttft_ms`, `p99_ttft_ms`, ...):
    /// the headline figures ([`Metric::headline`]) every report leads with.
    pub vllm_keys: bool,
    /// Compared by `goodput compare` and gated by `--fail-on` under those
    /// flat keys ([`Metric::compared`]).
    pub compared: bool,
    /// Exposed live (`--metrics-listen`) as a histogram in seconds: its help
    /// text and bucket bounds.
    pub live: Option<Live>,
    /// Pooled per token or per chunk over all requests (bootstrap intervals),
    /// rather than one value per request (binomial intervals).
    pub pooled: bool,
    pub shown: Shown,
}

/// A metric's live histogram: the exposition's help text and the bucket
/// bounds, seconds.
#[derive(Debug)]
pub struct Live {
    pub help: &'static str,
    /// A histogram with the metric's bucket bounds.
    pub histogram: fn() -> prometheus_client::metrics::histogram::Histogram,
}

/// Bucket bounds (seconds). TTFT: 1 ms to 2 min; per-token figures: 0.5 ms
/// to 2 s; E2EL: 10 ms to 20 min; schedule lag: 50 µs (a client keeping
/// its schedule) to 10 s (one that cannot).
const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0,
    3.0, 5.0, 7.5, 10.0, 20.0, 30.0, 60.0, 120.0,
];
const PER_TOKEN_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1,
    0.15, 0.2, 0.3, 0.5, 1.0, 2.0,
];
const E2EL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 60.0,
    120.0, 300.0, 600.0, 1200.0,
];
const LAG_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

fn histogram(bounds: &[f64]) -> prometheus_client::metrics::histogram::Histogram {
    prometheus_client::metrics::histogram::Histogram::new(bounds.iter().copied())
}

/// The registry: one row per metric, in the order of [`Metric`]'s variants
/// ([`Metric::info`] reads row `metric as usize`; a test checks the order).
static REGISTRY: [Info; 15] = [
    Info {
        metric: Metric::Ttft,
        key: "ttft",
        short: "TTFT",
        title: "Time to First Token",
        note: "",
        slo_name: Some("ttft"),
        vllm_keys: true,
        compared: true,
        live: Some(Live {
            help: "Time to first token (from the send) of completed requests",
            histogram: || histogram(TTFT_BUCKETS),
        }),
        pooled: false,
        shown: Shown::Always,
    },
    Info {
        metric: Metric::TtftFromSchedule,
        key: "ttft_from_schedule",
        short: "TTFT",
        title: "TTFT from scheduled arrival",
        note: "latency a user arriving on schedule saw (corrects coordinated omission)",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: false,
        shown: Shown::OpenLoop,
    },
    Info {
        metric: Metric::TimeToFirstOutputToken,
        key: "time_to_first_output_token",
        short: "TTFOT",
        title: "Time to First Output Token",
        note: "first answer token, after the reasoning",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: false,
        shown: Shown::Always,
    },
    Info {
        metric: Metric::TimeToFirstReasoningToken,
        key: "time_to_first_reasoning_token",
        short: "TTFRT",
        title: "Time to First Reasoning Token",
        note: "reasoning models: the first reasoning delta",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: false,
        shown: Shown::Always,
    },
    Info {
        metric: Metric::Tpot,
        key: "tpot",
        short: "TPOT",
        title: "Time per Output Token (excl. 1st token)",
        note: "",
        slo_name: Some("tpot"),
        vllm_keys: true,
        compared: true,
        live: Some(Live {
            help: "Time per output token after the first, one value per completed request",
            histogram: || histogram(PER_TOKEN_BUCKETS),
        }),
        pooled: false,
        shown: Shown::Always,
    },
    Info {
        metric: Metric::ReasoningTpot,
        key: "reasoning_tpot",
        short: "reasoning TPOT",
        title: "Time per Reasoning Token",
        note: "over the reasoning: (last - first reasoning event) / (reasoning tokens - 1)",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: false,
        shown: Shown::Always,
    },
    Info {
        metric: Metric::AnswerTpot,
        key: "answer_tpot",
        short: "answer TPOT",
        title: "Time per Answer Token",
        note: "over the answer after the reasoning",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: false,
        shown: Shown::Always,
    },
    Info {
        metric: Metric::Itl,
        key: "itl",
        short: "ITL",
        title: "Inter-token Latency",
        note: "per token; a chunk of k tokens counts k gaps of gap/k",
        slo_name: Some("itl"),
        vllm_keys: true,
        compared: true,
        live: Some(Live {
            help: "Inter-token latency, one value per output token after the first",
            histogram: || histogram(PER_TOKEN_BUCKETS),
        }),
        pooled: true,
        shown: Shown::Always,
    },
    Info {
        metric: Metric::Icl,
        key: "icl",
        short: "ICL",
        title: "Inter-chunk Latency",
        note: "per chunk (what vLLM calls ITL)",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: true,
        shown: Shown::UnlessSameAsItl,
    },
    Info {
        metric: Metric::E2el,
        key: "e2el",
        short: "E2EL",
        title: "End-to-end Latency",
        note: "",
        slo_name: Some("e2el"),
        vllm_keys: true,
        compared: true,
        live: Some(Live {
            help: "End-to-end latency (from the send) of completed requests",
            histogram: || histogram(E2EL_BUCKETS),
        }),
        pooled: false,
        shown: Shown::Always,
    },
    Info {
        metric: Metric::E2elFromSchedule,
        key: "e2el_from_schedule",
        short: "E2EL",
        title: "E2EL from scheduled arrival",
        note: "",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: false,
        shown: Shown::Never,
    },
    Info {
        metric: Metric::Generation,
        key: "generation",
        short: "generation",
        title: "Generation time",
        note: "",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: false,
        shown: Shown::Never,
    },
    Info {
        metric: Metric::ScheduleLag,
        key: "schedule_lag",
        short: "schedule lag",
        title: "Schedule lag",
        note: "",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: Some(Live {
            help: "How late the client sent each request after its scheduled time",
            histogram: || histogram(LAG_BUCKETS),
        }),
        pooled: false,
        shown: Shown::Never,
    },
    Info {
        metric: Metric::Connect,
        key: "connect",
        short: "connect",
        title: "Connection setup",
        note: "",
        slo_name: None,
        vllm_keys: false,
        compared: false,
        live: None,
        pooled: false,
        shown: Shown::Never,
    },
    Info {
        metric: Metric::TimeToFirstToolCall,
        key: "time_to_first_tool_call",
        short: "time to first tool call",
        title: "Time to First Tool Call",
        note:
            "from send to the first piece of a tool call's arguments; requests that called a tool",
        slo_name: None,
        vllm_keys: false,
        compared: true,
        live: None,
        pooled: false,
        shown: Shown::Always,
    },
];

impl Metric {
    /// In the order reports show them.
    pub const ALL: [Metric; 15] = [
        Metric::Ttft,
        Metric::TtftFromSchedule,
        Metric::TimeToFirstReasoningToken,
        Metric::TimeToFirstOutputToken,
        Metric::Tpot,
        Metric::ReasoningTpot,
        Metric::AnswerTpot,
        Metric::TimeToFirstToolCall,
        Metric::Itl,
        Metric::Icl,
        Metric::E2el,
        Metric::E2elFromSchedule,
        Metric::Generation,
        Metric::ScheduleLag,
        Metric::Connect,
    ];

    /// The headline figures every report leads with (vLLM's keys): TTFT,
    /// TPOT, ITL, E2EL, in the registry's order.
    pub fn headline() -> impl Iterator<Item = Metric> {
        REGISTRY.iter().filter(|i| i.vllm_keys).map(|i| i.metric)
    }

    /// The figures `goodput compare` judges and `--fail-on` gates, in the
    /// registry's order.
    pub fn compared() -> impl Iterator<Item = Metric> {
        REGISTRY.iter().filter(|i| i.compared).map(|i| i.metric)
    }

    /// The metrics exposed live as histograms, in the registry's order.
    pub fn live() -> impl Iterator<Item = (Metric, &'static Live)> {
        REGISTRY
            .iter()
            .filter_map(|i| i.live.as_ref().map(|l| (i.metric, l)))
    }

    /// What the registry says of this metric.
    pub fn info(self) -> &'static Info {
        &REGISTRY[self as usize]
    }

    /// JSON key of its distribution object (`ttft`, `schedule_lag`, ...).
    pub fn key(self) -> &'static str {
        self.info().key
    }

    /// The metric an SLO term names (`ttft`, `tpot`, `itl`, `e2el`).
    pub fn from_slo_name(name: &str) -> Option<Metric> {
        Metric::ALL
            .into_iter()
            .find(|m| m.info().slo_name == Some(name))
    }

    /// The metric whose JSON key is `key`.
    pub fn from_key(key: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.key() == key)
    }

    /// The request's value of a per-request metric (ms); for pooled metrics
    /// (ITL, ICL) the request's largest gap, which is what an SLO judges.
    pub fn value(self, m: &RequestMetrics) -> Option<f64> {
        match self {
            Metric::Ttft => m.ttft_ms,
            Metric::TtftFromSchedule => m.ttft_sched_ms,
            Metric::TimeToFirstOutputToken => m.ttfot_ms,
            Metric::TimeToFirstReasoningToken => m.ttfrt_ms,
            Metric::Tpot => m.tpot_ms,
            Metric::ReasoningTpot => m.reasoning_tpot_ms,
            Metric::AnswerTpot => m.answer_tpot_ms,
            Metric::Itl => m.max_itl_ms,
            Metric::Icl => m.icl_ms.iter().copied().fold(None, |a: Option<f64>, x| {
                Some(a.map_or(x as f64, |a| a.max(x as f64)))
            }),
            Metric::E2el => m.e2el_ms,
            Metric::E2elFromSchedule => m.e2el_sched_ms,
            Metric::Generation => m.generation_ms,
            Metric::ScheduleLag => m.schedule_lag_ms,
            Metric::Connect => m.connect_ms,
            Metric::TimeToFirstToolCall => m.time_to_first_tool_call_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_read_back() {
        let keys: std::collections::HashSet<&str> = Metric::ALL.iter().map(|m| m.key()).collect();
        assert_eq!(keys.len(), Metric::ALL.len());
        for m in Metric::ALL {
            assert_eq!(Metric::from_key(m.key()), Some(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.key());
        }
        assert_eq!(Metric::from_slo_name("tpot"), Some(Metric::Tpot));
        assert_eq!(Metric::from_slo_name("connect"), None);
    }

    #[test]
    fn each_metric_reads_its_own_row() {
        for m in Metric::ALL {
            assert_eq!(m.info().metric, m);
        }
    }
}
