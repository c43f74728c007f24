//! This process's place in a sharded run (`--shards N`): shard 0 binds
//! `--coordinator`, waits for the others and merges; another shard dials
//! it, then runs each plan it is ordered to until the coordinator is done.
//! Without `--shards` (or with `--shards 1`) nothing here runs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use goodput_core::load::Progress;
use goodput_core::plan::{Coordinator, Follower, ShardError, ShardOf};
use goodput_core::plan::{Role, RunSpec, Sharding};

use crate::cli::{OutputArgs, ShardArgs};
use crate::exit::{run_error, usage, Code, Exit};
use crate::session::Session;

/// Where this process stands in a sharded run, from its flags.
pub struct Place {
    pub of: ShardOf,
    coordinator: String,
    /// Where this shard's part goes: `--part`, and for a shard other than
    /// 0 its `--out`.
    parts: Vec<PathBuf>,
    timeout: Duration,
}

impl Place {
    /// This process is shard 0.
    pub fn coordinates(&self) -> bool {
        self.of.shard == 0
    }
}

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
    join(place, session).await?;
    if place.coordinates() {
        return Ok(None);
    }
    let code = follow(session, spec, quiet).await;
    session.finish().await;
    code.map(Some)
}

/// Take this process's place: shard 0 listens and waits for every other
/// shard (and measures their clocks); another shard registers with it.
/// A signal meanwhile ends the wait (exit 130).
pub async fn join(place: &Place, session: &mut Session) -> Result<(), Exit> {
    let clock = session.target.clock();
    let role = tokio::select! {
        biased;
        _ = session.control.stopped() => {
            return Err(Exit(Code::Interrupted, anyhow!("interrupted while the shards gathered")));
        }
        r = connect(place, clock) => r?,
    };
    session.target.set_sharding(Sharding {
        role,
        of: place.of,
        part_files: place.parts.clone(),
        wait: place.timeout,
    });
    Ok(())
}

async fn connect(place: &Place, clock: goodput_core::request::RunClock) -> Result<Role, Exit> {
    // Every way of not getting one's place is a shard missing from the run.
    let shard_error = |e: ShardError| Exit(Code::ShardMissing, anyhow::Error::new(e));
    if place.coordinates() {
        let addr = listen_address(&place.coordinator).map_err(usage)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("shard 0 listening on {addr} (--coordinator)"))
            .map_err(usage)?;
        eprintln!(
            "goodput: shard 0 of {}: waiting on {addr} for the other shards",
            place.of.shards
        );
        let c = Coordinator::gather(listener, place.of.shards, clock, place.timeout)
            .await
            .map_err(shard_error)?;
        let worst = c.clocks().iter().map(|c| c.2).max().unwrap_or(0);
        eprintln!(
            "goodput: all {} shards registered; clock offsets measured (largest round trip {:.3} ms); the progress line counts shard 0's own requests",
            place.of.shards,
            worst as f64 / 1e6
        );
        Ok(Role::Coordinator(Arc::new(tokio::sync::Mutex::new(c))))
    } else {
        let f = Follower::join(&place.coordinator, place.of, clock, place.timeout)
            .await
            .map_err(shard_error)?;
        eprintln!(
            "goodput: shard {} of {}: registered with {}",
            place.of.shard, place.of.shards, place.coordinator
        );
        Ok(Role::Follower(Arc::new(tokio::sync::Mutex::new(f))))
    }
}

/// Where shard 0 listens: the address of `--coordinator` when its host is
/// an IP address, else every interface at its port (a DNS name such as a
/// headless Service's pod name resolves to this pod's own address).
fn listen_address(coordinator: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = coordinator.parse::<SocketAddr>() {
        return Ok(a);
    }
    let port = coordinator
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .ok_or_else(|| anyhow!("--coordinator {coordinator}: expected HOST:PORT"))?;
    Ok(SocketAddr::from(([0, 0, 0, 0], port)))
}

/// Another shard's whole life: run each plan the coordinator orders, with
/// the rest of this command line, until it is done. Exit 0 when every
/// order ran; a lost coordinator is exit 6.
pub async fn follow(session: &mut Session, spec: &RunSpec, quiet: bool) -> Result<Code, Exit> {
    let Some(Sharding {
        role: Role::Follower(follower),
        of,
        ..
    }) = session.target.sharding()
    else {
        return Err(Exit(Code::Internal, anyhow!("follow without a follower")));
    };
    let (follower, of) = (follower.clone(), *of);
    let mut n = 0;
    loop {
        let order = tokio::select! {
            biased;
            _ = session.control.stopped() => {
                return Err(Exit(Code::Interrupted, anyhow!("shard {}: interrupted between runs", of.shard)));
            }
            o = async { follower.lock().await.next_order().await } => o,
        };
        let order = match order {
            Ok(Some(o)) => o,
            Ok(None) => break,
            Err(e) => {
                return Err(Exit(
                    Code::ShardMissing,
                    anyhow!("shard {}: {e} (the coordinator stopped or died)", of.shard),
                ))
            }
        };
        n += 1;
        let progress = Arc::new(Progress::default());
        let control = session.control.child();
        let r = session
            .target
            .run_order(order, spec, &mut session.sink, &control, progress)
            .await
            .map_err(run_error)?;
        if let Some(note) = &r.note {
            eprintln!("goodput: note: {note}");
        }
        if !quiet {
            eprintln!(
                "goodput: shard {} of {}, run {n}: sent {} ({} warm-up), completed {}, failed {}; its records went to shard 0",
                of.shard, of.shards, r.exec.sent_measured, r.exec.sent_warmup, r.completed, r.failed
            );
        }
    }
    if !quiet {
        eprintln!(
            "goodput: shard {}: the coordinator is done after {n} runs; the merged result is shard 0's",
            of.shard
        );
    }
    Ok(Code::Ok)
}

/// Shard 0 is done: tell the others, so they end.
pub async fn finish(session: &Session) {
    if let Some(Sharding {
        role: Role::Coordinator(c),
        ..
    }) = session.target.sharding()
    {
        c.lock().await.finish().await;
    }
}

/// The exit code a merged result calls for: 6 when a shard is missing.
pub fn missing(r: &goodput_core::output::RunResult) -> Option<Exit> {
    let s = r.shards.as_ref()?;
    if s.lost.is_empty() {
        return None;
    }
    let names: Vec<String> = s
        .lost
        .iter()
        .map(|l| format!("shard {} ({})", l.shard, l.why))
        .collect();
    Some(Exit(
        Code::ShardMissing,
        anyhow!(
            "the merged result is missing {}: {}",
            names.join(", "),
            match s.unaccounted_requests {
                Some(n) => format!("{n} planned requests are unaccounted for"),
                None => "its requests cannot be counted".into(),
            }
        ),
    ))
}
