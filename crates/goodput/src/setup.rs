//! What `run` and `sweep` share before and after measuring: signals, output
//! files, the built-in simulator when no `--url` is given, the prepared
//! target, and the specs built from the flags.

use std::fs::File;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use goodput_core::aggregate::RecordsSink;
use goodput_core::client::ClientOptions;
use goodput_core::cost::CostSpec;
use goodput_core::executor::{RunControl, RunPlan, Warmup, WarmupPolicy};
use goodput_core::schedule::{Arrival, Load, RampUp};
use goodput_core::server_metrics::ScrapeOptions;
use goodput_core::slo::Slo;
use goodput_core::target::{PreparedTarget, RunError, RunSpec, ServerMetricsChoice, TargetOptions};
use goodput_core::workload::dataset::{load_dataset, DatasetOptions, Exhausted};
use goodput_core::workload::trace::{load_trace, TraceOptions};
use goodput_core::workload::{
    PrefixSpec, SessionShape, SourceSpec, SyntheticSpec, TextBuilder, WorkloadSpec,
};

use crate::cli::{BoundsArgs, CommonArgs, CostArgs, SloArgs, WorkloadArgs};
use crate::exit::{run_error, usage, Code, Exit};

/// Raise the open-file limit to the hard limit: thousands of streams need thousands of sockets.
pub fn raise_fd_limit() {
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

/// Descriptors the process needs besides its connections (standard streams,
/// output files, the runtime's epoll and wakers, the simulator's listener).
const FD_OVERHEAD: u64 = 48;

/// Stop before sending when `streams` connections (twice that with the
/// built-in simulator in the same process, which holds the other end)
/// cannot fit under the open-file limit, after [`raise_fd_limit`]: the
/// failures would be the client's own, not the server's.
pub fn check_fd_limit(streams: Option<usize>, with_sim: bool) -> Result<(), Exit> {
    let Some(n) = streams else { return Ok(()) };
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit on a properly initialised struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(());
    }
    let need = n as u64 * if with_sim { 2 } else { 1 } + FD_OVERHEAD;
    if lim.rlim_cur < need {
        return Err(usage(anyhow!(
            "{n} concurrent streams need about {need} open files, but the limit is {} (hard limit {}): raise it (`ulimit -n {need}` in the shell, `LimitNOFILE=` for systemd, `--ulimit nofile={need}` for Docker) or lower the concurrency",
            lim.rlim_cur,
            lim.rlim_max
        )));
    }
    Ok(())
}

pub fn runtime() -> Result<tokio::runtime::Runtime, Exit> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(usage)
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

/// Everything a measuring command holds while it runs.
pub struct Session {
    pub control: RunControl,
    pub target: PreparedTarget,
    pub sink: RecordsSink,
    pub out: OutFile,
    /// `--csv`: one row per run or sweep point.
    pub csv: OutFile,
    /// `--html`: the report.
    pub html: OutFile,
    /// `--metrics-listen`: the live exposition.
    exposition: Option<crate::exposition::Exposition>,
    _sim: Option<goodput_sim::SimServer>,
}

/// `--out`, kept open from the start: writing it at the end then needs no
/// new file descriptor, even when the run used every one it may have.
pub struct OutFile(Option<(File, std::path::PathBuf)>);

impl OutFile {
    /// Open (create) the file now, if one was asked for.
    pub fn open(path: Option<&std::path::Path>, what: &str) -> Result<OutFile, Exit> {
        let Some(path) = path else {
            return Ok(OutFile(None));
        };
        let f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("opening {what} file {}", path.display()))
            .map_err(usage)?;
        Ok(OutFile(Some((f, path.to_path_buf()))))
    }

    /// The file name, as a label for reports.
    pub fn label(&self) -> Option<String> {
        self.0.as_ref().map(|(_, p)| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
    }

    /// Replace the file's contents (as often as a sweep finishes a point).
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Exit> {
        use std::io::{Seek, Write};
        let Some((file, path)) = self.0.as_mut() else {
            return Ok(());
        };
        (|| -> std::io::Result<()> {
            file.set_len(0)?;
            file.rewind()?;
            file.write_all(bytes)?;
            file.flush()
        })()
        .with_context(|| format!("writing {}", path.display()))
        .map_err(usage)
    }
}

