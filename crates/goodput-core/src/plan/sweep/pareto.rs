//! The frontier's figures and rules, free of how the points were run:
//! MLPerf Endpoints' concurrency regions (`endpoints_rules.md` §5.4–5.5),
//! each point's throughput and per-user figures, the Pareto corners, and
//! where a set of concurrencies falls short of MLPerf's point rules.

use serde::{Deserialize, Serialize};

/// Fewest points MLPerf Endpoints accepts on a frontier (1 + 3 + 3).
pub const MIN_POINTS: usize = 7;
/// Most points MLPerf Endpoints accepts on a frontier.
pub const MAX_POINTS: usize = 32;
/// The top of MLPerf's ultra-low concurrency region (fixed: 1 to 32).
pub const ULTRA_LOW_MAX: usize = 32;

/// MLPerf Endpoints' concurrency regions (§5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Region {
    /// 1 to `C_min`, the lowest concurrency run (at most 32).
    UltraLow,
    /// `C_min + 1` to `round(C_min + 2^I)`, `I = log2(C_max − C_min) / 3`.
    Low,
    /// To `round(C_min + 2^2I)`.
    Medium,
    /// To `ceil(1.1 × C_max)` (the 10 % margin included).
    High,
}

/// The region boundaries of one frontier, from its lowest and highest
/// concurrency (MLPerf's reference algorithm, banker's rounding).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Regions {
    /// The lowest concurrency run: the ultra-low region is 1 to it.
    pub c_min: usize,
    /// The highest concurrency run.
    pub c_max: usize,
    /// The last concurrency of the low region.
    pub low_end: usize,
    /// The last concurrency of the medium region.
    pub medium_end: usize,
}

impl Regions {
    /// None unless `c_max > c_min`.
    pub fn new(c_min: usize, c_max: usize) -> Option<Regions> {
        if c_max <= c_min || c_min == 0 {
            return None;
        }
        let i = ((c_max - c_min) as f64).log2() / 3.0;
        let end = |k: f64| round_half_even(c_min as f64 + 2f64.powf(k * i));
        Some(Regions {
            c_min,
            c_max,
            low_end: end(1.0),
            medium_end: end(2.0),
        })
    }

    /// The region of concurrency `c`.
    pub fn of(&self, c: usize) -> Region {
        if c <= self.c_min {
            Region::UltraLow
        } else if c <= self.low_end {
            Region::Low
        } else if c <= self.medium_end {
            Region::Medium
        } else {
            Region::High
        }
    }
}

/// Python's `round`: halves to the even neighbour.
fn round_half_even(x: f64) -> usize {
    let f = x.floor();
    let r = if x - f == 0.5 {
        if f % 2.0 == 0.0 {
            f
        } else {
            f + 1.0
        }
    } else {
        x.round()
    };
    r.max(0.0) as usize
}

/// One point of the frontier: a sweep point's throughput and per-user rate
/// under each definition the field uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierPoint {
    /// Index into the sweep's `points`.
    pub point: usize,
    /// Requests kept in flight (closed loop); None at an open-loop point.
    pub concurrency: Option<usize>,
    /// Offered load: the concurrency, or the open-loop rate (req/s).
    pub offered: f64,
    /// MLPerf's region of the concurrency (closed loop only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<Region>,
    /// MLPerf's `system_tps`: output tokens of completed requests / the
    /// run's duration (the run's `output_throughput`), tok/s.
    pub system_tps: f64,
    /// `system_tps` / `--gpus`.
    pub system_tps_per_gpu: f64,
    /// The x of the frontier: MLPerf's `tps_per_user` = 1000 / p90 TPOT, or
    /// for an agent workload its `e2e_interactivity` (Σ output tokens /
    /// Σ E2EL), tok/s a user.
    pub tps_per_user: Option<f64>,
    /// Its 95 % interval (the p90's interval, inverted).
    pub tps_per_user_interval: Option<(Option<f64>, Option<f64>)>,
    /// InferenceX's per-user figure: 1000 / p50 TPOT, tok/s.
    pub tps_per_user_p50: Option<f64>,
    /// vLLM `plot_pareto`'s: output throughput / concurrency, tok/s.
    pub tps_per_user_by_concurrency: Option<f64>,
    /// MLPerf's `ttft_p90_ms`: the p90 time to the first non-empty fragment
    /// of any kind (answer, reasoning or tool call) — goodput's `ttft`.
    pub ttft_p90_ms: Option<f64>,
    /// The cost of a million output tokens at this point (`--cost-per-hour`).
    pub cost_per_million_output_tokens: Option<f64>,
    /// Whether the point met the SLO (None without one).
    pub meets: Option<bool>,
    /// On the Pareto frontier: no other point gives as much or more of
    /// both, and more of one.
    pub on_frontier: bool,
}

/// A sweep's frontier: every point's figures and the Pareto step function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frontier {
    /// What the x axis is: `tps_per_user` (1000 / p90 TPOT) or, for an
    /// agent workload, `e2e_interactivity`.
    pub x: String,
    /// GPUs behind each point (`--gpus`, else 1).
    pub gpus: u32,
    /// Every point with a throughput, by offered load.
    pub points: Vec<FrontierPoint>,
    /// The frontier's corners, by x rising (and `system_tps` falling):
    /// indices into `points`. Between two corners the step function holds
    /// the right-hand corner's `system_tps` (MLPerf §5.2: no interpolation).
    pub steps: Vec<usize>,
    /// MLPerf's regions over the closed-loop points, when there are two
    /// concurrencies or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regions: Option<Regions>,
    /// Where the points fall short of MLPerf Endpoints' point rules
    /// (count, the ultra-low point, one point a region); empty when they
    /// meet them.
    pub mlperf_unmet: Vec<String>,
}

