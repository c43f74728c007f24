//! The messages between the coordinator and the other shards: one JSON
//! object per line over one TCP connection per shard, which the shard
//! opens. A shard's part ([`super::part`]) travels as its own lines.

use std::time::Duration;

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

use crate::load::executor::RunPlan;
use crate::measure::metrics::control_variate::ControlSpec;
use crate::plan::shard::part::PartLine;

/// What a shard says to the coordinator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToCoordinator {
    /// The first line: which shard this is, of how many, of which version.
    Hello {
        shard: u32,
        shards: u32,
        version: String,
    },
    /// The answer to a ping: its time echoed, and the shard's clock when
    /// the ping arrived.
    Pong { sent_ns: u64, at_ns: u64 },
    /// The run is built and its connections open: ready to start.
    Ready,
    /// A line of the shard's part, after its run.
    Part(Box<PartLine>),
    /// The shard could not run the point (its message).
    Failed(String),
}

/// What the coordinator says to a shard.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToShard {
    /// Registered.
    Welcome,
    /// Not registered, and why (a duplicate index, another shard count).
    Refused(String),
    /// A clock sample: the coordinator's time when it was sent.
    Ping { sent_ns: u64 },
    /// Run this plan (the whole plan: the shard takes its part).
    Point(Box<PointOrder>),
    /// Start at this instant on the coordinator's clock.
    Start { at_ns: u64 },
    /// The point is called off before its start (the coordinator stopped).
    Cancel,
    /// No more points: the shard ends.
    Finish,
}

/// One run of the sharded plan, as the coordinator orders it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PointOrder {
    pub plan: RunPlan,
    /// The SLO percentiles' schedule adjustment (a goodput search's points).
    pub control: Option<ControlSpec>,
    /// The prompts' salt: the same on every shard, as in one process.
    pub nonce: u64,
    pub run_id: String,
    /// The shard's clock minus the coordinator's (ns), and the round trip
    /// of that sample: the shard writes both into its part.
    pub clock_offset_ns: i64,
    pub clock_rtt_ns: u64,
}

/// Messages on a connection could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the connection closed")]
    Closed,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("an unreadable message ({0})")]
    Malformed(String),
    #[error("no message within {0:?}")]
    Timeout(Duration),
}

/// One end of a shard's connection: lines in, lines out.
pub struct Link {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    line: Vec<u8>,
    out: Vec<u8>,
}

impl Link {
    pub fn new(stream: TcpStream) -> Link {
        let _ = stream.set_nodelay(true);
        let (r, w) = stream.into_split();
        Link {
            reader: BufReader::with_capacity(1 << 16, r),
            writer: w,
            line: Vec::with_capacity(1 << 12),
            out: Vec::with_capacity(1 << 16),
        }
    }

    /// Send one message (written and flushed).
    pub async fn send<M: Serialize>(&mut self, msg: &M) -> Result<(), LinkError> {
        self.queue(msg)?;
        self.flush().await
    }

    /// Queue one message (sent at the next [`Link::flush`]).
    pub fn queue<M: Serialize>(&mut self, msg: &M) -> Result<(), LinkError> {
        serde_json::to_writer(&mut self.out, msg)
            .map_err(|e| LinkError::Malformed(e.to_string()))?;
        self.out.push(b'\n');
        Ok(())
    }

    /// Write what is queued.
    pub async fn flush(&mut self) -> Result<(), LinkError> {
        self.writer.write_all(&self.out).await?;
        self.out.clear();
        Ok(())
    }

    /// Queued bytes not yet written.
    pub fn queued(&self) -> usize {
        self.out.len()
    }

    /// The next message. Cancel-safe: a line read in part (a timeout, a
    /// `select!` that went another way) is kept and finished by the next call.
    pub async fn recv<M: DeserializeOwned>(&mut self) -> Result<M, LinkError> {
        // `read_until` keeps what it read when cancelled (`read_line` does not).
        if self.reader.read_until(b'\n', &mut self.line).await? == 0
            || self.line.last() != Some(&b'\n')
        {
            return Err(LinkError::Closed);
        }
        let msg =
            serde_json::from_slice(&self.line).map_err(|e| LinkError::Malformed(e.to_string()));
        self.line.clear();
        msg
    }

    /// The next message, within `limit`.
    pub async fn recv_within<M: DeserializeOwned>(
        &mut self,
        limit: Duration,
    ) -> Result<M, LinkError> {
        match tokio::time::timeout(limit, self.recv()).await {
            Ok(r) => r,
            Err(_) => Err(LinkError::Timeout(limit)),
        }
    }
}