impl Session {
    /// Open the output files, start the simulator when there is no `--url`,
    /// and prepare the target. Signals are watched from the first instant;
    /// one that stops the preparation (model discovery, the probe) ends it
    /// with `unstarted`'s document in `--out` (a valid document saying
    /// nothing was sent, never an empty file) and exit code 130.
    pub async fn start<L: clap::Args>(
        flags: &CommonArgs<L>,
        unstarted: &dyn Fn(&TargetOptions) -> Vec<u8>,
    ) -> Result<Session, Exit> {
        let (target, workload, output) = (&flags.target, &flags.workload, &flags.output);
        let control = RunControl::new();
        watch_signals(control.clone());
        let records: Option<Box<dyn std::io::Write + Send>> = match &output.records {
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
        let out = OutFile::open(output.out.as_deref(), "results")?;
        let csv = OutFile::open(output.csv.as_deref(), "CSV")?;
        let html = OutFile::open(output.html.as_deref(), "HTML")?;
        let exposition = output
            .metrics_listen
            .map(|a| crate::exposition::Exposition::start(a, output.metrics_linger))
            .transpose()?;
        let mut sim = None;
        let (url, model) = match &target.url {
            Some(u) => (u.clone(), target.model.clone()),
            None => {
                let preset = target.sim.clone();
                let config = preset
                    .as_ref()
                    .map(|p| p.config.clone())
                    .unwrap_or_default();
                let describe = preset
                    .as_ref()
                    .map_or("llama-3.1-8b,h100-sxm,tp=1".to_string(), |p| p.spec.clone());
                let server = goodput_sim::SimServer::spawn(
                    config,
                    std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                )
                .context("starting the built-in simulator")
                .map_err(usage)?;
                let url = format!("http://{}", server.local_addr());
                eprintln!(
                    "goodput: no --url given; benchmarking the built-in simulator ('{}', preset {describe}) at {url}",
                    server.model_name()
                );
                let model = target
                    .model
                    .clone()
                    .or_else(|| Some(server.model_name().to_string()));
                sim = Some(server);
                (url, model)
            }
        };
        if target.insecure {
            eprintln!(
                "goodput: warning: --insecure: the server's TLS certificate is not verified; anyone on the path could read and alter this traffic"
            );
        }
        let api_key = std::env::var(&target.api_key_env)
            .ok()
            .filter(|k| !k.is_empty());
        let options = TargetOptions {
            client: ClientOptions {
                url,
                endpoint: target.endpoint,
                headers: target.headers.clone(),
                api_key,
                timeout: target.timeout,
                idle_timeout: target.idle_timeout,
                connect_timeout: target.connect_timeout,
                no_proxy: target.no_proxy,
                tls: goodput_core::client::tls::TlsOptions {
                    insecure: target.insecure,
                    ca_cert: target.ca_cert.clone(),
                    client_auth: target.client_cert.clone().zip(target.client_key.clone()),
                },
            },
            model,
            stream: !target.no_stream,
            pin_output: !workload.no_pin_output,
            temperature: target.temperature,
            tokenizer: workload.tokenizer.clone(),
            server_in_process: sim.is_some(),
            server_metrics: match (&target.server_metrics, target.no_server_metrics) {
                (_, true) => ServerMetricsChoice::Off,
                (Some(url), false) => ServerMetricsChoice::Url(ScrapeOptions {
                    url: url.clone(),
                    interval: target.server_metrics_interval,
                }),
                (None, false) => ServerMetricsChoice::Auto {
                    interval: target.server_metrics_interval,
                },
            },
        };
        let mut prepared = match PreparedTarget::prepare(options.clone(), &control).await {
            Ok(p) => p,
            Err(RunError::Interrupted) => {
                let mut out = out;
                out.write(&unstarted(&options))?;
                return Err(run_error(RunError::Interrupted));
            }
            Err(e) => return Err(run_error(e)),
        };
        if let Some(e) = &exposition {
            prepared.set_live(e.live.clone());
        }
        Ok(Session {
            control,
            target: prepared,
            sink: RecordsSink::new(records, output.records_itl),
            out,
            csv,
            html,
            exposition,
            _sim: sim,
        })
    }

    /// Write `--csv` and `--html` for a result, labelled with the `--out`
    /// file's name (else `default`).
    pub fn write_reports(
        &mut self,
        saved: goodput_core::report::saved::Saved,
        default: &str,
    ) -> Result<(), Exit> {
        let label = self.out.label().unwrap_or_else(|| default.into());
        let items = [(label, saved)];
        self.csv
            .write(goodput_core::report::csv::render(&items).as_bytes())?;
        self.html
            .write(goodput_core::report::html::render(&items).as_bytes())
    }

    /// The command's work is done: let a live exposition linger for its last scrape.
    pub async fn finish(&mut self) {
        if let Some(e) = self.exposition.take() {
            e.finish(&self.control).await;
        }
    }
}

/// `--num-prompts`, defaulting to 200 unless `--duration` alone bounds the run.
pub fn num_prompts(bounds: &BoundsArgs) -> Option<u64> {
    match (bounds.num_prompts, bounds.duration) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(200),
    }
}

