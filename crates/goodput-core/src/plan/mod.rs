//! The plan wing: many runs against one target.
//!
//! A [`PreparedTarget`] is prepared once and runs any number of
//! [`RunSpec`]s; [`sweep()`] walks a range of loads for a [`SweepSpec`], a
//! [`Search`] finds the highest load that holds the SLO, [`summarize`] reads
//! repeats of one plan, and a [`Coordinator`] with its [`Follower`]s splits
//! one plan across machines.

pub(crate) mod knee;
pub(crate) mod repeat;
pub(crate) mod search;
pub(crate) mod shard;
pub(crate) mod sweep;
pub(crate) mod target;

pub use self::repeat::{summarize, RepeatResult};
pub use self::search::{Answer, Budget, Observation, Search, Step};
pub use self::shard::coordinator::Coordinator;
pub use self::shard::follower::Follower;
pub use self::shard::merge::ShardsReport;
pub use self::shard::offline::merge_parts;
pub use self::shard::part::{write_line, Part, PartEnd, PartHeader, PartLine};
pub use self::shard::ShardError;
/// A sharded run's layer over a prepared target: this process's place,
/// joining, following the coordinator, finishing.
pub mod sharding {
    pub use super::shard::process::{finish, follow, join, missing, Place, PlaceError};
}
pub use self::sweep::{
    describe_workload, fill_frontier_plan, frontier, headline, in_tasks, observe_metrics,
    point_line, search_config, search_windows, sweep, Frontier, FrontierPoint, Region, Regions,
    StopReason, SweepLive, SweepMode, SweepPoint, SweepResult, SweepSpec, FLAT_GAIN, PLAN_CAP,
};
pub use self::target::{
    unstarted, PreparedTarget, Role, RunError, RunSpec, ServerMetricsChoice, Sharding,
    TargetOptions,
};
pub use crate::load::schedule::ShardOf;
