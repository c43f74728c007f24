//! The run's slots and its edges: the common start of a sharded run, the
//! canceller, a closed loop's ramp opening its slots one by one, and the
//! wait for every slot to come back.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinHandle;

use super::turns::FollowUp;
use super::{RunControl, StartGate};
use crate::load::schedule::RampUp;
use crate::load::timer::Timer;
use crate::request::record::ErrorKind;
use crate::request::transport::Transport;

/// Wait at a sharded run's gate for the common start, and until it: the
/// schedule's origin. A stop meanwhile, or a start called off, begins now
/// with the stop set (the send loop ends at once).
pub(super) async fn common_start<Tm: Timer>(
    gate: StartGate,
    stop_rx: &mut watch::Receiver<bool>,
    control: &RunControl,
    timer: &Tm,
) -> Instant {
    let at = tokio::select! {
        biased;
        _ = stop_rx.wait_for(|s| *s) => None,
        at = gate() => at,
    };
    match at {
        Some(at) => {
            tokio::select! {
                biased;
                _ = stop_rx.wait_for(|s| *s) => {}
                _ = timer.sleep_until(at) => {}
            }
            at
        }
        None => {
            control.stop_sending();
            crate::request::clock::now()
        }
    }
}

/// Cancellation reaches requests through the transport (the client's
/// watchdog shuts their sockets down); the request path polls nothing for it.
pub(super) fn spawn_canceller<T: Transport>(
    mut cancel_rx: watch::Receiver<Option<ErrorKind>>,
    transport: Arc<T>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        if let Ok(kind) = cancel_rx.wait_for(|c| c.is_some()).await {
            if let Some(kind) = *kind {
                transport.stop_all(kind);
            }
        }
    })
}

/// A closed loop's `--ramp-up`: its slots open one by one over the ramp.
pub(super) struct SlotRamp {
    task: JoinHandle<()>,
    /// Slots open so far (the first is open from the start).
    opened: Arc<AtomicU64>,
}

impl SlotRamp {
    pub(super) fn start(ramp: RampUp, slots: &Arc<Semaphore>, cap: usize, origin: Instant) -> Self {
        let opened = Arc::new(AtomicU64::new(1));
        let (slots, count) = (slots.clone(), opened.clone());
        let task = tokio::spawn(async move {
            for i in 1..cap {
                tokio::time::sleep_until((origin + ramp.slot_opens(i, cap)).into()).await;
                slots.add_permits(1);
                count.fetch_add(1, Relaxed);
            }
        });
        SlotRamp { task, opened }
    }

    /// End the ramp (sending is over) and open the slots it had not yet.
    pub(super) async fn stop(self, slots: &Semaphore, cap: usize) {
        self.task.abort();
        let _ = self.task.await;
        slots.add_permits(cap - self.opened.load(Relaxed) as usize);
    }
}

/// Wait until every slot is back, discarding session turns that still
/// arrive (each frees its slot when dropped).
pub(super) async fn all_slots_back(
    slots: &Arc<Semaphore>,
    all: u32,
    follow_rx: &mut mpsc::UnboundedReceiver<FollowUp>,
) {
    loop {
        tokio::select! {
            r = slots.acquire_many(all) => { drop(r); return; }
            f = follow_rx.recv() => if f.is_none() {
                let _ = slots.acquire_many(all).await;
                return;
            },
        }
    }
}
