//! Transport: the seam between the executor and the wire.
//!
//! The executor decides *when* requests go and how many are in flight; a
//! [`Transport`] sends one request and records what happened, raw. The
//! HTTP/1.1 client ([`crate::request::client::Client`]) is one; tests drive the
//! executor with a mock that needs no socket (hyperfine's `MockExecutor` is
//! the model), and HTTP/2 will be another, whose cancellation ends one
//! stream rather than the socket all streams share. Cancellation is the
//! transport's job for exactly that reason.

use std::future::Future;

use crate::request::protocol::PreparedRequest;
use crate::request::record::{ErrorKind, RequestRecord};

pub trait Transport: Send + Sync + 'static {
    /// Start a run: requests carry `run_id` (in `x-request-id`), and a
    /// previous run's cancellation no longer applies.
    fn begin_run(&self, run_id: u64);

    /// Send one request scheduled at `t_sched` and record everything that
    /// happened. Never fails: a failure is an [`ErrorKind`] on the record.
    fn execute(
        &self,
        req: &PreparedRequest,
        t_sched: u64,
    ) -> impl Future<Output = RequestRecord> + Send;

    /// Stop every in-flight request of the current run now, and any that
    /// starts later in it, recording `kind` (cancelled, or incomplete at the
    /// drain timeout) on each.
    fn stop_all(&self, kind: ErrorKind);
}

#[cfg(test)]
pub(crate) mod mock {
    //! A transport without sockets, for executor tests under paused time:
    //! each request "streams" `tokens` events, the first `ttft` after it is
    //! sent and then one every `itl`, unless stopped.

    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::sync::watch;

    use super::Transport;
    use crate::request::clock::RunClock;
    use crate::request::protocol::PreparedRequest;
    use crate::request::record::{ErrorKind, Event, RequestError, RequestRecord, ServerUsage};

    pub struct MockTransport {
        pub clock: RunClock,
        /// First token after `ttft(id)`.
        pub ttft: Box<dyn Fn(u64) -> Duration + Send + Sync>,
        pub itl: Duration,
        pub tokens: u32,
        pub in_flight: AtomicUsize,
        pub max_in_flight: AtomicUsize,
        pub run_id: AtomicU64,
        /// (request id, t_send) of every request, in send order.
        pub sends: Mutex<Vec<(u64, u64)>>,
        stop: watch::Sender<Option<ErrorKind>>,
    }

    impl MockTransport {
        pub fn new(clock: RunClock, ttft: Duration, itl: Duration, tokens: u32) -> Arc<Self> {
            Self::with(clock, Box::new(move |_| ttft), itl, tokens)
        }

        pub fn with(
            clock: RunClock,
            ttft: Box<dyn Fn(u64) -> Duration + Send + Sync>,
            itl: Duration,
            tokens: u32,
        ) -> Arc<Self> {
            Arc::new(MockTransport {
                clock,
                ttft,
                itl,
                tokens,
                in_flight: AtomicUsize::new(0),
                max_in_flight: AtomicUsize::new(0),
                run_id: AtomicU64::new(0),
                sends: Mutex::new(Vec::new()),
                stop: watch::channel(None).0,
            })
        }
    }

    impl Transport for MockTransport {
        fn begin_run(&self, run_id: u64) {
            self.run_id.store(run_id, SeqCst);
            self.stop.send_replace(None);
        }

        async fn execute(&self, req: &PreparedRequest, t_sched: u64) -> RequestRecord {
            let n = self.in_flight.fetch_add(1, SeqCst) + 1;
            self.max_in_flight.fetch_max(n, SeqCst);
            let t_send = self.clock.now_ns();
            self.sends.lock().unwrap().push((req.id, t_send));
            let mut rec = RequestRecord {
                t_send: Some(t_send),
                streamed: true,
                ..req.new_record(t_sched)
            };
            let mut stop = self.stop.subscribe();
            let start = self.clock.instant(t_send);
            for k in 0..self.tokens {
                let at = start + (self.ttft)(req.id) + self.itl * k;
                tokio::select! {
                    _ = tokio::time::sleep_until(at.into()) => {}
                    r = stop.wait_for(|s| s.is_some()) => {
                        let kind = r.map(|k| k.unwrap_or(ErrorKind::Cancelled)).unwrap_or(ErrorKind::Cancelled);
                        rec.error = Some(RequestError { kind, message: "stopped".into(), retry_after: None });
                        rec.t_done = self.clock.now_ns();
                        self.in_flight.fetch_sub(1, SeqCst);
                        return rec;
                    }
                }
                rec.output_text.push_str(" the");
                rec.events.push(Event {
                    at_ns: self.clock.now_ns(),
                    text_end: rec.output_text.len() as u32,
                    usage_completion_tokens: None,
                    reasoning: false,
                });
            }
            rec.usage = Some(ServerUsage {
                prompt_tokens: req.prompt_tokens,
                completion_tokens: Some(self.tokens),
                ..Default::default()
            });
            rec.finish_reason = Some("length".into());
            rec.t_done = self.clock.now_ns();
            self.in_flight.fetch_sub(1, SeqCst);
            rec
        }

        fn stop_all(&self, kind: ErrorKind) {
            self.stop.send_replace(Some(kind));
        }
    }
}
