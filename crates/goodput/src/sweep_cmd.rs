//! `goodput sweep`: many load points against one prepared target — the
//! latency–throughput curve, its knees, and goodput under an SLO, ending
//! with the goodput line. Every point is written to `--out` as it finishes,
//! so an interrupted sweep keeps what it measured.

use anyhow::anyhow;
use goodput_core::output::Saved;
use goodput_core::output::{self, Exporter};
use goodput_core::plan::{self, SweepResult, SweepSpec};

use crate::cli::{SearchKind, SweepArgs};
use crate::exit::{run_error, usage, Code, Exit};
use crate::session::Session;
use crate::setup;
use crate::spec;

pub fn main(args: SweepArgs) -> Result<Code, Exit> {
    if args.common.load.search == Some(SearchKind::Goodput)
        && spec::slo(&args.common.slo).is_none_or(|s| !s.is_gate())
    {
        return Err(usage(anyhow!(
            "--search goodput needs an SLO: add --slo 'ttft:p99<=200ms' (and more terms) or --slo-attainment"
        )));
    }
    let replay = &args.common.workload.replay;
    if replay.trace.is_some() && replay.is_agents() {
        // Agents' trajectories start at the rate (tasks/s) or in the
        // lanes a point asks for; the capacity probe of an automatic
        // sweep counts requests.
        let s = &args.common.load;
        if s.search.is_none() && s.rates.is_empty() && s.concurrencies.is_empty() {
            return Err(usage(anyhow!(
                "a sweep of agent trajectories needs its loads: --search goodput (with an SLO, e.g. --slo task:p90:120s), --rates (tasks/s) or --concurrencies (tasks in flight)"
            )));
        }
    } else if replay.trace.is_some() {
        return Err(usage(anyhow!(
            "a trace sets its own arrival times, so a sweep cannot vary the load: use `goodput run --trace FILE --trace-speed X` at several speeds"
        )));
    }
    let s = &args.common.load;
    let streams = s.concurrencies.iter().copied().max().or(s.max_concurrency);
    let with_sim = args.common.target.url.is_none();
    setup::before_threads(streams, with_sim, &args.common.workload.tokenizer)?;
    setup::runtime(args.common.target.client_threads)?.block_on(sweep_async(args))
}

async fn sweep_async(mut args: SweepArgs) -> Result<Code, Exit> {
    let spec = spec::sweep_spec(&args.common)?;
    let workload = plan::describe_workload(args.common.target.endpoint, &spec.base);
    let unstarted = |_: &goodput_core::plan::TargetOptions| {
        document_bytes(&SweepResult::unstarted(&spec, workload.clone()))
    };
    let has_url = args.common.target.url.is_some();
    let place = crate::sharding::place(&args.common.shards, &mut args.common.output, has_url)?;
    let mut session = Session::start(&args.common, &unstarted).await?;
    let quiet = args.common.output.quiet;
    if let Some(code) =
        crate::sharding::enter(place.as_ref(), &mut session, &spec.base, quiet).await?
    {
        return Ok(code);
    }
    let result = run_points(&mut session, &spec, quiet, args.common.output.no_progress).await;
    crate::sharding::finish(&session).await;
    let result = result?;
    let stopping = session.control.is_stopping();
    let items = [(
        session.label("sweep"),
        Saved::Sweep(Box::new(result.clone())),
    )];
    let saved = session.save(&items);
    if !quiet {
        session.say(&String::from_utf8_lossy(&output::Console.to_bytes(&items)));
    } else if let Some(h) = plan::headline(&result) {
        session.say(&format!("{h}\n"));
    }
    saved?;
    session.finish().await;
    if let Some(e) = result
        .points
        .iter()
        .find_map(|p| crate::sharding::missing(&p.result))
    {
        return Err(e);
    }
    verdict(&result, stopping, args.common.load.search)
}

