//! `goodput calibrate`: fit the simulator's step-time model to a server seen
//! only over HTTP, and write a profile that `goodput predict`, `goodput sim
//! --profile` and `--sim FILE` use.
//!
//! The experiment ([`experiment`]) runs through the same executor and
//! client as `goodput run`; the fit and the profile are the simulator's
//! ([`goodput_sim::calibrate`]). Without `--url` it calibrates the built-in
//! simulator (`--sim` chooses which), which is how its fit is checked.

mod check;
mod discover;
mod experiment;
mod from_files;

use anyhow::anyhow;
use clap::Parser;

use goodput_sim::calibrate::LimitSource;

use crate::cli::{CalibrateArgs, CommonArgs, LoadArgs, RunArgs};
use crate::exit::{usage, Code, Exit};
use crate::session::Session;
use crate::setup;
use experiment::{median, spread, Rec, Runner};

/// Prompt tokens of the burst's requests.
const BURST_PROMPT: usize = 64;
/// Output tokens of the burst's requests: enough steps that every request
/// of the first batch has its first token before any of them finishes.
const BURST_OUTPUT: u32 = 32;

pub fn main(args: CalibrateArgs) -> Result<Code, Exit> {
    if !args.from.is_empty() {
        return from_files::calibrate(&args);
    }
    setup::raise_fd_limit();
    setup::reserve_fd_table(None, args.target.url.is_none());
    setup::runtime(args.target.client_threads)?.block_on(calibrate(args))
}

/// The run flags every design point starts from: `goodput run`'s defaults
/// with the user's target flags.
fn base_flags(args: &CalibrateArgs) -> Result<CommonArgs<LoadArgs>, Exit> {
    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        run: RunArgs,
    }
    let mut flags = Wrap::try_parse_from(["goodput", "--quiet"])
        .map_err(usage)?
        .run
        .common;
    flags.target = args.target.clone();
    flags.bounds.seed = args.seed;
    Ok(flags)
}

async fn calibrate(args: CalibrateArgs) -> Result<Code, Exit> {
    let base = base_flags(&args)?;
    let mut session = Session::start(&base, &|_| Vec::new()).await?;
    let published = discover::published(&session.target).await;
    let mut runner = Runner {
        session: &mut session,
        base,
        quiet: args.quiet,
        scale: 1.0,
    };
    let design = Design::new(&args, &published);
    runner.say(format!(
        "model '{}'; the server says: {}",
        runner.session.target.model(),
        design.describe_published(&published)
    ));
    let limits = limits(&mut runner, &args, &published, &design).await?;
    let prefills = prefill_series(&mut runner, &args, &limits).await?;
    let decodes = decode_series(&mut runner, &args, &limits).await?;
    let mut observations = Observations {
        prefills,
        decodes,
        limits,
    };
    if observations.limits.step_tokens.source == LimitSource::Default {
        if let Some((budget, rms, assumed_rms)) = fit::infer_step_tokens(&observations) {
            runner.say(format!(
                "the prefill series says the server prefills {budget} tokens a step (residuals {:.1} % against {:.1} % at the assumed {})",
                rms * 100.0,
                assumed_rms * 100.0,
                observations.limits.step_tokens.value
            ));
            observations.limits.step_tokens = Limit::new(
                budget,
                LimitSource::Inferred,
                "the prefill series' chunk boundaries",
            );
        }
    }
    let source = match (&args.target.url, &args.target.sim) {
        (Some(u), _) => u.clone(),
        (None, Some(p)) => format!("built-in simulator '{}'", p.spec),
        (None, None) => "built-in simulator (default preset)".into(),
    };
    let written = fit::fit_and_write(
        &observations,
        runner.session.target.model(),
        &source,
        &args.out,
        &[],
    )?;
    if let Some(b) = &observations.limits.burst {
        println!("{}", check::burst(&args.out, b)?);
    }
    session.finish().await;
    if written.observations < 4 {
        return Err(usage(anyhow!(
            "only {} observations: too few to trust the fit (see the notes above)",
            written.observations
        )));
    }
    Ok(Code::Ok)
}

mod fit;

/// What the experiment is bounded by before it knows the server's limits.
struct Design {
    burst: usize,
}

