//! `goodput run`: one benchmark at one load point.
//!
//! Builds the run options from the flags, starts the built-in simulator when
//! no `--url` is given, handles Ctrl-C (first: stop sending and let in-flight
//! requests finish; second: cancel them), and writes the summary, the
//! results JSON and the records file.

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use goodput_core::client::{ClientOptions, Endpoint};
use goodput_core::executor::{Progress, RunControl, RunPlan, Warmup};
use goodput_core::report;
use goodput_core::run::{self, RunOptions};
use goodput_core::schedule::{Arrival, Load};

use crate::cli::RunArgs;
use crate::Exit;

fn usage(e: impl Into<anyhow::Error>) -> Exit {
    Exit(2, e.into())
}

fn parse_warmup(s: &str) -> Result<Warmup, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u64>() {
        return Ok(if n == 0 {
            Warmup::None
        } else {
            Warmup::Requests(n)
        });
    }
    goodput_core::units::parse_duration(s)
        .map(Warmup::Duration)
        .map_err(|_| {
            format!("invalid --warmup '{s}': expected a request count (20) or a duration (10s)")
        })
}

/// `--num-prompts`, defaulting to 200 unless `--duration` alone bounds the run.
fn num_prompts(args: &RunArgs) -> Option<u64> {
    match (args.num_prompts, args.duration) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(200),
    }
}

fn build_options(args: &RunArgs, url: String, model: Option<String>) -> Result<RunOptions, Exit> {
    let load = match args.request_rate {
        Some(rate) => Load::Open {
            rate,
            arrival: args.burstiness.map(Arrival::Gamma).unwrap_or(args.arrival),
            max_concurrency: args.max_concurrency,
        },
        None => {
            let concurrency = args.concurrency.or(args.max_concurrency).unwrap_or(8);
            if concurrency == 0 {
                return Err(usage(anyhow!("--concurrency must be at least 1")));
            }
            Load::Closed { concurrency }
        }
    };
    if args.burstiness.is_some_and(|b| b <= 0.0 || !b.is_finite()) {
        return Err(usage(anyhow!("--burstiness must be a number > 0")));
    }
    if args.num_prompts == Some(0) {
        return Err(usage(anyhow!("--num-prompts must be at least 1")));
    }
    let api_key = std::env::var(&args.api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    Ok(RunOptions {
        client: ClientOptions {
            url,
            endpoint: if args.endpoint == "completions" {
                Endpoint::Completions
            } else {
                Endpoint::Chat
            },
            headers: args.headers.clone(),
            api_key,
            timeout: args.timeout,
            idle_timeout: args.idle_timeout,
            connect_timeout: args.connect_timeout,
            insecure: args.insecure,
        },
        model,
        input_tokens: args.input_tokens,
        output_tokens: args.output_tokens,
        stream: !args.no_stream,
        pin_output: !args.no_pin_output,
        tokenizer: args.tokenizer.clone(),
        plan: RunPlan {
            load,
            num_prompts: num_prompts(args),
            duration: args.duration,
            warmup: parse_warmup(&args.warmup).map_err(|e| usage(anyhow!(e)))?,
            drain_timeout: args.drain_timeout.unwrap_or(args.timeout),
            seed: args.seed,
        },
        percentiles: args.percentiles.0.clone(),
        records_itl: args.records_itl,
    })
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

async fn run_async(args: RunArgs) -> Result<i32, Exit> {
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
    let opts = build_options(&args, url, model)?;

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
    // Fail on an unwritable --out before spending the run.
    if let Some(out) = &args.out {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)
            .with_context(|| format!("opening results file {}", out.display()))
            .map_err(usage)?;
    }

    let control = RunControl::new();
    {
        let control = control.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ngoodput: stopping: no new requests; waiting for those in flight (Ctrl-C again to cancel them)");
                control.stop_sending();
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("goodput: cancelling requests in flight");
                    control.cancel_in_flight();
                }
            }
        });
    }
    let progress = Arc::new(Progress::default());
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    if !args.quiet && std::io::stderr().is_terminal() {
        crate::progress::spawn(progress.clone(), num_prompts(&args), done_rx);
    }
    let result = run::run(opts, control, records, progress).await;
    let _ = done_tx.send(true);
    tokio::task::yield_now().await;
    let result = result.map_err(|e| {
        let code = if e.is_unreachable() { 3 } else { 2 };
        Exit(code, anyhow::Error::new(e))
    })?;

    if !args.quiet {
        print!("{}", report::console::summary(&result));
    } else {
        for n in &result.notes {
            eprintln!("goodput: note: {n}");
        }
    }
    if let Some(out) = &args.out {
        let doc = report::json::run_json(&result);
        let text = serde_json::to_string_pretty(&doc).map_err(|e| usage(anyhow!(e)))?;
        std::fs::write(out, text + "\n")
            .with_context(|| format!("writing {}", out.display()))
            .map_err(usage)?;
    }
    let m = &result.metrics;
    if m.completed == 0 {
        return Err(Exit(
            3,
            anyhow!(
                "no request completed ({} failed{})",
                m.failed,
                m.sample_errors
                    .iter()
                    .next()
                    .map(|(k, v)| format!("; e.g. {k}: {v}"))
                    .unwrap_or_default()
            ),
        ));
    }
    if m.error_rate > args.max_error_rate {
        eprintln!(
            "goodput: error rate {:.2}% is above --max-error-rate {:.2}%",
            m.error_rate * 100.0,
            args.max_error_rate * 100.0
        );
        return Ok(1);
    }
    Ok(0)
}
