//! `goodput calibrate --from FILE...`: the fit from results already saved
//! (runs, sweeps and repeats, read as `goodput report` reads them) instead
//! of a designed experiment. Each point is judged on its own, and the
//! output lists every one: what it gave the fit, or why it gave nothing.
//!
//! A point observes steps of a known shape only when it ran a closed loop
//! of fixed prompt and output lengths, streamed, with unique prompts:
//!
//! - at concurrency 1, its median TTFT is a batch-1 prefill of its prompt
//!   (the server's count where the server reported one, else the length
//!   asked for), and its median ITL a batch-1 decode at a context of
//!   prompt + output / 2 (the mean over a request's tokens);
//! - at concurrency c up to the largest batch, its median ITL is about a
//!   decode step of c sequences at that context. The other requests'
//!   prefills share some of its steps (about c / output of them), so the
//!   point is skipped when that is a third of the steps or more, and
//!   otherwise its spread is doubled and its count taken as steps (gaps /
//!   c: the c gaps of one step are one measurement), so it weighs less
//!   than a gap measured alone. Its TTFT waits behind other requests and
//!   observes no one step: it is not used.
//!
//! Open-loop points (their latencies mix queueing with steps of every
//! batch size), distributed lengths, shared prefixes, sessions, datasets
//! and traces are skipped. The engine limits come from the runs' server
//! metrics where they say (the largest batch when requests waited, the KV
//! capacity from its usage), else vLLM's defaults, marked as assumed.

use std::collections::BTreeMap;

use goodput_core::load::LengthSpec;
use goodput_core::load::Load;
use goodput_core::measure::{Distribution, QUANTILE_COUNT};
use goodput_core::measure::{Metric, TokenSource};
use goodput_core::output::WorkloadSource;
use goodput_core::output::{RunResult, Saved};
use goodput_sim::calibrate::LimitSource;

use crate::calibration::{
    step_tokens, CalibrateOptions, Decode, Limit, Limits, Observations, Prefill,
};
use crate::error::Error;
use crate::fit;
use crate::records::median;

/// The largest batch assumed when no result shows it: vLLM's long-standing
/// `max_num_seqs` default.
const DEFAULT_MAX_BATCH: usize = 256;
/// A point whose steps carry another request's prefill this often (c /
/// output) is not a decode observation.
const MAX_PREFILL_SHARE: f64 = 1.0 / 3.0;
/// How much wider than measured a concurrent decode's spread is taken.
const CONCURRENT_SPREAD_FACTOR: f64 = 2.0;
/// The normal's p90 − p10, in standard deviations.
const P10_P90_SIGMAS: f64 = 2.563;

/// One run of the saved results, with the label the output gives it.
struct Point<'a> {
    label: String,
    run: &'a RunResult,
}

/// The shape of a usable point.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shape {
    concurrency: usize,
    /// Prompt tokens (the server's count where it reported one).
    prompt_tokens: f64,
    /// Whether `prompt_tokens` is the server's count.
    server_counted: bool,
    output_tokens: u32,
}

impl Shape {
    /// The mean context of a decoding sequence: its prompt and half its output.
    fn context_tokens(&self) -> f64 {
        self.prompt_tokens + f64::from(self.output_tokens) / 2.0
    }
}

/// Why a point was skipped: a short reason (for the final message) and
/// the whole of it.
#[derive(Debug, Clone, PartialEq)]
struct Skip {
    reason: &'static str,
    detail: String,
}

fn skip(reason: &'static str, detail: impl Into<String>) -> Skip {
    Skip {
        reason,
        detail: detail.into(),
    }
}

