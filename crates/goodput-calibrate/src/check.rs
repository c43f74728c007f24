//! The fit held against what it was not fitted to: the burst. A burst of
//! short requests sent at once is throughput-bound, so its length says
//! whether the server's capacity is what its steps explain. The fitted
//! profile replays it in virtual time; a server much slower than its
//! replay has a cost outside the engine's steps (HTTP handling and
//! tokenization on CPUs the engine shares, or a scheduler unlike vLLM's),
//! which no step-time model forecasts, and the profile says so.

use std::path::Path;

use goodput_sim::calibrate::Profile;
use goodput_sim::virtual_time::{simulate, VirtualRequest};

use crate::error::Error;

/// The burst as the server ran it.
#[derive(Debug, Clone)]
pub struct Burst {
    /// Requests sent at once.
    pub requests: usize,
    /// The server's median count of a prompt.
    pub prompt_tokens: usize,
    /// Output tokens of each request.
    pub output_tokens: u32,
    /// First send to last byte, s.
    pub measured_s: f64,
}

/// Replay `burst` on the profile at `path`; say how the server's time
/// compares, and add a note to the profile when it is off by more than a
/// quarter. Returns the line to print.
pub(crate) fn burst(path: &Path, burst: &Burst) -> Result<String, Error> {
    let mut profile = Profile::read(path).map_err(Error::usage)?;
    let config = profile.sim_config().map_err(Error::usage)?;
    let requests: Vec<VirtualRequest> = (0..burst.requests)
        .map(|i| {
            VirtualRequest::unique(
                0.0,
                burst.prompt_tokens,
                burst.output_tokens as usize,
                i as u32,
            )
        })
        .collect();
    let report = simulate(&config, &requests).map_err(Error::usage)?;
    let model_s = report
        .requests
        .iter()
        .filter_map(|r| r.token_times_s.last().copied())
        .fold(0.0, f64::max);
    let ratio = burst.measured_s / model_s;
    let line = format!(
        "check: a burst of {} requests ({} prompt / {} output tokens) took {:.3} s on the server and {:.3} s in the fitted model ({:.2}x)",
        burst.requests, burst.prompt_tokens, burst.output_tokens, burst.measured_s, model_s, ratio
    );
    let note = if ratio > 1.25 {
        Some(format!(
            "{line}: the server is slower under load than its steps explain — a cost outside the engine's steps (HTTP handling and tokenization on CPUs the engine shares, or a scheduler unlike vLLM's) limits its throughput, and forecasts of a throughput-bound goodput will be high by up to {ratio:.2}x"
        ))
    } else if ratio < 0.8 {
        Some(format!(
            "{line}: the server runs a burst faster than its steps explain (a scheduler unlike vLLM's, or larger batches than the burst found); forecasts of a throughput-bound goodput will be low"
        ))
    } else {
        None
    };
    if let Some(n) = &note {
        profile.calibration.notes.push(n.clone());
        let text = profile.to_toml().map_err(Error::usage)?;
        std::fs::write(path, text)
            .map_err(|e| Error::context(format!("writing the profile {}", path.display()), e))?;
    }
    Ok(note.map_or(line, |n| format!("warning: {n}")))
}
