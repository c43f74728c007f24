//! Workload: what to send.
//!
//! Every workload is a [`RequestSource`]: it yields requests (with their
//! intended send time where the workload itself carries timing, as a trace
//! does) to the one executor, and, for multi-turn sessions, builds each next
//! turn from the previous turn's response ([`FollowUps`]). Requests are built
//! lazily, one at a time, so a long run holds no more prompts in memory than
//! are in flight. The synthetic workload is in [`synthetic`].
//!
//! User files are read by [`dataset`] (prompts) and [`trace`] (arrival
//! times and lengths) into validated rows, with [`files`] as their shared
//! plumbing; turning rows into requests is a [`RequestSource`]'s job.

pub mod agent;
pub mod dataset;
pub mod files;
pub mod inputs;
pub mod mixes;
pub mod prefetch;
pub mod prompt;
pub mod replay;
mod source;
pub mod synthetic;
pub mod trace;

use std::sync::Arc;

use crate::request::protocol::RequestParams;
use goodput_common::tokenizer::Tokenizer;

pub use goodput_common::image::{ImageSpec, MAX_IMAGES, MAX_SIDE};
pub use goodput_common::lengths::LengthSpec;
pub use prefetch::Prefetch;
pub use prompt::TextBuilder;
#[cfg(test)]
pub(crate) use source::Planned;
pub use source::{FollowUps, RequestSource};
pub use synthetic::{PrefixSpec, SessionShape, SyntheticSource, SyntheticSpec};

/// What a run sends: where prompts come from, and the synthetic shape
/// (lengths, seed, sessions, shared prefixes, cache busting) that applies
/// to them.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    /// Lengths, seed, sessions, shared prefixes and cache busting; a file's
    /// rows take what they do not carry themselves from it.
    pub synthetic: SyntheticSpec,
    /// Where prompts come from.
    pub source: SourceSpec,
    /// The models and priority classes requests are sent as (`mixes`);
    /// `None` sends every request to the one model, without a class.
    pub mix: Option<Arc<mixes::RequestMix>>,
}

/// Where prompts come from.
#[derive(Debug, Clone)]
pub enum SourceSpec {
    /// Generated text of exact lengths (`synthetic`).
    Synthetic,
    /// A dataset's rows (`replay::DatasetSource`); `output_override`:
    /// `--output-tokens` given explicitly, which then applies to every row.
    Dataset {
        /// The dataset's rows, in send order, read and validated once.
        dataset: Arc<dataset::Dataset>,
        /// Every row's output length, when `--output-tokens` was given.
        output_override: Option<LengthSpec>,
    },
    /// A trace's arrivals and lengths (`replay::TraceSource`).
    Trace {
        /// The trace's rows, read and validated once.
        trace: Arc<trace::Trace>,
        /// Replay speed: each row is sent at its time divided by this (2: twice as fast).
        speed: f64,
        /// Tokens in each block of text a Mooncake row's hash id stands for.
        block_tokens: u32,
        /// Every row's output length, when `--output-tokens` was given.
        output_override: Option<LengthSpec>,
    },
    /// Agent trajectories, each call sent when what it waits for has
    /// completed (`agent::source::AgentSource`).
    Agents {
        /// The trajectories, read and validated once.
        traces: Arc<agent::AgentTraces>,
        /// When calls are sent, and how fast.
        replay: agent::Replay,
        /// Start the file over when it runs out (a run bounded by a count
        /// or a duration); else each trajectory once.
        cycle: bool,
    },
}

impl SourceSpec {
    /// Whether the workload is agents' trajectories, whose load is tasks.
    pub fn is_agents(&self) -> bool {
        matches!(self, SourceSpec::Agents { .. })
    }
}

impl WorkloadSpec {
    /// Synthetic prompts of `spec`'s shape, every one to the one model.
    pub fn synthetic(spec: SyntheticSpec) -> Self {
        WorkloadSpec {
            synthetic: spec,
            source: SourceSpec::Synthetic,
            mix: None,
        }
    }

    /// A fresh source for one run; `nonce` differs per run (salts,
    /// prefixes); `warmup`: the warm-up requests the run sends first.
    pub fn source(
        &self,
        params: &RequestParams,
        tokenizer: &Tokenizer,
        nonce: u64,
        warmup: u64,
    ) -> Box<dyn RequestSource> {
        let source = self.unmixed_source(params, tokenizer, nonce, warmup);
        match &self.mix {
            Some(mix) if !mix.is_empty() => Box::new(mixes::MixSource::new(
                source,
                mix.clone(),
                self.synthetic.seed,
            )),
            _ => source,
        }
    }

