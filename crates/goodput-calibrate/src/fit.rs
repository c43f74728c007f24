//! The observations handed to the simulator's fit
//! ([`goodput_sim::calibrate::fit`]), the fit said (coefficients with
//! their standard errors, every observation's residual, the notes), and
//! the profile written.

use std::path::Path;

use goodput_sim::calibrate::{
    fit, FitOptions, LimitSources, Observation, ObservationKind, ParameterStatus, Profile,
    ServerLimits, PROFILE_FIELDS,
};
use goodput_sim::kv::BLOCK_SIZE;

use crate::calibration::{Limit, Observations};
use crate::error::Error;

/// The measured medians as the fit takes them.
fn observations(obs: &Observations) -> Vec<Observation> {
    let prefill = obs.prefills.iter().map(|p| {
        Observation::prefill(
            p.prompt_tokens.round() as u64,
            p.ttft_s,
            p.spread_s,
            p.count as u32,
        )
    });
    let decode = obs.decodes.iter().map(|d| {
        Observation::decode(
            d.batch as u64,
            d.context_tokens,
            d.itl_s,
            d.spread_s,
            d.count as u32,
        )
    });
    prefill.chain(decode).collect()
}

/// The engine limits the profile carries. Without a published context
/// limit, the KV capacity bounds it.
fn server_limits(obs: &Observations) -> ServerLimits {
    let l = &obs.limits;
    let kv = l.kv_tokens.as_ref();
    let kv_tokens = kv.map_or(l.max_batch.value * 4096, |k| k.value);
    let max_model_len = l
        .max_model_len
        .as_ref()
        .map_or(kv_tokens, |m| m.value.min(kv_tokens));
    let source =
        |x: Option<&Limit>| x.map_or(goodput_sim::calibrate::LimitSource::Default, |l| l.source);
    ServerLimits {
        max_num_seqs: l.max_batch.value,
        max_num_batched_tokens: l.step_tokens.value,
        num_gpu_blocks: kv_tokens.div_ceil(BLOCK_SIZE),
        max_model_len,
        sources: LimitSources {
            max_num_seqs: l.max_batch.source,
            max_num_batched_tokens: l.step_tokens.source,
            num_gpu_blocks: source(kv),
            max_model_len: source(l.max_model_len.as_ref().or(kv)),
        },
    }
}

fn label(kind: &ObservationKind) -> String {
    match kind {
        ObservationKind::Prefill { prompt_tokens } => {
            format!("prefill {prompt_tokens} tokens (TTFT)")
        }
        ObservationKind::Decode {
            batch,
            context_tokens,
        } => format!("decode batch {batch}, context {context_tokens:.0} (gap)"),
    }
}

/// What became of a fit: the profile was written.
#[derive(Debug, Clone)]
pub struct Written {
    /// Observations the fit took.
    pub observations: usize,
    /// The profile fields the observations could not identify.
    pub unidentified: Vec<&'static str>,
    /// The fit as a person reads it, and where the profile went: what
    /// `goodput calibrate` prints.
    pub(crate) said: String,
}

impl Written {
    /// A live calibration's verdict on its fit: fewer than four
    /// observations are too few to trust (the profile is written all the
    /// same, and its notes say what was missing).
    pub fn enough(&self) -> Result<(), Error> {
        if self.observations < 4 {
            return Err(Error::usage(format!(
                "only {} observations: too few to trust the fit (see the notes above)",
                self.observations
            )));
        }
        Ok(())
    }
}

/// Budgets a server's step may have, tried when it does not say its own.
const STEP_TOKEN_CANDIDATES: [usize; 5] = [512, 1024, 2048, 4096, 8192];

/// The token budget of a step, read from the prefill series where the
/// server did not publish it: a prompt longer than the budget is prefilled
/// in chunks, one step each, and every chunk costs a step's fixed cost, so
/// the TTFT series shows where the budget is. Each candidate below the
/// longest prompt is fitted; one is kept only when its residuals are under
/// half the assumed budget's (and it leaves nothing more unidentified).
/// `None` when the series cannot tell.
pub(crate) fn infer_step_tokens(obs: &Observations) -> Option<(usize, f64, f64)> {
    let observations = observations(obs);
    let longest = obs
        .prefills
        .iter()
        .map(|p| p.prompt_tokens as usize)
        .max()?;
    let assumed = obs.limits.step_tokens.value;
    let quality = |budget: usize| -> Option<(f64, usize)> {
        let f = fit(
            &observations,
            &FitOptions {
                max_num_batched_tokens: budget as u64,
            },
        )
        .ok()?;
        let unidentified = f
            .status
            .iter()
            .filter(|s| **s == ParameterStatus::Unidentified)
            .count();
        Some((f.rms_relative_error, unidentified))
    };
    let (base_rms, base_unidentified) = quality(assumed)?;
    let best = STEP_TOKEN_CANDIDATES
        .iter()
        .copied()
        .filter(|&b| b < longest && b != assumed)
        .filter_map(|b| quality(b).map(|q| (b, q)))
        .filter(|(_, (_, u))| *u <= base_unidentified)
        .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
    (best.1 .0 < 0.5 * base_rms).then_some((best.0, best.1 .0, base_rms))
}

