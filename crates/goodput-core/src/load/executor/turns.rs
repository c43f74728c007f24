//! Sessions' next turns, waiting for their ready time: each holds its
//! session's slot through the think time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::OwnedSemaphorePermit;

use crate::request::protocol::PreparedRequest;

/// A session's next turn, waiting for its ready time, holding its session's slot.
pub(super) struct FollowUp {
    pub(super) ready: Instant,
    pub(super) request: PreparedRequest,
    pub(super) permit: Slot,
}

/// The slot a request holds: its own, or, for the parallel branches of an
/// agent's trajectory, a share of the trajectory's one slot (it frees when
/// the last branch lets go: a lane takes its next trajectory only once the
/// whole tree has drained). Shared only where a call fans out, so the
/// common path allocates nothing.
pub(super) enum Slot {
    Own(OwnedSemaphorePermit),
    Shared(Arc<OwnedSemaphorePermit>),
}

impl Slot {
    /// `n` holders of this slot (`n` ≥ 1).
    pub(super) fn split(self, n: usize) -> Vec<Slot> {
        if n <= 1 {
            return vec![self];
        }
        let shared = match self {
            Slot::Own(p) => Arc::new(p),
            Slot::Shared(a) => a,
        };
        (0..n).map(|_| Slot::Shared(shared.clone())).collect()
    }
}

/// Sessions' turns waiting for their ready time, earliest first (then in
/// arrival order).
#[derive(Default)]
pub(super) struct PendingTurns {
    heap: BinaryHeap<Reverse<(Instant, u64, FollowUpSlot)>>,
    seq: u64,
}

/// A follow-up in the heap (ordered by the tuple's first two fields only).
struct FollowUpSlot(FollowUp);

impl PartialEq for FollowUpSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for FollowUpSlot {}
impl PartialOrd for FollowUpSlot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for FollowUpSlot {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl PendingTurns {
    pub(super) fn push(&mut self, f: FollowUp) {
        self.seq += 1;
        self.heap
            .push(Reverse((f.ready, self.seq, FollowUpSlot(f))));
    }

    pub(super) fn next_ready(&self) -> Option<Instant> {
        self.heap.peek().map(|r| r.0 .0)
    }

    pub(super) fn pop(&mut self) -> Option<FollowUp> {
        self.heap.pop().map(|r| r.0 .2 .0)
    }

    pub(super) fn clear(&mut self) {
        self.heap.clear();
    }
}
