//! This process's place in a sharded run (`--shards N`), read from its
//! flags, and the exit codes of goodput-core's sharding layer
//! ([`goodput_core::plan::sharding`]): shard 0 binds `--coordinator`,
//! waits for the others and merges; another shard dials it, then runs
//! each plan it is ordered to until the coordinator is done. Without
//! `--shards` (or with `--shards 1`) nothing here runs.

use std::path::PathBuf;

use anyhow::{anyhow, Context};
use goodput_core::plan::sharding::{self, Place, PlaceError};
use goodput_core::plan::{RunSpec, ShardOf};

use crate::cli::{OutputArgs, ShardArgs};
use crate::exit::{run_error, usage, Code, Exit};
use crate::session::Session;

/// Read the shard flags: None for a run of one process. `{shard}` in the
/// output paths becomes the index (so one command line, on a volume every
/// pod mounts, gives each shard its own files); a shard other than 0 takes
/// its `--out` for its part (shard 0 writes the merged result there).
pub fn place(
    flags: &ShardArgs,
    output: &mut OutputArgs,
    has_url: bool,
) -> Result<Option<Place>, Exit> {
    if flags.shards == 1 {
        return Ok(None);
    }
    let shard = flags.shard.ok_or_else(|| {
        usage(anyhow!(
            "--shards {} needs this process's index: --shard I (0 to {}), or JOB_COMPLETION_INDEX in the environment",
            flags.shards,
            flags.shards - 1
        ))
    })?;
    let of = ShardOf::new(flags.shards, shard).map_err(|e| usage(anyhow!(e)))?;
    let coordinator = flags.coordinator.clone().ok_or_else(|| {
        usage(anyhow!(
            "--shards needs --coordinator HOST:PORT: the address shard 0 listens on and the others dial"
        ))
    })?;
    if !has_url {
        return Err(usage(anyhow!(
            "--shards needs --url: every shard must load the same server (without --url each would start its own simulator; start one with `goodput sim` and pass its URL)"
        )));
    }
    let index =
        |p: &PathBuf| PathBuf::from(p.to_string_lossy().replace("{shard}", &shard.to_string()));
    for p in [
        &mut output.out,
        &mut output.records,
        &mut output.csv,
        &mut output.html,
    ] {
        *p = p.as_ref().map(index);
    }
    let mut parts: Vec<PathBuf> = flags.part.iter().map(index).collect();
    if shard != 0 {
        parts.extend(output.out.take());
        // A part is one process's; its report would be one shard's figures.
        output.csv = None;
        output.html = None;
    }
    for p in &parts {
        // A part is appended to as the run goes: start each run's file empty.
        std::fs::File::create(p)
            .with_context(|| format!("creating the part file {}", p.display()))
            .map_err(usage)?;
    }
    Ok(Some(Place {
        of,
        coordinator,
        parts,
        timeout: flags.coordinator_timeout,
    }))
}

/// Enter a sharded run, if the flags asked for one: take this process's
/// place and, for a shard other than 0, do its whole part (every run the
/// coordinator orders) — its exit code is returned, and the command ends
/// there. `None`: go on (shard 0, or a run of one process).
pub async fn enter(
    place: Option<&Place>,
    session: &mut Session,
    spec: &RunSpec,
    quiet: bool,
) -> Result<Option<Code>, Exit> {
    let Some(place) = place else {
        return Ok(None);
    };
    let mut say = |line: String| eprintln!("goodput: {line}");
    sharding::join(place, &mut session.target, &session.control, &mut say)
        .await
        .map_err(exit)?;
    if place.coordinates() {
        return Ok(None);
    }
    let followed = sharding::follow(
        &session.target,
        &mut session.sink,
        spec,
        &session.control,
        quiet,
        &mut say,
    )
    .await;
    session.finish().await;
    followed.map(|()| Some(Code::Ok)).map_err(exit)
}

/// The exit code of each way of not taking or keeping one's place: a
/// shard missing from the run is 6.
fn exit(e: PlaceError) -> Exit {
    match e {
        PlaceError::Interrupted(m) => Exit(Code::Interrupted, anyhow!(m)),
        PlaceError::CoordinatorLost(m) => Exit(Code::ShardMissing, anyhow!(m)),
        e @ PlaceError::Shard(_) => Exit(Code::ShardMissing, anyhow::Error::new(e)),
        e @ PlaceError::Listen { .. } => usage(anyhow::Error::new(e)),
        PlaceError::Address(m) => usage(anyhow!(m)),
        PlaceError::Run(e) => run_error(e),
        PlaceError::Internal(m) => Exit(Code::Internal, anyhow!(m)),
    }
}

/// Shard 0 is done: tell the others, so they end.
pub async fn finish(session: &Session) {
    sharding::finish(&session.target).await;
}

/// The exit code a merged result calls for: 6 when a shard is missing.
pub fn missing(r: &goodput_core::output::RunResult) -> Option<Exit> {
    sharding::missing(r).map(|m| Exit(Code::ShardMissing, anyhow!(m)))
}
