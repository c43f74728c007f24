//! `goodput run`: one benchmark at one load point.
//!
//! Every flag was validated by its parser before this runs. Signals are
//! watched from the first instant (SIGINT and SIGTERM alike; the first stops
//! sending — or whatever is being prepared — and lets in-flight requests
//! finish, the second cancels them), then the built-in simulator starts when
//! no `--url` is given, the target is prepared once, the plan runs, and the
//! summary, the results JSON and the records file are written.

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use goodput_core::aggregate::RecordsSink;
use goodput_core::client::ClientOptions;
use goodput_core::executor::{Progress, RunControl, RunPlan};
use goodput_core::report::{self, Exporter};
use goodput_core::schedule::{Arrival, Load};
use goodput_core::target::{PreparedTarget, RunError, RunSpec, TargetOptions};
use goodput_core::workload::SyntheticSpec;

use crate::cli::RunArgs;
use crate::Exit;

/// Exit code of a run interrupted before any request was sent (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit code of an internal fault of goodput itself (never the server's).
pub const EXIT_INTERNAL: i32 = 4;

fn usage(e: impl Into<anyhow::Error>) -> Exit {
    Exit(2, e.into())
}

/// `--num-prompts`, defaulting to 200 unless `--duration` alone bounds the run.
fn num_prompts(args: &RunArgs) -> Option<u64> {
    match (args.num_prompts, args.duration) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(200),
    }
}

fn run_spec(args: &RunArgs) -> RunSpec {
    let load = match args.request_rate {
        Some(rate) => Load::Open {
            rate,
            arrival: args.burstiness.map(Arrival::Gamma).unwrap_or(args.arrival),
            max_concurrency: args.max_concurrency,
        },
        None => Load::Closed {
            concurrency: args.concurrency.or(args.max_concurrency).unwrap_or(8),
        },
    };
    RunSpec {
        plan: RunPlan {
            load,
            num_prompts: num_prompts(args),
            duration: args.duration,
            warmup: args.warmup,
            drain_timeout: args.drain_timeout.unwrap_or(args.timeout),
            seed: args.seed,
        },
        workload: SyntheticSpec {
            input_tokens: args.input_tokens,
            output_tokens: args.output_tokens,
            seed: args.seed,
            sessions: None,
        },
        percentiles: args.percentiles.0.clone(),
    }
}

fn target_options(args: &RunArgs, url: String, model: Option<String>) -> TargetOptions {
    let api_key = std::env::var(&args.api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    TargetOptions {
        client: ClientOptions {
            url,
            endpoint: args.endpoint,
            headers: args.headers.clone(),
            api_key,
            timeout: args.timeout,
            idle_timeout: args.idle_timeout,
            connect_timeout: args.connect_timeout,
            insecure: args.insecure,
        },
        model,
        stream: !args.no_stream,
        pin_output: !args.no_pin_output,
        temperature: None,
        tokenizer: args.tokenizer.clone(),
    }
}

/// Raise the open-file limit to the hard limit: thousands of streams need thousands of sockets.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit on a properly initialised struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

pub fn main(args: RunArgs) -> Result<i32, Exit> {
    raise_fd_limit();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(usage)?;
    rt.block_on(run_async(args))
}

/// Watch SIGINT and SIGTERM: the first stops sending (and any preparation),
/// the second cancels requests in flight.
pub fn watch_signals(control: RunControl) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        if next_signal(&mut term).await {
            eprintln!("\ngoodput: stopping: no new requests; waiting for those in flight (signal again to cancel them)");
            control.stop_sending();
            if next_signal(&mut term).await {
                eprintln!("goodput: cancelling requests in flight");
                control.cancel_in_flight();
            }
        }
    });
}

/// The next SIGINT or SIGTERM (false if signals cannot be watched).
async fn next_signal(term: &mut Option<tokio::signal::unix::Signal>) -> bool {
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.is_ok(),
        Some(()) = async {
            match term.as_mut() {
                Some(t) => t.recv().await,
                None => std::future::pending().await,
            }
        } => true,
    }
}

/// Replace the file's contents.
fn write_results(file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::{Seek, Write};
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(bytes)?;
    file.flush()
}

fn run_error(e: RunError) -> Exit {
    let code = match &e {
        RunError::Interrupted => EXIT_INTERRUPTED,
        RunError::Internal(_) => EXIT_INTERNAL,
        e if e.is_unreachable() => 3,
        _ => 2,
    };
    Exit(code, anyhow::Error::new(e))
}

async fn run_async(args: RunArgs) -> Result<i32, Exit> {
    let control = RunControl::new();
    watch_signals(control.clone());
    let spec = run_spec(&args);

    // Output files first: an unwritable path fails before anything is spent.
    let records: Option<Box<dyn std::io::Write + Send>> = match &args.records {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening records file {}", path.display()))
                .map_err(usage)?;
            Some(Box::new(std::io::BufWriter::with_capacity(64 * 1024, f)))
        }
        None => None,
    };
    // Kept open from the start: writing it at the end then needs no new file
    // descriptor, even when the run used every one the process may have.
    let mut out_file = match &args.out {
        Some(out) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(out)
                .with_context(|| format!("opening results file {}", out.display()))
                .map_err(usage)?,
        ),
        None => None,
    };

    // Without --url: the built-in simulator, in this process, over real HTTP.
    let mut _sim = None;
    let (url, model) = match &args.url {
        Some(u) => (u.clone(), args.model.clone()),
        None => {
            let sim = goodput_sim::SimServer::spawn(
                goodput_sim::SimConfig::default(),
                std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            )
            .context("starting the built-in simulator")
            .map_err(usage)?;
            let url = format!("http://{}", sim.local_addr());
            eprintln!(
                "goodput: no --url given; benchmarking the built-in simulator ('{}', simulated Llama-3.1-8B on one H100) at {url}",
                sim.model_name()
            );
            let model = args
                .model
                .clone()
                .or_else(|| Some(sim.model_name().to_string()));
            _sim = Some(sim);
            (url, model)
        }
    };

    let target = PreparedTarget::prepare(target_options(&args, url, model), &control)
        .await
        .map_err(run_error)?;
    let progress = Arc::new(Progress::default());
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    if !args.quiet && std::io::stderr().is_terminal() {
        crate::progress::spawn(progress.clone(), num_prompts(&args), done_rx);
    }
    let mut sink = RecordsSink::new(records, args.records_itl);
    let result = target.run(&spec, &mut sink, &control, progress).await;
    let _ = done_tx.send(true);
    tokio::task::yield_now().await;
    let result = result.map_err(run_error)?;
    let results = [result];

    if !args.quiet {
        print!(
            "{}",
            String::from_utf8_lossy(&report::Console.export(&results))
        );
    } else {
        for n in &results[0].notes {
            eprintln!("goodput: note: {n}");
        }
    }
    if let (Some(file), Some(path)) = (out_file.as_mut(), &args.out) {
        write_results(file, &report::Json.export(&results))
            .with_context(|| format!("writing {}", path.display()))
            .map_err(usage)?;
    }
    let m = &results[0].metrics;
    if m.completed == 0 {
        return Err(Exit(
            3,
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
    if m.errors.error_rate > args.max_error_rate {
        eprintln!(
            "goodput: error rate {:.2}% is above --max-error-rate {:.2}%",
            m.errors.error_rate * 100.0,
            args.max_error_rate * 100.0
        );
        return Ok(1);
    }
    Ok(0)
}
