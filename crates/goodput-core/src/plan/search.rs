//! The goodput search: which rate to try next, and what the points say the
//! sustained goodput is. Pure logic, no I/O and no clock: the sweep runs the
//! points ([`crate::plan::sweep`]), a test or a virtual-time model can run them
//! instead, and the search sees only [`Observation`]s.
//!
//! **The problem it solves.** Goodput is the highest rate whose *sustained*
//! load meets the SLO. A p99 of one short open-loop point is a poor witness
//! of that: measured on the simulator's engine in virtual time (its default
//! preset with the step-time model before 2026-11-26), the p99 TTFT
//! of one point varies by 17 % at 400 requests and 12 % at 1,000 from one
//! Poisson sample to the next, and near the goodput a 10 % change of rate
//! moves the p99 by only about 8 %. A search that bisects on each short
//! point's pass or fail answers with its luckiest sample (the old search
//! answered 11.0 req/s where the sustained goodput was 7.2).
//!
//! **How.** Two phases, one budget of load time:
//!
//! 1. *Explore* with short points (the `explore_s` sending window, ending
//!    early once their verdict is settled): double from the start rate
//!    while points pass, halve while they fail, then bisect geometrically
//!    until the bracket [highest passing, lowest failing] is within
//!    `EXPLORE_PRECISION`. These points only locate the edge.
//! 2. *Measure* with long points around the edge, each of at least
//!    `min_requests` (enough for the SLO percentile's interval to close) and
//!    `measure_s` of arrivals, until the budget is spent or (after at least
//!    three of them) the estimate's interval is within the precision. Each
//!    point's SLO margin — the largest `ln(percentile / threshold)` over
//!    the terms, with every percentile adjusted for the burstiness of the
//!    point's own schedule
//!    ([`crate::measure::metrics::control_variate`]) — enters a weighted least-squares line
//!    of margin against `ln(rate)` (weights: requests), fitted on the points
//!    within a factor of two of the edge; the goodput is where the line
//!    crosses zero. Every point's requests inform the answer, not only the
//!    sign of the last few.
//!
//! A point that failed on errors is a hard fail whatever its latencies: it
//! bounds the answer from above and never enters the fit. A point that is
//! *saturated* (its queue grew: [`crate::measure::metrics::saturation`]) fails too —
//! it met the SLO, if it did, only because it ended before its queue built —
//! but it is data, not a veto: it enters the fit with its margin taken as at
//! least 0, and it bounds the answer only until a measuring point passes
//! above it. Near capacity the detector reads a queue that wanders for many
//! seconds as a growing one in a few percent of points, and the points that
//! met a congestion episode are the ones a sustained load meets too:
//! dropping them left the fit with the lucky ones (in virtual time, 100
//! searches of the README's job: the interval covered the sustained
//! goodput in 56 of 84 searches with them dropped, 93 of 98 with them in).
//! Every margin enters the fit at most at [`MARGIN_CAP`].
//!
//! **What it reports** ([`Answer`]): the estimate; its 95 % interval — the
//! rates at which the fitted line's own 95 % band still holds zero, i.e.
//! where the measurements do not settle pass or fail (Fieller's interval for
//! the ratio of the fit's coefficients, with the t quantile of the fit's
//! degrees of freedom); and the bracket of the points' own verdicts.

use serde::{Deserialize, Serialize};

/// Explore until the bracket is this tight (relative to its top).
pub const EXPLORE_PRECISION: f64 = 0.2;

/// Rates tried by exploring: no higher than this many times the start rate.
const TOP: f64 = 1024.0;

/// Measuring points are placed at the estimate times these, in turn, so
/// that the fit sees the slope near the edge as well as its level.
const MEASURE_OFFSETS: [f64; 6] = [1.0, 0.9, 1.1, 1.0, 0.95, 1.05];

/// Measuring points before the interval's width may end the search: with
/// two, the fit's residual spread is the exploring points', whose bias near
/// the edge it cannot see (8 of 17 such early stops missed in virtual time).
const MEASURED_BEFORE_PRECISION: usize = 3;

/// Seconds a point costs beyond its arrivals (warm-up, drain), a planning figure.
const POINT_OVERHEAD_S: f64 = 4.0;

/// Measuring points a sized search plans for: the three after which its
/// interval's width may end it, and one more (in virtual time a fixed 270 s
/// budget held four to five on the README's job, and the precision ended
/// most searches after three or four).
pub const SIZED_POINTS: usize = MEASURED_BEFORE_PRECISION + 1;

