//! The held queue: the server's throughput with a queue waiting on it.
//!
//! The design's other points hold at most the largest batch, so a server
//! that slows as requests wait on it looks fast to them. One-thread
//! llama.cpp servers do: every connection's HTTP thread waits on one
//! condition that every streamed token signals, on the engine's cores, so
//! with 160 requests waiting a 2-slot server completed 4.2 requests/s
//! where 2 at a time completed 12.8, and its own prompt timings rose by
//! half. Near such a server's goodput the queue is short and the cost
//! moves a forecast little; past it, the cost is what sinks the server.
//!
//! Two closed loops of the same short requests: `B` at a time (the
//! largest batch, nothing waiting) and `2B + depth` at a time (`B +
//! depth` waiting). Their makespans' ratio, against the fitted model's replay of
//! both, reads `held_token_ns`: the host time of a streamed token for each
//! request the server holds ([`goodput_sim::roofline::StepModel`]). On
//! configuration C it moved the forecast 3–8 % (1.10–1.58× high over
//! nine calibrations, 1.25–1.64× without it): near the edge the queue is
//! a few requests deep (BENCHMARKS.md, issue 34, twenty-sixth session).

use std::path::Path;

use goodput_sim::calibrate::Profile;
use goodput_sim::closed_loop::simulate_closed_loop;
use goodput_sim::SimConfig;

use crate::error::Error;
use crate::records::Rec;

/// The two closed loops as the server ran them.
#[derive(Debug, Clone)]
pub struct Held {
    /// Requests at a time with nothing waiting (the largest batch).
    pub shallow: usize,
    /// Requests at a time with a queue.
    pub deep: usize,
    /// Requests in each loop.
    pub requests: usize,
    /// The server's count of each prompt.
    pub prompt_tokens: usize,
    /// Output tokens of each request.
    pub output_tokens: u32,
    /// First send to last byte of the shallow loop, s.
    pub shallow_s: f64,
    /// First send to last byte of the deep loop, s.
    pub deep_s: f64,
    /// Relative standard error of a makespan (batch means over its
    /// completions).
    pub relative_se: f64,
}

/// First send to last byte of a point's records, s, and its relative
/// standard error; `None` when any request failed.
///
/// The error is batch means over the completions: the run's ends in
/// [`BLOCKS`] blocks of equal count, the spread of the blocks' lengths
/// over the square root of their number. The ramp and the drain make the
/// end blocks differ, which only widens it.
pub(crate) fn makespan(recs: &[Rec]) -> Option<(f64, f64)> {
    if recs.is_empty() || recs.iter().any(|r| !r.ok) {
        return None;
    }
    let first = recs.iter().filter_map(|r| r.send_ms).reduce(f64::min)?;
    let mut ends: Vec<f64> = recs
        .iter()
        .filter_map(|r| Some(r.send_ms? + r.e2el_ms?))
        .collect();
    ends.sort_by(f64::total_cmp);
    let last = *ends.last()?;
    let span = last - first;
    let per = ends.len() / BLOCKS;
    if per == 0 || span <= 0.0 {
        return Some((span / 1e3, 1.0));
    }
    let mut at = first;
    let lengths: Vec<f64> = (1..=BLOCKS)
        .map(|k| {
            let end = if k == BLOCKS { last } else { ends[k * per - 1] };
            let d = end - at;
            at = end;
            d
        })
        .collect();
    let mean = span / BLOCKS as f64;
    let var = lengths.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (BLOCKS - 1) as f64;
    Some((span / 1e3, var.sqrt() / mean / (BLOCKS as f64).sqrt()))
}

/// Blocks of the makespan's batch means.
const BLOCKS: usize = 8;

/// The model's makespans of the shallow and deep loops with
/// `held_token_ns` set to `w`, s.
fn replay(config: &SimConfig, held: &Held, w: f64) -> Result<(f64, f64), Error> {
    let mut c = config.clone();
    if let Some(step) = c.step.as_mut() {
        step.held_token_ns = w;
    }
    let run = |concurrency| {
        simulate_closed_loop(
            &c,
            concurrency,
            held.prompt_tokens,
            held.output_tokens as usize,
            held.requests,
        )
        .map(|r| r.end_s)
        .map_err(Error::usage)
    };
    Ok((run(held.shallow)?, run(held.deep)?))
}

