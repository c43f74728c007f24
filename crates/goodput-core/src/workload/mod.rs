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

pub mod dataset;
pub mod files;
pub mod prefetch;
pub mod prompt;
pub mod synthetic;
pub mod trace;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::protocol::{PreparedRequest, RequestParams};
use crate::record::RequestRecord;
use goodput_common::tokenizer::Tokenizer;

pub use goodput_common::lengths::LengthSpec;
pub use prefetch::Prefetch;
pub use prompt::TextBuilder;
pub use synthetic::{GroupChoice, PrefixSpec, SessionShape, SyntheticSource, SyntheticSpec};

/// A request and, for a workload that carries its own timing (a trace), when
/// it should be sent as an offset from the start of sending. `None`: the
/// run's schedule decides.
#[derive(Debug)]
pub struct Planned {
    pub request: PreparedRequest,
    pub at: Option<Duration>,
}

/// Where requests come from. Sources run on a thread of their own
/// ([`prefetch`]), ahead of the executor.
pub trait RequestSource: Send {
    /// The next new request (for a session workload, the first turn of a new
    /// session); `None` when the source is exhausted. The executor marks it
    /// warm-up or measured when it takes it.
    fn next(&mut self) -> Option<Planned>;

    /// The builder of sessions' follow-up turns; `None` when every request
    /// stands alone.
    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>>;
}

/// Builds a session's next turn from the previous one's response.
pub trait FollowUps: Send + Sync {
    /// The turn after `prev`, which finished as `rec`, and the think time
    /// before it is sent; `None` when the session is over (its last turn, or
    /// a failed turn: a conversation cannot go on without the answer).
    fn next_turn(
        &self,
        prev: &PreparedRequest,
        rec: &RequestRecord,
    ) -> Option<(PreparedRequest, Duration)>;
}

/// What a run sends: where prompts come from, and the synthetic shape
/// (lengths, seed, sessions, shared prefixes, cache busting) that applies
/// to them.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    pub synthetic: SyntheticSpec,
    pub source: SourceSpec,
}

/// Where prompts come from.
#[derive(Debug, Clone)]
pub enum SourceSpec {
    /// Generated text of exact lengths ([`synthetic`]).
    Synthetic,
}

impl WorkloadSpec {
    pub fn synthetic(spec: SyntheticSpec) -> Self {
        WorkloadSpec {
            synthetic: spec,
            source: SourceSpec::Synthetic,
        }
    }

    /// A fresh source for one run; `nonce` differs per run (salts, prefixes).
    pub fn source(
        &self,
        params: &RequestParams,
        tokenizer: &Tokenizer,
        nonce: u64,
    ) -> Box<dyn RequestSource> {
        match &self.source {
            SourceSpec::Synthetic => Box::new(SyntheticSource::new(
                self.synthetic.clone(),
                params.clone(),
                tokenizer.clone(),
                nonce,
            )),
        }
    }

    /// The workload in words, for headlines: `chat, input 1024 / output 128 tokens`.
    pub fn words(&self, endpoint: crate::protocol::Endpoint) -> String {
        let s = &self.synthetic;
        let mut w = format!(
            "{endpoint}, input {} / output {} tokens",
            s.input_tokens, s.output_tokens
        );
        if let Some(p) = &s.prefix {
            w.push_str(&format!(
                ", {} shared prefixes of {} tokens ({})",
                p.groups, p.tokens, p.choice
            ));
        }
        if let Some(sh) = &s.sessions {
            w.push_str(&format!(
                ", sessions of {} turns, think {}",
                sh.turns, sh.think_time
            ));
        }
        w
    }

    /// What the workload was asked to be, for the results document: kind,
    /// length specs, seed, prefix sharing, cache busting, session shape,
    /// tokenizer identity.
    pub fn describe(&self, tokenizer: &Tokenizer) -> Value {
        let s = &self.synthetic;
        json!({
            "kind": match self.source {
                SourceSpec::Synthetic => "synthetic",
            },
            "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens,
            "seed": s.seed,
            "prefix": s.prefix,
            "cache_bust": s.cache_bust,
            "sessions": s.sessions,
            "tokenizer": tokenizer.spec(),
        })
    }
}
