//! Two `--repeat` results compared across their repeats.
//!
//! Each repeat is a whole run of the same plan: the same seed, so the same
//! prompt lengths on the same arrival schedule. Where both results were
//! drawn with one seed, the schedule is held fixed on both sides and each
//! side's repeats are independent draws of what the server does with it,
//! whatever the dependence between one run's requests. A figure's value on
//! a side is the mean over that side's repeats, and the change is judged by
//! **Welch's t-test** on the repeats' values (each side's own variance,
//! Welch–Satterthwaite degrees of freedom): the spread it reads is the
//! server's own from run to run, including what no single run's interval
//! can see (a server whose speed moves between runs). With different seeds
//! the schedules differ by more than the repeats' spread says, and nothing
//! is judged: compare warns. The error rate is a pooled two-proportion
//! test over every repeat's requests. Holm's correction over the family,
//! as for two runs.
//!
//! Where two single runs cannot tell (the coverage study: at 70–95 % of
//! capacity in open loop, a 10 % slower prefill moves no figure of a
//! 1,000-request run by more than 2.7 of its run-to-run standard
//! deviations, most of them the schedule's draw, under the 2.8 that 80 %
//! power at α = 0.05 needs even for one figure tested alone), two
//! `--repeat` results on one schedule can: the schedule's share cancels.

use super::comparability::{run_warnings, warning, Warning, WarningKind};
use super::figure::{Figure, Unit};
use super::run::metrics_figures;
use super::significance::{self, Method, Significance};
use crate::measure::metrics::RunMetrics;
use crate::measure::stats::student;
use crate::plan::repeat::RepeatResult;

/// Each figure's name, unit and per-repeat values, in the order the first
/// run lists them.
fn values(side: &[&RunMetrics], percentiles: &[f64]) -> Vec<(String, Unit, Vec<f64>)> {
    let mut out: Vec<(String, Unit, Vec<f64>)> = Vec::new();
    for m in side {
        for f in metrics_figures(m, m, percentiles, None) {
            let Some(x) = f.base.filter(|x| x.is_finite()) else {
                continue;
            };
            match out.iter_mut().find(|(name, _, _)| *name == f.name) {
                Some((_, _, v)) => v.push(x),
                None => out.push((f.name, f.unit, vec![x])),
            }
        }
    }
    out
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var)
}

/// Welch's two-sided t-test on two sides' per-repeat values; not available
/// with fewer than two values on either side.
pub fn welch(base: &[f64], new: &[f64]) -> Significance {
    if base.len() < 2 || new.len() < 2 {
        return Significance::NOT_AVAILABLE;
    }
    let ((mb, vb), (mn, vn)) = (mean_var(base), mean_var(new));
    let (sb, sn) = (vb / base.len() as f64, vn / new.len() as f64);
    let se = (sb + sn).sqrt();
    let diff = (mn - mb).abs();
    let p = if se > 0.0 {
        let df = (sb + sn).powi(2)
            / (sb * sb / (base.len() - 1) as f64 + sn * sn / (new.len() - 1) as f64);
        student::two_sided_p(diff / se, df)
    } else if diff > 0.0 {
        0.0
    } else {
        1.0
    };
    Significance::from_p(Method::Repeats, p)
}

/// Two `--repeat` results compared: the warnings (the first repeats'
/// differences of plan, and different seeds), the figures and the notes.
pub(super) fn compare(
    b: &RepeatResult,
    n: &RepeatResult,
    records: bool,
) -> (Vec<Warning>, Vec<Figure>, Vec<String>) {
    // Welch's test reads the repeats' own spread: a crowded run's
    // open-sided intervals do not stop it.
    let mut warnings = run_warnings(&b.runs[0], &n.runs[0], true);
    warnings.retain(|w| w.kind != WarningKind::Crowding);
    let mut seeds: Vec<u64> = b
        .runs
        .iter()
        .chain(&n.runs)
        .map(|r| r.config.seed)
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    let mut notes = Vec::new();
    if records {
        notes.push(
            "the records were not read: two --repeat results are judged across their repeats"
                .into(),
        );
    }
    let mut figures = repeat_figures(b, n);
    if let [seed] = seeds[..] {
        notes.push(format!(
            "each figure is the mean over {} BASE and {} NEW repeats of one schedule (seed {seed}), its change judged by Welch's t-test on the repeats' values (the error rate on all their requests): with the schedule held fixed, the spread it reads is the server's own from run to run",
            b.runs.len(),
            n.runs.len()
        ));
    } else {
        warnings.extend(warning(
            WarningKind::Seeds,
            format!(
                "the repeats drew different schedules (seeds {}): each side's spread is the server's noise on its own schedule, not the schedules' difference, so no change is judged across the repeats (run both with the same --seed)",
                seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            ),
        ));
        for f in &mut figures {
            if f.significance.method == Method::Repeats {
                f.significance = Significance::NOT_AVAILABLE;
            }
        }
        super::figure::holm(&mut figures);
    }
    (warnings, figures, notes)
}

