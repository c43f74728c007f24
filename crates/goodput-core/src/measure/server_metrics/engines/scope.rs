//! How a scrape's samples are combined into one figure: summed over the
//! label sets that are shares of the work, replicas counted once, fractions
//! maxed, histograms added bucket by bucket (see the engines module's
//! "Combining label sets").

use super::hist::Hist;
use crate::measure::server_metrics::parse::Sample;

/// Labels that name copies of one scheduler rather than shares of the work
/// (SGLang tensor, pipeline and expert-parallel ranks).
pub const REPLICA_LABELS: [&str; 3] = ["tp_rank", "pp_rank", "moe_ep_rank"];

/// The samples left after the model filter, with the ways to combine them.
pub(super) struct Scope<'a> {
    pub(super) samples: Vec<&'a Sample>,
}

/// A series' labels, sorted, without `le` and without the replica labels:
/// series with equal keys are copies of each other.
fn replica_key<'s>(
    labels: impl IntoIterator<Item = &'s (String, String)>,
) -> Vec<(&'s str, &'s str)> {
    let mut key: Vec<_> = labels
        .into_iter()
        .filter(|(k, _)| k != "le" && !REPLICA_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    key.sort_unstable();
    key
}

impl<'a> Scope<'a> {
    /// The samples of the first of `names` the scrape has.
    fn series(&self, names: &[&str]) -> Vec<&'a Sample> {
        names
            .iter()
            .map(|n| {
                self.samples
                    .iter()
                    .copied()
                    .filter(|s| s.name == *n && s.value.is_finite())
                    .collect::<Vec<_>>()
            })
            .find(|v| !v.is_empty())
            .unwrap_or_default()
    }

    pub(super) fn sum(&self, names: &[&str]) -> Option<f64> {
        self.sum_where(names, |_| true)
    }

    /// A request-count gauge summed as [`Scope::sum`] does, except that
    /// SGLang with priority scheduling writes the total under `priority=""`
    /// and a per-priority breakdown beside it: where a total is there, the
    /// breakdown is left out rather than counted twice.
    pub(super) fn gauge_sum(&self, names: &[&str]) -> Option<f64> {
        let is_total = |s: &Sample| s.label("priority").is_none_or(str::is_empty);
        let has_total = self.series(names).into_iter().any(is_total);
        self.sum_where(names, |s| !has_total || is_total(s))
    }

    /// Whether the scrape holds histogram `base`.
    pub(super) fn has_hist(&self, base: &str) -> bool {
        let count = format!("{base}_count");
        self.samples.iter().any(|s| s.name == count)
    }

    /// Sum over the series of the first present name that pass `keep`, each
    /// group of replicas counted once (its largest value).
    pub(super) fn sum_where(&self, names: &[&str], keep: impl Fn(&Sample) -> bool) -> Option<f64> {
        let series = self.series(names);
        if series.is_empty() {
            return None;
        }
        let mut groups: Vec<(Vec<(&str, &str)>, f64)> = Vec::new();
        for s in series.into_iter().filter(|s| keep(s)) {
            let key = replica_key(&s.labels);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some(g) => g.1 = g.1.max(s.value),
                None => groups.push((key, s.value)),
            }
        }
        Some(groups.iter().map(|(_, v)| v).sum())
    }

    pub(super) fn max(&self, names: &[&str]) -> Option<f64> {
        self.series(names).iter().map(|s| s.value).reduce(f64::max)
    }

    /// The histogram of the first present base name: every series read on
    /// its own, replicas kept once (the one with most observations), the
    /// rest added bucket by bucket. `None` if the series' buckets differ,
    /// since they cannot then be added.
    pub(super) fn hist(&self, bases: &[&str]) -> Option<Hist> {
        bases.iter().find_map(|base| self.hist_of(base))
    }

    fn hist_of(&self, base: &str) -> Option<Hist> {
        let bucket = format!("{base}_bucket");
        let sum = format!("{base}_sum");
        let count = format!("{base}_count");
        // One entry per series (labels minus `le`), in order of appearance.
        let mut parts: Vec<Part<'a>> = Vec::new();
        for &s in &self.samples {
            if !s.value.is_finite() || (s.name != bucket && s.name != sum && s.name != count) {
                continue;
            }
            let labels: Vec<_> = s.labels.iter().filter(|(k, _)| k != "le").collect();
            let i = match parts.iter().position(|p| p.labels == labels) {
                Some(i) => i,
                None => {
                    parts.push(Part::new(labels));
                    parts.len() - 1
                }
            };
            let p = &mut parts[i];
            if s.name == sum {
                p.sum = Some(s.value);
            } else if s.name == count {
                p.count = Some(s.value);
            } else {
                match s.label("le").and_then(|le| le.parse::<f64>().ok()) {
                    Some(le) if le == f64::INFINITY => p.inf = Some(s.value),
                    Some(le) if le.is_finite() => p.buckets.push((le, s.value)),
                    _ => {}
                }
            }
        }
        let mut kept: Vec<(Vec<(&str, &str)>, Hist)> = Vec::new();
        for p in parts {
            let key = replica_key(p.labels.iter().copied());
            let Some(h) = p.finish() else { continue };
            match kept.iter_mut().find(|(k, _)| *k == key) {
                Some((_, best)) if h.count > best.count => *best = h,
                Some(_) => {}
                None => kept.push((key, h)),
            }
        }
        let mut hists = kept.into_iter().map(|(_, h)| h);
        let mut total = hists.next()?;
        for h in hists {
            if h.bounds != total.bounds {
                return None;
            }
            for (t, c) in total.cumulative.iter_mut().zip(&h.cumulative) {
                *t += c;
            }
            total.count += h.count;
            total.sum += h.sum;
        }
        Some(total)
    }
}

/// One histogram series as read, before it is checked and combined.
struct Part<'a> {
    labels: Vec<&'a (String, String)>,
    buckets: Vec<(f64, f64)>,
    inf: Option<f64>,
    sum: Option<f64>,
    count: Option<f64>,
}

impl<'a> Part<'a> {
    fn new(labels: Vec<&'a (String, String)>) -> Self {
        Part {
            labels,
            buckets: Vec::new(),
            inf: None,
            sum: None,
            count: None,
        }
    }

    /// Sorted by bound, repeated bounds collapsed, counts made monotonic (as
    /// Prometheus does before a quantile); needs a count (or `+Inf`) and a
    /// sum, which every real exporter writes.
    fn finish(mut self) -> Option<Hist> {
        self.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.buckets.dedup_by(|later, first| {
            let same = later.0 == first.0;
            if same {
                first.1 = first.1.max(later.1);
            }
            same
        });
        let mut running = 0.0_f64;
        let (bounds, cumulative) = self
            .buckets
            .iter()
            .map(|&(b, c)| {
                running = running.max(c);
                (b, running)
            })
            .unzip();
        Some(Hist {
            bounds,
            cumulative,
            count: self.count.or(self.inf)?,
            sum: self.sum?,
        })
    }
}
