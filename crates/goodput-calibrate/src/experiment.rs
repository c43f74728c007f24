//! The designed experiment of `goodput calibrate`: each design point is a
//! closed-loop run that the caller carries out ([`Measure`]; the binary
//! runs it through the same executor, client and records as `goodput run`)
//! and whose records (with every event's arrival time) it hands back.
//!
//! The points, in order:
//!
//! 1. **What the server says**: vLLM's `cache_config_info` on `/metrics`
//!    (KV blocks), `max_model_len` on `/v1/models`, llama.cpp's `/props`
//!    (slots, context, batch size).
//! 2. **A burst** of `--burst` short requests sent at once: the requests that
//!    got their first token before the first of them finished ran in the
//!    first batch, so their count is the largest batch (when fewer than the
//!    burst).
//! 3. **Batch-1 prefill**: one request at a time at each prompt length, two
//!    output tokens; the median TTFT from the send.
//! 4. **Decode**: B requests started together at each context, every gap
//!    between their tokens after the second; the median gap is the time of
//!    a step in which B sequences decode.
//! 5. **KV capacity**, when the server did not say: `B_max` requests of a
//!    long prompt at once; fewer than `B_max` in the first wave means the
//!    cache, not the batch limit, held them back.
//!
//! The observations go to the simulator's fit ([`goodput_sim::calibrate`]),
//! which writes the profile that `goodput predict`, `goodput sim --profile`
//! and `--sim FILE` use.

use std::future::Future;

use goodput_sim::calibrate::LimitSource;

use crate::calibration::{
    step_tokens, CalibrateOptions, Decode, Limit, Limits, Observations, Prefill,
};
use crate::check;
use crate::discover::Published;
use crate::error::Error;
use crate::fit::{self, Written};
use crate::held;
use crate::records::{common_gaps, median, spread, Rec};

/// Where the design points are run and the experiment's progress is said:
/// the binary's session against a server or the built-in simulator, or a
/// test's stand-in that answers with records of its own.
pub trait Measure {
    /// `requests` requests, `concurrency` at a time (closed loop, no
    /// warm-up), of `prompt_tokens` prompt tokens of the client's
    /// tokenizer and exactly `output_tokens` output tokens each; the
    /// records of the requests, in the order they ended.
    fn point(
        &mut self,
        concurrency: usize,
        requests: u64,
        prompt_tokens: u32,
        output_tokens: u32,
    ) -> impl Future<Output = Result<Vec<Rec>, Error>>;

    /// A line of the experiment's progress (the binary prints it on
    /// standard error, unless `--quiet`).
    fn say(&mut self, line: String);
}

/// Prompt tokens of the burst's requests.
const BURST_PROMPT: usize = 64;
/// Output tokens of the burst's requests: enough steps that every request
/// of the first batch has its first token before any of them finishes.
const BURST_OUTPUT: u32 = 32;

/// Runs design points through a [`Measure`], in the server's tokens.
struct Runner<'a, M> {
    measure: &'a mut M,
    /// Server tokens per client token of a prompt (the burst measures it):
    /// design lengths are the server's, so a prompt of `n` is asked for as
    /// `n / scale` of the client's tokenizer.
    scale: f64,
}

impl<M: Measure> Runner<'_, M> {
    /// `requests` requests, `concurrency` at a time, of about `input`
    /// prompt tokens of the server's (see `scale`) and exactly `output`
    /// output tokens each.
    async fn point(
        &mut self,
        concurrency: usize,
        requests: u64,
        input: usize,
        output: u32,
    ) -> Result<Vec<Rec>, Error> {
        let asked = (input as f64 / self.scale).round().max(1.0) as u32;
        self.measure
            .point(concurrency, requests, asked, output)
            .await
    }

    fn say(&mut self, line: String) {
        self.measure.say(line);
    }
}