/// Measuring points a sized search adds when its [`SIZED_POINTS`] all fell
/// on one side of the edge (all failed, or all passed): a fit with no
/// measured point beyond the edge rests on the exploring points there.
pub const ONE_SIDED_POINTS: usize = 2;

/// A measuring point after measuring points that all failed goes at most
/// this times the lowest of them (after all passed, at least the highest
/// over this): the measuring points are placed to straddle the edge. On a
/// slow server short exploring points read optimistic (a point that starts
/// idle ends before its queue builds): against a one-thread llama.cpp
/// server, 14- to 25-request exploring points passed at 2.33 and 2.77
/// req/s, and measuring points placed around them by offsets alone failed
/// at 2.34, 2.43, 2.71 and 2.79, leaving no measured pass.
const ONE_SIDED_STEP: f64 = 0.9;

/// Load time a search may spend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// This many seconds (`--search-time`).
    Fixed(f64),
    /// What a settled answer takes: once exploring has found the edge, its
    /// exploring time and `SIZED_POINTS` measuring points there, however
    /// long that is, within `cap_s` (what `--max-time` leaves; infinite
    /// without it).
    Sized {
        /// The most load time the search may take (s).
        cap_s: f64,
    },
}

/// How a search spends its time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchConfig {
    /// The first rate tried (req/s), e.g. four times the concurrency-1 throughput.
    pub start_rate: f64,
    /// Stop measuring once the interval's half-width is within this share of the estimate.
    pub precision: f64,
    /// Load time the search may spend.
    pub budget: Budget,
    /// Sending window of an exploring point (s).
    pub explore_s: f64,
    /// Sending window of a measuring point (s), at least.
    pub measure_s: f64,
    /// Requests a measuring point needs for its SLO percentile to be bounded.
    pub min_requests: u64,
}

/// What one point showed the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Offered rate (req/s).
    pub rate: f64,
    /// Measured requests behind its percentiles.
    pub requests: u64,
    /// Largest `ln(percentile / threshold)` over the SLO's terms (adjusted
    /// for the schedule where it could be); None without any estimate.
    pub margin: Option<f64>,
    /// Failed on errors or attainment: a fail whatever the margin, and a
    /// veto — no answer at or above its rate.
    pub hard_fail: bool,
    /// Its queue grew (`crate::measure::metrics::saturation`): a fail whatever the
    /// margin, and a ceiling on the answer unless a measuring point passed
    /// above it (the detector reads a queue that wanders near capacity as
    /// growth in a few percent of points). It enters the fit with its
    /// margin, at least 0: dropping the points that met a congestion
    /// episode left the fit with the lucky ones and biased it high.
    pub saturated: bool,
    /// Load time it took (s).
    pub wall_s: f64,
    /// A long measuring point (not an exploring one).
    pub measuring: bool,
    /// Its verdict was settled by the SLO percentiles' intervals (the
    /// point ended early on it), whatever its size.
    pub settled: bool,
    /// At its end no term's interval straddled its threshold.
    pub bounded: bool,
    /// Completed requests/s over the point, when any completed: what a
    /// saturated point achieved is what the server can serve.
    pub achieved: Option<f64>,
}

impl Observation {
    /// Passed: no hard fail, no saturation and a margin at most 0.
    pub fn passes(&self) -> bool {
        !self.hard_fail && !self.saturated && self.margin.is_some_and(|m| m <= 0.0)
    }

    /// Its verdict may decide the answer: it held enough requests to bound
    /// the SLO's percentiles, or its verdict was settled on fewer, or it
    /// failed hard.
    pub fn decisive(&self, min_requests: u64) -> bool {
        self.settled || self.hard_fail || self.saturated || self.requests >= min_requests
    }
}

/// The next point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// A short point at this rate, ending early once settled.
    Explore {
        /// Offered rate (req/s).
        rate: f64,
    },
    /// A long point at this rate with this many measured requests.
    Measure {
        /// Offered rate (req/s).
        rate: f64,
        /// Measured requests it runs for.
        requests: u64,
    },
    /// Nothing more to run.
    Done,
}

/// How the answer was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The zero of the margin fitted over the points near the edge.
    Fit,
    /// The highest passing rate (too few points near the edge for a fit).
    Bracket,
}