/// The calibration from saved results: `saved` as `goodput report` reads
/// them (each with its label), the paths in `options.from`, the profile
/// written to `options.out`. Every point is listed, with what it gave the
/// fit or why it gave nothing, and the fit after them: all handed to
/// `print` as it is said, before any error that follows.
pub fn calibrate_from(
    saved: &[(String, Saved)],
    options: &CalibrateOptions,
    print: &mut dyn FnMut(&str),
) -> Result<(), Error> {
    let mut points = Vec::new();
    for (label, saved) in saved {
        let runs = saved.runs();
        let many = runs.len() > 1;
        for (i, run) in runs.into_iter().enumerate() {
            let label = if many {
                format!("{label} point {}", i + 1)
            } else {
                label.clone()
            };
            points.push(Point { label, run });
        }
    }
    let Some(model) = points.first().map(|p| p.run.config.model.clone()) else {
        return Err(Error::usage("the saved results hold no run"));
    };

    let shapes: Vec<Result<Shape, Skip>> = points
        .iter()
        .map(|p| {
            if p.run.config.model == model {
                shape(p.run)
            } else {
                Err(skip(
                    "another model",
                    format!("model '{}', not '{model}'", p.run.config.model),
                ))
            }
        })
        .collect();
    let limits = limits(options, &points, &shapes);

    let Seen {
        prefills,
        decodes,
        skipped,
        concurrent,
    } = observe_all(&points, &shapes, limits.max_batch.value, print);
    if prefills.is_empty() && decodes.is_empty() {
        let why: Vec<String> = skipped.iter().map(|(r, n)| format!("{r} ({n})")).collect();
        return Err(Error::usage(format!(
            "no point of the saved results observes a step of known shape: every one was \
             skipped: {}; calibrating needs closed-loop results of fixed lengths, such as \
             `goodput sweep --concurrencies 1,4,16 --input-tokens 256 --output-tokens 64` and \
             `goodput run --concurrency 1 --input-tokens 4096 --output-tokens 16`",
            why.join(", ")
        )));
    }

    // Printed with the fit's own notes.
    let notes = notes(&limits, prefills.len(), decodes.len(), concurrent, &skipped);
    let observations = Observations {
        prefills,
        decodes,
        limits,
    };
    let written = fit::fit_and_write(
        &observations,
        &model,
        &source(options, &points),
        &options.out,
        &notes,
    )?;
    print(&written.said);
    if !written.unidentified.is_empty() {
        return Err(Error::usage(format!(
            "the saved results cannot identify {} (fixed at 0; the profile was written to {}, \
             but it carries only what these shapes show): add {}",
            written.unidentified.join(", "),
            options.out.display(),
            shapes_to_add(&written.unidentified).join("; and ")
        )));
    }
    Ok(())
}

/// What the saved points gave the fit, and why the others gave nothing.
struct Seen {
    prefills: Vec<Prefill>,
    decodes: Vec<Decode>,
    skipped: BTreeMap<&'static str, usize>,
    /// Some decode came from a point of more than one request at a time.
    concurrent: bool,
}

/// Observe every point of a known shape, printing what each gave or why
/// it was skipped.
fn observe_all(
    points: &[Point],
    shapes: &[Result<Shape, Skip>],
    max_batch: usize,
    print: &mut dyn FnMut(&str),
) -> Seen {
    let mut prefills = Vec::new();
    let mut decodes = Vec::new();
    let mut skipped: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut concurrent = false;
    print(&format!(
        "Saved results ({} point{}):\n",
        points.len(),
        if points.len() == 1 { "" } else { "s" }
    ));
    for (p, s) in points.iter().zip(shapes) {
        let used = s.clone().and_then(|s| observe(p.run, &s, max_batch));
        match used {
            Ok(o) => {
                print(&format!("  {:<28} {:#}\n", p.label, p.run.config.load));
                for (used, line) in &o.said {
                    let tag = if *used { "used" } else { "not used" };
                    print(&format!("      {tag}: {line}\n"));
                }
                concurrent |= o.decodes.iter().any(|d| d.batch > 1);
                prefills.extend(o.prefills);
                decodes.extend(o.decodes);
            }
            Err(s) => {
                print(&format!(
                    "  {:<28} {:#}\n      skipped: {}\n",
                    p.label, p.run.config.load, s.detail
                ));
                *skipped.entry(s.reason).or_default() += 1;
            }
        }
    }
    Seen {
        prefills,
        decodes,
        skipped,
        concurrent,
    }
}

