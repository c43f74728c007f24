//! Building requests beside the run, never on its send path.
//!
//! A [`RequestSource`] may be slow per request: an exact-length prompt is
//! encoded and adjusted, a dataset row is tokenized, a trace's shared blocks
//! are assembled. [`Prefetch`] runs the source on a thread of its own that
//! keeps a bounded buffer of built requests ahead of the executor, and the
//! run starts only once the buffer is full (or the source is exhausted): a
//! run of up to [`CAPACITY`] requests is built entirely before its first
//! send, and a longer one is built beside it, as fast as the source goes.
//! `BENCHMARKS.md` has the build rates against the send rates they feed.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::source::{FollowUps, Planned, RequestSource};
use crate::shard::ShardOf;

/// Requests built ahead of the executor. A 32k-token prompt is about
/// 200 KB, so the buffer stays near 200 MB even then.
pub const CAPACITY: usize = 1024;

/// The receiving end of a source running on its own thread.
pub struct Prefetch {
    inner: Inner,
    follow_ups: Option<Arc<dyn FollowUps>>,
}

enum Inner {
    Thread {
        rx: mpsc::Receiver<(u64, Planned)>,
        primed: watch::Receiver<bool>,
    },
    /// Built on demand on the caller's task: for tests under paused time,
    /// where a thread's real time would let the paused clock run ahead.
    Inline(Numbered),
}

/// A source whose new items are numbered in the order it makes them, and
/// kept only where this shard owns them ([`ShardOf`]): the others are
/// built (the source's state — its random stream, its prefix groups seen —
/// moves on exactly as in one process) and dropped.
struct Numbered {
    source: Box<dyn RequestSource>,
    next: u64,
    shard: Option<ShardOf>,
}

impl Numbered {
    fn next(&mut self) -> Option<(u64, Planned)> {
        // A shard that sits the run out sends nothing: nothing to build.
        if self.shard.is_some_and(|s| s.idle()) {
            return None;
        }
        loop {
            let p = self.source.next()?;
            let k = self.next;
            self.next += 1;
            if self.shard.is_none_or(|s| s.owns(k)) {
                return Some((k, p));
            }
        }
    }
}

impl Prefetch {
    /// Start building from `source`, at most `capacity` requests ahead.
    /// The thread ends when the source is exhausted or the `Prefetch` is
    /// dropped.
    pub fn start(source: Box<dyn RequestSource>, capacity: usize) -> std::io::Result<Self> {
        Self::start_shard(source, capacity, None)
    }

    /// The same for one shard of a sharded plan: only the requests `shard`
    /// owns are kept (and counted against `capacity`).
    pub fn start_shard(
        source: Box<dyn RequestSource>,
        capacity: usize,
        shard: Option<ShardOf>,
    ) -> std::io::Result<Self> {
        let capacity = capacity.clamp(1, CAPACITY);
        let follow_ups = source.follow_ups();
        let mut source = Numbered {
            source,
            next: 0,
            shard,
        };
        let (tx, rx) = mpsc::channel(capacity);
        let (primed_tx, primed) = watch::channel(false);
        std::thread::Builder::new()
            .name("goodput-workload".into())
            .spawn(move || {
                let mut built = 0usize;
                while let Some(p) = source.next() {
                    if tx.blocking_send(p).is_err() {
                        return;
                    }
                    built += 1;
                    if built == capacity {
                        primed_tx.send_replace(true);
                    }
                }
                primed_tx.send_replace(true);
            })?;
        Ok(Prefetch {
            inner: Inner::Thread { rx, primed },
            follow_ups,
        })
    }

    /// Build each request when it is asked for, on the caller's task.
    pub fn inline(source: Box<dyn RequestSource>) -> Self {
        Self::inline_shard(source, None)
    }

    /// The same for one shard of a sharded plan.
    pub fn inline_shard(source: Box<dyn RequestSource>, shard: Option<ShardOf>) -> Self {
        Prefetch {
            follow_ups: source.follow_ups(),
            inner: Inner::Inline(Numbered {
                source,
                next: 0,
                shard,
            }),
        }
    }

    /// Resolves once the buffer is full or the source is exhausted.
    pub async fn primed(&mut self) {
        if let Inner::Thread { primed, .. } = &mut self.inner {
            // An error means the thread ended, which primes too.
            let _ = primed.wait_for(|p| *p).await;
        }
    }

    /// The next request, with its number among the source's new items
    /// (counting those other shards send); `None` once the source is exhausted.
    pub async fn next(&mut self) -> Option<(u64, Planned)> {
        match &mut self.inner {
            Inner::Thread { rx, .. } => rx.recv().await,
            Inner::Inline(source) => source.next(),
        }
    }

    /// The source's builder of sessions' follow-up turns.
    pub fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        self.follow_ups.clone()
    }
}