/// The search's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// req/s; 0 when no rate passed.
    pub rate: f64,
    /// Whether a fit or the highest passing rate gave `rate`.
    pub method: Method,
    /// 95 % interval of the rate where the SLO's margin crosses zero, when
    /// the fit has the points to bound it.
    pub interval: Option<(f64, f64)>,
    /// [highest passing, lowest failing above it] of the points' own
    /// verdicts: of the measuring points where there are any.
    pub bracket: (f64, Option<f64>),
    /// Points in the fit.
    pub fitted: usize,
    /// What to know about the answer, in words.
    pub notes: Vec<String>,
    /// The rate rests on no point that could decide it: the points at the
    /// edge held fewer requests than the SLO's percentiles need and the
    /// budget left no room for longer ones.
    pub inconclusive: bool,
}

/// The search's state: its configuration and every point seen.
#[derive(Debug, Clone)]
pub struct Search {
    config: SearchConfig,
    seen: Vec<Observation>,
    measured: usize,
    /// [`Search::sizing`] as it stood before the first measuring point.
    announced: Option<Sizing>,
}

impl Search {
    /// What the search was set up with.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// A search that has seen no point yet.
    pub fn new(config: SearchConfig) -> Self {
        Search {
            config,
            seen: Vec::new(),
            measured: 0,
            announced: None,
        }
    }

    /// Every point recorded, in the order they ran.
    pub fn observations(&self) -> &[Observation] {
        &self.seen
    }

    /// Takes a point's outcome into the search; the first measuring point
    /// fixes what [`Search::announced`] says.
    pub fn record(&mut self, o: Observation) {
        if o.measuring && self.measured == 0 {
            self.announced = self.sizing();
        }
        if o.measuring {
            self.measured += 1;
        }
        self.seen.push(o);
    }

    fn spent_s(&self) -> f64 {
        self.seen.iter().map(|o| o.wall_s).sum()
    }

    /// Load time the exploring points before the first measuring one took.
    fn explored_s(&self) -> f64 {
        self.seen
            .iter()
            .take_while(|o| !o.measuring)
            .map(|o| o.wall_s)
            .sum()
    }

    /// The load time in force: the fixed budget, or a sized search's cap
    /// (a sized search counts its measuring points instead: at most
    /// [`SIZED_POINTS`], each as long as its rate needs).
    fn budget_s(&self) -> f64 {
        match self.config.budget {
            Budget::Fixed(s) | Budget::Sized { cap_s: s } => s,
        }
    }

    /// What [`Search::sizing`] said before the first measuring point ran.
    pub fn announced(&self) -> Option<Sizing> {
        self.announced
    }

    /// What settling the answer takes: known once exploring is done and
    /// before the first measuring point runs (None before and after).
    pub fn sizing(&self) -> Option<Sizing> {
        if self.measured > 0 {
            return None;
        }
        let (estimate, rate, requests) = self.first_measure()?;
        let costed = self.costed_at(rate, estimate);
        let point_s = point_cost(costed, requests.min(self.requests_at(costed)));
        let explored_s = self.explored_s();
        let settled_s = explored_s + SIZED_POINTS as f64 * point_s;
        let budget = self.budget_s();
        let room = (((budget - explored_s) / point_s).max(0.0).floor() as usize).min(SIZED_POINTS);
        let sized = matches!(self.config.budget, Budget::Sized { .. });
        let extra = if sized { ONE_SIDED_POINTS } else { 0 };
        // All on one side: point k runs at ONE_SIDED_STEP^k of the first's
        // rate when stepping down (the slower, longer case), its requests
        // the same.
        let most_s = explored_s
            + (0..SIZED_POINTS + extra)
                .map(|k| point_s * ONE_SIDED_STEP.powi(-(k as i32)))
                .sum::<f64>();
        Some(Sizing {
            rate,
            costed_rate: (costed < rate).then_some(costed),
            requests,
            point_s,
            explored_s,
            points: SIZED_POINTS,
            one_sided_extra: extra,
            room,
            planned_s: explored_s + room as f64 * point_s,
            settled_s,
            most_s: if sized { most_s } else { settled_s },
            sized,
            revised: None,
        })
    }

    /// The first measuring point, at full size, when exploring is done and
    /// none has run.
    /// Also the estimate it was placed for.
    fn first_measure(&self) -> Option<(f64, f64, u64)> {
        if self.measured > 0 || !self.explored() {
            return None;
        }
        let estimate = self.estimate().rate;
        (estimate > 0.0).then(|| {
            let (rate, requests) = self.measure_at(estimate);
            (estimate, rate, requests)
        })
    }