/// The shape of a point, or why it observes no step of known shape.
fn shape(run: &RunResult) -> Result<Shape, Skip> {
    let concurrency = match run.config.load {
        Load::Closed { concurrency } => concurrency,
        Load::Open { .. } => {
            return Err(skip(
                "open-loop arrivals",
                "open-loop arrivals: its latencies mix queueing with steps of every batch \
                 size, so they observe no one step (only closed-loop points do)",
            ))
        }
    };
    let Some(workload) = &run.config.workload else {
        return Err(skip(
            "workload not saved",
            "written before results saved the workload: its lengths are unknown",
        ));
    };
    let (input, output, prefix, sessions) = match &workload.source {
        WorkloadSource::Synthetic {
            input_tokens,
            output_tokens,
            prefix,
            sessions,
        } => (input_tokens, output_tokens, prefix, sessions),
        WorkloadSource::Dataset { .. } => {
            return Err(skip(
                "distributed lengths",
                "a dataset's prompts: their lengths vary, so no step has a known shape",
            ))
        }
        WorkloadSource::Trace { .. } | WorkloadSource::Agents { .. } => {
            return Err(skip(
                "distributed lengths",
                "a trace's prompts: their lengths vary, so no step has a known shape",
            ))
        }
    };
    if sessions.is_some() {
        return Err(skip(
            "sessions",
            "multi-turn sessions: each turn resends a conversation the prefix cache holds",
        ));
    }
    if prefix.is_some() {
        return Err(skip(
            "shared prefixes",
            "shared prefixes: the prefix cache serves part of each prompt",
        ));
    }
    let (LengthSpec::Fixed(input), LengthSpec::Fixed(output)) = (input, output) else {
        return Err(skip(
            "distributed lengths",
            format!(
                "distributed lengths (input {input}, output {output}): no step has a known shape"
            ),
        ));
    };
    if !run.config.stream {
        return Err(skip(
            "not streamed",
            "not streamed: it has no TTFT or inter-token gaps",
        ));
    }
    let m = &run.metrics;
    if let Some(c) = m.workload.cached_share.filter(|&c| c > 0.05) {
        return Err(skip(
            "prefix-cache hits",
            format!(
                "the server's prefix cache served {:.0} % of the prompt tokens",
                c * 100.0
            ),
        ));
    }
    if let Some(s) = m.tokens.output_length_mismatch_share.filter(|&s| s > 0.05) {
        return Err(skip(
            "output lengths not as asked",
            format!(
                "{:.0} % of the outputs were not the {output} tokens asked for",
                s * 100.0
            ),
        ));
    }
    // The server's prompt count (chat template and its tokenizer) where it
    // reported one for every completed request.
    let server = m.completed > 0
        && m.tokens.input_sources.len() == 1
        && m.tokens.input_sources.get(&TokenSource::Server) == Some(&m.completed);
    let prompt_tokens = if server {
        m.total_input_tokens as f64 / m.completed as f64
    } else {
        f64::from(*input)
    };
    Ok(Shape {
        concurrency,
        prompt_tokens,
        server_counted: server,
        output_tokens: *output,
    })
}

/// What one usable point gave the fit, and the lines that say so.
struct Observed {
    prefills: Vec<Prefill>,
    decodes: Vec<Decode>,
    /// Each line, with whether it is something the fit takes.
    said: Vec<(bool, String)>,
}

/// The median, a spread (σ from p10–p90) and the count of a distribution,
/// in seconds.
fn summary(d: &Distribution) -> Option<(f64, f64, usize)> {
    if d.count == 0 {
        return None;
    }
    let (median, spread) = if d.quantiles.len() == QUANTILE_COUNT {
        let q = &d.quantiles;
        (q[50], (q[90] - q[10]) / P10_P90_SIGMAS)
    } else {
        let p50 = d.percentiles.iter().find(|(p, _)| *p == 50.0)?.1.value;
        (p50, d.std)
    };
    (median > 0.0).then_some((median / 1e3, spread.max(0.0) / 1e3, d.count))
}

