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
fn the_search_lands_on_the_sustained_goodput_and_its_interval_covers_it() {
    let v = Virtual::readme();
    // The sustained reference, shorter than BENCHMARKS.md's converged one
    // (25.14 req/s from 8 x 20,000 requests; 25.03 from 20 x 10,000) to
    // keep the test short. (With the step-time model before 2026-11-26 the
    // goodput was 7.20.)
    let reference = v.reference(8, 10_000, (15.0, 35.0), 0.005);
    assert!((24.0..26.5).contains(&reference), "reference {reference}");
    let mut errors = Vec::new();
    let (mut bounded, mut covered, mut held) = (0, 0, 0);
    let searches: usize = 32;
    for seed in 0..searches as u64 {
        let (answer, search) = v.search(Plan::default(), seed);
        let load: f64 = search.observations().iter().map(|o| o.wall_s).sum();
        // The budget sized to the answer (`--search-time auto`): the load
        // time said before the measuring points ran is the load time taken,
        // within 20 % (100 of 100 searches in BENCHMARKS.md; 243 s median).
        let said = search.announced().expect("sizing said").planned_s;
        assert!(
            (load / said - 1.0).abs() <= 0.2 && load <= 300.0,
            "seed {seed}: {load} s of load, {said} s said"
        );
        assert!(
            search
                .observations()
                .iter()
                .filter(|o| o.measuring)
                .all(|o| o.requests >= 368),
            "seed {seed}: a measuring point too short for its p99"
        );
        errors.push(answer.rate / reference - 1.0);
        if let Some((lo, hi)) = answer.interval {
            bounded += 1;
            covered += usize::from(lo <= reference && reference <= hi);
        }
        // 2,000 open-loop requests at the interval's lower end (the rate
        // where there is none), on a schedule the search never drew: a
        // user who took the lower end finds the SLO met.
        let lower = answer.interval.map_or(answer.rate, |(lo, _)| lo);
        let warmup = ((lower * 2.0).ceil() as u64).clamp(8, 500);
        let (m, _) = v.point(lower, 2000, warmup, 1_000_000 + seed, None);
        held += usize::from(m.slo.as_ref().is_some_and(|o| o.meets));
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    // 100 searches against 8 x 20,000 requests' 25.14 (BENCHMARKS.md):
    // mean -1.0 %, median |error| 1.5 %, 99 within 7 %; the interval
    // covered the reference in 92 of 98, and 2,000 requests at its lower
    // end met the SLO in 98 of 100. With the measuring points ended early
    // on a settled verdict too: mean +3.4 %, 53 of 95 covered, 63 of 100
    // held. Before saturated points entered the
    // fit (they used to be dropped from it, and a false alarm capped the
    // answer): median 4.2 %, 56 of 84 covered, 80 of 100 held; the worst of
    // these seeds was -37 % (an 8 s point at 55 % of capacity judged
    // saturated). The bounds leave room for 95 % to be the true rate.
    assert!(mean.abs() <= 0.03, "mean error {mean:+.3}: {errors:?}");
    assert!(abs[abs.len() / 2] <= 0.04, "median error: {errors:?}");
    assert!(abs[abs.len() - 1] <= 0.15, "worst error: {errors:?}");
    assert!(
        bounded >= searches - 3,
        "{bounded} of {searches} with an interval"
    );
    assert!(
        covered + 4 >= bounded,
        "the interval covered {reference:.2} in {covered} of {bounded}"
    );
    assert!(
        held + 4 >= searches,
        "the lower end held in {held} of {searches}"
    );
    eprintln!(
        "reference {reference:.2}; mean error {mean:+.3}, median |error| {:.3}, worst {:.3}; covered {covered} of {bounded}; held {held} of {searches}",
        abs[abs.len() / 2],
        abs[abs.len() - 1]
    );
}

/// The README's deployment 20 times slower (answers of about 20 s; the
/// sustained goodput 1.26 req/s): measuring points last 40 of the floor's
/// answers, as long in the server's own time as the README's 40 s, and
/// 2,000 requests at the interval's lower end meet the SLO (BENCHMARKS.md:
/// 99 of 100 searches; with 6 answers, 81, and seeds 3 and 4 below failed).
#[test]
fn on_a_slow_server_measuring_points_last_in_its_own_time_and_the_lower_end_holds() {
    let v = Virtual::readme().slower(20.0);
    let answer_s = 1.0 / v.floor().1;
    assert!((15.0..30.0).contains(&answer_s), "{answer_s} s answers");
    let searches = 8;
    let mut held = 0;
    for seed in 0..searches {
        let (answer, search) = v.search(Plan::default(), seed);
        for o in search.observations().iter().filter(|o| o.measuring) {
            assert!(
                o.requests as f64 >= 0.95 * 40.0 * answer_s * o.rate,
                "seed {seed}: a measuring point of {} requests at {:.3} req/s",
                o.requests,
                o.rate
            );
        }
        let lower = answer.interval.map_or(answer.rate, |(lo, _)| lo);
        assert!(lower > 0.0, "seed {seed}: {answer:?}");
        let warmup = ((lower * 2.0).ceil() as u64).clamp(8, 500);
        let (m, _) = v.point(lower, 2000, warmup, 1_000_000 + seed, None);
        held += usize::from(m.slo.as_ref().is_some_and(|o| o.meets));
    }
    assert!(
        held >= searches as usize - 1,
        "held in {held} of {searches}"
    );
}

/// On the same slow server, a point at 85 % of its sustained goodput that
/// keeps up is not called saturated, and one past its capacity is: the
/// saturation trend is read in blocks of one fill of the pipeline (about 20
/// s here), not 1 s. In 1 s blocks, a third of such points were flagged
/// (seeds 3 and 5 of 0–5), and a flagged point's passing margin entered
/// the search's fit as a fail: the search answered 1.04 and 1.06 req/s
/// (seeds 1 and 3) against the sustained 1.26, its interval missing it
/// (BENCHMARKS.md, "A slow server's saturation read in its own time").
#[test]
fn on_a_slow_server_a_point_that_keeps_up_is_not_called_saturated() {
    let v = Virtual::readme().slower(20.0);
    let flagged = |rate: f64, requests: u64, seeds: std::ops::Range<u64>| {
        seeds
            .filter(|&seed| {
                let warmup = ((rate * 2.0).ceil() as u64).clamp(8, 500);
                let (m, _) = v.point(rate, requests, warmup, seed, None);
                m.saturation.saturated
            })
            .count()
    };
    let keeps_up = flagged(1.07, 845, 0..12);
    assert!(
        keeps_up <= 1,
        "{keeps_up} of 12 points at 85 % called saturated"
    );
    let past = flagged(1.7, 1300, 0..4);
    assert_eq!(past, 4, "{past} of 4 points past capacity called saturated");
}