    /// Exploring has bracketed the edge (or ended without a bracket).
    fn explored(&self) -> bool {
        match self.bracket() {
            (Some(l), Some(h)) => self.measured > 0 || (h - l) / h <= EXPLORE_PRECISION,
            _ => false,
        }
    }

    /// The rate a measuring point is costed at when the time is said: the
    /// first point's, unless exploring's fit put the edge at or above a
    /// rate exploring saw fail; then no higher than the middle of
    /// exploring's bracket (geometric). A short point's fail is a fail
    /// (short points read optimistic, not pessimistic), so a fitted edge
    /// above one is the line's extrapolation past the evidence, and the
    /// measuring points walk down from it, each longer than the first where
    /// a point's requests, not its window, set its length (a slow server):
    /// on a one-thread llama.cpp server exploring passed at 3.16 req/s and
    /// failed at 3.85, its fit put the edge at 4.28, and the measuring
    /// points settled at 2.6–2.9 (573 s of load against 430 said). The
    /// points still run where the fit puts them (BENCHMARKS.md: placed at
    /// the bracket's middle, four README searches in 100 lost their interval).
    fn costed_at(&self, rate: f64, estimate: f64) -> f64 {
        match self.bracket() {
            (Some(l), Some(h)) if estimate >= h => rate.min((l * h).sqrt()),
            _ => rate,
        }
    }

    /// Measured requests a measuring point at `rate` runs for: enough for
    /// the SLO's percentiles, and the measuring window's arrivals.
    fn requests_at(&self, rate: f64) -> u64 {
        let c = &self.config;
        c.min_requests.max((rate * c.measure_s).ceil() as u64)
    }

    /// The measuring point for the estimate `estimate`: its rate (the next
    /// offset, below any rate that failed on errors) and requests.
    fn measure_at(&self, estimate: f64) -> (f64, u64) {
        let offset = MEASURE_OFFSETS[self.measured % MEASURE_OFFSETS.len()];
        let mut rate = estimate * offset;
        // Measuring points all on one side of the edge so far: the next
        // goes beyond them, so that the fit sees the edge from both sides.
        match self.measured_sides() {
            (None, Some(failed)) => rate = rate.min(estimate).min(failed * ONE_SIDED_STEP),
            (Some(passed), None) => rate = rate.max(estimate).max(passed / ONE_SIDED_STEP),
            _ => {}
        }
        // Never at or above a rate that failed on errors. A saturated point
        // does not hold the next point below it: a measuring point above
        // it that passes is what tells a wandering queue from a growing one.
        let rate = rate.min(self.error_ceiling() * 0.97);
        (rate, self.requests_at(rate))
    }

    /// The highest rate a measuring point passed at and the lowest one
    /// failed at.
    fn measured_sides(&self) -> (Option<f64>, Option<f64>) {
        let measured = self.seen.iter().filter(|o| o.measuring);
        let passed = measured
            .clone()
            .filter(|o| o.passes())
            .map(|o| o.rate)
            .reduce(f64::max);
        let failed = measured
            .filter(|o| !o.passes())
            .map(|o| o.rate)
            .reduce(f64::min);
        (passed, failed)
    }

    /// Whether the measuring points so far all fell on one side of the
    /// edge: all failed, or all passed.
    fn one_sided(&self) -> bool {
        matches!(self.measured_sides(), (None, Some(_)) | (Some(_), None))
    }

