//! The configuration a run was asked to have, saved under `config` in its
//! results: everything needed to rerun it, minus secrets.
//!
//! [`RunConfig`] is typed so that every reader (the console, HTML, CSV and
//! `compare`) names its fields, and a renamed key is a compile error rather
//! than a figure that silently goes missing. It serializes to the JSON the
//! results have always held (`schema/run.schema.json`, under `config`) and
//! reads back results written by this version and by earlier ones: keys
//! that earlier versions did not write are `Option`s, and keys it does not
//! know (an earlier layout's) are ignored.
//!
//! Its JSON is always written through a [`serde_json::Value`], whose keys are
//! sorted, as every other part of the results document is; serializing the
//! struct straight to text would write its fields in declaration order.

use serde::{Deserialize, Serialize};

use crate::load::executor::{RunPlan, Warmup};
use crate::load::schedule::Load;
use crate::load::workload::dataset::DatasetStats;
use crate::load::workload::trace::TraceStats;
use crate::load::workload::{LengthSpec, PrefixSpec, SessionShape, SourceSpec, WorkloadSpec};
use crate::measure::slo::Slo;
use crate::request::client::{is_secret_header, ClientOptions};
use crate::request::protocol::{Endpoint, RequestParams};
use crate::tokenizer::{Tokenizer, TokenizerIdentity};

/// Everything needed to rerun a run, minus secrets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The server's base URL, as given.
    pub url: String,
    /// The API the requests went to (`chat`, `completions`, ...).
    pub endpoint: Endpoint,
    /// The model asked for (given, or the first `/v1/models` listed).
    pub model: String,
    /// Extra headers, `Name: value`; a secret's value is `<redacted>`.
    pub headers: Vec<String>,
    /// Total time allowed for one request (s).
    pub timeout_s: f64,
    /// Silence that ends a request as a timeout (s).
    pub idle_timeout_s: f64,
    /// The offered load: closed loop's concurrency, or open loop's rate and cap.
    pub load: Load,
    /// Measured requests to send (`None`: until `duration_s`).
    pub num_prompts: Option<u64>,
    /// The measured phase's sending window (s).
    pub duration_s: Option<f64>,
    /// Requests sent before the measured phase, not measured.
    pub warmup: Warmup,
    /// How long in-flight requests could finish after sending ended (s).
    pub drain_timeout_s: f64,
    /// Seed of the workload and the schedule (`--seed`).
    pub seed: u64,
    /// What the workload was asked to be; absent from results written
    /// before it was saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadConfig>,
    /// Whether requests asked for a streamed answer (`false`: `--no-stream`).
    pub stream: bool,
    /// `None`: the server's default.
    pub temperature: Option<f64>,
    /// `min_tokens` was sent (the probe may have dropped it).
    pub min_tokens_sent: bool,
    /// `ignore_eos` was sent (the probe may have dropped it).
    pub ignore_eos_sent: bool,
    /// The client tokenizer's spec (`tiktoken:o200k_base`, `none`, a path).
    pub tokenizer: String,
    /// The percentiles reported: those asked for and the SLO's.
    pub percentiles: Vec<f64>,
    /// What the run was held to; `None` without `--slo`, `--goodput` or `--slo-attainment`.
    pub slo: Option<Slo>,
    /// Always `true`; whether prompts were salted is the workload's
    /// `cache_bust`.
    pub cache_bust: bool,
    /// The models and priority classes requests were sent as (`--model
    /// a:0.5,b:0.5`, `--priority-mix`); absent for one model without classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<crate::load::workload::mixes::RequestMix>,
    /// What answered: a server, or goodput's simulated engine (with its
    /// preset and every setting). Absent only from results written before
    /// it was saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// What answered a run's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// The server at `url`.
    Server,
    /// goodput's simulated engine, not a real server: the built-in one
    /// (no `--url`), or a `goodput sim` found behind `--url` (its
    /// `/v1/models` says so; its settings are then not known).
    Simulated {
        /// The preset, `llama-3.1-8b,h100-sxm,tp=1` or the `--sim` spec.
        preset: Option<String>,
        /// Every setting of the simulator (model, hardware, engine limits,
        /// faults, step model), as it ran.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        settings: Option<serde_json::Value>,
    },
}