/// The `held_token_ns` at which the model's deep-to-shallow ratio is
/// `ratio` (0 when even 0 gives more, the model's ratio at 0 being
/// `at_zero`; the largest tried, 10 ms, when none reaches it).
fn solve(config: &SimConfig, held: &Held, ratio: f64, at_zero: f64) -> Result<f64, Error> {
    let model_ratio = |w: f64| -> Result<f64, Error> {
        let (s, d) = replay(config, held, w)?;
        Ok(d / s)
    };
    if at_zero >= ratio {
        return Ok(0.0);
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    while model_ratio(hi)? < ratio {
        lo = hi;
        hi *= 4.0;
        if hi > 1e7 {
            return Ok(1e7);
        }
    }
    for _ in 0..30 {
        let mid = 0.5 * (lo + hi);
        if model_ratio(mid)? < ratio {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-3 * hi {
            break;
        }
    }
    Ok(0.5 * (lo + hi))
}

/// The reading: `held_token_ns` and its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reading {
    pub held_token_ns: f64,
    pub standard_error: f64,
    /// The model's deep-to-shallow ratio without the held cost.
    pub model_ratio: f64,
    /// The server's.
    pub measured_ratio: f64,
}

/// Read `held_token_ns` from the two loops on the fitted `config`: the
/// value whose replay slows the deep loop against the shallow one as the
/// server did, its standard error from the makespans' (the ratio one
/// standard error either way, solved again).
pub(crate) fn read(config: &SimConfig, held: &Held) -> Result<Reading, Error> {
    let measured_ratio = held.deep_s / held.shallow_s;
    let (s0, d0) = replay(config, held, 0.0)?;
    let at_zero = d0 / s0;
    let w = solve(config, held, measured_ratio, at_zero)?;
    let se_ratio = measured_ratio * held.relative_se * std::f64::consts::SQRT_2;
    let up = solve(config, held, measured_ratio + se_ratio, at_zero)?;
    let down = solve(config, held, (measured_ratio - se_ratio).max(0.0), at_zero)?;
    Ok(Reading {
        held_token_ns: w,
        standard_error: 0.5 * (up - down),
        model_ratio: at_zero,
        measured_ratio,
    })
}

/// Read the held queue on the profile at `path`, write its
/// `held_token_ns` (with its standard error, and a note where the server
/// slows beyond noise) and return the line to print.
pub(crate) fn check(path: &Path, held: &Held) -> Result<String, Error> {
    let mut profile = Profile::read(path).map_err(Error::usage)?;
    let config = profile.sim_config().map_err(Error::usage)?;
    let r = read(&config, held)?;
    let line = format!(
        "held queue: {} requests ({} prompt / {} output tokens) {} at a time took {:.3} s, {} at a time {:.3} s ({:.2}x; the model without a held cost {:.2}x): each streamed token costs {:.0} ns (± {:.0}) for every request the server holds",
        held.requests,
        held.prompt_tokens,
        held.output_tokens,
        held.shallow,
        held.shallow_s,
        held.deep,
        held.deep_s,
        r.measured_ratio,
        r.model_ratio,
        r.held_token_ns,
        r.standard_error,
    );
    // A cost within two standard errors of 0 is not told from none.
    let slows = r.held_token_ns > 2.0 * r.standard_error && r.held_token_ns > 0.0;
    profile.step.held_token_ns = if slows { r.held_token_ns } else { 0.0 };
    profile.calibration.standard_errors.held_token_ns = slows.then_some(r.standard_error);
    let line = if slows {
        line
    } else {
        format!("{line}; not told from none, so the profile has none")
    };
    if slows {
        profile.calibration.notes.push(format!(
            "{line}: the server slows as requests wait on it (its connections' threads share the engine's CPU), so the forecast's queue slows its steps"
        ));
    }
    let text = profile.to_toml().map_err(Error::usage)?;
    std::fs::write(path, text)
        .map_err(|e| Error::context(format!("writing the profile {}", path.display()), e))?;
    Ok(line)
}

/// Prompt tokens of the held queue's requests (the server's count).
pub(crate) const PROMPT: usize = 64;
/// Output tokens of each: the held cost is paid per streamed token.
pub(crate) const OUTPUT: u32 = 32;

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_sim::roofline::StepModel;

    /// Configuration C of the llama.cpp benchmarks as its calibration
    /// fitted it (a 4 × 128 model, 2 slots, one thread), with a held cost
    /// of `w` ns.
    fn server(w: f64) -> SimConfig {
        SimConfig {
            max_num_seqs: 2,
            request_latency_ms: 11.4,
            step: Some(StepModel {
                overhead_ms: 0.0,
                per_seq_us: 119.8,
                weights_ms: 0.141,
                token_us: 64.5,
                gemm_half_tokens: 0.0,
                context_token_ns: 1256.0,
                attention_pair_ps: 136_293.0,
                comm_step_us: 0.0,
                comm_token_ns: 0.0,
                held_token_ns: w,
            }),
            ..SimConfig::default()
        }
    }

    /// The records of a closed loop on `config`, as a run would write them.
    fn loop_records(config: &SimConfig, c: usize, n: usize) -> Vec<Rec> {
        let r = simulate_closed_loop(config, c, PROMPT, OUTPUT as usize, n).unwrap();
        r.arrivals_s
            .iter()
            .zip(&r.requests)
            .map(|(&a, o)| Rec {
                ok: true,
                send_ms: Some(a * 1e3),
                ttft_ms: Some((o.token_times_s[0] - a) * 1e3),
                e2el_ms: Some((o.token_times_s.last().unwrap() - a) * 1e3),
                events: Vec::new(),
                prompt_tokens: Some(PROMPT as u64),
                error: None,
            })
            .collect()
    }

    fn held_on(config: &SimConfig) -> Held {
        let (shallow, deep) = (2, 36);
        let requests = 4 * deep;
        let (s, se_s) = makespan(&loop_records(config, shallow, requests)).unwrap();
        let (d, se_d) = makespan(&loop_records(config, deep, requests)).unwrap();
        Held {
            shallow,
            deep,
            requests,
            prompt_tokens: PROMPT,
            output_tokens: OUTPUT,
            shallow_s: s,
            deep_s: d,
            relative_se: se_s.max(se_d),
        }
    }

    #[test]
    fn the_held_cost_of_a_server_is_read_back_from_its_two_loops() {
        // 6 µs a token a held request: what a one-thread llama-server
        // showed in its held queue.
        let truth = 6_000.0;
        let r = read(&server(0.0), &held_on(&server(truth))).unwrap();
        assert!(r.measured_ratio > 1.3 * r.model_ratio, "{r:?}");
        let err = (r.held_token_ns - truth).abs() / truth;
        assert!(err < 0.02, "{r:?}");
    }

    #[test]
    fn a_server_that_does_not_slow_reads_no_held_cost() {
        let r = read(&server(0.0), &held_on(&server(0.0))).unwrap();
        assert_eq!(r.held_token_ns, 0.0, "{r:?}");
        // Slower alike at both depths (what the burst check sees) is not
        // a queue's cost either.
        let mut slower = server(0.0);
        slower.request_latency_ms *= 1.5;
        if let Some(s) = slower.step.as_mut() {
            s.per_seq_us *= 1.3;
            s.token_us *= 1.3;
        }
        let r = read(&server(0.0), &held_on(&slower)).unwrap();
        assert!(r.held_token_ns < 300.0, "{r:?}");
    }

    #[test]
    fn a_failed_request_leaves_the_loop_unread() {
        let mut recs = loop_records(&server(0.0), 2, 10);
        recs[3].ok = false;
        assert!(makespan(&recs).is_none());
    }
}
