//! Sharded runs: one plan sent by N processes (on one machine or many
//! pods), started at one instant, merged into one exact result.
//!
//! - [`plan`]: which requests each shard sends ([`ShardOf`], [`RunPlan::for_shard`](crate::load::executor::RunPlan::for_shard)).
//! - [`wire`]: the messages between the coordinator (shard 0) and the other
//!   shards, one JSON object per line over TCP.
//! - [`coordinator`] and [`follower`]: registration, clock offsets, the
//!   common start, the upload of records.
//! - [`part`]: a shard's raw part (records on its own clock, its summary),
//!   as written to `--part` and read by `goodput merge`.
//! - [`merge`]: the union of the parts, placed on the coordinator's clock,
//!   summarized exactly as one process would have summarized it.
//! - [`process`]: this process's place in the run, the layer a command puts
//!   over its prepared target: join, follow the coordinator's orders, finish.

pub mod plan;

pub use crate::load::schedule::ShardOf;
pub mod coordinator;
pub mod follower;
pub mod merge;
pub mod offline;
pub mod part;
pub mod process;
pub mod wire;

use std::time::Duration;

pub use coordinator::{Coordinator, LostShard};
pub use follower::Follower;

/// Why a sharded run could not be set up or carried on.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// On the coordinator: some shards did not register within the timeout.
    #[error("shards {} never registered with the coordinator within {timeout:?} (is each started with the same --shards and --coordinator?)", list(missing))]
    NeverRegistered {
        /// Indexes of the shards that never registered, in order.
        missing: Vec<u32>,
        /// How long the coordinator waited (`--coordinator-timeout`).
        timeout: Duration,
    },
    /// On another shard: the coordinator could not be dialed in time.
    #[error("the coordinator at {coordinator} did not answer within {timeout:?} ({why})")]
    Unreachable {
        /// The coordinator's address, as given (`--coordinator HOST:PORT`).
        coordinator: String,
        /// How long the shard kept dialing (`--coordinator-timeout`).
        timeout: Duration,
        /// The last connection error (`no attempt` when none completed).
        why: String,
    },
    /// The coordinator refused to register this shard, and why (another
    /// `--shards`, another goodput version, a bad or duplicate index).
    #[error("the coordinator refused this shard: {0}")]
    Refused(String),
    /// The connection to the coordinator failed, or sent a malformed message.
    #[error("the coordinator's connection failed: {0}")]
    Link(#[from] wire::LinkError),
}

/// `1, 2 and 3`.
fn list(v: &[u32]) -> String {
    let s: Vec<String> = v.iter().map(u32::to_string).collect();
    match s.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}
