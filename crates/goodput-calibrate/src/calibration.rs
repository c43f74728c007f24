//! What a calibration is asked and what it measured: the options (the
//! calibrate flags the binary reads), the engine limits with where each
//! came from, and the observations the fit takes.

use std::path::PathBuf;

use goodput_sim::calibrate::LimitSource;

use crate::check::Burst;

/// What `goodput calibrate` was asked: where the profile goes, the design
/// of a live experiment, and the results a calibration from files reads.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// Saved results (`goodput run --out`, `goodput sweep --out`) to fit
    /// from instead of a live experiment: their paths, for the profile's
    /// source.
    pub from: Vec<PathBuf>,
    /// Where the profile (TOML) is written.
    pub out: PathBuf,
    /// Prompt lengths of the batch-1 prefill series, tokens (each capped by
    /// the server's context).
    pub prompt_lengths: Vec<usize>,
    /// Requests at each prefill length (the first warms the server up and
    /// is not used).
    pub prefill_requests: u64,
    /// Concurrencies of the decode series; empty: 1, 4, 16, 64, ... up to
    /// the largest batch the burst found.
    pub batches: Vec<usize>,
    /// Prompt lengths of the decode series, tokens.
    pub contexts: Vec<usize>,
    /// Output tokens of each decode-series request.
    pub decode_tokens: u32,
    /// Requests sent at once to find the largest batch the server runs.
    pub burst: usize,
    /// The held-queue point's deep loop runs twice the largest batch plus
    /// this many at a time (0: the point is not run).
    pub held_queue: usize,
    /// The server's token budget per step when it does not say its own.
    pub max_num_batched_tokens: Option<usize>,
}

/// One engine limit: its value, what kind of source gave it, and which.
#[derive(Debug, Clone)]
pub(crate) struct Limit {
    pub value: usize,
    pub source: LimitSource,
    pub from: String,
}

impl Limit {
    pub(crate) fn new(value: usize, source: LimitSource, from: impl Into<String>) -> Limit {
        Limit {
            value,
            source,
            from: from.into(),
        }
    }
}

/// The engine limits the profile carries, each with where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub max_batch: Limit,
    pub kv_tokens: Option<Limit>,
    pub max_model_len: Option<Limit>,
    pub step_tokens: Limit,
    /// The burst that found the largest batch (a live calibration's).
    pub burst: Option<Burst>,
}

/// The observations the fit takes, as measured.
#[derive(Debug, Clone)]
pub(crate) struct Observations {
    pub prefills: Vec<Prefill>,
    pub decodes: Vec<Decode>,
    pub limits: Limits,
}

/// Batch-1 prefill: the median TTFT (from the send) of a prompt alone.
#[derive(Debug, Clone)]
pub(crate) struct Prefill {
    pub prompt_tokens: f64,
    pub ttft_s: f64,
    /// 1.4826 × the median absolute deviation of the TTFTs.
    pub spread_s: f64,
    pub count: usize,
}

/// Decode: the median gap between tokens while `batch` sequences decode.
#[derive(Debug, Clone)]
pub(crate) struct Decode {
    pub batch: usize,
    pub context_tokens: f64,
    pub itl_s: f64,
    /// 1.4826 × the median absolute deviation of the gaps.
    pub spread_s: f64,
    pub count: usize,
}

/// The token budget of a step: `--max-num-batched-tokens`, else what the
/// server published, else vLLM's default.
pub(crate) fn step_tokens(
    options: &CalibrateOptions,
    published: Option<(usize, &'static str)>,
) -> Limit {
    match (options.max_num_batched_tokens, published) {
        (Some(t), _) => Limit::new(t, LimitSource::Metrics, "--max-num-batched-tokens"),
        (None, Some((t, from))) => Limit::new(t, LimitSource::Metrics, from),
        (None, None) => Limit::new(
            8192,
            LimitSource::Default,
            "assumed (vLLM's default; --max-num-batched-tokens)",
        ),
    }
}
