//! A shard other than 0: it dials the coordinator (retrying, since pods
//! start in any order), registers, answers clock pings, and runs what it
//! is ordered to, starting at the instant it is given.

use std::time::{Duration, Instant};

use tokio::net::TcpStream;

use crate::plan::shard::part::PartLine;
use crate::plan::shard::wire::{Link, LinkError, PointOrder, ToCoordinator, ToShard};
use crate::plan::shard::{ShardError, ShardOf};
use crate::request::clock::RunClock;

/// How often a shard retries the coordinator before it answers.
const RETRY: Duration = Duration::from_millis(200);

/// A registered shard's side of the run.
pub struct Follower {
    of: ShardOf,
    link: Link,
    clock: RunClock,
    /// This shard's clock minus the coordinator's, from the current order.
    offset_ns: i64,
}

impl Follower {
    /// Dial `coordinator` until it answers (within `timeout`) and register.
    pub async fn join(
        coordinator: &str,
        of: ShardOf,
        clock: RunClock,
        timeout: Duration,
    ) -> Result<Follower, ShardError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last = String::from("no attempt");
        let stream = loop {
            match tokio::time::timeout_at(deadline, TcpStream::connect(coordinator)).await {
                Ok(Ok(s)) => break s,
                Ok(Err(e)) => last = e.to_string(),
                Err(_) => {}
            }
            if tokio::time::Instant::now() + RETRY >= deadline {
                return Err(ShardError::Unreachable {
                    coordinator: coordinator.to_string(),
                    timeout,
                    why: last,
                });
            }
            tokio::time::sleep(RETRY).await;
        };
        let mut link = Link::new(stream);
        link.send(&ToCoordinator::Hello {
            shard: of.shard,
            shards: of.shards,
            version: env!("CARGO_PKG_VERSION").into(),
        })
        .await?;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match link.recv_within(left.max(Duration::from_secs(5))).await? {
            ToShard::Welcome => Ok(Follower {
                of,
                link,
                clock,
                offset_ns: 0,
            }),
            ToShard::Refused(why) => Err(ShardError::Refused(why)),
            _ => Err(LinkError::Malformed("expected a welcome".into()).into()),
        }
    }

    /// Which shard this is, of how many (`--shard`, `--shards`).
    pub fn shard(&self) -> ShardOf {
        self.of
    }

    /// Answer a clock ping.
    async fn pong(&mut self, sent_ns: u64) -> Result<(), ShardError> {
        let at_ns = self.clock.now_ns();
        Ok(self
            .link
            .send(&ToCoordinator::Pong { sent_ns, at_ns })
            .await?)
    }

    /// The next run to do (None: the coordinator finished). Clock pings
    /// are answered meanwhile.
    pub async fn next_order(&mut self) -> Result<Option<PointOrder>, ShardError> {
        loop {
            match self.link.recv().await? {
                ToShard::Ping { sent_ns } => self.pong(sent_ns).await?,
                ToShard::Point(order) => {
                    self.offset_ns = order.clock_offset_ns;
                    return Ok(Some(*order));
                }
                ToShard::Finish => return Ok(None),
                _ => {}
            }
        }
    }

    /// Say the run is ready and wait for the common start: the instant on
    /// this process's clock (None: called off, or the coordinator is gone).
    pub async fn ready(&mut self) -> Option<Instant> {
        self.link.send(&ToCoordinator::Ready).await.ok()?;
        loop {
            match self.link.recv().await.ok()? {
                ToShard::Ping { sent_ns } => self.pong(sent_ns).await.ok()?,
                ToShard::Start { at_ns } => {
                    let local = (at_ns as i64).saturating_add(self.offset_ns).max(0) as u64;
                    return Some(self.clock.instant(local));
                }
                ToShard::Cancel | ToShard::Finish => return None,
                _ => {}
            }
        }
    }

    /// Send this shard's part, line by line (in batches of about 64 KB).
    pub async fn send_part(
        &mut self,
        lines: impl Iterator<Item = PartLine>,
    ) -> Result<(), ShardError> {
        for line in lines {
            self.link.queue(&ToCoordinator::Part(Box::new(line)))?;
            if self.link.queued() >= 1 << 16 {
                self.link.flush().await?;
            }
        }
        Ok(self.link.flush().await?)
    }

    /// Tell the coordinator this shard could not run the point.
    pub async fn fail(&mut self, why: String) {
        let _ = self.link.send(&ToCoordinator::Failed(why)).await;
    }
}