/// The observations of a point of `shape`, given the largest batch.
fn observe(run: &RunResult, shape: &Shape, max_batch: usize) -> Result<Observed, Skip> {
    let c = shape.concurrency;
    if c > max_batch {
        return Err(skip(
            "above the largest batch",
            format!("concurrency {c} is above the largest batch ({max_batch}): requests queued"),
        ));
    }
    let share = c as f64 / f64::from(shape.output_tokens.max(1));
    if c > 1 && share >= MAX_PREFILL_SHARE {
        return Err(skip(
            "prefills in too many steps",
            format!(
                "about {:.0} % of its steps carry another request's prefill (concurrency {c}, \
                 {} output tokens): the median gap is not a decode step",
                share.min(1.0) * 100.0,
                shape.output_tokens
            ),
        ));
    }
    let counted = if shape.server_counted {
        "server's count"
    } else {
        "as asked; the server reported no count"
    };
    let mut o = Observed {
        prefills: Vec::new(),
        decodes: Vec::new(),
        said: Vec::new(),
    };
    if c == 1 {
        match run.metrics.get(Metric::Ttft).and_then(summary) {
            Some((ttft_s, spread_s, count)) if count >= 3 => {
                o.said.push((
                    true,
                    format!(
                    "prefill of {:.0} prompt tokens ({counted}): median TTFT {:.3} ms over {count}",
                    shape.prompt_tokens,
                    ttft_s * 1e3
                ),
                ));
                o.prefills.push(Prefill {
                    prompt_tokens: shape.prompt_tokens,
                    ttft_s,
                    spread_s,
                    count,
                });
            }
            _ => o.said.push((false, "its TTFTs: fewer than 3".into())),
        }
    } else {
        o.said.push((
            false,
            "its TTFTs: each waits behind other requests' steps (only concurrency 1 observes a prefill)"
                .into(),
        ));
    }
    match run.metrics.get(Metric::Itl).and_then(summary) {
        Some((itl_s, spread_s, gaps)) if gaps >= 8 => {
            let (spread_s, count, how) = if c == 1 {
                (spread_s, gaps, String::new())
            } else {
                (
                    spread_s * CONCURRENT_SPREAD_FACTOR,
                    (gaps / c).max(1),
                    format!(
                        " (prefills share about {:.0} % of its steps: spread doubled, counted as {} steps)",
                        share * 100.0,
                        (gaps / c).max(1)
                    ),
                )
            };
            let sequences = if c == 1 { "sequence" } else { "sequences" };
            o.said.push((true, format!(
                "decode of {c} {sequences} at context {:.0}: median ITL {:.3} ms over {gaps} gaps{how}",
                shape.context_tokens(),
                itl_s * 1e3
            )));
            o.decodes.push(Decode {
                batch: c,
                context_tokens: shape.context_tokens(),
                itl_s,
                spread_s,
                count,
            });
        }
        _ => o
            .said
            .push((false, "its inter-token gaps: fewer than 8".into())),
    }
    if o.prefills.is_empty() && o.decodes.is_empty() {
        return Err(skip(
            "too few requests",
            "too few TTFTs and gaps to take a median of",
        ));
    }
    Ok(o)
}

/// The engine limits the results show, else vLLM's defaults.
fn limits(options: &CalibrateOptions, points: &[Point], shapes: &[Result<Shape, Skip>]) -> Limits {
    let mut queued: Option<(usize, &str)> = None;
    let mut ran = 0usize;
    let mut kv_estimates = Vec::new();
    for (p, s) in points.iter().zip(shapes) {
        let Some(summary) = p
            .run
            .server_metrics
            .as_ref()
            .and_then(|m| m.summary.as_ref())
        else {
            continue;
        };
        let peak = summary.peak_running.unwrap_or(0.0).round() as usize;
        ran = ran.max(peak);
        // Requests waited throughout while fewer than the concurrency ran,
        // and not for want of KV cache: the batch limit held them.
        if let Load::Closed { concurrency } = p.run.config.load {
            let waited = summary.mean_waiting.unwrap_or(0.0) >= 0.5;
            let cache_full = summary.peak_kv_usage.unwrap_or(0.0) > 0.9;
            if waited && !cache_full && peak >= 1 && peak < concurrency {
                queued = Some(queued.map_or((peak, p.label.as_str()), |q| {
                    q.max((peak, p.label.as_str()))
                }));
            }
        }
        // Each sample's sequences hold about prompt + output / 2 tokens.
        if let (Ok(s), Some(m)) = (s, &p.run.server_metrics) {
            for x in m.series.iter().filter(|x| x.t_s >= 0.0) {
                if let (Some(r), Some(u)) = (x.running, x.kv_usage) {
                    if r >= 1.0 && u > 0.0 {
                        kv_estimates.push(r * s.context_tokens() / u);
                    }
                }
            }
        }
    }
    let max_batch = match queued {
        Some((b, label)) => Limit::new(
            b,
            LimitSource::Inferred,
            format!("the most running while requests waited, in {label}"),
        ),
        None if ran > DEFAULT_MAX_BATCH => Limit::new(
            ran,
            LimitSource::Inferred,
            "at least: the most the server reported running",
        ),
        None => Limit::new(
            DEFAULT_MAX_BATCH,
            LimitSource::Default,
            "assumed (vLLM's default max_num_seqs): no result showed requests waiting",
        ),
    };
    let kv_tokens = (kv_estimates.len() >= 3).then(|| {
        let n = kv_estimates.len();
        let estimate = median(&mut kv_estimates).unwrap_or(0.0);
        Limit::new(
            estimate.round() as usize,
            LimitSource::Inferred,
            format!(
                "the median over {n} samples of the server's KV usage of running sequences of \
                 about prompt + output / 2 tokens"
            ),
        )
    });
    Limits {
        max_batch,
        kv_tokens: kv_tokens.filter(|k| k.value > 0),
        max_model_len: None,
        step_tokens: step_tokens(options, None),
        burst: None,
    }
}