    /// [highest passing rate, lowest failing rate above it]. An exploring
    /// point's pass at or above a rate where a measuring point failed does
    /// not count: near the edge an 8 s point ends before its queue builds
    /// and reads low (in virtual time, the README's deployment: at 1.1 × the
    /// sustained goodput its p99 margin averaged −0.01 where the long-run
    /// one is +2.2), and the longer point is the better witness.
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        let measured_fail = self.measured_sides().1.unwrap_or(f64::INFINITY);
        let lo = self
            .seen
            .iter()
            .filter(|o| o.passes() && (o.measuring || o.rate < measured_fail))
            .map(|o| o.rate)
            .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))));
        let hi = self
            .seen
            .iter()
            .filter(|o| !o.passes() && lo.is_none_or(|l| o.rate > l))
            .map(|o| o.rate)
            .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.min(r))));
        (lo, hi)
    }

    /// The most any saturated point completed per second (infinite
    /// without one): the server served no more, so a rate above it cannot
    /// be the answer. Halving from a start far past capacity goes no
    /// higher (on a one-thread llama.cpp server the first point, at four
    /// times the floor's throughput, offered 13.2 req/s and completed 4.0,
    /// and the next halving offered 6.6 and completed 3.5).
    fn served(&self) -> f64 {
        self.seen
            .iter()
            .filter(|o| o.saturated)
            .filter_map(|o| o.achieved.filter(|a| *a > 0.0))
            .reduce(f64::max)
            .unwrap_or(f64::INFINITY)
    }

    /// The lowest rate that failed on errors or attainment.
    fn error_ceiling(&self) -> f64 {
        self.seen
            .iter()
            .filter(|o| o.hard_fail)
            .map(|o| o.rate)
            .fold(f64::INFINITY, f64::min)
    }

    /// The lowest rate that failed hard (errors), or saturated with no
    /// measuring point passing above it: nothing at or above it can be the
    /// answer.
    fn hard_ceiling(&self) -> f64 {
        let passed_above = |r: f64| {
            self.seen
                .iter()
                .any(|o| o.measuring && o.passes() && o.rate > r)
        };
        let saturated = self
            .seen
            .iter()
            .filter(|o| o.saturated && !passed_above(o.rate))
            .map(|o| o.rate)
            .fold(f64::INFINITY, f64::min);
        self.error_ceiling().min(saturated)
    }

    /// What to run next.
    pub fn next(&self) -> Step {
        let c = &self.config;
        if !(c.start_rate > 0.0 && c.start_rate.is_finite()) {
            return Step::Done;
        }
        let left = self.budget_s() - self.spent_s();
        match self.bracket() {
            (None, None) => return self.explore(c.start_rate, left),
            (Some(l), None) => {
                return if l >= c.start_rate * TOP {
                    Step::Done
                } else {
                    self.explore(2.0 * l, left)
                };
            }
            (None, Some(h)) => {
                return if h <= c.start_rate / TOP {
                    Step::Done
                } else {
                    self.explore((h / 2.0).min(self.served()), left)
                };
            }
            (Some(l), Some(h)) if self.measured == 0 && (h - l) / h > EXPLORE_PRECISION => {
                return self.explore((l * h).sqrt(), left);
            }
            _ => {}
        }
        let answer = self.estimate();
        if answer.rate <= 0.0 {
            return Step::Done;
        }
        if matches!(c.budget, Budget::Sized { .. })
            && self.measured >= SIZED_POINTS
            && (!self.one_sided() || self.measured >= SIZED_POINTS + ONE_SIDED_POINTS)
        {
            return Step::Done;
        }
        if self.measured >= MEASURED_BEFORE_PRECISION {
            if let Some((a, b)) = answer.interval {
                if (b - a) / 2.0 <= c.precision * answer.rate {
                    return Step::Done;
                }
            }
        }
        let (rate, mut requests) = self.measure_at(answer.rate);
        if point_cost(rate, requests) > left {
            // Shorten the point to the budget, but not below a bounded percentile.
            let fit = ((left - POINT_OVERHEAD_S) * rate).floor();
            if fit < c.min_requests as f64 {
                return Step::Done;
            }
            requests = fit as u64;
        }
        Step::Measure { rate, requests }
    }

    fn explore(&self, rate: f64, left: f64) -> Step {
        if left < self.config.explore_s + POINT_OVERHEAD_S {
            return Step::Done;
        }
        Step::Explore { rate }
    }

    /// The bracket to report: of the measuring points where there are any
    /// (they hold enough requests to bound the percentile; an exploring
    /// point of 8 s may pass on a lucky sample above them), each side
    /// falling back to every point's.
    fn reported_bracket(&self) -> (Option<f64>, Option<f64>) {
        let (all_lo, all_hi) = self.bracket();
        let lo = self.measured_sides().0.or(all_lo);
        let hi = self
            .seen
            .iter()
            .filter(|o| o.measuring)
            .filter(|o| !o.passes() && lo.is_none_or(|l| o.rate > l))
            .map(|o| o.rate)
            .reduce(f64::min)
            .or(all_hi.filter(|&h| lo.is_none_or(|l| h > l)));
        (lo, hi)
    }

    /// Without a measuring point, the bracket is the exploring points'
    /// verdicts: when the points at its edges held fewer requests than the
    /// SLO's percentiles need and their verdicts were not settled, what is
    /// wrong with them, in words.
    fn undecided_edge(&self, lo: f64, hi: Option<f64>) -> Option<String> {
        let need = self.config.min_requests;
        let weak: Vec<&Observation> = self
            .seen
            .iter()
            .filter(|o| o.rate == lo || Some(o.rate) == hi)
            .filter(|o| !o.decisive(need))
            .collect();
        let most = weak.iter().map(|o| o.requests).max()?;
        let rate = weak.iter().map(|o| o.rate).fold(f64::MAX, f64::min);
        Some(format!(
            "inconclusive: the points at the edge held at most {most} requests, fewer than the {need} the SLO's percentiles need to be bounded, and no point that long passed (at {rate:.3} req/s one takes {:.0} s of load; {})",
            need as f64 / rate,
            if self.measured == 0 {
                "a longer --search-time makes room for it"
            } else {
                "the measuring points above it failed"
            }
        ))
    }

    /// The answer from the points so far: the estimate, but a fit's zero
    /// that its points could not bound is not headlined (`bare.rs`).
    pub fn answer(&self) -> Answer {
        let mut answer = self.estimate();
        if answer.method == Method::Fit && answer.interval.is_none() && !answer.inconclusive {
            self.without_an_interval(&mut answer);
        }
        answer
    }

    /// Where the points so far put the edge: what the measuring points are
    /// placed around.
    fn estimate(&self) -> Answer {
        let (lo, hi) = self.bracket();
        let reported = self.reported_bracket();
        let mut answer = Answer {
            rate: lo.unwrap_or(0.0),
            method: Method::Bracket,
            interval: None,
            bracket: (reported.0.unwrap_or(0.0), reported.1),
            fitted: 0,
            notes: Vec::new(),
            inconclusive: false,
        };
        let Some(l) = lo else {
            return answer;
        };
        if self.measured == 0 {
            if let Some(weak) = self.undecided_edge(l, hi) {
                answer.inconclusive = true;
                answer.notes.push(weak);
            }
        }
        let answer = self.fitted(answer, l, hi);
        self.decided(answer, l)
    }

    /// An answer that is the highest passing rate rests on that point: when
    /// it could not decide (an exploring point too small for the SLO's
    /// percentiles, unsettled) and measuring points ran, the answer is no
    /// answer — measuring points above it all failed, and the short point
    /// may have passed only because it ended before its queue built (on a
    /// one-thread llama.cpp server, 14-request points passed at 1.26 and
    /// 1.50 req/s while 368-request points failed at 1.35 to 1.51).
    ///
    /// A fit's answer with no interval, when no measuring point passed,
    /// rests on exploring points too: it is no answer either (on the same
    /// kind of server, measuring points failed at 2.34 to 2.79 req/s and
    /// the fit's zero fell at 2.00, below every measuring point, with no
    /// band around it).
    fn decided(&self, mut answer: Answer, l: f64) -> Answer {
        if answer.inconclusive || self.measured == 0 {
            return answer;
        }
        if answer.method == Method::Fit {
            if answer.interval.is_none() && self.measured_sides().0.is_none() {
                answer.inconclusive = true;
                answer.notes.push(format!(
                    "inconclusive: no measuring point passed ({} failed, the lowest at {:.3} req/s) and the fit has no interval: the rate rests on exploring points too small to decide",
                    self.measured,
                    self.measured_sides().1.unwrap_or(f64::NAN)
                ));
            }
            return answer;
        }
        if let Some(weak) = self.undecided_edge(l, None) {
            answer.inconclusive = true;
            answer.notes.push(weak);
        }
        answer
    }

    /// The fit's answer where the points near the edge make one; the
    /// highest passing rate `l` otherwise.
    fn fitted(&self, mut answer: Answer, l: f64, hi: Option<f64>) -> Answer {
        let centre = hi.map_or(l, |h| (l * h).sqrt());
        let points: Vec<fit::Point> = self
            .seen
            .iter()
            .filter(|o| !o.hard_fail && o.rate >= centre / 2.0 && o.rate <= centre * 2.0)
            .filter_map(|o| Some((o.rate.ln(), fit_margin(o)?, o.requests.max(1) as f64)))
            .collect();
        let Some(fit) = Fit::new(&points) else {
            answer
                .notes
                .push("too few points near the edge for a fit: the highest passing rate".into());
            return answer;
        };
        answer.fitted = points.len();
        let ceiling = self.hard_ceiling();
        let Some(x0) = fit.zero() else {
            answer.notes.push(
                "the margin does not rise with the rate near the edge: the highest passing rate"
                    .into(),
            );
            return answer;
        };
        // The headline is a rate between rates the fitted points ran: a
        // zero outside them is an extrapolation of their line that no point
        // near it tested, so the answer is then the highest passing rate,
        // and the fit's zero is only named. (Bounded by every point seen
        // instead, a line through points at 1.6-3.3 req/s whose margins the
        // cap flattened crossed zero at 0.25 req/s, inside an exploring
        // point's 0.2, and the search measured there: 0.26 req/s answered
        // against a sustained 1.26, a server 20 times slower than the
        // README's.)
        let (xmin, xmax) = points
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
        if x0 < xmin - 1e-9 || x0 > xmax + 1e-9 {
            answer.notes.push(format!(
                "the fit's zero ({:.2} req/s) lies outside the rates the points ran ({:.2}–{:.2}): the highest passing rate, a rate a point ran",
                x0.exp(),
                xmin.exp(),
                xmax.exp()
            ));
            // The points' scatter still bounds where the edge lies: the
            // fit's interval, where it holds the rate answered (a slow
            // llama.cpp search answered 2.73 req/s bare, its points' TTFT
            // scattering 262 to 959 ms at 2.6 to 2.8 req/s, and 200
            // requests at 2.73 then missed the SLO).
            answer.interval = fit
                .interval()
                .map(|(a, b)| (a.exp(), b.exp().min(ceiling)))
                .filter(|&(lo, hi)| lo <= answer.rate && answer.rate <= hi);
            // Below every fitted point, the line puts the pass past the
            // edge too: it decides only if settled (BENCHMARKS, 2026-11-30).
            let unsettled = (self.seen.iter())
                .filter(|o| o.rate == l && o.passes())
                .all(|o| !o.settled && !o.bounded);
            if x0 < xmin && unsettled && answer.interval.is_none() {
                answer.inconclusive = true;
                answer.notes.push(format!(
                    "inconclusive: the fit puts the edge at {:.2} req/s, below every point it fitted, and the pass at {l:.3} req/s did not settle (its percentiles' intervals reach the threshold): a longer --search-time measures more points",
                    x0.exp()
                ));
            }
            return answer;
        }
        // Never at or above a hard fail; an interval that no longer holds
        // the rate once a hard fail cuts it (its upper end below its lower,
        // or below the rate) says nothing, and is dropped.
        answer.rate = x0.exp().min(ceiling * 0.97);
        answer.method = Method::Fit;
        answer.interval = fit
            .interval()
            .map(|(a, b)| (a.exp(), b.exp().min(ceiling)))
            .filter(|&(lo, hi)| lo <= answer.rate && answer.rate <= hi);
        if answer.rate < x0.exp() * 0.999 {
            answer.notes.push(format!(
                "the fit's zero lies at or above a point that failed hard; held at {:.2} req/s",
                answer.rate
            ));
        }
        answer
    }
}

/// Load time a point of `requests` at `rate` takes, a planning figure.
fn point_cost(rate: f64, requests: u64) -> f64 {
    requests as f64 / rate + POINT_OVERHEAD_S
}

/// Margins above this (a percentile over twice its threshold) enter the fit
/// at it: such a point says only that it fails clearly. Past capacity the
/// margin of a point grows without bound and with its length (at 1.2 × the
/// README deployment's goodput, +0.9 for 40 s points and +5 sustained), and
/// a line through it would be pulled by how long the point ran, not by
/// where the SLO's edge lies.
pub const MARGIN_CAP: f64 = std::f64::consts::LN_2;

/// A point's margin as the fit reads it: capped at [`MARGIN_CAP`], and at
/// least 0 for a saturated point (it failed).
fn fit_margin(o: &Observation) -> Option<f64> {
    let m = o.margin.filter(|m| !m.is_nan())?;
    let m = if o.saturated { m.max(0.0) } else { m };
    Some(m.min(MARGIN_CAP))
}

mod bare;
mod fit;
mod sizing;
pub use fit::wide_interval;
use fit::Fit;
pub use sizing::Sizing;

#[cfg(test)]
mod tests;
