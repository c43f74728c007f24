//! Building requests beside the run, never on its send path.
//!
//! A [`RequestSource`] may be slow per request: an exact-length prompt is
//! encoded and adjusted, a dataset row is tokenized, a trace's shared blocks
//! are assembled. [`Prefetch`] runs the source on a thread of its own that
//! keeps a buffer of built requests ahead of the executor: the first
//! [`COUNT_AHEAD`] whatever their size, then up to [`BYTES_AHEAD`] bytes, and
//! never more than the plan sends. The run starts only once the buffer is
//! full (or the source is exhausted): a run whose requests fit in it is
//! built entirely before its first send, so no build competes with the
//! sends for a core; a longer one is built beside it, at a lower priority
//! than the request path, in refills of half the buffer that offer the core
//! every few dozen requests (the thread sleeps in between, and neither
//! side wakes the other for every request).
//! `BENCHMARKS.md` has the build rates against the send rates they feed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::{mpsc, watch};

use super::source::{FollowUps, Planned, RequestSource};
use crate::load::schedule::ShardOf;

/// Bytes of built requests held ahead of the executor beyond the first
/// [`COUNT_AHEAD`]: 3,800 short prompts (some 0.2 s of a 20,000 req/s open
/// loop, refilled by halves). More held no better, and cost peak RSS
/// (10,000 streams: 148 MiB with 16 MiB ahead, 135 with 2).
pub const BYTES_AHEAD: usize = 2 << 20;

/// Requests held ahead whatever their bytes: a first wave of long prompts
/// (64 streams of 128,000 tokens) is built before the run starts.
pub const COUNT_AHEAD: usize = 1024;

/// What one built request holds: its body and its own struct (the rest,
/// shared `Arc`s, is counted once elsewhere).
fn footprint(p: &Planned) -> usize {
    p.request.body.len() + std::mem::size_of::<(u64, Planned)>()
}

/// The fill level the builder and the executor share.
struct Level {
    /// Bytes and requests in the buffer.
    bytes: AtomicUsize,
    count: AtomicUsize,
    /// The builder is asleep until the buffer is down to half.
    asleep: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    bytes_max: usize,
    count_max: usize,
    /// Below this count the bytes do not bound the buffer.
    count_min: usize,
}

impl Level {
    fn full(&self) -> bool {
        let count = self.count.load(Ordering::SeqCst);
        count >= self.count_max
            || (count >= self.count_min && self.bytes.load(Ordering::SeqCst) >= self.bytes_max)
    }

    fn half_empty(&self) -> bool {
        let count = self.count.load(Ordering::SeqCst);
        count <= self.count_max / 2
            && (count <= self.count_min / 2
                || self.bytes.load(Ordering::SeqCst) <= self.bytes_max / 2)
    }

    /// The builder, after a full buffer: sleep until it is half empty (or
    /// the executor is gone).
    fn wait_for_room(&self, gone: impl Fn() -> bool) {
        let mut g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.asleep.store(true, Ordering::SeqCst);
        while !self.half_empty() && !gone() {
            g = self.wake.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        self.asleep.store(false, Ordering::SeqCst);
    }

    /// The executor took a request of `bytes`.
    fn took(&self, bytes: usize) {
        self.bytes.fetch_sub(bytes, Ordering::SeqCst);
        self.count.fetch_sub(1, Ordering::SeqCst);
        if self.asleep.load(Ordering::SeqCst) && self.half_empty() {
            self.wake_builder();
        }
    }

    fn wake_builder(&self) {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.wake.notify_one();
    }
}

/// The receiving end of a source running on its own thread.
pub struct Prefetch {
    inner: Inner,
    follow_ups: Option<Arc<dyn FollowUps>>,
}

enum Inner {
    Thread {
        rx: mpsc::UnboundedReceiver<(u64, Planned, usize)>,
        primed: watch::Receiver<bool>,
        level: Arc<Level>,
    },
    /// Built on demand on the caller's task: for tests under paused time,
    /// where a thread's real time would let the paused clock run ahead.
    #[cfg(test)]
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
    /// Start building from `source`, at most `capacity` requests ahead (and,
    /// beyond the first [`COUNT_AHEAD`], at most [`BYTES_AHEAD`] bytes). The
    /// thread ends when the source is exhausted or the `Prefetch` is dropped.
    #[cfg(test)]
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
        Self::start_bounded(source, capacity, (COUNT_AHEAD, BYTES_AHEAD), shard)
    }

