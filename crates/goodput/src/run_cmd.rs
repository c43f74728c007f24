//! `goodput run`: one benchmark at one load point.
//!
//! Every flag was validated by its parser before this runs. Signals are
//! watched from the first instant (SIGINT and SIGTERM alike; the first stops
//! sending — or whatever is being prepared — and lets in-flight requests
//! finish, the second cancels them), then the built-in simulator starts when
//! no `--url` is given, the target is prepared once, the plan runs, and the
//! summary, the results JSON and the records file are written.

use std::sync::Arc;

use anyhow::anyhow;
use goodput_core::load::Progress;
use goodput_core::output::Saved;
use goodput_core::output::{self, Exporter};
use goodput_core::plan::RunError;

use crate::cli::RunArgs;
use crate::exit::{run_error, usage, Code, Exit};
use crate::session::Session;
use crate::setup;
use crate::spec;

pub fn main(args: RunArgs) -> Result<Code, Exit> {
    // Agent trajectories take their load from the flags: --concurrency N
    // trajectories in flight, or --request-rate R trajectories a second.
    if args.common.workload.replay.trace.is_some()
        && !args.common.workload.replay.is_agents()
        && (args.common.load.concurrency.is_some() || args.common.load.request_rate.is_some())
    {
        return Err(usage(anyhow!(
            "--trace cannot be used with --concurrency or --request-rate: the trace sets the arrival times (scale them with --trace-speed; cap in-flight requests with --max-concurrency)"
        )));
    }
    // Closed loop and capped open loop know their streams in advance.
    let streams = spec::run_load(&args.common.load).concurrency_cap();
    let with_sim = args.common.target.url.is_none();
    setup::before_threads(streams, with_sim, &args.common.workload.tokenizer)?;
    setup::runtime(args.common.target.client_threads)?.block_on(run_async(args))
}

async fn run_async(mut args: RunArgs) -> Result<Code, Exit> {
    let mut spec = spec::run_spec(spec::run_load(&args.common.load), &args.common)?;
    let repeats = args.repeat as usize;
    spec.keep_outputs = repeats > 1;
    let unstarted = |o: &goodput_core::plan::TargetOptions| {
        let r = goodput_core::plan::unstarted(o, &spec);
        output::Json.to_bytes(&[("run".into(), Saved::Run(Box::new(r)))])
    };
    let (quiet, place) = (args.common.output.quiet, sharded(&mut args)?);
    let mut session = Session::start(&args.common, &unstarted).await?;
    if let Some(code) = crate::sharding::enter(place.as_ref(), &mut session, &spec, quiet).await? {
        return Ok(code);
    }
    let mut results = Vec::with_capacity(repeats);
    for i in 0..repeats {
        if repeats > 1 && !args.common.output.quiet {
            eprintln!("goodput: repeat {} of {repeats}", i + 1);
        }
        let progress = Arc::new(Progress::default());
        let (done_tx, done_rx) = tokio::sync::watch::channel(false);
        crate::progress::spawn(
            crate::progress::Watched::Run(progress.clone()),
            crate::progress::Bounds {
                requests: spec.plan.num_prompts,
                duration: spec.plan.duration,
            },
            args.common.output.quiet || args.common.output.no_progress,
            done_rx,
        );
        let result = session
            .target
            .run(&spec, &mut session.sink, &session.control, progress)
            .await;
        let _ = done_tx.send(true);
        tokio::task::yield_now().await;
        match result {
            Ok(r) => {
                let stop = r.exec.interrupted;
                results.push(r);
                if stop {
                    break;
                }
            }
            // Stopped while its connections opened: nothing sent, but the
            // results file still says so.
            Err(RunError::Interrupted) if results.is_empty() => {
                let r = session.target.unstarted(&spec);
                session.save(&[("run".into(), Saved::Run(Box::new(r)))])?;
                return Err(run_error(RunError::Interrupted));
            }
            // A later repeat stopped before it sent: the earlier ones stand.
            Err(RunError::Interrupted) => break,
            Err(e) => return Err(run_error(e)),
        }
    }
    crate::sharding::finish(&session).await;
    if repeats > 1 {
        return finish_repeats(args, session, results, &spec).await;
    }
    finish_run(&args, session, results).await
}

