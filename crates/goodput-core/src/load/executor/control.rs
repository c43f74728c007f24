//! The stop signals of a run: stop sending, cancel what is in flight, or
//! end early; shared with whoever handles signals, and passed down to a
//! sweep's points.

use std::sync::Arc;

use tokio::sync::watch;

use crate::request::record::ErrorKind;

/// Stop signals for a running executor, shared with whoever handles signals.
#[derive(Clone)]
pub struct RunControl {
    pub(super) stop_tx: Arc<watch::Sender<bool>>,
    pub(super) cancel_tx: Arc<watch::Sender<Option<ErrorKind>>>,
}

impl Default for RunControl {
    fn default() -> Self {
        Self::new()
    }
}

impl RunControl {
    /// A control with no stop or cancel asked for.
    pub fn new() -> Self {
        RunControl {
            stop_tx: Arc::new(watch::channel(false).0),
            cancel_tx: Arc::new(watch::channel(None).0),
        }
    }

    /// Stop sending; in-flight requests may finish (up to the drain timeout).
    /// Also ends whatever is being prepared (model discovery, the probe).
    pub fn stop_sending(&self) {
        self.stop_tx.send_replace(true);
    }

    /// Cancel every in-flight request now (recorded as `cancelled`).
    pub fn cancel_in_flight(&self) {
        self.cancel_tx.send_replace(Some(ErrorKind::Cancelled));
    }

    /// End the run now because its outcome is settled (a sweep point whose
    /// SLO verdict is known): no more sends, and requests in flight are
    /// stopped as `incomplete` (neither completed nor failed).
    pub fn end_early(&self) {
        self.stop_tx.send_replace(true);
        self.cancel_tx.send_replace(Some(ErrorKind::Incomplete));
    }

    /// A control for one part of a run (a sweep point) that stops and
    /// cancels when this one does, and can also be ended on its own.
    pub fn child(&self) -> RunControl {
        let child = RunControl::new();
        // Already stopped: the child starts stopped (no window for a send).
        if self.is_stopping() {
            child.stop_tx.send_replace(true);
        }
        let parent = self.clone();
        let weak_stop = Arc::downgrade(&child.stop_tx);
        let weak_cancel = Arc::downgrade(&child.cancel_tx);
        tokio::spawn(async move {
            let mut stop = parent.stop_tx.subscribe();
            let mut cancel = parent.cancel_tx.subscribe();
            if stop.wait_for(|s| *s).await.is_err() {
                return;
            }
            match weak_stop.upgrade() {
                Some(s) => s.send_replace(true),
                None => return,
            };
            let kind = match cancel.wait_for(|c| c.is_some()).await {
                Ok(kind) => *kind,
                Err(_) => return,
            };
            if let Some(c) = weak_cancel.upgrade() {
                c.send_replace(kind);
            }
        });
        child
    }

    /// Whether a stop was asked for.
    pub fn is_stopping(&self) -> bool {
        *self.stop_tx.borrow()
    }

    /// Resolves when a stop is asked for.
    pub async fn stopped(&self) {
        let mut rx = self.stop_tx.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}
