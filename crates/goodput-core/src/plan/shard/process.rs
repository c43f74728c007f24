//! This process's place in a sharded run (`--shards N`): shard 0 binds
//! the coordinator's address, waits for the others and merges; another
//! shard dials it, then runs each plan it is ordered to until the
//! coordinator is done. The layer a command puts over its prepared target:
//! [`join`] once, then either the command's own runs (shard 0, whose runs
//! the target coordinates) or [`follow`] (every other shard), and
//! [`finish`] at the end.
//!
//! Nothing here prints: what the user should hear is passed to `say`, one
//! line at a time, without the program's name.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::load::executor::{Progress, RunControl};
use crate::load::schedule::ShardOf;
use crate::measure::aggregate::RecordsSink;
use crate::output::result::RunResult;
use crate::plan::shard::{Coordinator, Follower, ShardError};
use crate::plan::target::{PreparedTarget, Role, RunError, RunSpec, Sharding};

/// Where this process stands in a sharded run, from its flags.
#[derive(Debug, Clone)]
pub struct Place {
    /// Which shard, of how many.
    pub of: ShardOf,
    /// Shard 0's address, `HOST:PORT` (`--coordinator`).
    pub coordinator: String,
    /// Where this shard's part goes: `--part`, and for a shard other than
    /// 0 its `--out`.
    pub parts: Vec<PathBuf>,
    /// How long to wait for the others (`--coordinator-timeout`).
    pub timeout: Duration,
}

impl Place {
    /// This process is shard 0.
    pub fn coordinates(&self) -> bool {
        self.of.shard == 0
    }
}

/// Why this process could not take or keep its place.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    /// A signal ended the wait or the runs.
    #[error("{0}")]
    Interrupted(String),
    /// A shard is missing from the run: it never registered, the
    /// coordinator could not be reached, or it stopped.
    #[error(transparent)]
    Shard(#[from] ShardError),
    /// The coordinator stopped or died while this shard waited for orders.
    #[error("{0}")]
    CoordinatorLost(String),
    /// Shard 0 could not listen where `--coordinator` says.
    #[error("{what}")]
    Listen {
        /// What was tried.
        what: String,
        /// The operating system's answer.
        #[source]
        source: std::io::Error,
    },
    /// `--coordinator` is no `HOST:PORT`.
    #[error("{0}")]
    Address(String),
    /// A run this shard was ordered to failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A fault of goodput's own.
    #[error("{0}")]
    Internal(String),
}

/// Take this process's place: shard 0 listens and waits for every other
/// shard (and measures their clocks); another shard registers with it.
/// A signal meanwhile ends the wait.
pub async fn join(
    place: &Place,
    target: &mut PreparedTarget,
    control: &RunControl,
    say: &mut dyn FnMut(String),
) -> Result<(), PlaceError> {
    let clock = target.clock();
    let role = tokio::select! {
        biased;
        _ = control.stopped() => {
            return Err(PlaceError::Interrupted("interrupted while the shards gathered".into()));
        }
        r = connect(place, clock, say) => r?,
    };
    target.set_sharding(Sharding {
        role,
        of: place.of,
        part_files: place.parts.clone(),
        wait: place.timeout,
    });
    Ok(())
}

async fn connect(
    place: &Place,
    clock: crate::request::RunClock,
    say: &mut dyn FnMut(String),
) -> Result<Role, PlaceError> {
    if place.coordinates() {
        let addr = listen_address(&place.coordinator)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| PlaceError::Listen {
                what: format!("shard 0 listening on {addr} (--coordinator)"),
                source,
            })?;
        say(format!(
            "shard 0 of {}: waiting on {addr} for the other shards",
            place.of.shards
        ));
        let c = Coordinator::gather(listener, place.of.shards, clock, place.timeout).await?;
        let worst = c.clocks().iter().map(|c| c.2).max().unwrap_or(0);
        say(format!(
            "all {} shards registered; clock offsets measured (largest round trip {:.3} ms); the progress line counts shard 0's own requests",
            place.of.shards,
            worst as f64 / 1e6
        ));
        Ok(Role::Coordinator(Arc::new(tokio::sync::Mutex::new(c))))
    } else {
        let f = Follower::join(&place.coordinator, place.of, clock, place.timeout).await?;
        say(format!(
            "shard {} of {}: registered with {}",
            place.of.shard, place.of.shards, place.coordinator
        ));
        Ok(Role::Follower(Arc::new(tokio::sync::Mutex::new(f))))
    }
}

