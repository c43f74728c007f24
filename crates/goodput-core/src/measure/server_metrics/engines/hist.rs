//! A server's cumulative Prometheus histogram: the window between two
//! scrapes, its mean, and its quantiles as Prometheus'
//! `histogram_quantile` interpolates them.

/// A cumulative Prometheus histogram, in seconds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hist {
    /// Finite upper bounds, ascending.
    pub bounds: Vec<f64>,
    /// Observations `<=` each bound; same length as `bounds`, `+Inf` excluded.
    pub cumulative: Vec<f64>,
    pub count: f64,
    pub sum: f64,
}

impl Hist {
    /// `self − earlier`: the observations between two scrapes. `None` when
    /// the bucket layouts differ or any count or the sum went backwards,
    /// which means the server restarted in between.
    pub fn delta(&self, earlier: &Hist) -> Option<Hist> {
        if self.bounds != earlier.bounds || self.cumulative.len() != earlier.cumulative.len() {
            return None;
        }
        let sub = |a: f64, b: f64| (a >= b).then_some(a - b);
        let cumulative = self
            .cumulative
            .iter()
            .zip(&earlier.cumulative)
            .map(|(&a, &b)| sub(a, b))
            .collect::<Option<Vec<_>>>()?;
        Some(Hist {
            bounds: self.bounds.clone(),
            cumulative,
            count: sub(self.count, earlier.count)?,
            sum: sub(self.sum, earlier.sum)?,
        })
    }

    /// `sum / count`; `None` when nothing was observed.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0 && self.sum.is_finite()).then(|| self.sum / self.count)
    }

    /// Prometheus' `histogram_quantile`: find the bucket holding rank
    /// `q × count` and interpolate linearly inside it, the first bucket
    /// starting at 0 (or being returned whole if its bound is `<= 0`); a
    /// rank in the `+Inf` bucket returns the highest finite bound. `None`
    /// for `q` outside `[0, 1]`, no observations or no finite bucket, where
    /// Prometheus would answer `±Inf` or `NaN`. One more difference: where
    /// the rank lands on an empty bucket (only possible at `q = 0`),
    /// Prometheus divides 0 by 0 and this returns the bucket's lower edge.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.bounds.len().min(self.cumulative.len());
        // Written so that a NaN count or q falls out too.
        let observed = self.count > 0.0;
        if !(0.0..=1.0).contains(&q) || !observed || n == 0 {
            return None;
        }
        let rank = q * self.count;
        let Some(b) = self.cumulative[..n].iter().position(|&c| c >= rank) else {
            return Some(self.bounds[n - 1]);
        };
        let end = self.bounds[b];
        if b == 0 && end <= 0.0 {
            return Some(end);
        }
        let (start, below) = match b {
            0 => (0.0, 0.0),
            _ => (self.bounds[b - 1], self.cumulative[b - 1]),
        };
        let inside = self.cumulative[b] - below;
        let populated = inside > 0.0;
        if !populated {
            return Some(start);
        }
        Some(start + (end - start) * ((rank - below) / inside))
    }
}
