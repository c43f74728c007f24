//! What a plan asks of a target: how to reach it ([`TargetOptions`]), one
//! run's plan ([`RunSpec`]), and how a run can fail ([`RunError`]).

use std::sync::Arc;

use crate::load::executor::RunPlan;
use crate::load::workload::WorkloadSpec;
use crate::measure::cost::CostSpec;
use crate::measure::server_metrics::ScrapeOptions;
use crate::measure::slo::Slo;
use crate::request::client::{ClientError, ClientOptions};
use crate::tokenizer::Tokenizer;

/// What it takes to reach a target.
#[derive(Debug, Clone)]
pub struct TargetOptions {
    /// How to reach the server: its URL, API route, headers, key, timeouts, TLS.
    pub client: ClientOptions,
    /// None: the first model `/v1/models` lists.
    pub model: Option<String>,
    /// Send streaming requests (off with `--no-stream`: TTFT then equals E2EL).
    pub stream: bool,
    /// Ask for pinned output lengths (`min_tokens`, `ignore_eos`); the probe may drop them.
    pub pin_output: bool,
    /// The sampling temperature sent with every request (`--temperature`);
    /// None: not sent, the server's default.
    pub temperature: Option<f64>,
    /// The client-side tokenizer (`--tokenizer`): builds the prompts and does
    /// all client-side counting.
    pub tokenizer: Tokenizer,
    /// The server runs in this process (the built-in simulator): the
    /// process's CPU is not the client's alone.
    #[doc(hidden)]
    pub server_in_process: bool,
    /// What answers: a server, or goodput's simulated engine (saved in the
    /// results' `config.target`, said in every report).
    pub target: crate::output::config::Target,
    /// Where to scrape the server's own metrics during each run.
    pub server_metrics: ServerMetricsChoice,
    /// DCGM exporters to scrape for the GPUs' power and energy during each
    /// run (`--gpu-metrics`, at the server metrics' interval); none given,
    /// a simulated target's own (`/dcgm/metrics`).
    pub gpu_metrics: Vec<String>,
    /// Read the local GPUs through NVML too (`--nvml`).
    pub nvml: bool,
    /// Tools and response format sent with every request (`--tools`,
    /// `--response-format`), and checked against every answer.
    pub output: Option<Arc<crate::request::tools::OutputSpec>>,
}

/// Whether and where the server's Prometheus metrics are scraped.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMetricsChoice {
    /// Not scraped (`--no-server-metrics`).
    Off,
    /// The target's own `/metrics`, when it answers with Prometheus text.
    Auto {
        /// How often to scrape (`--server-metrics-interval`).
        interval: std::time::Duration,
    },
    /// This URL; an error if it does not answer.
    Url(ScrapeOptions),
}

/// One run's plan, workload and reporting.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The load, its bounds (requests, duration), warm-up and drain.
    pub plan: RunPlan,
    /// What each request sends: prompts from a dataset or synthetic ones.
    pub workload: WorkloadSpec,
    /// The percentiles to report (`--percentiles`), SLO terms' not included:
    /// see `reported_percentiles`.
    pub percentiles: Vec<f64>,
    /// What the run is held to (`--slo`, `--goodput`), if anything.
    pub slo: Option<Slo>,
    /// End the run as soon as its SLO verdict is settled (a sweep's search).
    pub early_stop: bool,
    /// What the deployment costs and draws (`--cost-per-hour`, ...), for the
    /// cost and energy figures; None: none given.
    pub cost: Option<CostSpec>,
    /// Keep a hash of every output (`--repeat` compares them across repeats).
    pub keep_outputs: bool,
    /// Adjust the SLO terms' percentiles for the run's own arrival
    /// schedule (a goodput search's points; `crate::measure::metrics::control_variate`).
    pub schedule_control: Option<crate::measure::metrics::control_variate::ControlSpec>,
}

impl RunSpec {
    /// The percentiles to report: the requested ones and every SLO term's.
    pub fn reported_percentiles(&self) -> Vec<f64> {
        let mut p = self.percentiles.clone();
        for t in self.slo.iter().flat_map(|s| &s.terms) {
            if !p.contains(&t.percentile) {
                p.push(t.percentile);
            }
        }
        p.sort_by(f64::total_cmp);
        p
    }
}

/// Why a target could not be prepared, or a run not carried out.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The client could not be built: a bad URL or header, a host that did
    /// not resolve, TLS setup.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Model discovery failed: the model list could not be read, or was
    /// empty (without `--model`).
    #[error("could not list models at {url}: {why} (pass --model NAME to skip the lookup)")]
    Models {
        /// The model list's URL (`.../v1/models`).
        url: String,
        /// Why: the client's error, the HTTP status and body, not JSON, or
        /// an empty list (credentials redacted).
        why: String,
    },
    /// The user stopped (a signal) before any request was sent.
    #[error("interrupted before any request was sent")]
    Interrupted,
    /// The `--server-metrics` URL given could not be scraped: its error.
    #[error("--server-metrics: {0}")]
    ServerMetrics(String),
    /// A `--gpu-metrics` URL could not be scraped: its error.
    #[error("GPU metrics (--gpu-metrics, --nvml): {0}")]
    GpuMetrics(String),
    /// A sharded run could not go on: the coordinator or a shard's part of
    /// the plan.
    #[error("sharded run: {0}")]
    Shard(String),
    /// A fault of goodput itself, never the server's: lost records, a panicked thread.
    #[error("internal error (a bug in goodput, please report it): {0}")]
    Internal(String),
}

impl RunError {
    /// The target could not be reached at all (exit code 3 territory).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            RunError::Models { .. } | RunError::Client(ClientError::Resolve { .. })
        )
    }
}