impl Design {
    fn new(args: &CalibrateArgs, p: &discover::Published) -> Design {
        // A server that says how many sequences it runs needs a burst of
        // twice that to show it; others get the whole --burst.
        let burst = p
            .max_batch
            .map_or(args.burst, |(b, _)| args.burst.min(2 * b).max(2));
        Design { burst }
    }

    fn describe_published(&self, p: &discover::Published) -> String {
        let mut parts = Vec::new();
        if let Some((t, from)) = p.kv_tokens {
            parts.push(format!("KV cache {t} tokens ({from})"));
        }
        if let Some((t, from)) = p.max_model_len {
            parts.push(format!("context {t} tokens ({from})"));
        }
        if let Some((b, from)) = p.max_batch {
            parts.push(format!("{b} sequences ({from})"));
        }
        if let Some((b, from)) = p.step_tokens {
            parts.push(format!("{b} tokens a step ({from})"));
        }
        if parts.is_empty() {
            "nothing of its limits".into()
        } else {
            parts.join(", ")
        }
    }
}

/// One engine limit: its value, what kind of source gave it, and which.
#[derive(Debug, Clone)]
pub struct Limit {
    pub value: usize,
    pub source: LimitSource,
    pub from: String,
}

impl Limit {
    fn new(value: usize, source: LimitSource, from: impl Into<String>) -> Limit {
        Limit {
            value,
            source,
            from: from.into(),
        }
    }
}

/// The engine limits the profile carries, each with where it came from.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_batch: Limit,
    pub kv_tokens: Option<Limit>,
    pub max_model_len: Option<Limit>,
    pub step_tokens: Limit,
    /// The burst that found the largest batch (a live calibration's).
    pub burst: Option<check::Burst>,
}

/// The observations the fit takes, as measured.
#[derive(Debug, Clone)]
pub struct Observations {
    pub prefills: Vec<Prefill>,
    pub decodes: Vec<Decode>,
    pub limits: Limits,
}

/// Batch-1 prefill: the median TTFT (from the send) of a prompt alone.
#[derive(Debug, Clone)]
pub struct Prefill {
    pub prompt_tokens: f64,
    pub ttft_s: f64,
    /// 1.4826 × the median absolute deviation of the TTFTs.
    pub spread_s: f64,
    pub count: usize,
}

/// Decode: the median gap between tokens while `batch` sequences decode.
#[derive(Debug, Clone)]
pub struct Decode {
    pub batch: usize,
    pub context_tokens: f64,
    pub itl_s: f64,
    /// 1.4826 × the median absolute deviation of the gaps.
    pub spread_s: f64,
    pub count: usize,
}

/// The first batch of a burst: the requests that had their first token
/// before the first of them ended, on the run's clock (the sends are
/// paced, so times from each request's own send do not compare).
fn first_wave(recs: &[Rec]) -> usize {
    let at = |r: &Rec, after_send: Option<f64>| Some(r.send_ms? + after_send?);
    let first_end = recs
        .iter()
        .filter(|r| r.ok)
        .filter_map(|r| at(r, r.e2el_ms))
        .fold(f64::INFINITY, f64::min);
    recs.iter()
        .filter(|r| at(r, r.ttft_ms).is_some_and(|t| t < first_end))
        .count()
}

fn failed(recs: &[Rec]) -> Option<String> {
    let bad: Vec<&Rec> = recs.iter().filter(|r| !r.ok).collect();
    (!bad.is_empty()).then(|| {
        format!(
            "{} of {} requests failed (first: {})",
            bad.len(),
            recs.len(),
            bad[0].error.as_deref().unwrap_or("no message")
        )
    })
}

