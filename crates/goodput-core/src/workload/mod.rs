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
pub mod synthetic;
pub mod trace;

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::PreparedRequest;
use crate::record::RequestRecord;

pub use goodput_common::lengths::LengthSpec;
pub use synthetic::{SessionShape, SyntheticSource, SyntheticSpec};

/// A request and, for a workload that carries its own timing (a trace), when
/// it should be sent as an offset from the start of sending. `None`: the
/// run's schedule decides.
#[derive(Debug)]
pub struct Planned {
    pub request: PreparedRequest,
    pub at: Option<Duration>,
}

/// Where requests come from.
pub trait RequestSource: Send {
    /// The next new request (for a session workload, the first turn of a new
    /// session); `None` when the source is exhausted.
    fn next(&mut self, warmup: bool) -> Option<Planned>;

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
