//! The seam between a workload and the executor: a [`RequestSource`]
//! yields requests (with their own send time where the workload carries
//! one), and [`FollowUps`] builds a session's next turn from the last
//! response.

use std::sync::Arc;
use std::time::Duration;

use crate::request::protocol::PreparedRequest;
use crate::request::record::RequestRecord;

/// A request and, for a workload that carries its own timing (a trace), when
/// it should be sent as an offset from the start of sending. `None`: the
/// run's schedule decides.
#[derive(Debug)]
pub struct Planned {
    pub request: PreparedRequest,
    pub at: Option<Duration>,
}

/// Where requests come from. Sources run on a thread of their own
/// ([`prefetch`](super::prefetch)), ahead of the executor.
pub trait RequestSource: Send {
    /// The next new request (for a session workload, the first turn of a new
    /// session); `None` when the source is exhausted. The executor marks it
    /// warm-up or measured when it takes it.
    fn next(&mut self) -> Option<Planned>;

    /// The builder of sessions' follow-up turns; `None` when every request
    /// stands alone.
    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>>;
}

/// A call that became ready when another finished: sent `after` the
/// finish, and not before `not_before_ns` on the run's clock where that is
/// set (an agent trace's recorded time).
#[derive(Debug)]
pub struct NextCall {
    /// The call.
    pub request: PreparedRequest,
    /// Its wait after the finish that made it ready.
    pub after: Duration,
    /// The earliest it may go, on the run's clock (ns).
    pub not_before_ns: Option<u64>,
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

    /// Every call that `prev`'s finish made ready: a session's next turn,
    /// or in an agent's trajectory none (a branch still running holds the
    /// join), one, or several (subagents fanned out, sent in parallel).
    fn next_calls(&self, prev: &PreparedRequest, rec: &RequestRecord) -> Vec<NextCall> {
        self.next_turn(prev, rec)
            .map(|(request, after)| {
                vec![NextCall {
                    request,
                    after,
                    not_before_ns: None,
                }]
            })
            .unwrap_or_default()
    }

    /// Whether what is under way runs to its end once the sending window
    /// closes: an agent's task is the unit its figures judge, so a task
    /// cut short by the window would drop out of them, the long ones
    /// first. A chat session's turns are judged one by one, and stop with
    /// the window.
    fn run_to_end(&self) -> bool {
        false
    }
}