/// The largest batch (burst), the KV capacity and the context limit.
async fn limits(
    runner: &mut Runner<'_>,
    args: &CalibrateArgs,
    published: &discover::Published,
    design: &Design,
) -> Result<Limits, Exit> {
    let n = design.burst;
    runner.say(format!(
        "burst: {n} requests of {BURST_PROMPT} prompt tokens at once, to find the largest batch"
    ));
    let recs = runner
        .point(n, n as u64, BURST_PROMPT, BURST_OUTPUT)
        .await?;
    if let Some(f) = failed(&recs) {
        runner.say(format!("burst: {f}"));
    }
    let mut prompts: Vec<f64> = recs
        .iter()
        .filter_map(|r| r.prompt_tokens.map(|t| t as f64))
        .collect();
    if let Some(m) = median(&mut prompts).filter(|&m| m > 0.0) {
        runner.scale = m / BURST_PROMPT as f64;
        if (runner.scale - 1.0).abs() > 0.02 {
            runner.say(format!(
                "the server counts {m:.0} tokens in a prompt of {BURST_PROMPT} of the client's tokenizer: prompts are scaled by {:.3} to the server's counts",
                runner.scale
            ));
        }
    }
    let ok: Vec<&Rec> = recs.iter().filter(|r| r.ok).collect();
    let first_send = ok
        .iter()
        .filter_map(|r| r.send_ms)
        .fold(f64::INFINITY, f64::min);
    let last_end = ok
        .iter()
        .filter_map(|r| Some(r.send_ms? + r.e2el_ms?))
        .fold(f64::NEG_INFINITY, f64::max);
    let burst = (ok.len() == recs.len() && last_end > first_send).then(|| check::Burst {
        requests: n,
        prompt_tokens: (BURST_PROMPT as f64 * runner.scale).round() as usize,
        output_tokens: BURST_OUTPUT,
        measured_s: (last_end - first_send) / 1e3,
    });
    let wave = first_wave(&recs);
    let max_batch = match published.max_batch {
        Some((b, from)) => Limit::new(b, LimitSource::Metrics, from),
        None if wave < n => Limit::new(
            wave,
            LimitSource::Inferred,
            format!("first batch of a burst of {n}"),
        ),
        None => Limit::new(
            n,
            LimitSource::Inferred,
            format!("at least: all {n} of the burst ran at once (raise --burst)"),
        ),
    };
    runner.say(format!(
        "burst: {wave} requests in the first batch; largest batch {} ({})",
        max_batch.value, max_batch.from
    ));
    let max_model_len = published
        .max_model_len
        .map(|(t, from)| Limit::new(t, LimitSource::Metrics, from));
    let step_tokens = step_tokens(args, published.step_tokens);
    let kv_tokens = match published.kv_tokens {
        Some((t, from)) => Some(Limit::new(t, LimitSource::Metrics, from)),
        None => {
            let context = max_model_len.as_ref().map(|m| m.value);
            kv_capacity(runner, max_batch.value, context).await?
        }
    };
    Ok(Limits {
        max_batch,
        kv_tokens,
        max_model_len,
        step_tokens,
        burst,
    })
}