pub fn slo(args: &SloArgs) -> Option<Slo> {
    let terms: Vec<_> = args.slo.iter().flatten().copied().collect();
    (!terms.is_empty() || !args.goodput.is_empty() || args.slo_attainment.is_some()).then(|| Slo {
        terms,
        per_request: args.goodput.clone(),
        attainment: args.slo_attainment,
        max_error_rate: args.max_error_rate,
    })
}

pub fn cost(args: &CostArgs) -> Option<CostSpec> {
    (args.cost_per_hour.is_some() || args.power_watts.is_some()).then_some(CostSpec {
        per_hour: args.cost_per_hour,
        power_watts: args.power_watts,
        gpus: args.gpus,
    })
}

/// A run spec for `load` from the shared flags (the warm-up resolved for
/// it). Dataset and trace files are read and checked here, before any
/// request: a malformed file exits 2 naming the file, line and field.
pub fn run_spec<L: clap::Args>(load: Load, flags: &CommonArgs<L>) -> Result<RunSpec, Exit> {
    let (bounds, workload) = (&flags.bounds, &flags.workload);
    // A trace brings its own arrival times: the load is open at its mean rate.
    let mut load = load;
    let warmup = match (bounds.warmup, bounds.ramp_up, &workload.trace) {
        // A ramp warms the server up itself, and a trace is replayed as
        // recorded: `auto` warm-up is then none.
        (WarmupPolicy::Auto, Some(_), _) | (WarmupPolicy::Auto, _, Some(_)) => Warmup::None,
        (w, _, _) => w.resolve(&load),
    };
    let num_prompts = match (&workload.trace, bounds.num_prompts) {
        // A trace is replayed whole unless --num-prompts cuts it.
        (Some(_), n) => n,
        _ => num_prompts(bounds),
    };
    let spec = workload_spec(workload, bounds.seed, num_prompts)?;
    if let Some(rate) = spec.trace_rate() {
        load = Load::Open {
            rate,
            arrival: Arrival::Trace,
            max_concurrency: load.concurrency_cap().filter(|_| load.is_open()),
        };
    }
    Ok(RunSpec {
        plan: RunPlan {
            load,
            num_prompts,
            duration: bounds.duration,
            warmup,
            ramp_up: bounds.ramp_up.map(|duration| RampUp {
                duration,
                strategy: bounds.ramp_up_strategy,
            }),
            drain_timeout: bounds.drain_timeout.unwrap_or(flags.target.timeout),
            seed: bounds.seed,
        },
        workload: spec,
        percentiles: flags.output.percentiles.0.clone(),
        slo: slo(&flags.slo),
        early_stop: false,
        cost: cost(&flags.cost),
        keep_outputs: false,
        schedule_control: None,
    })
}

