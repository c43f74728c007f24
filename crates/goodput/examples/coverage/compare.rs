//! `compare` on pairs of runs: its false alarms on two runs of the same
//! plan with different seeds (per figure, and for the whole comparison,
//! which is what a CI gate acts on), with and without the records, and
//! its power on a known regression (a 10 % slower prefill: the hardware's
//! compute peak divided by 1.1, which moves TTFT and leaves decode, which
//! is bound by memory bandwidth, nearly alone).

use std::collections::BTreeMap;

use goodput_core::measure::{Metric, RequestMetrics};
use goodput_core::output::compare::{metrics_figures, repeats_figures, Figure, Samples};
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
    let slow = slower_prefill(v);
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

/// A 10 % slower prefill: the hardware's compute peak divided by 1.1.
fn slower_prefill(v: &Virtual) -> Virtual {
    let mut slow = Virtual::readme();
    slow.cooldown = v.cooldown;
    slow.config.hardware.peak_tflops /= 1.1;
    slow
}

/// The run size of the `effect` and `repeats` sections (`COVERAGE_SIZES`,
/// default the default `run`'s 1,000).
fn size() -> u64 {
    std::env::var("COVERAGE_SIZES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

/// How far a 10 % slower prefill moves each figure in units of the runs'
/// own spread, d = (mean NEW − mean BASE) / √(sd BASE² + sd NEW²) over
/// `runs` runs a side: the most any test of one pair of runs can see. A
/// test of one figure at α = 0.05 two-sided flags a shift of d in about
/// Φ(d − 1.96) of pairs (80 % needs d ≥ 2.8); Holm over twenty figures
/// needs d ≥ 3.9.
pub fn effect(v: &Virtual, cells: &[Cell], runs: u64) {
    let slow = slower_prefill(v);
    let size = size();
    let ms = |v: &[f64]| {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
        (m, var.sqrt())
    };
    for cell in cells {
        let mut sides: [BTreeMap<String, Vec<f64>>; 2] = Default::default();
        for r in 0..runs {
            for (i, engine) in [v, &slow].into_iter().enumerate() {
                let a = cell.run(engine, size, 2 * r + 1);
                for f in metrics_figures(&a.metrics, &a.metrics, &PERCENTILES, None) {
                    if let Some(x) = f.base {
                        sides[i].entry(f.name).or_default().push(x);
                    }
                }
            }
        }
        println!("\n### {} ({size}-request runs, {runs} a side)", cell.name);
        println!("| figure | BASE mean ± sd | slower prefill mean ± sd | shift | d |");
        println!("| --- | --- | --- | --- | --- |");
        for (name, a) in &sides[0] {
            let Some(b) = sides[1].get(name) else {
                continue;
            };
            let ((ma, sa), (mb, sb)) = (ms(a), ms(b));
            if sa == 0.0 && sb == 0.0 {
                continue;
            }
            let d = (mb - ma) / (sa * sa + sb * sb).sqrt();
            println!(
                "| {name} | {ma:.2} ± {sa:.2} | {mb:.2} ± {sb:.2} | {:+.1} % | {d:+.2} |",
                (mb / ma - 1.0) * 100.0
            );
        }
    }
}

fn metrics(s: &[Run]) -> Vec<&goodput_core::measure::RunMetrics> {
    s.iter().map(|x| &x.metrics).collect()
}

/// `compare` of two `--repeat` results (`COVERAGE_REPEATS` runs a side,
/// default 5): the false alarms on pairs of the same plan with different
/// seeds, and the power on a 10 % slower prefill.
pub fn repeats(v: &Virtual, cells: &[Cell], pairs: u64) {
    let slow = slower_prefill(v);
    let size = size();
    let k: u64 = std::env::var("COVERAGE_REPEATS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    println!(
        "\n## compare of two --repeat {k} results, {size}-request runs, {pairs} pairs per cell"
    );
    println!("| load | same plan: any figure significant | most called | 10 % slower prefill: flagged (any figure) | TTFT figure flagged |");
    println!("| --- | --- | --- | --- | --- |");
    for cell in cells {
        let (mut plain, mut power) = (Alarms::default(), Alarms::default());
        let mut ttft_flagged = 0;
        for r in 0..pairs {
            // Seeds: BASE 3kr…, NEW 3kr + k…, slower 3kr + 2k… (never shared).
            let side = |engine: &Virtual, from: u64| -> Vec<Run> {
                (0..k).map(|i| cell.run(engine, size, from + i)).collect()
            };
            let a = side(v, 3 * k * r);
            let b = side(v, 3 * k * r + k);
            let c = side(&slow, 3 * k * r + 2 * k);
            plain.add(&repeats_figures(&metrics(&a), &metrics(&b), &PERCENTILES));
            let figs = repeats_figures(&metrics(&a), &metrics(&c), &PERCENTILES);
            ttft_flagged += u32::from(
                figs.iter()
                    .any(|f| f.name.contains("ttft") && f.significance.significant == Some(true)),
            );
            power.add(&figs);
        }
        let worst = plain.worst();
        println!(
            "| {} | {:.1} % | {} | {:.1} % | {:.1} % |",
            cell.name,
            plain.share(),
            if worst.is_empty() { "-".into() } else { worst },
            power.share(),
            ttft_flagged as f64 / pairs as f64 * 100.0,
        );
    }
}
