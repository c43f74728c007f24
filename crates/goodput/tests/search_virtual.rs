//! The goodput search, with its metrics and its schedule adjustment, run
//! against the simulator's engine in virtual time (no HTTP, no clock):
//! over several arrival samples its answers lie around the sustained
//! goodput — the long-run pooled reference — not above it, as the old
//! search's did (11.0 req/s where the sustained goodput is 7.2).

#[path = "../examples/virtual_search/mod.rs"]
mod virtual_search;

use virtual_search::{Plan, Virtual};

#[test]
fn the_search_lands_on_the_sustained_goodput_over_many_samples() {
    let v = Virtual::readme();
    // The sustained reference, smaller than BENCHMARKS.md's converged one
    // (7.20 req/s from 20 x 10,000 requests) to keep the test short: 20 x
    // 2,000 gives 7.27 (with 8 schedules it read 7.42: too few).
    let reference = v.reference(20, 2000, (5.0, 10.0), 0.01);
    assert!((6.5..8.0).contains(&reference), "reference {reference}");
    let mut errors = Vec::new();
    for seed in 0..16 {
        let (answer, search) = v.search(Plan::default(), seed);
        let load: f64 = search.observations().iter().map(|o| o.wall_s).sum();
        assert!(load <= 270.0, "seed {seed}: {load} s of load");
        assert!(
            search
                .observations()
                .iter()
                .filter(|o| o.measuring)
                .all(|o| o.requests >= 368),
            "seed {seed}: a measuring point too short for its p99"
        );
        errors.push(answer.rate / reference - 1.0);
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    // 40 samples against 7.20 (BENCHMARKS.md): mean -1.3 %, median |error|
    // 3.1 %, 33 of 40 within 7 %, all within 15 %. These 16 (seeds 0-15)
    // are among the lower ones: mean -4.0 %, median 4.3 %, worst -14.7 %
    // against 7.20. The old search's 11.0 would be +51 %.
    assert!(mean.abs() <= 0.08, "mean error {mean:+.3}: {errors:?}");
    assert!(abs[abs.len() / 2] <= 0.08, "median error: {errors:?}");
    assert!(abs[abs.len() - 1] <= 0.2, "worst error: {errors:?}");
}
