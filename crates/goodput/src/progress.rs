//! Live progress on stderr: a bar when stderr is a terminal (indicatif), a
//! plain line every few seconds when it is not (a CI log), nothing with
//! `--quiet`. It shows requests done of the total (or time of the
//! duration), the current completion rate, requests in flight, the median
//! TTFT of the last 256 requests and the errors so far; for a sweep, which
//! point is running and of how many.

use std::io::IsTerminal;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goodput_core::load::Progress;
use goodput_core::plan::SweepLive;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What to show progress of.
pub enum Watched {
    Run(Arc<Progress>),
    Sweep(Arc<SweepLive>),
}

/// How a run is bounded, for the bar's length.
#[derive(Clone, Copy)]
pub struct Bounds {
    pub requests: Option<u64>,
    pub duration: Option<Duration>,
}

/// The completion rate over the last few seconds.
struct Rate {
    samples: std::collections::VecDeque<(Instant, u64)>,
}

impl Rate {
    fn update(&mut self, now: Instant, finished: u64) -> f64 {
        self.samples.push_back((now, finished));
        // Over the last 3 s, but always from the previous sample: a plain
        // line comes every 5 s.
        while self.samples.len() > 2
            && self
                .samples
                .front()
                .is_some_and(|(t, _)| now.duration_since(*t) > Duration::from_secs(3))
        {
            self.samples.pop_front();
        }
        match (self.samples.front(), self.samples.back()) {
            (Some(&(t0, n0)), Some(&(t1, n1))) if t1 > t0 => {
                (n1 - n0.min(n1)) as f64 / t1.duration_since(t0).as_secs_f64()
            }
            _ => 0.0,
        }
    }
}

/// `42s`, `3m05s`, `1h02m`.
fn eta(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// Start the display (unless quiet); it stops when `done` turns true.
pub fn spawn(
    watched: Watched,
    bounds: Bounds,
    quiet: bool,
    mut done: tokio::sync::watch::Receiver<bool>,
) {
    if quiet {
        return;
    }
    let terminal = std::io::stderr().is_terminal();
    tokio::spawn(async move {
        let start = Instant::now();
        let bar = terminal.then(|| {
            let (len, template) = match (bounds.requests, bounds.duration) {
                (Some(n), _) => (
                    n,
                    "{spinner} [{elapsed_precise}] {bar:28.cyan/blue} {pos}/{len} requests · {msg}",
                ),
                (None, Some(d)) => (
                    d.as_secs().max(1),
                    "{spinner} [{elapsed_precise}] {bar:28.cyan/blue} {pos}/{len} s · {msg}",
                ),
                (None, None) => (0, "{spinner} [{elapsed_precise}] {msg}"),
            };
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("█▉▊▋▌▍▎▏ "));
            }
            bar
        });
        // From the start: the first line's rate is the rate so far, not 0.
        let mut rate = Rate {
            samples: std::collections::VecDeque::from([(start, 0)]),
        };
        let mut tick =
            tokio::time::interval(Duration::from_millis(if terminal { 250 } else { 5000 }));
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = done.wait_for(|d| *d) => break,
            }
            let now = Instant::now();
            let (progress, point) = match &watched {
                Watched::Run(p) => (Some(p.clone()), None),
                Watched::Sweep(live) => {
                    let current = live.current.lock().ok().and_then(|c| c.clone());
                    let done = live.points_done.load(Relaxed);
                    let planned = live.points_planned.load(Relaxed);
                    let of = if planned > 0 {
                        format!(" of {planned}")
                    } else {
                        String::new()
                    };
                    match current {
                        Some((p, what)) => {
                            (Some(p), Some(format!("point {}{of} ({what})", done + 1)))
                        }
                        None => (None, Some(format!("point {}{of}", done + 1))),
                    }
                }
            };
            let Some(p) = progress else { continue };
            let finished = p.finished.load(Relaxed);
            let r = rate.update(now, finished);
            let mut words = p.status(r);
            // A run of N requests: about how long is left at the recent rate.
            if let (Watched::Run(_), Some(n), true) = (&watched, bounds.requests, r > 0.0) {
                let left = n.saturating_sub(p.sent_measured.load(Relaxed).min(finished));
                words.push_str(&format!(" · ETA {}", eta(left as f64 / r)));
            }
            let msg = match &point {
                Some(pt) => format!("{pt} · {words}"),
                None => words,
            };
            match &bar {
                Some(bar) => {
                    let pos = match (&watched, bounds.requests, bounds.duration) {
                        (Watched::Sweep(_), _, _) => 0,
                        (_, Some(_), _) => p.sent_measured.load(Relaxed),
                        (_, None, Some(_)) => start.elapsed().as_secs(),
                        _ => 0,
                    };
                    bar.set_position(pos);
                    bar.set_message(msg);
                    bar.tick();
                }
                None => eprintln!(
                    "goodput: {:.0}s · {} sent · {} done · {msg}",
                    start.elapsed().as_secs_f64(),
                    p.sent.load(Relaxed),
                    finished
                ),
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    });
}
