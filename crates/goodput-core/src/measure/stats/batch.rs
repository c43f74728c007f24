//! Batch means: the spread of a total over values that are not independent.
//!
//! A benchmark's requests are not independent draws. In a queue one slow
//! engine step delays every request behind it, and the requests of one
//! batch share its step times, so neighbours in time are alike: an interval
//! that treats n requests as n independent draws is too narrow (the
//! coverage study, `examples/coverage`, measured 40 % coverage for a "95 %"
//! mean TPOT interval at a fifth of the engine's capacity).
//!
//! Batch means is the standard remedy of simulation output analysis: cut
//! the values, in the order they happened, into `b` consecutive batches
//! long enough that the batches are nearly independent, and read the
//! spread from the batches' totals, with Student's t on `b − 1` degrees of
//! freedom. Here each item is an `(amount, weight)` pair — a value and 1
//! for a mean, an indicator and 1 for a quantile's share, a request's
//! count at or below a value and its count of values for a pooled
//! quantile — and [`spread`] estimates the variance of the linearised total
//! `Σ amount − R · Σ weight` (`R` the ratio of the totals), which is what
//! an interval of the ratio or of a quantile's rank needs.
//!
//! The batch count adapts, as in Fishman and Yarberry's LBATCH: it starts
//! at [`START_BATCHES`] and halves (neighbouring batches merged) while the
//! batch residuals' lag-1 autocorrelation is positive (neighbouring batches
//! still alike), down to [`MIN_BATCHES`]. Below that it halves again, down
//! to [`FLOOR_BATCHES`], only on evidence: a lag-1 autocorrelation above
//! what independent batches exceed one time in twenty ([`evident`]). A run
//! that spans only a few of the server's memories (400 requests near
//! capacity) has batches still alike at 8, and its intervals were too
//! narrow; merging every such run on any positive correlation widened the
//! many whose batches are independent too (the coverage study,
//! BENCHMARKS.md).

/// Batches to start from.
pub const START_BATCHES: usize = 32;
/// Fewest batches merged down to on any positive correlation, and the
/// fewest a spread is read from at all.
pub const MIN_BATCHES: usize = 8;
/// Fewest batches merged down to on evident correlation: Student's t on 3
/// degrees of freedom (3.18 at 95 %) is the price, paid only by runs whose
/// batches show they need it.
pub const FLOOR_BATCHES: usize = 4;

/// The spread of a linearised total from batch means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Estimated variance of `Σ amount − R · Σ weight`.
    pub variance: f64,
    /// Degrees of freedom of the estimate (batches − 1).
    pub df: usize,
    /// Σ weight of the items.
    pub weight: f64,
    /// Σ amount of the items.
    pub amount: f64,
}

impl Spread {
    /// The half-width at `level` of the ratio `Σ amount / Σ weight`.
    pub fn ratio_half_width(&self, level: super::Level) -> f64 {
        level.t(self.df) * self.variance.sqrt() / self.weight
    }

    /// The half-width at `level` of the total, in the amount's unit (for a
    /// quantile: ranks).
    pub fn total_half_width(&self, level: super::Level) -> f64 {
        level.t(self.df) * self.variance.sqrt()
    }
}

/// The batch-means spread of `items` (in time order). `None` with fewer
/// items than `MIN_BATCHES` or no weight.
pub fn spread(items: &[(f64, f64)]) -> Option<Spread> {
    let n = items.len();
    if n < MIN_BATCHES {
        return None;
    }
    let b = START_BATCHES.min(n);
    let mut batches: Vec<(f64, f64)> = (0..b)
        .map(|j| {
            let (start, end) = (j * n / b, (j + 1) * n / b);
            items[start..end]
                .iter()
                .fold((0.0, 0.0), |(a, w), &(x, y)| (a + x, w + y))
        })
        .collect();
    let amount: f64 = batches.iter().map(|x| x.0).sum();
    let weight: f64 = batches.iter().map(|x| x.1).sum();
    if weight <= 0.0 {
        return None;
    }
    let ratio = amount / weight;
    loop {
        let residuals: Vec<f64> = batches.iter().map(|&(a, w)| a - ratio * w).collect();
        let b = residuals.len();
        let sum_sq: f64 = residuals.iter().map(|r| r * r).sum();
        let lag1: f64 = residuals.windows(2).map(|p| p[0] * p[1]).sum();
        // Any positive lag-1 correlation: batches this short still share
        // their neighbours' state (a test at 5 % misses ρ ≈ 0.3 at 32
        // batches, and then the variance is short by a third).
        let alike = sum_sq > 0.0 && lag1 > 0.0;
        if alike && b / 2 >= MIN_BATCHES {
            batches = merge_pairs(&batches);
            continue;
        }
        if alike && b / 2 >= FLOOR_BATCHES && lag1 / sum_sq > evident(b) {
            batches = merge_pairs(&batches);
            continue;
        }
        return Some(Spread {
            variance: b as f64 / (b as f64 - 1.0) * sum_sq,
            df: b - 1,
            weight,
            amount,
        });
    }
}

