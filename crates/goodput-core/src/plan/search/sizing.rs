//! What settling the search's answer takes, said before its first
//! measuring point runs.

use serde::{Deserialize, Serialize};

use super::MEASURED_BEFORE_PRECISION;
#[cfg(doc)]
use super::{Search, ONE_SIDED_POINTS, SIZED_POINTS};

/// What settling the answer takes, known once exploring has found the
/// edge: said before the first measuring point runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// The first measuring point's rate (req/s).
    pub rate: f64,
    /// The rate the measuring points are costed at when lower than
    /// `rate`: exploring's fit put the edge above a rate an exploring point
    /// failed at, and the measuring points are expected to walk down to
    /// exploring's bracket (its geometric middle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub costed_rate: Option<f64>,
    /// Measured requests each measuring point runs for.
    pub requests: u64,
    /// Load time one such point takes (s), a planning figure.
    pub point_s: f64,
    /// Load time the exploring points took (s).
    pub explored_s: f64,
    /// Measuring points a settled answer plans for ([`SIZED_POINTS`]).
    pub points: usize,
    /// Measuring points a sized search adds when those all fall on one
    /// side of the edge ([`ONE_SIDED_POINTS`]; 0 for a fixed budget).
    #[serde(default)]
    pub one_sided_extra: usize,
    /// Measuring points the budget leaves room for.
    pub room: usize,
    /// Load time the search plans to spend in all (s): exploring and the
    /// measuring points there is room for.
    pub planned_s: f64,
    /// Load time exploring and [`SIZED_POINTS`] measuring points take (s):
    /// what a budget that settles the answer is.
    pub settled_s: f64,
    /// Load time when every measuring point falls on one side of the edge
    /// (s): the extra points run, and each steps 0.9 further
    /// out; stepping down, a point of the same requests takes longer.
    /// Equal to `settled_s` for a fixed budget.
    #[serde(default)]
    pub most_s: f64,
    /// Whether the search sized its own budget (no `--search-time`).
    pub sized: bool,
}

impl Sizing {
    /// One line for the user, before the measuring points run.
    pub fn describe(&self) -> String {
        let extra = if self.one_sided_extra > 0 {
            format!(
                "; {} more if they all fall on one side of the edge",
                self.one_sided_extra
            )
        } else {
            String::new()
        };
        let most = if self.most_s > self.settled_s * 1.01 {
            format!(" (about {:.0} s if they do)", self.most_s)
        } else {
            String::new()
        };
        let explored = self.explored_s;
        let (lead, points) = match self.costed_rate {
            None => (
                format!("the edge lies near {:.3} req/s (explored in {explored:.0} s); ", self.rate),
                format!("{} requests there", self.requests),
            ),
            Some(costed) => (
                format!(
                    "exploring's fit puts the edge near {:.3} req/s, above a rate it saw fail (explored in {explored:.0} s); costed where exploring bracketed it, {costed:.3} req/s, ",
                    self.rate
                ),
                format!("{} requests or fewer", self.requests),
            ),
        };
        let head = format!(
            "search: {lead}a settled answer takes up to {} points of {points} (~{:.0} s each{extra}), about {:.0} s of load in all{most}",
            self.points, self.point_s, self.settled_s
        );
        if self.room >= self.points {
            return head;
        }
        let limit = if self.sized {
            "--max-time"
        } else {
            "--search-time"
        };
        if self.room >= MEASURED_BEFORE_PRECISION {
            format!("{head}; {limit} leaves room for {}", self.room)
        } else {
            format!(
                "{head}; {limit} leaves room for {} of them, too few to settle it (--search-time {:.0}s would)",
                self.room,
                self.settled_s.ceil()
            )
        }
    }
}
