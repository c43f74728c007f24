//! What settling the search's answer takes, said before its first
//! measuring point runs, and said again when the measuring points move it.

use serde::{Deserialize, Serialize};

use super::{
    point_cost, Budget, Search, MEASURED_BEFORE_PRECISION, ONE_SIDED_POINTS, SIZED_POINTS,
};

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
    /// The figure said again once measuring points had run, where they
    /// moved it by more than [`REVISE_BEYOND`] (the latest such).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revised: Option<Revision>,
}

/// A sized search says its time again when the measuring points move the
/// expected load time by more than this share of the figure last said.
pub const REVISE_BEYOND: f64 = 0.2;

/// What settling the answer takes as the measuring points so far say it:
/// the load time spent, and the measuring points still planned, each costed
/// at the rate the next one runs at. Exploring cannot see its own bias (a
/// slow server's short points pass far above its edge), the first measuring
/// point can: on a one-thread llama.cpp server exploring put the edge at
/// 3.20 req/s, the search said 550 s, and its measuring points walked down
/// to 1.75, taking 775 s.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    /// Measuring points run when it was said.
    pub after_points: usize,
    /// Where the points so far put the edge (req/s): the search's estimate.
    pub edge: f64,
    /// The next measuring point's rate (req/s).
    pub rate: f64,
    /// Measuring points still planned, at most ("up to"; the two extra
    /// ones only once the planned ones all fell on one side).
    pub points_left: usize,
    /// Load time one of them takes (s), a planning figure.
    pub point_s: f64,
    /// Load time spent so far (s), exploring included.
    pub spent_s: f64,
    /// Load time expected in all (s).
    pub expected_s: f64,
}

impl Search {
    /// What settling the answer takes as the measuring points so far say
    /// it (a sized search with a measuring point run and one still
    /// planned; None otherwise).
    pub fn revision(&self) -> Option<Revision> {
        let Budget::Sized { cap_s } = self.config.budget else {
            return None;
        };
        if self.measured == 0 {
            return None;
        }
        // The two extra points once the planned ones all fell on one side.
        let extra = if self.measured >= SIZED_POINTS && self.one_sided() {
            ONE_SIDED_POINTS
        } else {
            0
        };
        let points_left = (SIZED_POINTS + extra).checked_sub(self.measured)?;
        let estimate = self.estimate().rate;
        if points_left == 0 || estimate.is_nan() || estimate <= 0.0 {
            return None;
        }
        let (rate, requests) = self.measure_at(estimate);
        let point_s = point_cost(rate, requests);
        let spent_s = self.spent_s();
        Some(Revision {
            after_points: self.measured,
            edge: estimate,
            rate,
            points_left,
            point_s,
            spent_s,
            expected_s: (spent_s + points_left as f64 * point_s).min(cap_s),
        })
    }
}

impl Sizing {
    /// The figure last said: the revision's, or the first.
    pub fn said_s(&self) -> f64 {
        self.revised.map_or(self.planned_s, |r| r.expected_s)
    }

    /// Keeps `r` when it moves the figure last said by more than
    /// [`REVISE_BEYOND`] of it; whether it did.
    pub fn revise(&mut self, r: Revision) -> bool {
        let said = self.said_s();
        let moved = said > 0.0 && ((r.expected_s - said) / said).abs() > REVISE_BEYOND;
        if moved {
            self.revised = Some(r);
        }
        moved
    }

    /// One line for the user when the measuring points moved the time.
    pub fn describe_revision(&self) -> Option<String> {
        let r = self.revised?;
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        Some(format!(
            "search: said again after {} measuring point{}: they put the edge near {:.3} req/s; up to {} more point{} from {:.3} req/s (~{:.0} s each), about {:.0} s of load in all ({:.0} s so far; {:.0} s planned before they ran)",
            r.after_points,
            plural(r.after_points),
            r.edge,
            r.points_left,
            plural(r.points_left),
            r.rate,
            r.point_s,
            r.expected_s,
            r.spent_s,
            self.planned_s
        ))
    }

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
