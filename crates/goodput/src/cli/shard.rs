//! The flags of a sharded run (`run` and `sweep`): one plan sent by N
//! processes, started together by a coordinator, merged into one result.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse::positive_duration;

/// `--shards`, `--shard`, `--coordinator`, `--part`, `--coordinator-timeout`.
#[derive(Args, Debug, Clone, Default)]
pub struct ShardArgs {
    /// Split the plan over N processes (pods, machines): each sends every Nth request of the
    /// same seeded plan (a closed loop's concurrency is split), all start at one instant, and
    /// shard 0 merges every record into one exact result (its --out, --records, --csv, --html);
    /// another shard's --out holds its own part, its --records its own requests. `{shard}` in
    /// any of these paths is replaced by the index. --url is required.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096), help_heading = "Shards")]
    pub shards: u32,
    /// This process's index, 0..N-1 (shard 0 is the coordinator). Read from
    /// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's pod index) when not given.
    #[arg(
        long,
        value_name = "I",
        env = "JOB_COMPLETION_INDEX",
        help_heading = "Shards"
    )]
    pub shard: Option<u32>,
    /// HOST:PORT of shard 0: it listens there (on every interface when HOST is a name), the
    /// other shards dial it and retry until --coordinator-timeout.
    #[arg(long, value_name = "HOST:PORT", help_heading = "Shards")]
    pub coordinator: Option<String>,
    /// Write this shard's raw part (its records on its own clock, its clock offset and summary)
    /// to FILE as JSON lines, for `goodput merge`; `{shard}` in FILE is replaced by the index.
    #[arg(long, value_name = "FILE", help_heading = "Shards")]
    pub part: Option<PathBuf>,
    /// How long shard 0 waits for every shard to register (and for a shard to be ready or to
    /// report after a run's drain); how long the others keep dialing shard 0.
    #[arg(long, alias = "shard-timeout", value_name = "DURATION", default_value = "120s", value_parser = positive_duration, help_heading = "Shards")]
    pub coordinator_timeout: Duration,
}

/// `goodput merge`: the part files of a sharded run made one result.
#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// Part files written by each shard's --part (every shard's, in any order; a file may
    /// hold the parts of several runs, each merged on its own).
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// Write the merged results JSON here (one run: a run document; several: the first's,
    /// and each later run to FILE with its index before the extension).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write every merged record here, one JSON line each, with its shard.
    #[arg(long, value_name = "FILE")]
    pub records: Option<PathBuf>,
    /// Write an HTML report of the merged result.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}