impl Frontier {
    /// The frontier of `points` (any order; `x` names their per-user
    /// figure, `gpus` the GPUs behind each): by offered load, MLPerf's
    /// regions over their concurrencies, the Pareto corners, and MLPerf's
    /// point rules unmet.
    pub fn from_points(mut points: Vec<FrontierPoint>, x: &str, gpus: u32) -> Frontier {
        let concurrencies: Vec<usize> = points.iter().filter_map(|p| p.concurrency).collect();
        let regions = match (concurrencies.iter().min(), concurrencies.iter().max()) {
            (Some(&lo), Some(&hi)) => Regions::new(lo.min(ULTRA_LOW_MAX), hi),
            _ => None,
        };
        for p in &mut points {
            p.region = p.concurrency.zip(regions).map(|(c, g)| g.of(c));
        }
        points.sort_by(|a, b| a.offered.total_cmp(&b.offered));
        let steps = pareto(&mut points);
        Frontier {
            x: x.into(),
            gpus,
            points,
            steps,
            regions,
            mlperf_unmet: unmet(&concurrencies, regions),
        }
    }

    /// The step function's value at `x`: the most `system_tps` any point
    /// with at least that per-user rate gave; None past the last corner.
    pub fn at(&self, x: f64) -> Option<f64> {
        self.points
            .iter()
            .filter(|p| p.tps_per_user.is_some_and(|u| u >= x))
            .map(|p| p.system_tps)
            .reduce(f64::max)
    }
}

/// Mark the Pareto-optimal points and return them by x rising: a point is
/// on the frontier when no point has at least its per-user rate with more
/// throughput, nor more per-user rate with as much throughput.
fn pareto(points: &mut [FrontierPoint]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..points.len())
        .filter(|&i| points[i].tps_per_user.is_some_and(f64::is_finite))
        .collect();
    // By x falling, ties by throughput falling: a running best throughput
    // picks the corners.
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&points[a], &points[b]);
        pb.tps_per_user
            .partial_cmp(&pa.tps_per_user)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(pb.system_tps.total_cmp(&pa.system_tps))
    });
    let mut best = f64::NEG_INFINITY;
    let mut steps = Vec::new();
    for i in order {
        if points[i].system_tps > best {
            best = points[i].system_tps;
            points[i].on_frontier = true;
            steps.push(i);
        }
    }
    steps.reverse();
    steps
}

/// Where closed-loop concurrencies fall short of MLPerf's point rules.
fn unmet(concurrencies: &[usize], regions: Option<Regions>) -> Vec<String> {
    let mut cs = concurrencies.to_vec();
    cs.sort_unstable();
    cs.dedup();
    let mut out = Vec::new();
    if cs.is_empty() {
        return vec!["no closed-loop point: MLPerf's points are concurrencies".into()];
    }
    if cs.len() < MIN_POINTS {
        out.push(format!(
            "{} concurrencies, fewer than the {MIN_POINTS} MLPerf asks",
            cs.len()
        ));
    }
    if cs.len() > MAX_POINTS {
        out.push(format!(
            "{} concurrencies, more than the {MAX_POINTS} MLPerf allows",
            cs.len()
        ));
    }
    if cs[0] > ULTRA_LOW_MAX {
        out.push(format!(
            "no point at concurrency 1–{ULTRA_LOW_MAX} (the lowest is {})",
            cs[0]
        ));
    }
    match regions {
        Some(g) => {
            for (region, name) in [
                (Region::Low, "low"),
                (Region::Medium, "medium"),
                (Region::High, "high"),
            ] {
                if !cs.iter().any(|&c| g.of(c) == region) {
                    out.push(format!("no point in the {name}-concurrency region"));
                }
            }
            if g.c_max <= 33 {
                out.push(format!(
                    "the highest concurrency, {}, is at most 33: MLPerf asks for a written justification",
                    g.c_max
                ));
            }
        }
        None => out.push("one concurrency: no regions".into()),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_follow_mlperfs_worked_examples() {
        // endpoints_rules.md §5.4, examples A, B and C.
        let a = Regions::new(32, 8192).unwrap();
        assert_eq!((a.low_end, a.medium_end), (52, 437));
        let b = Regions::new(1, 256).unwrap();
        assert_eq!((b.low_end, b.medium_end), (7, 41));
        assert_eq!(
            [1, 4, 16, 32, 64, 128, 256].map(|c| b.of(c)),
            [
                Region::UltraLow,
                Region::Low,
                Region::Medium,
                Region::Medium,
                Region::High,
                Region::High,
                Region::High
            ]
        );
        // Example C prints 116 (from 2^6.652 rounded to 100.4); the
        // reference algorithm it illustrates gives 1008^(2/3) = 100.53,
        // and 16 + 100.53 rounds to 117. The algorithm is the rule.
        let c = Regions::new(16, 1024).unwrap();
        assert_eq!((c.low_end, c.medium_end), (26, 117));
        assert_eq!(round_half_even(2.5), 2);
        assert_eq!(round_half_even(3.5), 4);
        assert!(unmet(&[1, 4, 16, 32, 64, 128, 256], Some(b)).is_empty());
        assert_eq!(unmet(&[1, 2, 4], Regions::new(1, 4)).len(), 3);
    }
}