/// The lag-1 autocorrelation that `b` independent batches' residuals exceed
/// with probability 5 %: Anderson's one-sided point, `(−1 + 1.645·√(b − 2))
/// / (b − 1)` (0.433 at 8 batches, 0.352 at 15).
fn evident(b: usize) -> f64 {
    let b = b as f64;
    (-1.0 + 1.645 * (b - 2.0).sqrt()) / (b - 1.0)
}

/// Neighbouring batches merged two by two (an odd last one joins the pair
/// before it).
fn merge_pairs(batches: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = batches
        .chunks(2)
        .map(|c| c.iter().fold((0.0, 0.0), |(a, w), &(x, y)| (a + x, w + y)))
        .collect();
    if batches.len() % 2 == 1 && out.len() >= 2 {
        let last = out.pop().expect("two or more");
        let prev = out.last_mut().expect("one or more");
        prev.0 += last.0;
        prev.1 += last.1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Independent values: the batch variance of the total is close to
    /// n·σ², and the batches are not merged.
    #[test]
    fn independent_values_give_the_independent_variance() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let items: Vec<(f64, f64)> = (0..3200).map(|_| (rng.random::<f64>(), 1.0)).collect();
        let s = spread(&items).unwrap();
        // Uniform(0, 1): σ² = 1/12.
        let expected = 3200.0 / 12.0;
        assert!((s.variance / expected - 1.0).abs() < 0.6, "{}", s.variance);
        assert_eq!(s.df, START_BATCHES - 1);
    }

    /// Values in long runs of equal ones (an AR-like series): the batches
    /// merge and the variance is many times the independent one.
    #[test]
    fn runs_of_alike_values_widen_the_spread() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let mut items = Vec::new();
        for _ in 0..64 {
            let level: f64 = rng.random();
            for _ in 0..50 {
                items.push((level + 0.01 * rng.random::<f64>(), 1.0));
            }
        }
        let s = spread(&items).unwrap();
        let independent = items.len() as f64 / 12.0;
        assert!(
            s.variance > 10.0 * independent,
            "{} vs {independent}",
            s.variance
        );
    }

    /// Eight batches still evidently alike (a slow swing over the run,
    /// lag-1 autocorrelation 0.57) merge on to four; eight only weakly
    /// alike (0.18, what independent batches often show) stay eight.
    #[test]
    fn evident_likeness_at_eight_batches_merges_to_four() {
        let items = |xs: [f64; 8]| xs.map(|x| (x, 1.0));
        let swing = spread(&items([3.0, 2.0, 1.0, 0.0, -1.0, -2.0, -3.0, 0.0])).unwrap();
        assert_eq!(swing.df, FLOOR_BATCHES - 1);
        // The four merged batches' totals 5, 1, −3, −3.
        assert!(
            (swing.variance - 4.0 / 3.0 * 44.0).abs() < 1e-9,
            "{}",
            swing.variance
        );
        let weak = spread(&items([-1.0, 1.0, 0.0, -3.0, -1.0, 1.0, 3.0, 0.0])).unwrap();
        assert_eq!(weak.df, MIN_BATCHES - 1);
        assert!((evident(8) - 0.4328).abs() < 1e-3);
    }

    #[test]
    fn too_few_items_have_no_spread() {
        assert_eq!(spread(&[(1.0, 1.0); 7]), None);
        assert!(spread(&[(1.0, 1.0); 8]).is_some());
    }
}
