//! The plan wing: many runs against one target.
//!
//! [`target`] prepares a target once and runs plans against it; [`sweep`]
//! walks a range of loads, [`search`] finds the highest load that holds the
//! SLO, [`knee`] reads where the curve bends, [`repeat`] runs one plan
//! several times, and [`shard`] splits one plan across machines.

pub mod knee;
pub mod repeat;
pub mod search;
pub mod shard;
pub mod sweep;
pub mod target;