/// Fit `obs`, write the profile of a server serving `model` (measured at
/// `source`) to `out` with `notes` after the fit's own, and say the fit
/// ([`Written`]'s `said`, for the caller to print). Whether the fit is good
/// enough is the caller's to judge.
pub(crate) fn fit_and_write(
    obs: &Observations,
    model: &str,
    source: &str,
    out: &Path,
    notes: &[String],
) -> Result<Written, Error> {
    let observations = observations(obs);
    let limits = server_limits(obs);
    let options = FitOptions {
        max_num_batched_tokens: limits.max_num_batched_tokens as u64,
    };
    let f = fit(&observations, &options)
        .map_err(|e| Error::context("fitting the step-time model", e))?;
    let mut profile = Profile::from_fit(
        &f,
        model,
        &limits,
        source,
        &goodput_core::output::now_rfc3339(),
    );
    for (what, l) in [
        ("largest batch", Some(&obs.limits.max_batch)),
        ("KV capacity (tokens)", obs.limits.kv_tokens.as_ref()),
        ("context limit", obs.limits.max_model_len.as_ref()),
        ("tokens a step", Some(&obs.limits.step_tokens)),
    ] {
        if let Some(l) = l {
            profile
                .calibration
                .notes
                .push(format!("{what}: {} ({})", l.value, l.from));
        }
    }
    profile.calibration.notes.extend(notes.iter().cloned());
    let text = profile.to_toml().map_err(Error::usage)?;
    std::fs::write(out, text)
        .map_err(|e| Error::context(format!("writing the profile {}", out.display()), e))?;
    let said = format!(
        "{}profile written to {}\n",
        summary(&profile, &f.status),
        out.display()
    );
    let unidentified = PROFILE_FIELDS
        .iter()
        .zip(f.status)
        .filter(|(_, s)| *s == ParameterStatus::Unidentified)
        .map(|(name, _)| *name)
        .collect();
    Ok(Written {
        observations: observations.len(),
        unidentified,
        said,
    })
}

/// The fit as a person reads it.
fn summary(p: &Profile, status: &[ParameterStatus]) -> String {
    let c = &p.calibration;
    let mut s = String::from("=================== Calibration ===================\n");
    s += &format!(
        "Server: {} ({})\nLimits: {} sequences, {} tokens a step, {} KV tokens, context {}\n",
        p.served_model_name,
        c.source_url,
        p.max_num_seqs,
        p.max_num_batched_tokens,
        p.num_gpu_blocks_override * BLOCK_SIZE,
        p.max_model_len
    );
    s += "Step-time model (overhead_ms is 0: a calibration sees the fixed cost only inside the next two):\n";
    let e = &c.standard_errors;
    let values = [
        (
            "request_latency_ms",
            p.request_latency_ms,
            e.request_latency_ms,
        ),
        ("weights_ms", p.step.weights_ms, e.weights_ms),
        ("per_seq_us", p.step.per_seq_us, e.per_seq_us),
        ("token_us", p.step.token_us, e.token_us),
        (
            "gemm_half_tokens",
            p.step.gemm_half_tokens,
            e.gemm_half_tokens,
        ),
        (
            "context_token_ns",
            p.step.context_token_ns,
            e.context_token_ns,
        ),
        (
            "attention_pair_ps",
            p.step.attention_pair_ps,
            e.attention_pair_ps,
        ),
    ];
    for (name, v, se) in values {
        let state = PROFILE_FIELDS
            .iter()
            .position(|f| *f == name)
            .and_then(|i| status.get(i))
            .map_or("", |st| match st {
                ParameterStatus::Fitted => "",
                ParameterStatus::Unidentified => "  (unidentified: fixed)",
                ParameterStatus::AtZero => "  (at its bound, 0)",
            });
        let se = se.map_or(String::new(), |x| format!(" ± {x:.4}"));
        s += &format!("  {name:<20} {v:>12.4}{se}{state}\n");
    }
    s += &format!(
        "Residuals (rms {:.1} %, {} degrees of freedom):\n",
        c.rms_relative_error * 100.0,
        c.degrees_of_freedom
    );
    for r in &c.residuals {
        s += &format!(
            "  {:<38} measured {:>9.3} ms  model {:>9.3} ms  {:>+6.1} %\n",
            label(&r.observation),
            r.observed_s * 1e3,
            r.predicted_s * 1e3,
            r.relative_error * 100.0
        );
    }
    for n in &c.notes {
        s += &format!("note: {n}\n");
    }
    s += "===================================================\n";
    s
}
