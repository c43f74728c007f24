//! A session workload's search points: each warms up for one expected
//! session and measures several (chat sessions of `--turns`, or an agent
//! trace's tasks).

use std::time::Duration;

use super::result::PointRole;
use super::Runner;
use crate::load::schedule::Load;

impl Runner<'_> {
    /// A search point's warm-up. With multi-turn sessions (and `auto`
    /// warm-up) it lasts one expected session — mean turns × (think time +
    /// the floor's median E2EL) — at least the usual 2 s of arrivals: until
    /// the sessions started first reach their last turns, a point offers
    /// fewer turns a second than its steady state does, and its verdict is
    /// too kind. Measured on the secret server of `tests/predict.rs` (4
    /// turns, 1 s think, ~11 s sessions): 2 s warm-ups in 40 s points let
    /// the search answer 5.13 sessions/s where it sustains 3.75.
    pub(super) fn session_warmup(&self, load: &Load) -> crate::load::executor::Warmup {
        use crate::load::executor::{Warmup, WarmupPolicy};
        let usual = self.spec.warmup.resolve(load);
        if self.spec.warmup != WarmupPolicy::Auto || !load.is_open() {
            return usual;
        }
        match self.session_span_s() {
            Some(span) if span > 2.0 => Warmup::Duration(Duration::from_secs_f64(span)),
            _ => usual,
        }
    }

    /// One expected session of a session workload, s: mean turns × (think
    /// time + the floor's median E2EL); an agent workload's, the floor's
    /// median task duration. `None` without sessions.
    pub(super) fn session_span_s(&self) -> Option<f64> {
        if self.spec.base.workload.source.is_agents() {
            return self
                .result
                .points
                .iter()
                .find(|p| p.role == PointRole::Floor)
                .and_then(|p| p.result.metrics.tasks.as_ref()?.duration.as_ref())
                .and_then(|d| d.quantiles.get(50).copied())
                .map(|ms| ms / 1e3);
        }
        let shape = self.spec.base.workload.synthetic.sessions.as_ref()?;
        let floor_e2el_s = self
            .result
            .points
            .iter()
            .find(|p| p.role == PointRole::Floor)
            .and_then(|p| p.result.metrics.get(crate::measure::metrics::Metric::E2el))
            .and_then(|d| d.quantiles.get(50).copied())
            .map_or(0.0, |ms| ms / 1e3);
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
        let turns = (0..1000)
            .map(|_| f64::from(shape.turns.sample(&mut rng)))
            .sum::<f64>()
            / 1000.0;
        Some(turns * (shape.think_time.mean().as_secs_f64() + floor_e2el_s))
    }
}