/// Every figure of two `--repeat` results: each side's mean over its
/// repeats, judged by Welch's test on the repeats (the error rate by two
/// proportions over all their requests), Holm-corrected.
pub fn repeat_figures(base: &RepeatResult, new: &RepeatResult) -> Vec<Figure> {
    let mut p: Vec<f64> = [base, new]
        .iter()
        .flat_map(|s| s.runs.iter())
        .flat_map(|r| r.config.percentiles.iter().copied())
        .collect();
    p.sort_by(f64::total_cmp);
    p.dedup();
    fn metrics(s: &RepeatResult) -> Vec<&RunMetrics> {
        s.runs.iter().map(|r| &r.metrics).collect()
    }
    repeats_figures(&metrics(base), &metrics(new), &p)
}

/// `repeat_figures` from each repeat's metrics and the percentiles
/// either side reported (ascending, without repeats): what the coverage
/// study compares.
pub fn repeats_figures(base: &[&RunMetrics], new: &[&RunMetrics], p: &[f64]) -> Vec<Figure> {
    let (vb, vn) = (values(base, p), values(new, p));
    let counts = |s: &[&RunMetrics]| {
        s.iter().fold((0, 0), |(f, n), m| {
            (f + m.failed, n + m.completed + m.failed)
        })
    };
    let mut out = Vec::new();
    for (name, unit, b) in &vb {
        let n = vn
            .iter()
            .find(|(other, _, _)| other == name)
            .map(|(_, _, v)| v.as_slice());
        let mean = |v: &[f64]| (!v.is_empty()).then(|| mean_var(v).0);
        let significance = match n {
            None => Significance::NOT_AVAILABLE,
            Some(_) if name == "error_rate" => {
                let ((xb, nb), (xn, nn)) = (counts(base), counts(new));
                significance::two_proportions(xb, nb, xn, nn)
            }
            Some(n) => welch(b, n),
        };
        out.push(Figure::new(
            name.clone(),
            *unit,
            mean(b),
            n.and_then(mean),
            significance,
        ));
    }
    // Figures NEW has and BASE does not.
    for (name, unit, n) in &vn {
        if !vb.iter().any(|(other, _, _)| other == name) {
            out.push(Figure::new(
                name.clone(),
                *unit,
                None,
                Some(mean_var(n).0),
                Significance::NOT_AVAILABLE,
            ));
        }
    }
    super::figure::holm(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_reads_each_sides_spread() {
        // By hand: means 10 and 12, variances 1 and 4 over 5 and 5 values:
        // se² = 0.2 + 0.8 = 1, t = 2, df = 1 / (0.04/4 + 0.64/4) = 5.882.
        let d = [-2.0, -1.0, 0.0, 1.0, 2.0];
        let a: Vec<f64> = d.iter().map(|x| 10.0 + x * (1.0f64 / 2.5).sqrt()).collect();
        let b: Vec<f64> = d.iter().map(|x| 12.0 + x * (4.0f64 / 2.5).sqrt()).collect();
        let s = welch(&a, &b);
        let expected = student::two_sided_p(2.0, 1.0 / (0.04 / 4.0 + 0.64 / 4.0));
        assert!((s.p_value.unwrap() - expected).abs() < 1e-9, "{s:?}");
        assert_eq!(s.method, Method::Repeats);
        // t = 2 with ~6 df is not significant at 5 %; a normal z would be.
        assert_eq!(s.significant, Some(false));
        // Identical constants: no change; different constants: certain.
        assert_eq!(welch(&[3.0, 3.0], &[3.0, 3.0]).p_value, Some(1.0));
        assert_eq!(welch(&[3.0, 3.0], &[4.0, 4.0]).p_value, Some(0.0));
        // One repeat a side reads no spread.
        assert_eq!(welch(&[3.0], &[4.0, 4.1]), Significance::NOT_AVAILABLE);
    }
}