impl Target {
    /// The run was answered by a simulator.
    pub fn is_simulated(&self) -> bool {
        matches!(self, Target::Simulated { .. })
    }

    /// In words, for headers and tables: `server`, `simulated
    /// (llama-3.1-8b,h100-sxm,tp=1)`.
    pub fn describe(&self) -> String {
        match self {
            Target::Server => "server".into(),
            Target::Simulated {
                preset: Some(p), ..
            } => format!("simulated ({p})"),
            Target::Simulated { preset: None, .. } => "simulated".into(),
        }
    }
}

impl RunConfig {
    /// The configuration of a run of `plan` and `workload`, whose requests
    /// were sent as `params` by a client with `client`'s options and
    /// counted with `tokenizer`; `percentiles` and `slo` are what it was
    /// judged by.
    pub fn new(
        client: &ClientOptions,
        params: &RequestParams,
        plan: &RunPlan,
        workload: &WorkloadSpec,
        tokenizer: &Tokenizer,
        percentiles: Vec<f64>,
        slo: Option<Slo>,
    ) -> RunConfig {
        RunConfig {
            url: client.url.clone(),
            endpoint: client.endpoint,
            model: params.model.clone(),
            headers: client.headers.iter().map(|h| redact_header(h)).collect(),
            timeout_s: client.timeout.as_secs_f64(),
            idle_timeout_s: client.idle_timeout.as_secs_f64(),
            load: plan.load,
            num_prompts: plan.num_prompts,
            duration_s: plan.duration.map(|d| d.as_secs_f64()),
            warmup: plan.warmup,
            drain_timeout_s: plan.drain_timeout.as_secs_f64(),
            seed: plan.seed,
            workload: Some(WorkloadConfig::new(workload, tokenizer, client.endpoint)),
            stream: params.stream,
            temperature: params.temperature,
            min_tokens_sent: params.min_tokens,
            ignore_eos_sent: params.ignore_eos,
            tokenizer: tokenizer.spec().to_string(),
            percentiles,
            slo,
            cache_bust: true,
            mix: workload.mix.as_deref().cloned(),
            target: Some(Target::Server),
        }
    }

    /// The run was answered by a simulator (as far as the file says).
    pub fn simulated(&self) -> bool {
        self.target.as_ref().is_some_and(Target::is_simulated)
    }

    /// The workload in words, when it was saved.
    pub fn workload_summary(&self) -> Option<&str> {
        self.workload.as_ref().map(|w| w.summary.as_str())
    }

    /// The JSON saved under `config`, its keys sorted.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// What the workload was asked to be: the kind of source and its shape,
/// the seed, prefix sharing, cache busting, sessions and the tokenizer.
/// (What was actually sent is measured: `metrics.workload`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadConfig {
    /// The workload in words: `chat, input 1024 / output 128 tokens`.
    pub summary: String,
    pub seed: u64,
    /// A unique salt after each prompt's shared prefix.
    pub cache_bust: bool,
    /// The tokenizer that counted the client's tokens, with its file's hash.
    pub tokenizer: TokenizerIdentity,
    /// Where prompts came from (saved as `kind` and its own keys).
    #[serde(flatten)]
    pub source: WorkloadSource,
}