    /// `ahead`: the count below which bytes do not bound the buffer, and the
    /// bytes that bound it beyond.
    fn start_bounded(
        source: Box<dyn RequestSource>,
        capacity: usize,
        ahead: (usize, usize),
        shard: Option<ShardOf>,
    ) -> std::io::Result<Self> {
        let (count_min, bytes_max) = ahead;
        let follow_ups = source.follow_ups();
        let mut source = Numbered {
            source,
            next: 0,
            shard,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let (primed_tx, primed) = watch::channel(false);
        let level = Arc::new(Level {
            bytes: AtomicUsize::new(0),
            count: AtomicUsize::new(0),
            asleep: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            bytes_max: bytes_max.max(1),
            count_max: capacity.max(1),
            count_min,
        });
        let shared = level.clone();
        std::thread::Builder::new()
            .name("goodput-workload".into())
            .spawn(move || {
                let level = shared;
                let mut primed = false;
                let mut offer = crate::load::background::CoreOffer::default();
                while let Some((k, p)) = source.next() {
                    if primed {
                        offer.tick();
                    }
                    let bytes = footprint(&p);
                    // Counted before it is sent, so that the executor's
                    // `took` never runs ahead of the count.
                    level.bytes.fetch_add(bytes, Ordering::SeqCst);
                    level.count.fetch_add(1, Ordering::SeqCst);
                    if tx.send((k, p, bytes)).is_err() {
                        return;
                    }
                    if level.full() {
                        if !primed {
                            primed = true;
                            primed_tx.send_replace(true);
                            // The run is about to start: from here on the
                            // request path comes first.
                            crate::load::background::lower_thread_priority();
                        }
                        level.wait_for_room(|| tx.is_closed());
                        if tx.is_closed() {
                            return;
                        }
                    }
                }
                primed_tx.send_replace(true);
            })?;
        Ok(Prefetch {
            inner: Inner::Thread { rx, primed, level },
            follow_ups,
        })
    }

    /// Build each request when it is asked for, on the caller's task.
    #[cfg(test)]
    pub fn inline(source: Box<dyn RequestSource>) -> Self {
        Self::inline_shard(source, None)
    }

    /// The same for one shard of a sharded plan.
    #[cfg(test)]
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
        match &mut self.inner {
            // An error means the thread ended, which primes too.
            Inner::Thread { primed, .. } => {
                let _ = primed.wait_for(|p| *p).await;
            }
            #[cfg(test)]
            Inner::Inline(_) => {}
        }
    }

    /// The next request, with its number among the source's new items
    /// (counting those other shards send); `None` once the source is exhausted.
    pub async fn next(&mut self) -> Option<(u64, Planned)> {
        match &mut self.inner {
            Inner::Thread { rx, level, .. } => {
                let (k, p, bytes) = rx.recv().await?;
                level.took(bytes);
                Some((k, p))
            }
            #[cfg(test)]
            Inner::Inline(source) => source.next(),
        }
    }

    /// The source's builder of sessions' follow-up turns.
    pub fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        self.follow_ups.clone()
    }
}

impl Drop for Prefetch {
    /// A builder asleep on a full buffer sees the channel closed and ends.
    fn drop(&mut self) {
        match &mut self.inner {
            Inner::Thread { rx, level, .. } => {
                rx.close();
                level.wake_builder();
            }
            #[cfg(test)]
            Inner::Inline(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::protocol::PreparedRequest;
    use std::sync::atomic::AtomicU64;

    /// An endless source of requests with 10 KB bodies, counting what it built.
    struct Endless(Arc<AtomicU64>);

    impl RequestSource for Endless {
        fn next(&mut self) -> Option<Planned> {
            let id = self.0.fetch_add(1, Ordering::SeqCst);
            Some(Planned {
                request: PreparedRequest {
                    id,
                    body: vec![b'x'; 10_000].into(),
                    ..Default::default()
                },
                at: None,
            })
        }

        fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
            None
        }
    }

    fn built_settles(built: &AtomicU64) -> u64 {
        let mut last = u64::MAX;
        loop {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let now = built.load(Ordering::SeqCst);
            if now == last {
                return now;
            }
            last = now;
        }
    }

    /// The buffer is bounded by bytes as well as by count: a run primes with
    /// what fits, the builder sleeps until half of it is taken, refills, and
    /// hands every request over in order; dropping the receiver ends it.
    #[tokio::test]
    async fn the_buffer_is_bounded_by_bytes_and_refills_by_halves() {
        let built = Arc::new(AtomicU64::new(0));
        let per = 10_000 + std::mem::size_of::<(u64, Planned)>();
        let mut p =
            Prefetch::start_bounded(Box::new(Endless(built.clone())), 1_000, (4, 20 * per), None)
                .unwrap();
        p.primed().await;
        assert_eq!(
            built_settles(&built),
            20,
            "primed with what fits in the bytes"
        );
        for want in 0..10 {
            assert_eq!(p.next().await.unwrap().0, want);
        }
        // Ten taken of twenty: down to half, so the builder fills up again.
        assert_eq!(built_settles(&built), 30);
        for want in 10..200 {
            assert_eq!(p.next().await.unwrap().0, want);
        }
        drop(p);
        let ended = built_settles(&built);
        assert!(
            ended <= 221,
            "the builder ended with the receiver ({ended} built)"
        );
    }

    /// Below the count floor the bytes do not bound the buffer: a first wave
    /// of long prompts is built whole.
    #[tokio::test]
    async fn the_first_requests_are_held_whatever_their_bytes() {
        let built = Arc::new(AtomicU64::new(0));
        let p = Prefetch::start_bounded(Box::new(Endless(built.clone())), 1_000, (64, 1), None)
            .unwrap();
        let mut p = p;
        p.primed().await;
        assert_eq!(built_settles(&built), 64);
        assert_eq!(p.next().await.unwrap().0, 0);
    }

    /// The count bound still holds where the bytes are small.
    #[tokio::test]
    async fn the_buffer_is_bounded_by_count() {
        let built = Arc::new(AtomicU64::new(0));
        let mut p =
            Prefetch::start_bounded(Box::new(Endless(built.clone())), 8, (0, usize::MAX), None)
                .unwrap();
        p.primed().await;
        assert_eq!(built_settles(&built), 8);
        assert_eq!(p.next().await.unwrap().0, 0);
    }
}
