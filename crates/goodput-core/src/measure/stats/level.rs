//! Which sides an interval bounds, and the quantiles that bound them.

/// Which sides an interval bounds, at 95 % on the whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Level {
    /// Both ends, 2.5 % left out on each side: every interval goodput
    /// prints with two ends.
    #[default]
    TwoSided,
    /// The lower end alone, 5 % left out below it: what a run whose queue
    /// remembers longer than it ran still bounds (docs/metrics.md
    /// "Crowding"). It sits above a two-sided interval's lower end; keeping
    /// that end instead covered 98.5–99.5 % of the time where 95 % was
    /// claimed.
    Lower,
}

impl Level {
    /// The share of the truth's draws left out below the lower end.
    pub fn tail(self) -> f64 {
        match self {
            Level::TwoSided => 0.025,
            Level::Lower => 0.05,
        }
    }

    /// The confidence of the two-sided interval whose lower end this
    /// level's lower end is.
    pub fn two_sided_confidence(self) -> f64 {
        1.0 - 2.0 * self.tail()
    }

    /// The standard normal quantile at `1 − tail`.
    pub fn z(self) -> f64 {
        match self {
            Level::TwoSided => 1.959_964,
            Level::Lower => 1.644_854,
        }
    }

    /// Student's t quantile at `1 − tail` with `df` degrees of freedom.
    pub fn t(self, df: usize) -> f64 {
        const T_975: [f64; 30] = [
            12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
            2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
            2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
        ];
        const T_95: [f64; 30] = [
            6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782,
            1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
            1.708, 1.706, 1.703, 1.701, 1.699, 1.697,
        ];
        let table = match self {
            Level::TwoSided => &T_975,
            Level::Lower => &T_95,
        };
        match df {
            0 => f64::INFINITY,
            1..=30 => table[df - 1],
            _ => {
                // Cornish–Fisher expansion around the normal quantile: within
                // 1e-4 of the exact value past 30 degrees of freedom.
                let z = self.z();
                let n = df as f64;
                z + (z.powi(3) + z) / (4.0 * n)
                    + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Level;

    /// The expansion past the table meets the table's last entry and the
    /// normal quantile in the limit.
    #[test]
    fn the_t_quantiles_join_their_tables_and_the_normal() {
        for level in [Level::TwoSided, Level::Lower] {
            assert!((level.t(31) - level.t(30)).abs() < 0.01, "{level:?}");
            assert!(level.t(31) < level.t(30));
            assert!((level.t(100_000) - level.z()).abs() < 1e-3);
        }
        assert_eq!(Level::Lower.t(7), 1.895);
    }
}
