//! The coordinator: shard 0 of a sharded run. It waits for every other
//! shard to register, measures each one's clock offset, orders each run
//! (a `goodput run`, or each point of a sweep), starts all shards at one
//! instant, and gathers their parts.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;

use crate::plan::shard::part::{Part, PartLine};
use crate::plan::shard::wire::{Link, LinkError, PointOrder, ToCoordinator, ToShard};
use crate::plan::shard::ShardError;
use crate::request::clock::RunClock;

/// Clock samples taken per shard; the one with the smallest round trip gives the offset.
const CLOCK_SAMPLES: usize = 8;

/// A registered shard's connection and clock.
struct Peer {
    link: Link,
    offset_ns: i64,
    rtt_ns: u64,
}

/// A shard that left the run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LostShard {
    pub shard: u32,
    pub why: String,
}

/// What a shard's run gave back: its part, or why there is none (or only
/// part of one).
pub struct Gathered {
    pub shard: u32,
    pub part: Part,
    /// Set when the part is missing or cut short.
    pub lost: Option<String>,
}

/// Shard 0's side of a sharded run.
pub struct Coordinator {
    shards: u32,
    clock: RunClock,
    /// By shard index; `None` for shard 0 (this process) and lost shards.
    peers: Vec<Option<Peer>>,
    /// Shards lost so far, in the order they were lost.
    lost: Vec<LostShard>,
    /// How long a shard may take to answer (register, be ready, report).
    timeout: Duration,
    /// Whether the current point's start was sent.
    started: bool,
}

impl Coordinator {
    /// Accept shards 1..N on `listener` until all have registered, then
    /// measure their clocks. An error, naming them, when some never
    /// registered within `timeout`.
    pub async fn gather(
        listener: TcpListener,
        shards: u32,
        clock: RunClock,
        timeout: Duration,
    ) -> Result<Coordinator, ShardError> {
        let mut peers: Vec<Option<Peer>> = (0..shards).map(|_| None).collect();
        let deadline = tokio::time::Instant::now() + timeout;
        let version = env!("CARGO_PKG_VERSION");
        while peers.iter().skip(1).any(Option::is_none) {
            let accepted = tokio::time::timeout_at(deadline, listener.accept()).await;
            let Ok(Ok((stream, _))) = accepted else {
                if accepted.is_ok() {
                    continue;
                }
                let missing = (1..shards)
                    .filter(|&i| peers[i as usize].is_none())
                    .collect();
                return Err(ShardError::NeverRegistered { missing, timeout });
            };
            let mut link = Link::new(stream);
            let hello = link.recv_within(Duration::from_secs(5)).await;
            let refuse = match hello {
                Ok(ToCoordinator::Hello {
                    shard,
                    shards: n,
                    version: v,
                }) => {
                    if n != shards {
                        Some(format!("it was started with --shards {n}, the coordinator with --shards {shards}"))
                    } else if v != version {
                        Some(format!(
                            "it is goodput {v}, the coordinator goodput {version}"
                        ))
                    } else if shard == 0 || shard >= shards {
                        Some(format!("shard {shard} is not one of 1..{shards}"))
                    } else if peers[shard as usize].is_some() {
                        Some(format!("shard {shard} has already registered"))
                    } else {
                        if link.send(&ToShard::Welcome).await.is_ok() {
                            peers[shard as usize] = Some(Peer {
                                link,
                                offset_ns: 0,
                                rtt_ns: 0,
                            });
                        }
                        continue;
                    }
                }
                // Not a shard (a port scan, a health check): ignored.
                _ => continue,
            };
            if let Some(why) = refuse {
                let _ = link.send(&ToShard::Refused(why)).await;
            }
        }
        let mut c = Coordinator {
            shards,
            clock,
            peers,
            lost: Vec::new(),
            timeout,
            started: false,
        };
        c.measure_clocks().await;
        Ok(c)
    }

    /// Each shard's clock offset: several pings, the sample with the
    /// smallest round trip (its error is at most half that round trip).
    async fn measure_clocks(&mut self) {
        let clock = self.clock;
        for i in 1..self.shards {
            let Some(peer) = self.peers[i as usize].as_mut() else {
                continue;
            };
            let mut best: Option<(u64, i64)> = None;
            let mut failed = None;
            for _ in 0..CLOCK_SAMPLES {
                let sent_ns = clock.now_ns();
                if let Err(e) = peer.link.send(&ToShard::Ping { sent_ns }).await {
                    failed = Some(e);
                    break;
                }
                match peer.link.recv_within(self.timeout).await {
                    Ok(ToCoordinator::Pong { sent_ns: s, at_ns }) if s == sent_ns => {
                        let back = clock.now_ns();
                        let rtt = back - sent_ns;
                        let offset = at_ns as i64 - (sent_ns + rtt / 2) as i64;
                        if best.is_none_or(|(r, _)| rtt < r) {
                            best = Some((rtt, offset));
                        }
                    }
                    Ok(_) => failed = Some(LinkError::Malformed("not a pong".into())),
                    Err(e) => failed = Some(e),
                }
                if failed.is_some() {
                    break;
                }
            }
            match (failed, best) {
                (None, Some((rtt, offset))) => {
                    peer.rtt_ns = rtt;
                    peer.offset_ns = offset;
                }
                (e, _) => self.lose(
                    i,
                    format!(
                        "its clock could not be read ({})",
                        e.map_or("no sample".into(), |e| e.to_string())
                    ),
                ),
            }
        }
    }