    /// The workload's own requests, every one to `params.model`.
    fn unmixed_source(
        &self,
        params: &RequestParams,
        tokenizer: &Tokenizer,
        nonce: u64,
        warmup: u64,
    ) -> Box<dyn RequestSource> {
        let s = &self.synthetic;
        let outer = params;
        let params = &inputs::inner_params(outer);
        let build = || replay::BuildContext {
            params: params.clone(),
            text: TextBuilder::new(tokenizer.clone()),
            cache_bust: s.cache_bust,
            seed: s.seed,
            nonce,
        };
        let inner: Box<dyn RequestSource> = match &self.source {
            SourceSpec::Synthetic => Box::new(SyntheticSource::new(
                s.clone(),
                params.clone(),
                tokenizer.clone(),
                nonce,
            )),
            SourceSpec::Dataset {
                dataset,
                output_override,
            } => Box::new(
                replay::DatasetSource::new(
                    dataset.clone(),
                    output_override.clone(),
                    s.output_tokens.clone(),
                    build(),
                )
                .with_warmup(warmup),
            ),
            SourceSpec::Trace {
                trace,
                speed,
                block_tokens,
                output_override,
            } => Box::new(replay::TraceSource::new(
                trace.clone(),
                *speed,
                *block_tokens,
                output_override.clone(),
                build(),
            )),
            SourceSpec::Agents {
                traces,
                replay,
                cycle,
            } => Box::new(agent::source::AgentSource::new(
                traces.clone(),
                replay.clone(),
                *cycle,
                build(),
            )),
        };
        inputs::wrap(inner, outer, s.batch, s.images.clone(), nonce)
    }

    /// Whether two runs of this workload (same seed) send the same prompt
    /// text in the same order; `Err` says what makes each run's differ (a
    /// per-run salt, per-run prefix words, a trace's per-run blocks).
    pub fn same_prompts_every_run(&self) -> Result<(), String> {
        if matches!(
            self.source,
            SourceSpec::Trace { .. } | SourceSpec::Agents { .. }
        ) {
            return Err(
                "a trace's prompts are built from blocks seeded by each run's nonce".into(),
            );
        }
        if self.synthetic.cache_bust {
            return Err("each repeat salts its prompts (--cache-bust, the default for synthetic prompts) so that none is served from another's prefix cache; pass --no-cache-bust to compare outputs (later repeats may then hit the prefix cache)".into());
        }
        if self.synthetic.prefix.as_ref().is_some_and(|p| p.tokens > 0) {
            return Err("each run's shared prefixes start with words of its own nonce, so the repeats' prompts differ".into());
        }
        Ok(())
    }

    /// A trace's mean arrival rate at its replay speed (requests/s).
    pub fn trace_rate(&self) -> Option<f64> {
        let SourceSpec::Trace { trace, speed, .. } = &self.source else {
            return None;
        };
        let span = trace.stats.span_s / speed;
        Some(if span > 0.0 {
            trace.rows.len().saturating_sub(1).max(1) as f64 / span
        } else {
            f64::INFINITY
        })
    }

    /// The workload in words, for headlines: `chat, input 1024 / output 128 tokens`.
    pub fn words(&self, endpoint: crate::request::protocol::Endpoint) -> String {
        let s = &self.synthetic;
        let mut w = match &self.source {
            // A pooling request generates nothing: no output length.
            SourceSpec::Synthetic if endpoint.is_pooling() => {
                format!("{endpoint}, input {} tokens", s.input_tokens)
            }
            SourceSpec::Synthetic => format!(
                "{endpoint}, input {} / output {} tokens",
                s.input_tokens, s.output_tokens
            ),
            SourceSpec::Dataset { dataset, .. } => format!(
                "{endpoint}, dataset {} ({}, {} rows)",
                dataset.stats.name, dataset.stats.format, dataset.stats.rows_selected
            ),
            SourceSpec::Trace { trace, speed, .. } => format!(
                "{endpoint}, trace {} ({}, {} requests over {:.0} s, speed {speed}x)",
                trace.stats.name,
                trace.stats.format,
                trace.rows.len(),
                trace.stats.span_s
            ),
            SourceSpec::Agents { traces, replay, .. } => format!(
                "{endpoint}, agent trajectories {} ({}, {} traces, {} calls, {} subagents; timing {}, speed {}x)",
                traces.stats.name,
                traces.stats.format,
                traces.stats.traces,
                traces.stats.calls,
                traces.stats.subagents,
                replay.timing,
                replay.speed
            ),
        };
        if let Some(p) = &s.prefix {
            w.push_str(&format!(
                ", {} shared prefixes of {} tokens ({})",
                p.groups, p.tokens, p.choice
            ));
        }
        if let Some(b) = s.batch.filter(|_| endpoint.is_pooling()) {
            w.push_str(&format!(", {b} inputs per request"));
        }
        if let Some(i) = &s.images {
            w.push_str(&format!(", images {i}"));
        }
        if let Some(sh) = &s.sessions {
            w.push_str(&format!(
                ", sessions of {} turns, think {}",
                sh.turns, sh.think_time
            ));
        }
        w
    }
}
