//! How much one open-loop point's p99 TTFT varies from one Poisson sample
//! of arrivals to the next, raw and adjusted by the schedule's own
//! burstiness (the control variate of goodput's search,
//! `goodput_core::measure::control`, computed here independently: a
//! surrogate FIFO queue whose every request takes S seconds, its p99 wait
//! over the run against the p99 over one long schedule, and the per-request
//! slope of TTFT on that wait).
//!
//! `cargo run --release -p goodput-sim --example point_noise -- [S]`
//! (default S = 0.045 s; the default preset, 1,024 in / 128 out, 20 warm-up
//! requests, 60 schedules per row). Deterministic.

use goodput_sim::virtual_time::{simulate, VirtualRequest};
use goodput_sim::SimConfig;
use rand::{rngs::StdRng, Rng, SeedableRng};
use rand_distr::Exp1;
fn p99(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let k = 0.99 * (v.len() - 1) as f64;
    let lo = k.floor() as usize;
    let f = k - lo as f64;
    v[lo] + (v[(lo + 1).min(v.len() - 1)] - v[lo]) * f
}
fn lindley(arr: &[f64], s: f64) -> Vec<f64> {
    let mut w = 0.0;
    let mut out = vec![];
    for i in 0..arr.len() {
        if i > 0 {
            w = f64::max(0.0, w + s - (arr[i] - arr[i - 1]));
        }
        out.push(w);
    }
    out
}
fn ms(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (
        m,
        (x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt(),
    )
}
fn sched(rng: &mut StdRng, n: usize, r: f64) -> Vec<f64> {
    let mut t = 0.0;
    (0..n)
        .map(|_| {
            let a = t;
            t += rng.sample::<f64, _>(Exp1) / r;
            a
        })
        .collect()
}
fn main() {
    println!("(all TTFT figures in ms; mu_short: mean p99 wait over short schedules, mu_inf: over one long one)");
    let config = SimConfig::default();
    let warm = 20usize;
    let s = std::env::args()
        .nth(1)
        .map_or(0.045, |a| a.parse().unwrap());
    for &(n, r) in &[(400usize, 7.5), (1000, 7.5), (400, 6.0), (400, 9.0)] {
        // mu_C by Monte Carlo
        let mut rng = StdRng::seed_from_u64(99);
        let mu_short: f64 = (0..400)
            .map(|_| {
                let a = sched(&mut rng, n + warm, r);
                p99(lindley(&a, s)[warm..].to_vec())
            })
            .sum::<f64>()
            / 400.0;
        let long = sched(&mut rng, 400_000, r);
        let mu = p99(lindley(&long, s)[1000..].to_vec());
        let mut pooled = vec![];
        let (mut raw, mut adj) = (vec![], vec![]);
        for seed in 0..60u64 {
            let mut rng = StdRng::seed_from_u64(1000 + seed);
            let arr = sched(&mut rng, n + warm, r);
            let reqs: Vec<VirtualRequest> = arr
                .iter()
                .enumerate()
                .map(|(i, &a)| VirtualRequest::unique(a, 1024, 128, i as u32))
                .collect();
            let rep = simulate(&config, &reqs).unwrap();
            let ttft: Vec<f64> = reqs
                .iter()
                .zip(&rep.requests)
                .skip(warm)
                .map(|(q, o)| o.ttft_s(q.arrival_s).unwrap())
                .collect();
            let w = lindley(&arr, s)[warm..].to_vec();
            // per-request slope
            let (mt, _) = ms(&ttft);
            let (mw, _) = ms(&w);
            let b = ttft
                .iter()
                .zip(&w)
                .map(|(t, x)| (t - mt) * (x - mw))
                .sum::<f64>()
                / w.iter().map(|x| (x - mw).powi(2)).sum::<f64>();
            let p = p99(ttft.clone());
            let c = p99(w.clone());
            pooled.extend(ttft.iter().copied());
            raw.push(p * 1e3);
            adj.push((p - b * (c - mu)) * 1e3);
        }
        println!(
            "mu_short {mu_short:.4} mu_inf {mu:.4} pooled p99 {:.1}",
            p99(pooled) * 1e3
        );
        let (a, b) = ms(&raw);
        let (c, d) = ms(&adj);
        println!(
            "s={s} n={n} r={r}: raw {a:.1} sd {b:.1} ({:.1}%)  adj {c:.1} sd {d:.1} ({:.1}%)",
            100.0 * b / a,
            100.0 * d / c
        );
    }
}