/// Report a single run: the summary, the files, and its exit code.
async fn finish_run(
    args: &RunArgs,
    mut session: Session,
    results: Vec<goodput_core::output::RunResult>,
) -> Result<Code, Exit> {
    // A signal during the warm-up: no measured request was sent, so there
    // is no result to judge (exit 130), but what ran is written all the same.
    let before_measuring = results[0].exec.interrupted && results[0].exec.sent_measured == 0;
    let items = [(
        session.label("run"),
        Saved::Run(Box::new(results[0].clone())),
    )];
    if !args.common.output.quiet {
        let text = String::from_utf8_lossy(&output::Console.to_bytes(&items)).into_owned();
        session.say(&if args.common.output.intervals_apart {
            output::intervals_apart(&text)
        } else {
            text
        });
    } else {
        for n in &results[0].notes {
            eprintln!("goodput: note: {n}");
        }
        for w in &results[0].warnings {
            eprintln!("goodput: warning: {}", w.message);
        }
    }
    session.save(&items)?;
    session.finish().await;
    if before_measuring {
        eprintln!(
            "goodput: interrupted before any measured request was sent ({} warm-up requests ran)",
            results[0].exec.sent_warmup
        );
        return Ok(Code::Interrupted);
    }
    if let Some(e) = crate::sharding::missing(&results[0]) {
        return Err(e);
    }
    // Cut short by a signal (sending stopped early, or requests in flight
    // cancelled): whatever it measured, a script must be able to tell (exit
    // 130); the results are written all the same. A single signal during
    // the drain cuts nothing short.
    let r = &results[0];
    if session.control.is_stopping() && (r.exec.interrupted || r.metrics.incomplete > 0) {
        eprintln!(
            "goodput: interrupted after {} measured requests were sent; results kept",
            results[0].exec.sent_measured
        );
        return Ok(Code::Interrupted);
    }
    gate(&results[0], args.common.slo.max_error_rate)
}

/// This process's place in a sharded run (`--shards`), if any; a
/// sharded plan is not repeated.
fn sharded(args: &mut RunArgs) -> Result<Option<goodput_core::plan::sharding::Place>, Exit> {
    let has_url = args.common.target.url.is_some();
    let place = crate::sharding::place(&args.common.shards, &mut args.common.output, has_url)?;
    if place.is_some() && args.repeat > 1 {
        return Err(usage(anyhow!(
            "--repeat cannot be used with --shards: run the sharded plan again instead"
        )));
    }
    Ok(place)
}

/// Report a `--repeat` set: the summary across repeats on stdout, the
/// repeat document in `--out`; the exit code is the worst repeat's.
async fn finish_repeats(
    args: RunArgs,
    mut session: Session,
    results: Vec<goodput_core::output::RunResult>,
    spec: &goodput_core::plan::RunSpec,
) -> Result<Code, Exit> {
    let summary = goodput_core::plan::summarize(
        &results,
        args.common.target.temperature,
        spec.workload.same_prompts_every_run(),
    );
    let repeat = goodput_core::plan::RepeatResult {
        runs: results,
        summary,
    };
    // The exit code: the worst repeat's (3 when one completed nothing).
    let mut worst = Ok(Code::Ok);
    for r in &repeat.runs {
        worst = match (worst, gate(r, args.common.slo.max_error_rate)) {
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            (Ok(a), Ok(b)) => Ok(a.max(b)),
        };
    }
    let ran = repeat.runs.len();
    let items = [(session.label("repeat"), Saved::Repeat(Box::new(repeat)))];
    if !args.common.output.quiet {
        session.say(&String::from_utf8_lossy(&output::Console.to_bytes(&items)));
    }
    let interrupted = session.control.is_stopping();
    if ran < args.repeat as usize {
        eprintln!("goodput: stopped after {ran} of {} repeats", args.repeat);
    }
    session.save(&items)?;
    session.finish().await;
    if interrupted {
        return Ok(Code::Interrupted);
    }
    worst
}

/// Exit 1 when a gate failed: an SLO term's point estimate, the attainment,
/// or the error rate above `--max-error-rate`.
pub fn gate(result: &goodput_core::output::RunResult, max_error_rate: f64) -> Result<Code, Exit> {
    let m = &result.metrics;
    if m.completed == 0 {
        return Err(Exit(
            Code::NothingCompleted,
            anyhow!(
                "no request completed ({} failed{})",
                m.failed,
                m.errors
                    .examples
                    .iter()
                    .next()
                    .map(|(k, v)| format!("; e.g. {k}: {v}"))
                    .unwrap_or_default()
            ),
        ));
    }
    let mut code = Code::Ok;
    if m.errors.error_rate > max_error_rate {
        eprintln!(
            "goodput: error rate {:.2}% is above --max-error-rate {:.2}%",
            m.errors.error_rate * 100.0,
            max_error_rate * 100.0
        );
        code = Code::GateFailed;
    }
    if let Some(s) = m.slo.as_ref().filter(|s| s.slo.is_gate() && !s.meets) {
        eprintln!("goodput: the SLO was not met: {}", s.reasons.join("; "));
        code = Code::GateFailed;
    }
    Ok(code)
}
