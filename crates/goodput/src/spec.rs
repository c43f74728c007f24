//! The specs built from the flags: the target's options, a run's
//! [`RunSpec`] (plan, workload, SLO, cost) and its workload, with dataset
//! and trace files read and checked before any request is sent.

use std::sync::Arc;

use goodput_core::load::load_trace;
use goodput_core::load::{load_dataset, DatasetOptions, Exhausted};
use goodput_core::load::{parse_models, RequestMix};
use goodput_core::load::{Arrival, Load, RampUp};
use goodput_core::load::{
    PrefixSpec, SessionShape, SourceSpec, SyntheticSpec, TextBuilder, WorkloadSpec,
};
use goodput_core::load::{RunPlan, Warmup, WarmupPolicy};
use goodput_core::measure::CostSpec;
use goodput_core::measure::ScrapeOptions;
use goodput_core::measure::Slo;
use goodput_core::plan::{RunSpec, ServerMetricsChoice, TargetOptions};
use goodput_core::plan::{SweepMode, SweepSpec};
use goodput_core::request::ClientOptions;
use goodput_core::request::TlsOptions;

use crate::cli::{
    BoundsArgs, CommonArgs, CostArgs, LoadArgs, SearchKind, SloArgs, SweepPlanArgs, TargetArgs,
    WorkloadArgs,
};
use crate::exit::{usage, Exit};

/// A run's load: open loop at `--request-rate` (its arrival process from
/// `--arrival`, or `--burstiness` as vLLM spells gamma), else closed loop at
/// `--concurrency` (else `--max-concurrency`, else 8).
pub fn run_load(l: &LoadArgs) -> Load {
    match l.request_rate {
        Some(rate) => Load::Open {
            rate,
            arrival: l.burstiness.map(Arrival::Gamma).unwrap_or(l.arrival),
            max_concurrency: l.max_concurrency,
        },
        None => Load::Closed {
            concurrency: l.concurrency.or(l.max_concurrency).unwrap_or(8),
        },
    }
}

/// `--num-prompts`, defaulting to 1,000 (as `vllm bench serve` does: enough
/// requests that the default percentiles, p99 among them, can be bounded)
/// unless `--duration` alone bounds the run.
fn num_prompts(bounds: &BoundsArgs) -> Option<u64> {
    match (bounds.num_prompts, bounds.duration) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(1000),
    }
}

/// The SLO of the SLO flags, or `None` when none was given.
pub fn slo(args: &SloArgs) -> Option<Slo> {
    let terms: Vec<_> = args.slo.iter().flatten().copied().collect();
    Slo::from_flags(
        &terms,
        args.goodput.clone(),
        args.slo_attainment,
        args.max_error_rate,
    )
}

/// The deployment's cost, or `None` when no cost, power or energy price was given.
fn cost(args: &CostArgs) -> Option<CostSpec> {
    let any = [args.cost_per_hour, args.power_watts, args.energy_price];
    any.iter().any(Option::is_some).then_some(CostSpec {
        per_hour: args.cost_per_hour,
        power_watts: args.power_watts,
        gpus: args.gpus,
        energy_price_per_kwh: args.energy_price,
    })
}