/// Where prompts came from, with what describes each source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadSource {
    /// Generated text of the given lengths.
    Synthetic {
        /// Prompt lengths asked for, tokens (`--input-tokens`).
        input_tokens: LengthSpec,
        /// Output lengths asked for, tokens (`--output-tokens`).
        output_tokens: LengthSpec,
        /// Shared prefixes; `None` without one.
        prefix: Option<PrefixSpec>,
        /// Multi-turn sessions; `None` for single requests.
        sessions: Option<SessionShape>,
    },
    /// A dataset's rows.
    Dataset {
        /// The file, and how its rows were read and sampled.
        dataset: DatasetStats,
        /// `--output-tokens` given explicitly, for every row.
        output_tokens: Option<LengthSpec>,
        /// The length for rows that state none.
        output_tokens_default: LengthSpec,
    },
    /// A trace's arrivals and lengths.
    Trace {
        /// The file, and how its rows were read and sliced.
        trace: TraceStats,
        /// Replay speed (2: twice as fast).
        trace_speed: f64,
        /// Tokens per hash block (Mooncake).
        block_tokens: u32,
        /// `--output-tokens` given explicitly, for every row.
        output_tokens: Option<LengthSpec>,
    },
    /// Agent trajectories, each call sent when what it waits for completed.
    Agents {
        /// The files, and what reading them found.
        agents: crate::load::AgentStats,
        /// `gaps` (after the parents, plus the recorded gap) or `recorded`.
        timing: crate::load::AgentTiming,
        /// Replay speed (2: twice as fast).
        trace_speed: f64,
        /// Longest gap a call waits after its parents, seconds.
        gap_cap_s: f64,
    },
}

impl WorkloadConfig {
    /// The description of `spec`, counted with `tokenizer`, sent to `endpoint`.
    pub fn new(spec: &WorkloadSpec, tokenizer: &Tokenizer, endpoint: Endpoint) -> WorkloadConfig {
        let s = &spec.synthetic;
        let source = match &spec.source {
            SourceSpec::Synthetic => WorkloadSource::Synthetic {
                input_tokens: s.input_tokens.clone(),
                output_tokens: s.output_tokens.clone(),
                prefix: s.prefix.clone(),
                sessions: s.sessions.clone(),
            },
            SourceSpec::Dataset {
                dataset,
                output_override,
            } => WorkloadSource::Dataset {
                dataset: dataset.stats.clone(),
                output_tokens: output_override.clone(),
                output_tokens_default: s.output_tokens.clone(),
            },
            SourceSpec::Trace {
                trace,
                speed,
                block_tokens,
                output_override,
            } => WorkloadSource::Trace {
                trace: trace.stats.clone(),
                trace_speed: *speed,
                block_tokens: *block_tokens,
                output_tokens: output_override.clone(),
            },
            SourceSpec::Agents { traces, replay, .. } => WorkloadSource::Agents {
                agents: traces.stats.clone(),
                timing: replay.timing,
                trace_speed: replay.speed,
                gap_cap_s: replay.gap_cap.as_secs_f64(),
            },
        };
        WorkloadConfig {
            summary: spec.words(endpoint),
            seed: s.seed,
            cache_bust: s.cache_bust,
            tokenizer: tokenizer.identity(),
            source,
        }
    }

    /// The dataset's statistics, for a dataset workload.
    pub fn dataset(&self) -> Option<&DatasetStats> {
        match &self.source {
            WorkloadSource::Dataset { dataset, .. } => Some(dataset),
            _ => None,
        }
    }
}

