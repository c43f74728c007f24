//! The metric registry: each per-request metric's name, unit, JSON key,
//! console label, whether an SLO can judge it and how its value is read off a
//! request, defined once. The console table, the results JSON (and its
//! reader), the CSV and the SLO grammar all iterate this list, so adding a
//! metric touches this file and the derivation of its value, nothing else.

use serde::{Deserialize, Serialize};

use super::RequestMetrics;

/// Every distribution goodput reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Ttft,
    TtftFromSchedule,
    TimeToFirstOutputToken,
    TimeToFirstReasoningToken,
    Tpot,
    ReasoningTpot,
    AnswerTpot,
    Itl,
    Icl,
    E2el,
    E2elFromSchedule,
    Generation,
    ScheduleLag,
    Connect,
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
    /// JSON key of its distribution object, and its name in records.
    pub key: &'static str,
    /// The short name in console labels (`Mean TTFT (ms):`).
    pub short: &'static str,
    /// The console section title.
    pub title: &'static str,
    /// A line under the section, saying what the figure is.
    pub note: &'static str,
    /// The name an SLO term uses (`ttft:p99<=200ms`), if an SLO can judge it.
    pub slo_name: Option<&'static str>,
    /// Written also as vLLM's flat keys (`mean_ttft_ms`, `p99_ttft_ms`, ...).
    pub vllm_keys: bool,
    /// Pooled per token or per chunk over all requests (bootstrap intervals),
    /// rather than one value per request (binomial intervals).
    pub pooled: bool,
    pub shown: Shown,
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

    /// What the registry says of this metric.
    pub fn info(self) -> &'static Info {
        &REGISTRY[self as usize]
    }

    pub fn key(self) -> &'static str {
        self.info().key
    }

    /// The metric an SLO term names (`ttft`, `tpot`, `itl`, `e2el`).
    pub fn from_slo_name(name: &str) -> Option<Metric> {
        Metric::ALL
            .into_iter()
            .find(|m| m.info().slo_name == Some(name))
    }

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
