//! Multi-turn sessions of the measured phase: how many sessions completed
//! every turn and how long they took, and TTFT and the prefix-cache share
//! by turn index (later turns resend the conversation, so the cache shows
//! at work there).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::outcomes::Outcome;
use crate::measure::metrics::RequestMetrics;
use crate::measure::stats::{self, Distribution};
use crate::request::record::RequestRecord;

/// Per-turn and per-session figures of a multi-turn run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Sessions with at least one measured turn.
    pub sessions: u64,
    /// Sessions whose every turn completed.
    pub sessions_completed: u64,
    pub turns_completed: u64,
    /// Session duration (first turn's send to last turn's end, ms), completed sessions.
    pub duration: Option<Distribution>,
    /// TTFT and prefix-cache share by turn index: later turns resend the
    /// conversation, so the cache shows at work here.
    pub by_turn: Vec<TurnFigures>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnFigures {
    pub turn: u32,
    pub completed: u64,
    pub ttft_mean_ms: f64,
    pub ttft_p50_ms: f64,
    /// Server-reported cached prompt tokens / prompt tokens, where reported.
    pub cached_share: Option<f64>,
}

/// One session of the measured phase, so far.
#[derive(Debug, Default)]
struct SessionAcc {
    start_ns: u64,
    last_done_ns: u64,
    turns_ok: u32,
    turns: u32,
    failed: bool,
}

/// One turn index across sessions.
#[derive(Debug, Default)]
struct TurnAcc {
    ttft: Vec<f64>,
    prompt_tokens: u64,
    cached_tokens: u64,
}

#[derive(Debug, Default)]
pub(super) struct Sessions {
    sessions: BTreeMap<u64, SessionAcc>,
    turns: BTreeMap<u32, TurnAcc>,
}

impl Sessions {
    /// A measured turn that completed or failed (one cut by the drain
    /// timeout is neither).
    pub(super) fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics, outcome: &Outcome) {
        let Some((id, turn, turns)) = rec.session else {
            return;
        };
        match outcome {
            Outcome::Incomplete => {}
            Outcome::Failed(_) => {
                let s = self.sessions.entry(id).or_default();
                s.failed = true;
                s.turns = turns;
            }
            Outcome::Completed => {
                let s = self.sessions.entry(id).or_default();
                if turn == 0 {
                    s.start_ns = rec.t_send.unwrap_or(rec.t_sched);
                }
                s.turns = turns;
                s.turns_ok += 1;
                s.last_done_ns = s.last_done_ns.max(rec.t_done);
                let t = self.turns.entry(turn).or_default();
                if let Some(x) = m.ttft_ms {
                    t.ttft.push(x);
                }
                if let Some(u) = rec.usage {
                    if let (Some(p), Some(c)) = (u.prompt_tokens, u.cached_tokens) {
                        t.prompt_tokens += u64::from(p);
                        t.cached_tokens += u64::from(c);
                    }
                }
            }
        }
    }

    /// The sessions' figures; `None` for a run without sessions.
    pub(super) fn finish(&self, percentiles: &[f64]) -> Option<SessionSummary> {
        if self.sessions.is_empty() {
            return None;
        }
        let complete: Vec<&SessionAcc> = self
            .sessions
            .values()
            .filter(|s| !s.failed && s.turns > 0 && s.turns_ok == s.turns)
            .collect();
        let durations: Vec<f64> = complete
            .iter()
            .map(|s| s.last_done_ns.saturating_sub(s.start_ns) as f64 / 1e6)
            .collect();
        let by_turn = self
            .turns
            .iter()
            .map(|(&turn, t)| turn_figures(turn, t))
            .collect();
        Some(SessionSummary {
            sessions: self.sessions.len() as u64,
            sessions_completed: complete.len() as u64,
            turns_completed: self.sessions.values().map(|s| u64::from(s.turns_ok)).sum(),
            duration: stats::describe(durations, percentiles, stats::Level::TwoSided),
            by_turn,
        })
    }
}

fn turn_figures(turn: u32, t: &TurnAcc) -> TurnFigures {
    let mut v = t.ttft.clone();
    v.sort_by(f64::total_cmp);
    TurnFigures {
        turn,
        completed: t.ttft.len() as u64,
        ttft_mean_ms: if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        },
        ttft_p50_ms: stats::percentile_sorted(&v, 50.0).unwrap_or(0.0),
        cached_share: (t.prompt_tokens > 0)
            .then(|| t.cached_tokens as f64 / t.prompt_tokens as f64),
    }
}