    /// Drop shard `i` from the run, saying why.
    fn lose(&mut self, i: u32, why: String) {
        if self.peers[i as usize].take().is_some() {
            self.lost.push(LostShard { shard: i, why });
        }
    }

    /// How many shards the run has (`--shards`), this one and lost ones
    /// included.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// Shards lost so far.
    pub fn lost(&self) -> &[LostShard] {
        &self.lost
    }

    /// Each registered shard's clock offset and its round trip (ns).
    pub fn clocks(&self) -> Vec<(u32, i64, u64)> {
        let mut v = vec![(0, 0, 0)];
        v.extend(
            self.peers
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.as_ref().map(|p| (i as u32, p.offset_ns, p.rtt_ns))),
        );
        v
    }

    /// Order every shard to run `order`'s plan (each takes its part). The
    /// clocks are read again first: over a long sweep, two machines'
    /// monotonic clocks drift apart by some µs a second.
    pub async fn announce(&mut self, order: &PointOrder) {
        self.started = false;
        self.measure_clocks().await;
        for i in 1..self.shards {
            let Some(peer) = self.peers[i as usize].as_mut() else {
                continue;
            };
            let mine = PointOrder {
                clock_offset_ns: peer.offset_ns,
                clock_rtt_ns: peer.rtt_ns,
                ..order.clone()
            };
            if let Err(e) = peer.link.send(&ToShard::Point(Box::new(mine))).await {
                self.lose(i, format!("it could not be sent the run ({e})"));
            }
        }
    }

    /// Wait until every shard is ready, then start them all: the start is
    /// far enough ahead for the order to reach the farthest shard. Returns
    /// the common start on this process's clock. A shard that fails or goes
    /// silent meanwhile is lost; the others start without it.
    pub async fn start(&mut self) -> Instant {
        let mut max_rtt = 0;
        for i in 1..self.shards {
            let Some(peer) = self.peers[i as usize].as_mut() else {
                continue;
            };
            let why = loop {
                match peer.link.recv_within(self.timeout).await {
                    Ok(ToCoordinator::Ready) => break None,
                    Ok(ToCoordinator::Failed(why)) => break Some(format!("it failed: {why}")),
                    Ok(_) => continue,
                    Err(e) => break Some(format!("it was not ready ({e})")),
                }
            };
            match why {
                Some(why) => self.lose(i, why),
                None => max_rtt = max_rtt.max(peer.rtt_ns),
            }
        }
        let lead = Duration::from_millis(25).max(Duration::from_nanos(max_rtt * 4));
        let at = crate::request::clock::now() + lead;
        let at_ns = self.clock.ns(at);
        for i in 1..self.shards {
            if let Some(peer) = self.peers[i as usize].as_mut() {
                if let Err(e) = peer.link.send(&ToShard::Start { at_ns }).await {
                    self.lose(i, format!("it could not be started ({e})"));
                }
            }
        }
        self.started = true;
        at
    }

    /// Gather every shard's part of the run just ended, for at most
    /// `wait` (the shards end their runs as this process does, then
    /// send). A shard whose part does not come whole is lost, with what it
    /// sent kept.
    pub async fn gather_parts(&mut self, wait: Duration) -> Vec<Gathered> {
        if !self.started {
            for p in self.peers.iter_mut().flatten() {
                let _ = p.link.send(&ToShard::Cancel).await;
            }
        }
        let mut tasks = Vec::new();
        for i in 1..self.shards {
            if let Some(peer) = self.peers[i as usize].take() {
                tasks.push((i, tokio::spawn(read_part(peer, wait))));
            }
        }
        let mut gathered = Vec::new();
        for (i, task) in tasks {
            let (peer, part, lost) = match task.await {
                Ok(x) => x,
                Err(e) => (
                    None,
                    Part::default(),
                    Some(format!("its reader failed ({e})")),
                ),
            };
            self.peers[i as usize] = peer;
            if let Some(why) = &lost {
                self.lost.push(LostShard {
                    shard: i,
                    why: why.clone(),
                });
            }
            gathered.push(Gathered {
                shard: i,
                part,
                lost,
            });
        }
        gathered
    }

    /// Tell every shard there are no more runs.
    pub async fn finish(&mut self) {
        for p in self.peers.iter_mut().flatten() {
            let _ = p.link.send(&ToShard::Finish).await;
        }
    }
}

/// Read one shard's part to its end line, within `wait`. The peer comes
/// back unless its connection failed.
async fn read_part(mut peer: Peer, wait: Duration) -> (Option<Peer>, Part, Option<String>) {
    let mut part = Part::default();
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let msg = tokio::time::timeout_at(deadline, peer.link.recv::<ToCoordinator>()).await;
        let why = match msg {
            Ok(Ok(ToCoordinator::Part(line))) => {
                let end = matches!(*line, PartLine::End(_));
                match part.push(*line) {
                    Ok(()) if end => return (Some(peer), part, None),
                    Ok(()) => continue,
                    Err(e) => format!("its part was malformed ({e})"),
                }
            }
            Ok(Ok(ToCoordinator::Failed(why))) => format!("it failed: {why}"),
            Ok(Ok(_)) => continue,
            Ok(Err(e)) => format!(
                "its connection ended after {} records ({e}): the process died or was killed",
                part.records.len()
            ),
            Err(_) => format!(
                "its part did not arrive within {wait:?} ({} records came)",
                part.records.len()
            ),
        };
        return (None, part, Some(why));
    }
}