/// The workload from the workload flags, with its files read and checked.
/// `num_prompts`: the measured requests a dataset must supply (`None`: each
/// usable row once, for a run bounded by time).
pub fn workload_spec(
    w: &WorkloadArgs,
    seed: u64,
    num_prompts: Option<u64>,
) -> Result<WorkloadSpec, Exit> {
    let text = TextBuilder::new(w.tokenizer.clone());
    text.check().map_err(usage)?;
    let synthetic = SyntheticSpec {
        input_tokens: w.input_tokens.clone(),
        output_tokens: w
            .output_tokens
            .clone()
            .unwrap_or(goodput_core::workload::LengthSpec::Fixed(128)),
        seed,
        sessions: w.turns.clone().map(|turns| SessionShape {
            turns,
            think_time: w.think_time,
        }),
        prefix: w.prefix_tokens.map(|tokens| PrefixSpec {
            tokens,
            groups: w.prefix_groups,
            choice: w.prefix_choice,
        }),
        // Synthetic prompts and traces are salted unless told not to;
        // a dataset's own text is sent as it is unless told to salt it.
        cache_bust: if w.dataset.is_some() {
            w.cache_bust
        } else {
            !w.no_cache_bust
        },
    };
    if let Some(p) = &synthetic.prefix {
        if synthetic.input_tokens.min() < synthetic.head_tokens().max(p.tokens + 1) {
            eprintln!(
                "goodput: note: prompts shorter than the shared prefix and salt ({} tokens) are \
                 lengthened to it: --input-tokens counts the prefix",
                synthetic.head_tokens()
            );
        }
    }
    let source = if let Some(path) = &w.dataset {
        let opts = DatasetOptions {
            format: w.dataset_format,
            prompt_column: w.dataset_prompt_column.clone(),
            num: num_prompts.map_or(1_000_000, |n| n.min(100_000_000) as usize),
            sampling: w.dataset_sampling,
            // A run bounded by time sends each row at most once.
            exhausted: match (num_prompts, w.dataset_exhausted) {
                (None, Exhausted::Error) => Exhausted::Truncate,
                (_, e) => e,
            },
            input_filter: w.dataset_input_filter,
            output_filter: w.dataset_output_filter,
            seed,
        };
        let dataset = load_dataset(path, &opts, &w.tokenizer).map_err(usage)?;
        SourceSpec::Dataset {
            dataset: Arc::new(dataset),
            output_override: w.output_tokens.clone(),
        }
    } else if let Some(path) = &w.trace {
        let opts = TraceOptions {
            format: w.trace_format,
            time_unit: w.trace_time_unit,
            start: w.trace_start,
            window: w.trace_window,
            block_tokens: w.trace_block_tokens,
        };
        let trace = load_trace(path, &opts).map_err(usage)?;
        SourceSpec::Trace {
            trace: Arc::new(trace),
            speed: w.trace_speed,
            block_tokens: w.trace_block_tokens,
            output_override: w.output_tokens.clone(),
        }
    } else {
        SourceSpec::Synthetic
    };
    Ok(WorkloadSpec { synthetic, source })
}

/// Exit 1 when a gate failed: an SLO term's point estimate, the attainment,
/// or the error rate above `--max-error-rate`.
pub fn gate(result: &goodput_core::result::RunResult, max_error_rate: f64) -> Result<Code, Exit> {
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