/// The token budget of a step: `--max-num-batched-tokens`, else what the
/// server published, else vLLM's default.
fn step_tokens(args: &CalibrateArgs, published: Option<(usize, &'static str)>) -> Limit {
    match (args.max_num_batched_tokens, published) {
        (Some(t), _) => Limit::new(t, LimitSource::Metrics, "--max-num-batched-tokens"),
        (None, Some((t, from))) => Limit::new(t, LimitSource::Metrics, from),
        (None, None) => Limit::new(
            8192,
            LimitSource::Default,
            "assumed (vLLM's default; --max-num-batched-tokens)",
        ),
    }
}

/// KV capacity from a burst of long prompts, for a server that did not say:
/// fewer requests in the first batch than the largest batch means the
/// cache held the rest back.
async fn kv_capacity(
    runner: &mut Runner<'_>,
    max_batch: usize,
    max_model_len: Option<usize>,
) -> Result<Option<Limit>, Exit> {
    let long = max_model_len.map_or(4096, |m| (m / 2).clamp(64, 8192));
    runner.say(format!(
        "KV capacity: {max_batch} requests of {long} prompt tokens at once"
    ));
    let recs = runner
        .point(max_batch, max_batch as u64, long, BURST_OUTPUT)
        .await?;
    let wave = first_wave(&recs);
    let per = long + BURST_OUTPUT as usize;
    Ok(Some(if wave < max_batch {
        Limit::new(
            wave * per,
            LimitSource::Inferred,
            format!("{wave} prompts of {long} tokens fit at once"),
        )
    } else {
        Limit::new(
            max_batch * per,
            LimitSource::Inferred,
            format!("at least: all {max_batch} prompts of {long} tokens fit at once"),
        )
    }))
}

/// Batch-1 prefill at each prompt length that fits the context.
async fn prefill_series(
    runner: &mut Runner<'_>,
    args: &CalibrateArgs,
    limits: &Limits,
) -> Result<Vec<Prefill>, Exit> {
    let room = limits
        .max_model_len
        .as_ref()
        .map_or(usize::MAX, |m| m.value)
        .saturating_sub(4);
    let mut out = Vec::new();
    for len in prompt_lengths(&args.prompt_lengths, room) {
        let recs = runner.point(1, args.prefill_requests, len, 2).await?;
        if let Some(f) = failed(&recs) {
            runner.say(format!("prefill {len}: {f}"));
        }
        let used: Vec<&Rec> = recs.iter().skip(1).filter(|r| r.ok).collect();
        let mut ttft: Vec<f64> = used.iter().filter_map(|r| r.ttft_ms).collect();
        let mut prompt: Vec<f64> = used
            .iter()
            .filter_map(|r| r.prompt_tokens.map(|t| t as f64))
            .collect();
        let (Some(t), Some(p)) = (median(&mut ttft), median(&mut prompt)) else {
            continue;
        };
        let sd = spread(&ttft);
        runner.say(format!(
            "prefill: {p:.0} prompt tokens, median TTFT {t:.2} ms (spread {sd:.2}) over {}",
            ttft.len()
        ));
        out.push(Prefill {
            prompt_tokens: p,
            ttft_s: t / 1e3,
            spread_s: sd / 1e3,
            count: ttft.len(),
        });
    }
    Ok(out)
}

/// The prompt lengths that fit in `room` tokens; the longest asked for
/// that does not fit is measured at `room` instead, so a server with a short
/// context still shows its prefill at the longest prompt it takes.
fn prompt_lengths(asked: &[usize], room: usize) -> Vec<usize> {
    let mut v: Vec<usize> = asked.iter().copied().filter(|&n| n <= room).collect();
    if asked.iter().any(|&n| n > room) && v.last().is_none_or(|&l| room > l + l / 4) {
        v.push(room);
    }
    v
}

/// The contexts of the decode series that fit in `room` tokens (prompt plus
/// output); a longer one asked for is measured at `room` instead when that
/// is well above the shorter ones.
fn contexts(asked: &[usize], room: usize) -> Vec<usize> {
    prompt_lengths(asked, room)
}

/// The concurrencies of the decode series: `--batches`, else 1, 4, 16, 64,
/// ... below the largest batch (1, 2, 4, 8 up to 16: a server of few slots
/// needs every batch it has), and the largest batch itself.
fn batches(args: &CalibrateArgs, max_batch: usize) -> Vec<usize> {
    let mut b: Vec<usize> = if args.batches.is_empty() {
        let step = if max_batch <= 16 { 2 } else { 4 };
        let mut v: Vec<usize> = std::iter::successors(Some(1usize), |x| Some(x * step))
            .take_while(|&x| x < max_batch)
            .collect();
        v.push(max_batch);
        v
    } else {
        args.batches
            .iter()
            .copied()
            .filter(|&x| x <= max_batch)
            .collect()
    };
    b.dedup();
    b
}

/// Decode at each concurrency and context that fits the cache.
async fn decode_series(
    runner: &mut Runner<'_>,
    args: &CalibrateArgs,
    limits: &Limits,
) -> Result<Vec<Decode>, Exit> {
    let out_tokens = args.decode_tokens;
    let room = limits
        .max_model_len
        .as_ref()
        .map_or(usize::MAX, |m| m.value)
        .saturating_sub(out_tokens as usize + 4);
    let mut out = Vec::new();
    for ctx in contexts(&args.contexts, room) {
        let need = ctx + out_tokens as usize;
        for b in batches(args, limits.max_batch.value) {
            if limits
                .kv_tokens
                .as_ref()
                .is_some_and(|k| b * need > k.value)
            {
                runner.say(format!(
                    "decode: {b} x {ctx} tokens skipped (over the KV capacity)"
                ));
                continue;
            }
            let recs = runner.point(b, b as u64, ctx, out_tokens).await?;
            if let Some(f) = failed(&recs) {
                runner.say(format!("decode {b} x {ctx}: {f}"));
            }
            let ok: Vec<&Rec> = recs.iter().filter(|r| r.ok).collect();
            if ok.len() < b {
                continue;
            }
            let common = experiment::common_gaps(&ok);
            if common.len() < 8 {
                runner.say(format!(
                    "decode: batch {b}, context {ctx}: the {b} requests never streamed together; skipped"
                ));
                continue;
            }
            let mut gaps: Vec<f64> = common.iter().map(|g| g.0).collect();
            let mut prompt: Vec<f64> = ok
                .iter()
                .filter_map(|r| r.prompt_tokens.map(|t| t as f64))
                .collect();
            let (Some(g), Some(p)) = (median(&mut gaps), median(&mut prompt)) else {
                continue;
            };
            let sd = spread(&gaps);
            let mean_before = common.iter().map(|g| g.1 as f64).sum::<f64>() / common.len() as f64;
            let context = p + mean_before;
            runner.say(format!(
                "decode: batch {b}, context {context:.0}, median gap {g:.3} ms (spread {sd:.3}) over {}",
                gaps.len()
            ));
            out.push(Decode {
                batch: b,
                context_tokens: context,
                itl_s: g / 1e3,
                spread_s: sd / 1e3,
                count: gaps.len(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_over_the_context_are_measured_at_the_context() {
        assert_eq!(prompt_lengths(&[64, 256, 4096], 2044), vec![64, 256, 2044]);
        assert_eq!(prompt_lengths(&[64, 256], 2044), vec![64, 256]);
        // Not when the longest that fits is already near the room.
        assert_eq!(prompt_lengths(&[64, 2000, 4096], 2044), vec![64, 2000]);
        assert_eq!(contexts(&[128, 2048], 1980), vec![128, 1980]);
    }

    fn rec(ttft_ms: f64, e2el_ms: f64) -> Rec {
        sent(0.0, ttft_ms, e2el_ms)
    }

    fn sent(send_ms: f64, ttft_ms: f64, e2el_ms: f64) -> Rec {
        Rec {
            ok: true,
            send_ms: Some(send_ms),
            ttft_ms: Some(ttft_ms),
            e2el_ms: Some(e2el_ms),
            events: Vec::new(),
            prompt_tokens: Some(64),
            error: None,
        }
    }

    #[test]
    fn the_first_batch_is_who_started_before_anyone_finished() {
        // Three ran at once (first tokens 10-12 ms, done at 200+); two waited
        // for a slot (first tokens after the first end at 200 ms).
        let recs = [
            rec(10.0, 200.0),
            rec(11.0, 201.0),
            rec(12.0, 202.0),
            rec(210.0, 400.0),
            rec(211.0, 401.0),
        ];
        assert_eq!(first_wave(&recs), 3);
        // A failed request's end does not count as the first end.
        let mut failed = rec(5.0, 6.0);
        failed.ok = false;
        let mut with_failure = recs.to_vec();
        with_failure.push(failed);
        assert_eq!(first_wave(&with_failure), 4);
        // Sends are paced: a request sent late that waited for a slot has a
        // short TTFT from its own send, but its first token still came after
        // the first end on the run's clock.
        let paced = [
            sent(0.0, 10.0, 200.0),
            sent(1.0, 10.0, 201.0),
            sent(150.0, 60.0, 250.0),
        ];
        assert_eq!(first_wave(&paced), 2);
    }

    #[test]
    fn batches_step_by_two_on_small_servers_and_by_four_on_large_ones() {
        let args = |b: Vec<usize>| CalibrateArgs {
            batches: b,
            ..base_args()
        };
        assert_eq!(batches(&args(vec![]), 4), vec![1, 2, 4]);
        assert_eq!(batches(&args(vec![]), 256), vec![1, 4, 16, 64, 256]);
        assert_eq!(batches(&args(vec![]), 48), vec![1, 4, 16, 48]);
        assert_eq!(batches(&args(vec![1, 8, 64]), 48), vec![1, 8]);
    }

    fn base_args() -> CalibrateArgs {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            calibrate: CalibrateArgs,
        }
        Wrap::parse_from(["calibrate"]).calibrate
    }
}