fn redact_header(h: &str) -> String {
    match h.split_once(':') {
        Some((name, _)) if is_secret_header(name.trim()) => format!("{}: <redacted>", name.trim()),
        _ => h.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A synthetic workload of 64-token prompts and 16-token answers,
    /// counted with no tokenizer.
    pub(crate) fn synthetic_workload(summary: &str, seed: u64) -> WorkloadConfig {
        WorkloadConfig {
            summary: summary.into(),
            seed,
            cache_bust: true,
            tokenizer: Tokenizer::from_spec("none").unwrap().identity(),
            source: WorkloadSource::Synthetic {
                input_tokens: LengthSpec::Fixed(64),
                output_tokens: LengthSpec::Fixed(16),
                prefix: None,
                sessions: None,
            },
        }
    }

    /// A dataset workload whose file is called `name` (and so is its summary).
    pub(crate) fn dataset_workload(name: &str) -> WorkloadConfig {
        let dataset = serde_json::from_value(json!({
            "name": name, "format": "jsonl", "sha256": "ab", "rows_read": 10,
            "rows_skipped": 1, "rows_dropped_input_filter": 0,
            "rows_dropped_output_filter": 0, "rows_without_output_length": 0,
            "rows_eligible": 9, "rows_requested": 9, "rows_selected": 9,
            "input_filter_tokens": null, "output_filter_tokens": null,
            "sampling": "random", "exhausted": "error", "seed": 0,
            "cycled": false, "truncated": false,
        }))
        .unwrap();
        WorkloadConfig {
            summary: name.into(),
            seed: 0,
            cache_bust: true,
            tokenizer: Tokenizer::from_spec("none").unwrap().identity(),
            source: WorkloadSource::Dataset {
                dataset,
                output_tokens: None,
                output_tokens_default: LengthSpec::Fixed(128),
            },
        }
    }

    /// A configuration for tests of readers: a closed or open `load`, the
    /// reported `percentiles`, and no workload description.
    pub(crate) fn sample_config(load: Load, percentiles: Vec<f64>) -> RunConfig {
        RunConfig {
            url: "http://127.0.0.1:8000".into(),
            endpoint: Endpoint::Chat,
            model: "m".into(),
            headers: Vec::new(),
            timeout_s: 600.0,
            idle_timeout_s: 60.0,
            load,
            num_prompts: Some(20),
            duration_s: None,
            warmup: Warmup::None,
            drain_timeout_s: 30.0,
            seed: 0,
            workload: None,
            stream: true,
            temperature: None,
            min_tokens_sent: true,
            ignore_eos_sent: true,
            tokenizer: "none".into(),
            percentiles,
            slo: None,
            cache_bust: true,
            mix: None,
            target: Some(Target::Server),
        }
    }

    /// The saved keys are the ones results have always had (and `target`,
    /// added 2026-11-28): the run's, and the workload's common keys beside
    /// its kind's own.
    #[test]
    fn saves_the_layout_results_have_always_had() {
        let mut c = sample_config(Load::Closed { concurrency: 4 }, vec![50.0, 99.0]);
        c.workload = Some(synthetic_workload("chat, input 64 / output 16 tokens", 3));
        let v = c.to_value();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "cache_bust",
                "drain_timeout_s",
                "duration_s",
                "endpoint",
                "headers",
                "idle_timeout_s",
                "ignore_eos_sent",
                "load",
                "min_tokens_sent",
                "model",
                "num_prompts",
                "percentiles",
                "seed",
                "slo",
                "stream",
                "target",
                "temperature",
                "timeout_s",
                "tokenizer",
                "url",
                "warmup",
                "workload"
            ]
        );
        assert_eq!(
            v["workload"],
            json!({
                "summary": "chat, input 64 / output 16 tokens",
                "kind": "synthetic",
                "seed": 3,
                "cache_bust": true,
                "tokenizer": {"spec": "none", "kind": "none", "name": "none", "sha256": null},
                "input_tokens": "64",
                "output_tokens": "16",
                "prefix": null,
                "sessions": null,
            })
        );
        assert_eq!(v["load"], json!({"mode": "closed", "concurrency": 4}));
        assert_eq!(serde_json::from_value::<RunConfig>(v).unwrap(), c);
        let d = json!(dataset_workload("d.jsonl"));
        assert_eq!(d["kind"], "dataset");
        assert_eq!(d["dataset"]["rows_read"], 10);
        assert_eq!(d["output_tokens"], serde_json::Value::Null);
        assert_eq!(d["output_tokens_default"], "128");
    }

    /// A config from before the workload and the SLO were saved, with keys
    /// of an earlier layout, reads back; it writes no workload.
    #[test]
    fn reads_an_earlier_layout() {
        let mut v = sample_config(Load::Closed { concurrency: 4 }, vec![50.0]).to_value();
        let o = v.as_object_mut().unwrap();
        o.remove("slo");
        o.insert("input_tokens".into(), json!(512));
        let c: RunConfig = serde_json::from_value(v).unwrap();
        assert_eq!((c.workload.as_ref(), c.slo.as_ref()), (None, None));
        assert!(c.to_value().get("workload").is_none());
    }
}