/// The live calibration against the server `measure` runs its points on:
/// the experiment, the fit, the profile written to `options.out`, and the
/// fit held against the burst. `model` is the model the server serves,
/// `published` what it says of its own limits
/// ([`published`](crate::published)), `source` how the profile names it
/// (its URL, or the built-in simulator). What goes to standard output is
/// handed to `print` as it is said, before any error that follows; the
/// progress goes to [`Measure::say`]. Whether the fit has enough
/// observations is the caller's to ask ([`Written::enough`]), once it has
/// let the server go.
pub async fn calibrate<M: Measure>(
    measure: &mut M,
    options: &CalibrateOptions,
    model: &str,
    source: &str,
    published: &Published,
    print: &mut dyn FnMut(&str),
) -> Result<Written, Error> {
    let mut runner = Runner {
        measure,
        scale: 1.0,
    };
    let design = Design::new(options, published);
    runner.say(format!(
        "model '{model}'; the server says: {}",
        design.describe_published(published)
    ));
    let limits = limits(&mut runner, options, published, &design).await?;
    let prefills = prefill_series(&mut runner, options, &limits).await?;
    let decodes = decode_series(&mut runner, options, &limits).await?;
    let held = held_queue(&mut runner, limits.max_batch.value, options.held_queue).await?;
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
    let written = fit::fit_and_write(&observations, model, source, &options.out, &[])?;
    print(&written.said);
    if let Some(h) = &held {
        print(&format!("{}\n", held::check(&options.out, h)?));
    }
    if let Some(b) = &observations.limits.burst {
        print(&format!("{}\n", check::burst(&options.out, b)?));
    }
    Ok(written)
}

/// What the experiment is bounded by before it knows the server's limits.
struct Design {
    burst: usize,
}

impl Design {
    fn new(options: &CalibrateOptions, p: &Published) -> Design {
        // A server that says how many sequences it runs needs a burst of
        // twice that to show it; others get the whole --burst.
        let burst = p
            .max_batch
            .map_or(options.burst, |(b, _)| options.burst.min(2 * b).max(2));
        Design { burst }
    }