/// Run the sweep's points with the progress display, saving the document
/// to `--out` as each point finishes (an interrupted sweep keeps what it
/// measured) and saying each point on stderr unless `quiet` (the progress
/// display also not with `no_progress`).
async fn run_points(
    session: &mut Session,
    spec: &SweepSpec,
    quiet: bool,
    no_progress: bool,
) -> Result<SweepResult, Exit> {
    let Session {
        control,
        target,
        sink,
        out,
        ..
    } = session;
    let mut write_error = None;
    let (mut said_points, mut said_sizing, mut said_revision) = (0, false, None);
    let agents = spec.base.workload.source.is_agents();
    let mut on_point = |r: &SweepResult, _: &goodput_core::load::Progress| {
        if let (Some(p), false) = (r.points.last(), quiet || r.points.len() == said_points) {
            eprintln!("{}", plan::point_line(r.points.len(), p));
        }
        said_points = r.points.len();
        // What settling the search's answer takes, once, before its
        // measuring points run.
        if let (Some(z), false) = (&r.search_sizing, quiet || said_sizing) {
            eprintln!("goodput: {}", plan::in_tasks(z.describe(), agents));
            said_sizing = true;
        }
        // Said again when the measuring points moved it.
        let revised = r.search_sizing.and_then(|z| z.revised);
        if let (Some(line), false) = (
            r.search_sizing.and_then(|z| z.describe_revision()),
            quiet || revised == said_revision,
        ) {
            eprintln!("goodput: {}", plan::in_tasks(line, agents));
        }
        said_revision = revised;
        // Saved as each point finishes: an interrupted sweep keeps what it measured.
        if let Err(e) = out.write(&document_bytes(r)) {
            write_error.get_or_insert(e);
        }
    };
    let live = std::sync::Arc::new(plan::SweepLive::default());
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    crate::progress::spawn(
        crate::progress::Watched::Sweep(live.clone()),
        crate::progress::Bounds {
            requests: None,
            duration: None,
        },
        quiet || no_progress,
        done_rx,
    );
    let result = plan::sweep(target, spec, sink, control, &live, &mut on_point).await;
    let _ = done_tx.send(true);
    tokio::task::yield_now().await;
    let result = result.map_err(run_error)?;
    match write_error {
        Some(e) => Err(e.into()),
        None => Ok(result),
    }
}

/// The sweep's exit code (README, "Exit codes"): 130 when a signal
/// (`stopping`) came before any point, 3 when no point ran or none
/// completed a request, 5 or 130 when the goodput `search` stopped before
/// its answer (the time limit or a signal), 1 when the goodput is 0.
fn verdict(result: &SweepResult, stopping: bool, search: Option<SearchKind>) -> Result<Code, Exit> {
    if result.points.is_empty() && stopping {
        return Err(Exit(
            Code::Interrupted,
            anyhow!("interrupted before any sweep point measured a request"),
        ));
    }
    if result.points.is_empty() {
        return Err(Exit(
            Code::NothingCompleted,
            anyhow!(
                "no sweep point ran{}",
                result
                    .stopped
                    .as_ref()
                    .map(|s| format!(": {s}"))
                    .unwrap_or_default()
            ),
        ));
    }
    if result
        .points
        .iter()
        .all(|p| p.result.metrics.completed == 0)
    {
        return Err(Exit(
            Code::NothingCompleted,
            anyhow!("no request completed at any point"),
        ));
    }
    // Cut short by a signal: whatever it found, a script must be able to
    // tell (exit 130); what was measured is written all the same.
    if stopping {
        eprintln!(
            "goodput: interrupted after {} points; results kept",
            result.points.len()
        );
        return Ok(Code::Interrupted);
    }
    if result.goodput.is_none() && search == Some(SearchKind::Goodput) {
        let why = result.stopped.as_ref();
        eprintln!(
            "goodput: the search stopped before it found the goodput ({})",
            why.map_or("no reason given".into(), |w| w.to_string())
        );
        // A signal's code for a signal; the time limit has its own.
        return Ok(match why {
            Some(plan::StopReason::MaxTime(_)) => Code::TimeLimit,
            _ => Code::Interrupted,
        });
    }
    if let Some(why) = result.gate_failure() {
        eprintln!("goodput: {why}");
        return Ok(Code::GateFailed);
    }
    Ok(Code::Ok)
}

/// The sweep's results JSON so far (written again as each point finishes).
fn document_bytes(r: &SweepResult) -> Vec<u8> {
    output::Json.to_bytes(&[(String::new(), Saved::Sweep(Box::new(r.clone())))])
}
