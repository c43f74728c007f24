//! The goodput search, with its metrics and its schedule adjustment, run
//! against the simulator's engine in virtual time (no HTTP, no clock):
//! over several arrival samples its answers lie around the sustained
//! goodput — the long-run pooled reference — not above it, as the old
//! search's did (11.0 req/s where the sustained goodput was 7.2, with the
//! step-time model before 2026-11-26).

#[path = "../examples/virtual_search/mod.rs"]
mod virtual_search;

use virtual_search::{Plan, Virtual};

#[test]
fn the_search_lands_on_the_sustained_goodput_over_many_samples() {
    let v = Virtual::readme();
    // The sustained reference, smaller than BENCHMARKS.md's converged one
    // (25.03 req/s from 20 x 10,000 requests) to keep the test short: 20 x
    // 2,000 gives 25.64. (With the step-time model before 2026-11-26 they
    // were 7.20 and 7.27, and 8 schedules read 7.42: too few.)
    let reference = v.reference(20, 2000, (15.0, 35.0), 0.01);
    assert!((23.0..28.0).contains(&reference), "reference {reference}");
    let mut errors = Vec::new();
    for seed in 0..16 {
        let (answer, search) = v.search(Plan::default(), seed);
        let load: f64 = search.observations().iter().map(|o| o.wall_s).sum();
        // The 270 s budget plans 4 s a point for warm-up and drain; at this
        // edge a request takes 4-5 s to drain (p99 E2EL), so the last point
        // can end a little past the budget (at most 272 s in 40 samples;
        // with the step-time model before 2026-11-26, within 270 s).
        assert!(load <= 275.0, "seed {seed}: {load} s of load");
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
    // 40 samples against 25.03 (BENCHMARKS.md): mean +0.1 %, median
    // |error| 4.5 %, 35 of 40 within 7 %, 39 within 15 %. These 16 (seeds
    // 0-15): mean +0.4 %, median 4.8 %, worst -37.1 % (against this
    // test's 25.64: -2.0 %, 2.3 %, -38.6 %). The worst is seed 5: an 8 s
    // exploring point at 16.2 req/s, 55 % of capacity, judged saturated
    // while its p99s met the SLO, so the search measured below it. The
    // worst-error bound is kept, and fails: it is that false alarm it
    // catches (with the step-time model before 2026-11-26 the worst of
    // these 16 was -14.7 %).
    assert!(mean.abs() <= 0.08, "mean error {mean:+.3}: {errors:?}");
    assert!(abs[abs.len() / 2] <= 0.08, "median error: {errors:?}");
    assert!(abs[abs.len() - 1] <= 0.2, "worst error: {errors:?}");
}
