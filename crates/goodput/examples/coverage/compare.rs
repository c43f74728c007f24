//! `compare` on pairs of runs: its false alarms on two runs of the same
//! plan with different seeds (per figure, and for the whole comparison,
//! which is what a CI gate acts on), with and without the records, and
//! its power on a known regression (a 10 % slower prefill: the hardware's
//! compute peak divided by 1.1, which moves TTFT and leaves decode, which
//! is bound by memory bandwidth, nearly alone).

use std::collections::BTreeMap;

use goodput_core::measure::{Metric, RequestMetrics};
use goodput_core::output::compare::{metrics_figures, Figure, Samples};
use goodput_core::tokenizer::Tokenizer;

use crate::loads::Cell;
use crate::virtual_search::{Run, Virtual};

/// The percentiles a run reports by default.
const PERCENTILES: [f64; 4] = [50.0, 90.0, 95.0, 99.0];
/// Run sizes of the pairs: the default `run` and a 1,000-request run.
const SIZES: [u64; 2] = [200, 1000];

/// A run's TTFT, TPOT and E2EL per measured, completed request, in the
/// order they finished (what `--records` gives compare).
fn samples(run: &Run) -> Samples {
    let tokenizer = Tokenizer::from_spec("none").expect("the null tokenizer");
    let mut values: BTreeMap<Metric, Vec<f64>> = BTreeMap::new();
    for rec in run
        .records
        .iter()
        .filter(|r| !r.warmup && r.error.is_none())
    {
        let m = RequestMetrics::derive(rec, &tokenizer);
        for metric in [Metric::Ttft, Metric::Tpot, Metric::E2el] {
            if let Some(x) = metric.value(&m) {
                values.entry(metric).or_default().push(x);
            }
        }
    }
    Samples::from_values(values)
}

fn figures(a: &Run, b: &Run, records: bool) -> Vec<Figure> {
    let (sa, sb) = (samples(a), samples(b));
    metrics_figures(
        &a.metrics,
        &b.metrics,
        &PERCENTILES,
        records.then_some((&sa, &sb)),
    )
}

/// How often a comparison called anything significant, and which figures.
#[derive(Default)]
struct Alarms {
    pairs: u32,
    any: u32,
    by_figure: BTreeMap<String, u32>,
}

impl Alarms {
    fn add(&mut self, figs: &[Figure]) {
        self.pairs += 1;
        let called: Vec<&Figure> = figs
            .iter()
            .filter(|f| f.significance.significant == Some(true))
            .collect();
        self.any += u32::from(!called.is_empty());
        for f in called {
            *self.by_figure.entry(f.name.clone()).or_default() += 1;
        }
    }
    fn share(&self) -> f64 {
        self.any as f64 / self.pairs.max(1) as f64 * 100.0
    }
    fn worst(&self) -> String {
        let mut v: Vec<(&String, &u32)> = self.by_figure.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1));
        v.iter()
            .take(3)
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub fn study(v: &Virtual, cells: &[Cell], pairs: u64) {
    let mut slow = Virtual::readme();
    slow.cooldown = v.cooldown;
    slow.config.hardware.peak_tflops /= 1.1;
    for size in SIZES {
        println!("\n## compare, {size}-request runs, {pairs} pairs per cell");
        println!("| load | same plan: any figure significant (saved intervals) | (with records) | most called | 10 % slower prefill: flagged (any figure) | TTFT figure flagged |");
        println!("| --- | --- | --- | --- | --- | --- |");
        for cell in cells {
            let (mut plain, mut records, mut power) =
                (Alarms::default(), Alarms::default(), Alarms::default());
            let mut ttft_flagged = 0;
            for r in 0..pairs {
                let a = cell.run(v, size, 2 * r);
                let b = cell.run(v, size, 2 * r + 1);
                plain.add(&figures(&a, &b, false));
                records.add(&figures(&a, &b, true));
                let c = cell.run(&slow, size, 2 * r + 1);
                let figs = figures(&a, &c, false);
                ttft_flagged +=
                    u32::from(figs.iter().any(|f| {
                        f.name.contains("ttft") && f.significance.significant == Some(true)
                    }));
                power.add(&figs);
            }
            let worst = [plain.worst(), records.worst()]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            println!(
                "| {} | {:.1} % | {:.1} % | {} | {:.1} % | {:.1} % |",
                cell.name,
                plain.share(),
                records.share(),
                if worst.is_empty() { "-".into() } else { worst },
                power.share(),
                ttft_flagged as f64 / pairs as f64 * 100.0,
            );
        }
    }
}