/// What the profile should say of how it was fitted.
fn notes(
    limits: &Limits,
    prefills: usize,
    decodes: usize,
    concurrent: bool,
    skipped: &BTreeMap<&'static str, usize>,
) -> Vec<String> {
    let mut notes = vec![format!(
        "fitted from saved results, not a designed experiment: {prefills} prefills and {decodes} \
         decodes; {} points skipped",
        skipped.values().sum::<usize>()
    )];
    if concurrent {
        notes.push(
            "decodes above batch 1 are closed-loop medians whose steps some prefills share: \
             about a decode step, weighed less (spread doubled, gaps counted as steps)"
                .into(),
        );
    }
    let mut assumed = Vec::new();
    if limits.max_batch.source == LimitSource::Default {
        assumed.push("the largest batch");
    }
    if limits.kv_tokens.is_none() {
        assumed.push("the KV capacity");
    }
    if limits.max_model_len.is_none() {
        assumed.push("the context limit");
    }
    if limits.step_tokens.source == LimitSource::Default {
        assumed.push("the tokens a step");
    }
    if let Some((last, rest)) = assumed.split_last() {
        let list = if rest.is_empty() {
            last.to_string()
        } else {
            format!("{} and {last}", rest.join(", "))
        };
        notes.push(format!(
            "{list}: assumed, not measured; a forecast from this profile is only as good as \
             these (a live `goodput calibrate` finds them)",
        ));
    }
    notes
}

/// Where the observations came from, for the profile.
fn source(options: &CalibrateOptions, points: &[Point]) -> String {
    let files: Vec<String> = options
        .from
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let mut urls: Vec<&str> = points.iter().map(|p| p.run.config.url.as_str()).collect();
    urls.sort_unstable();
    urls.dedup();
    format!(
        "saved results {} (of {})",
        files.join(", "),
        urls.join(", ")
    )
}

/// The results that would identify each of `fields`.
fn shapes_to_add(fields: &[&str]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = fields
        .iter()
        .map(|f| match *f {
            "request_latency_ms" => "a `goodput run --concurrency 1` result (a prefill) beside closed-loop decodes at two or more concurrencies, for the request latency",
            "weights_ms" => "a `goodput run --concurrency 1 --input-tokens 256 --output-tokens 64` result, for the weight-bound floor of a decode",
            "per_seq_us" => "a `goodput sweep --concurrencies 1,4,16 --input-tokens 256 --output-tokens 64` result, for the cost of each sequence",
            "token_us" | "gemm_half_tokens" => "`goodput run --concurrency 1 --input-tokens 1024` and `--input-tokens 4096` results, for the prefill slope",
            "context_token_ns" => "closed-loop results at a second input length (e.g. `goodput sweep --concurrencies 1,4,16 --input-tokens 2048 --output-tokens 64`), for the KV read",
            _ => "`goodput run --concurrency 1` results at three or more input lengths, some long (e.g. 1024, 4096 and 8192), for prefill attention",
        })
        .collect();
    out.dedup();
    out
}