/// A run spec for `load` from the shared flags (the warm-up resolved for
/// it). Dataset and trace files are read and checked here, before any
/// request: a malformed file exits 2 naming the file, line and field.
pub fn run_spec<L: clap::Args>(load: Load, flags: &CommonArgs<L>) -> Result<RunSpec, Exit> {
    let (bounds, workload) = (&flags.bounds, &flags.workload);
    check_inputs(&flags.target, workload)?;
    // A trace brings its own arrival times: the load is open at its mean rate.
    let mut load = load;
    let warmup = match (bounds.warmup, bounds.ramp_up, &workload.replay.trace) {
        // A ramp warms the server up itself, and a trace is replayed as
        // recorded: `auto` warm-up is then none.
        (WarmupPolicy::Auto, Some(_), _) | (WarmupPolicy::Auto, _, Some(_)) => Warmup::None,
        (w, _, _) => w.resolve(&load),
    };
    let num_prompts = match (&workload.replay.trace, bounds.num_prompts) {
        // A trace is replayed whole unless --num-prompts cuts it.
        (Some(_), n) => n,
        _ => num_prompts(bounds),
    };
    // A pooling request takes its inputs (and a rerank or score query)
    // from the dataset's rows, each a row.
    let endpoint = flags.target.endpoint;
    let rows_per_request = match workload.batch_size {
        _ if !endpoint.is_pooling() => 1,
        batch => {
            u64::from(batch.unwrap_or(1).max(1))
                + u64::from(endpoint != goodput_core::request::Endpoint::Embeddings)
        }
    };
    let rows = num_prompts.map(|n| n.saturating_mul(rows_per_request));
    let mut spec = workload_spec(workload, bounds.seed, rows, bounds.duration.is_some())?;
    spec.mix = request_mix(&flags.target);
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
            shard: None,
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

/// The models and classes of `--model a,b` and `--priority-mix`; `None`
/// for one model without classes.
fn request_mix(target: &TargetArgs) -> Option<Arc<RequestMix>> {
    let mix = RequestMix {
        models: target
            .model
            .as_deref()
            .and_then(|m| parse_models(m).ok()?.err()),
        classes: target.priority_mix.clone(),
    };
    (!mix.is_empty()).then(|| Arc::new(mix))
}

/// The model a single-model request (discovery, the probe) names: the one
/// given, or the first of a mix.
pub fn first_model(model: &str) -> String {
    match parse_models(model) {
        Ok(Err(mix)) => mix.first().to_string(),
        Ok(Ok(one)) => one,
        Err(_) => model.to_string(),
    }
}

/// A sweep's spec from its flags: which points (`--search`, `--rates`,
/// `--concurrencies`, else automatic), and the run spec every point shares,
/// its points bounded by `--point-time` (and `--num-prompts` when given).
pub fn sweep_spec(flags: &CommonArgs<SweepPlanArgs>) -> Result<SweepSpec, Exit> {
    let s = &flags.load;
    let mode = match s.search {
        Some(SearchKind::Goodput) => SweepMode::Search {
            precision: s.precision,
        },
        None if s.frontier => SweepMode::frontier(&s.concurrencies, s.frontier_max),
        None if !s.rates.is_empty() => SweepMode::Rates(s.rates.clone()),
        None if !s.concurrencies.is_empty() => SweepMode::Concurrencies(s.concurrencies.clone()),
        None => SweepMode::Auto,
    };
    let mut base = run_spec(Load::Closed { concurrency: 1 }, flags)?;
    if matches!(base.workload.source, SourceSpec::Dataset { .. }) {
        // Every point sends the dataset's rows again: unsalted, the second
        // point would be served from the first one's prefix cache.
        if !base.workload.synthetic.cache_bust {
            eprintln!("goodput: note: a sweep salts the dataset's prompts (--cache-bust), so no point is served from an earlier point's prefix cache");
        }
        base.workload.synthetic.cache_bust = true;
    }
    // Points are bounded by time; --num-prompts, when given, bounds them too.
    base.plan.num_prompts = flags.bounds.num_prompts;
    // Each point takes trajectories as long as it runs (fresh namespaces
    // on each pass over the file; each point's blocks its own nonce's).
    if let SourceSpec::Agents { cycle, .. } = &mut base.workload.source {
        *cycle = true;
    }
    let point_time = flags
        .bounds
        .duration
        .map_or(s.point_time, |d| d.min(s.point_time));
    Ok(SweepSpec {
        mode,
        base,
        warmup: flags.bounds.warmup,
        arrival: s.arrival,
        max_concurrency: s.max_concurrency,
        point_time,
        probe_time: s.probe_time.min(point_time),
        max_time: s.max_time,
        search_time: s.search_time.fixed(),
        measure_time: s.measure_time,
    })
}

/// The flags of the pooling endpoints and of images, against the endpoint
/// they apply to.
fn check_inputs(target: &TargetArgs, w: &WorkloadArgs) -> Result<(), Exit> {
    let e = target.endpoint;
    if w.images.is_some() && e != goodput_core::request::Endpoint::Chat {
        return Err(usage(anyhow::anyhow!(
            "--images adds image_url parts to chat messages: it needs --endpoint chat, not {e}"
        )));
    }
    if w.batch_size.is_some() && !e.is_pooling() {
        return Err(usage(anyhow::anyhow!(
            "--batch-size sets the inputs per request of --endpoint embeddings, rerank or score, not {e}"
        )));
    }
    if e.is_pooling() && (w.turns.is_some() || w.replay.trace.is_some()) {
        return Err(usage(anyhow::anyhow!(
            "--endpoint {e} sends batches of independent inputs: --turns and --trace do not apply (use --dataset or synthetic prompts)"
        )));
    }
    Ok(())
}

/// The workload from the workload flags, with its files read and checked.
/// `num_prompts`: the measured requests a dataset must supply (`None`: each
/// usable row once, for a run bounded by time).
/// `timed`: `--duration` bounds the run.
fn workload_spec(
    w: &WorkloadArgs,
    seed: u64,
    num_prompts: Option<u64>,
    timed: bool,
) -> Result<WorkloadSpec, Exit> {
    let text = TextBuilder::new(w.tokenizer.clone());
    text.check().map_err(usage)?;
    let synthetic = SyntheticSpec {
        input_tokens: w.input_tokens.clone(),
        output_tokens: w
            .output_tokens
            .clone()
            .unwrap_or(goodput_core::load::LengthSpec::Fixed(128)),
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
        batch: w.batch_size,
        images: w.images.clone(),
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
    } else if let (Some(path), true) = (&w.replay.trace, w.replay.is_agents()) {
        let traces = goodput_core::load::AgentTraces::load(path).map_err(usage)?;
        for note in traces.stats.notes() {
            eprintln!("goodput: note: {note}");
        }
        SourceSpec::Agents {
            traces: Arc::new(traces),
            replay: w.replay.agent_replay(),
            // A run bounded by a count or a duration starts the file over
            // (fresh namespaces); else each trajectory is replayed once.
            cycle: num_prompts.is_some() || timed,
        }
    } else if let Some(path) = &w.replay.trace {
        let trace = load_trace(path, &w.replay.options()).map_err(usage)?;
        SourceSpec::Trace {
            trace: Arc::new(trace),
            speed: w.replay.trace_speed,
            block_tokens: w.replay.trace_block_tokens,
            output_override: w.output_tokens.clone(),
        }
    } else {
        SourceSpec::Synthetic
    };
    Ok(WorkloadSpec {
        synthetic,
        source,
        mix: None,
    })
}

/// What `--tools`, `--tool-choice` and `--response-format` ask of every
/// answer; `None` when none was given.
pub fn output_spec(
    target: &TargetArgs,
) -> Result<Option<std::sync::Arc<goodput_core::request::OutputSpec>>, String> {
    use goodput_core::request::{OutputSpec, ToolChoice};
    let tools = target
        .tools
        .as_ref()
        .map(|t| t.0.clone())
        .unwrap_or_default();
    if tools.is_empty() && target.response_format.is_none() {
        return Ok(None);
    }
    let tool_choice = match &target.tool_choice {
        Some(c) => ToolChoice::parse(c, &tools)?,
        None => ToolChoice::Auto,
    };
    Ok(Some(std::sync::Arc::new(OutputSpec {
        tools,
        tool_choice,
        response_format: target.response_format.clone(),
    })))
}

/// The target's options from the target and workload flags, for the server
/// at `url` (`model`: `None` to discover it; `server_in_process`: the
/// built-in simulator shares this process). The API key is read here from
/// the `--api-key-env` variable, and is never printed or written.
pub fn target_options(
    target: &TargetArgs,
    workload: &WorkloadArgs,
    url: String,
    model: Option<String>,
    server_in_process: bool,
    kind: goodput_core::output::Target,
) -> TargetOptions {
    let api_key = std::env::var(&target.api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    TargetOptions {
        client: ClientOptions {
            url,
            endpoint: target.endpoint,
            headers: target.headers.clone(),
            api_key,
            timeout: target.timeout,
            idle_timeout: target.idle_timeout,
            connect_timeout: target.connect_timeout,
            no_proxy: target.no_proxy,
            tls: TlsOptions {
                insecure: target.insecure,
                ca_cert: target.ca_cert.clone(),
                client_auth: target.client_cert.clone().zip(target.client_key.clone()),
            },
        },
        // A mix's first model is the one discovery and the probe name.
        model: model.as_deref().map(first_model),
        // A pooling endpoint is answered whole and generates nothing to pin.
        stream: !target.no_stream && !target.endpoint.is_pooling(),
        pin_output: !workload.no_pin_output && !target.endpoint.is_pooling(),
        temperature: target.temperature,
        tokenizer: workload.tokenizer.clone(),
        server_in_process,
        target: kind,
        output: None,
        gpu_metrics: target.gpu_metrics.clone(),
        nvml: target.nvml,
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
    }
}
