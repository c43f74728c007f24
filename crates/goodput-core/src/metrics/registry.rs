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

impl Metric {
    /// In the order reports show them.
    pub const ALL: [Metric; 14] = [
        Metric::Ttft,
        Metric::TtftFromSchedule,
        Metric::TimeToFirstReasoningToken,
        Metric::TimeToFirstOutputToken,
        Metric::Tpot,
        Metric::ReasoningTpot,
        Metric::AnswerTpot,
        Metric::Itl,
        Metric::Icl,
        Metric::E2el,
        Metric::E2elFromSchedule,
        Metric::Generation,
        Metric::ScheduleLag,
        Metric::Connect,
    ];

    pub fn info(self) -> &'static Info {
        // One row of the table, positionally, so the rows below read as a table.
        #[allow(clippy::too_many_arguments)]
        const fn info(
            key: &'static str,
            short: &'static str,
            title: &'static str,
            note: &'static str,
            slo_name: Option<&'static str>,
            vllm_keys: bool,
            pooled: bool,
            shown: Shown,
        ) -> Info {
            Info {
                key,
                short,
                title,
                note,
                slo_name,
                vllm_keys,
                pooled,
                shown,
            }
        }
        static TTFT: Info = info(
            "ttft",
            "TTFT",
            "Time to First Token",
            "",
            Some("ttft"),
            true,
            false,
            Shown::Always,
        );
        static TTFT_SCHED: Info = info(
            "ttft_from_schedule",
            "TTFT",
            "TTFT from scheduled arrival",
            "latency a user arriving on schedule saw (corrects coordinated omission)",
            None,
            false,
            false,
            Shown::OpenLoop,
        );
        static TTFOT: Info = info(
            "time_to_first_output_token",
            "TTFOT",
            "Time to First Output Token",
            "first answer token, after the reasoning",
            None,
            false,
            false,
            Shown::Always,
        );
        static TTFRT: Info = info(
            "time_to_first_reasoning_token",
            "TTFRT",
            "Time to First Reasoning Token",
            "reasoning models: the first reasoning delta",
            None,
            false,
            false,
            Shown::Always,
        );
        static REASONING_TPOT: Info = info(
            "reasoning_tpot",
            "reasoning TPOT",
            "Time per Reasoning Token",
            "over the reasoning: (last - first reasoning event) / (reasoning tokens - 1)",
            None,
            false,
            false,
            Shown::Always,
        );
        static ANSWER_TPOT: Info = info(
            "answer_tpot",
            "answer TPOT",
            "Time per Answer Token",
            "over the answer after the reasoning",
            None,
            false,
            false,
            Shown::Always,
        );
        static TPOT: Info = info(
            "tpot",
            "TPOT",
            "Time per Output Token (excl. 1st token)",
            "",
            Some("tpot"),
            true,
            false,
            Shown::Always,
        );
        static ITL: Info = info(
            "itl",
            "ITL",
            "Inter-token Latency",
            "per token; a chunk of k tokens counts k gaps of gap/k",
            Some("itl"),
            true,
            true,
            Shown::Always,
        );
        static ICL: Info = info(
            "icl",
            "ICL",
            "Inter-chunk Latency",
            "per chunk (what vLLM calls ITL)",
            None,
            false,
            true,
            Shown::UnlessSameAsItl,
        );
        static E2EL: Info = info(
            "e2el",
            "E2EL",
            "End-to-end Latency",
            "",
            Some("e2el"),
            true,
            false,
            Shown::Always,
        );
        static E2EL_SCHED: Info = info(
            "e2el_from_schedule",
            "E2EL",
            "E2EL from scheduled arrival",
            "",
            None,
            false,
            false,
            Shown::Never,
        );
        static GENERATION: Info = info(
            "generation",
            "generation",
            "Generation time",
            "",
            None,
            false,
            false,
            Shown::Never,
        );
        static LAG: Info = info(
            "schedule_lag",
            "schedule lag",
            "Schedule lag",
            "",
            None,
            false,
            false,
            Shown::Never,
        );
        static CONNECT: Info = info(
            "connect",
            "connect",
            "Connection setup",
            "",
            None,
            false,
            false,
            Shown::Never,
        );
        match self {
            Metric::Ttft => &TTFT,
            Metric::TtftFromSchedule => &TTFT_SCHED,
            Metric::TimeToFirstOutputToken => &TTFOT,
            Metric::TimeToFirstReasoningToken => &TTFRT,
            Metric::Tpot => &TPOT,
            Metric::ReasoningTpot => &REASONING_TPOT,
            Metric::AnswerTpot => &ANSWER_TPOT,
            Metric::Itl => &ITL,
            Metric::Icl => &ICL,
            Metric::E2el => &E2EL,
            Metric::E2elFromSchedule => &E2EL_SCHED,
            Metric::Generation => &GENERATION,
            Metric::ScheduleLag => &LAG,
            Metric::Connect => &CONNECT,
        }
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
}