    fn describe_published(&self, p: &Published) -> String {
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
async fn limits<M: Measure>(
    runner: &mut Runner<'_, M>,
    options: &CalibrateOptions,
    published: &Published,
    design: &Design,
) -> Result<Limits, Error> {
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
    let step_tokens = step_tokens(options, published.step_tokens);
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

/// Run the held queue's two loops: the largest batch `batch` at a time,
/// then `2 × batch + depth` (none when `depth` is 0 or a request failed;
/// the progress says which).
async fn held_queue<M: Measure>(
    runner: &mut Runner<'_, M>,
    batch: usize,
    depth: usize,
) -> Result<Option<held::Held>, Error> {
    if depth == 0 {
        return Ok(None);
    }
    // The deep loop holds at least twice the shallow one, so that the
    // held cost tells the two apart on a large batch too.
    let shallow = batch.max(1);
    let deep = 2 * shallow + depth;
    let requests = 4 * deep;
    runner.say(format!(
        "held queue: {requests} requests of {} prompt tokens {shallow} at a time, then {deep} at a time ({} waiting), to see whether the server slows as requests wait on it",
        held::PROMPT,
        deep - shallow
    ));
    let mut spans = Vec::new();
    let mut prompts = Vec::new();
    for c in [shallow, deep] {
        let recs = runner
            .point(c, requests as u64, held::PROMPT, held::OUTPUT)
            .await?;
        prompts.extend(
            recs.iter()
                .filter_map(|r| r.prompt_tokens.map(|t| t as f64)),
        );
        match held::makespan(&recs) {
            Some(s) => spans.push(s),
            None => {
                runner.say(format!(
                    "held queue: {} of {} requests failed at {c} at a time; not read",
                    recs.iter().filter(|r| !r.ok).count(),
                    recs.len()
                ));
                return Ok(None);
            }
        }
    }
    Ok(Some(held::Held {
        shallow,
        deep,
        requests,
        prompt_tokens: median(&mut prompts).map_or(held::PROMPT, |m| m.round() as usize),
        output_tokens: held::OUTPUT,
        shallow_s: spans[0].0,
        deep_s: spans[1].0,
        relative_se: spans[0].1.max(spans[1].1),
    }))
}

/// KV capacity from a burst of long prompts, for a server that did not say:
/// fewer requests in the first batch than the largest batch means the
/// cache held the rest back.
async fn kv_capacity<M: Measure>(
    runner: &mut Runner<'_, M>,
    max_batch: usize,
    max_model_len: Option<usize>,
) -> Result<Option<Limit>, Error> {
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
async fn prefill_series<M: Measure>(
    runner: &mut Runner<'_, M>,
    options: &CalibrateOptions,
    limits: &Limits,
) -> Result<Vec<Prefill>, Error> {
    let room = limits
        .max_model_len
        .as_ref()
        .map_or(usize::MAX, |m| m.value)
        .saturating_sub(4);
    let mut out = Vec::new();
    for len in prompt_lengths(&options.prompt_lengths, room) {
        let recs = runner.point(1, options.prefill_requests, len, 2).await?;
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
fn batches(options: &CalibrateOptions, max_batch: usize) -> Vec<usize> {
    let mut b: Vec<usize> = if options.batches.is_empty() {
        let step = if max_batch <= 16 { 2 } else { 4 };
        let mut v: Vec<usize> = std::iter::successors(Some(1usize), |x| Some(x * step))
            .take_while(|&x| x < max_batch)
            .collect();
        v.push(max_batch);
        v
    } else {
        options
            .batches
            .iter()
            .copied()
            .filter(|&x| x <= max_batch)
            .collect()
    };
    b.dedup();
    b
}

/// Decode at each concurrency and context that fits the cache.
async fn decode_series<M: Measure>(
    runner: &mut Runner<'_, M>,
    options: &CalibrateOptions,
    limits: &Limits,
) -> Result<Vec<Decode>, Error> {
    let out_tokens = options.decode_tokens;
    let room = limits
        .max_model_len
        .as_ref()
        .map_or(usize::MAX, |m| m.value)
        .saturating_sub(out_tokens as usize + 4);
    let mut out = Vec::new();
    for ctx in contexts(&options.contexts, room) {
        let need = ctx + out_tokens as usize;
        for b in batches(options, limits.max_batch.value) {
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
            let common = common_gaps(&ok);
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
        let options = |b: Vec<usize>| CalibrateOptions {
            batches: b,
            ..defaults()
        };
        assert_eq!(batches(&options(vec![]), 4), vec![1, 2, 4]);
        assert_eq!(batches(&options(vec![]), 256), vec![1, 4, 16, 64, 256]);
        assert_eq!(batches(&options(vec![]), 48), vec![1, 4, 16, 48]);
        assert_eq!(batches(&options(vec![1, 8, 64]), 48), vec![1, 8]);
    }

    /// The calibrate flags' defaults.
    fn defaults() -> CalibrateOptions {
        CalibrateOptions {
            from: Vec::new(),
            out: "profile.toml".into(),
            prompt_lengths: vec![64, 256, 512, 1024, 2048, 4096, 8192],
            prefill_requests: 6,
            batches: Vec::new(),
            contexts: vec![128, 2048],
            decode_tokens: 64,
            burst: 512,
            held_queue: 32,
            max_num_batched_tokens: None,
        }
    }

    /// A server of `slots` sequences whose tokenizer counts `scale` tokens
    /// for each of the client's: every request of a point after the first
    /// `slots` starts when the first of them ends.
    struct Mock {
        slots: usize,
        scale: f64,
        asked: Vec<(usize, u64, u32, u32)>,
        said: Vec<String>,
    }

    impl Measure for Mock {
        async fn point(
            &mut self,
            concurrency: usize,
            requests: u64,
            prompt_tokens: u32,
            output_tokens: u32,
        ) -> Result<Vec<Rec>, Error> {
            self.asked
                .push((concurrency, requests, prompt_tokens, output_tokens));
            let server_count = (f64::from(prompt_tokens) * self.scale).round() as u64;
            Ok((0..requests as usize)
                .map(|i| {
                    let ttft = if i < self.slots { 10.0 } else { 500.0 };
                    Rec {
                        prompt_tokens: Some(server_count),
                        ..sent(0.0, ttft, ttft + 400.0)
                    }
                })
                .collect())
        }

        fn say(&mut self, line: String) {
            self.said.push(line);
        }
    }

    /// Polls a future that never waits (the mock's) to its end.
    fn now<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("the mock never waits"),
        }
    }

    #[test]
    fn the_burst_finds_the_largest_batch_and_the_servers_token_count() {
        let mut mock = Mock {
            slots: 6,
            scale: 1.25,
            asked: Vec::new(),
            said: Vec::new(),
        };
        let options = CalibrateOptions {
            burst: 16,
            ..defaults()
        };
        let published = Published {
            max_model_len: Some((2048, "test")),
            ..Published::default()
        };
        let design = Design::new(&options, &published);
        let mut runner = Runner {
            measure: &mut mock,
            scale: 1.0,
        };
        let limits = now(limits(&mut runner, &options, &published, &design)).unwrap();
        assert_eq!(limits.max_batch.value, 6, "{:?}", mock.said);
        assert_eq!(limits.max_batch.from, "first batch of a burst of 16");
        // The KV point asks for half the context in the server's tokens,
        // so fewer of the client's: 1024 / 1.25.
        assert_eq!(mock.asked[0], (16, 16, 64, BURST_OUTPUT));
        assert_eq!(mock.asked[1], (6, 6, 819, BURST_OUTPUT));
        assert!(mock.said[0].starts_with("burst: 16 requests of 64 prompt tokens"));
        assert!(mock.said[1].contains("prompts are scaled by 1.250"));
    }
}