/// Where shard 0 listens: the address of `--coordinator` when its host is
/// an IP address, else every interface at its port (a DNS name such as a
/// headless Service's pod name resolves to this pod's own address).
fn listen_address(coordinator: &str) -> Result<SocketAddr, PlaceError> {
    if let Ok(a) = coordinator.parse::<SocketAddr>() {
        return Ok(a);
    }
    let port = coordinator
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .ok_or_else(|| {
            PlaceError::Address(format!("--coordinator {coordinator}: expected HOST:PORT"))
        })?;
    Ok(SocketAddr::from(([0, 0, 0, 0], port)))
}

/// Another shard's whole life: run each plan the coordinator orders, with
/// the rest of this command line (`spec`), until it is done. `Ok` when
/// every order ran; `quiet` keeps the per-run lines unsaid.
pub async fn follow(
    target: &PreparedTarget,
    sink: &mut RecordsSink,
    spec: &RunSpec,
    control: &RunControl,
    quiet: bool,
    say: &mut dyn FnMut(String),
) -> Result<(), PlaceError> {
    let Some(Sharding {
        role: Role::Follower(follower),
        of,
        ..
    }) = target.sharding()
    else {
        return Err(PlaceError::Internal("follow without a follower".into()));
    };
    let (follower, of) = (follower.clone(), *of);
    let mut n = 0;
    loop {
        let order = tokio::select! {
            biased;
            _ = control.stopped() => {
                return Err(PlaceError::Interrupted(format!("shard {}: interrupted between runs", of.shard)));
            }
            o = async { follower.lock().await.next_order().await } => o,
        };
        let order = match order {
            Ok(Some(o)) => o,
            Ok(None) => break,
            Err(e) => {
                return Err(PlaceError::CoordinatorLost(format!(
                    "shard {}: {e} (the coordinator stopped or died)",
                    of.shard
                )))
            }
        };
        n += 1;
        let progress = Arc::new(Progress::default());
        let run_control = control.child();
        let r = target
            .run_order(order, spec, sink, &run_control, progress)
            .await?;
        if let Some(note) = &r.note {
            say(format!("note: {note}"));
        }
        if !quiet {
            say(format!(
                "shard {} of {}, run {n}: sent {} ({} warm-up), completed {}, failed {}; its records went to shard 0",
                of.shard, of.shards, r.exec.sent_measured, r.exec.sent_warmup, r.completed, r.failed
            ));
        }
    }
    if !quiet {
        say(format!(
            "shard {}: the coordinator is done after {n} runs; the merged result is shard 0's",
            of.shard
        ));
    }
    Ok(())
}

/// Shard 0 is done: tell the others, so they end.
pub async fn finish(target: &PreparedTarget) {
    if let Some(Sharding {
        role: Role::Coordinator(c),
        ..
    }) = target.sharding()
    {
        c.lock().await.finish().await;
    }
}

/// What a merged result is missing, said in words: `None` when every
/// shard's part is in it.
pub fn missing(r: &RunResult) -> Option<String> {
    let s = r.shards.as_ref()?;
    if s.lost.is_empty() {
        return None;
    }
    let names: Vec<String> = s
        .lost
        .iter()
        .map(|l| format!("shard {} ({})", l.shard, l.why))
        .collect();
    Some(format!(
        "the merged result is missing {}: {}",
        names.join(", "),
        match s.unaccounted_requests {
            Some(n) => format!("{n} planned requests are unaccounted for"),
            None => "its requests cannot be counted".into(),
        }
    ))
}
