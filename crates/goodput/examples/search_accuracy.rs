//! How close the goodput search lands to the sustained goodput, over many
//! arrival samples: the README's main job (Llama-3.1-8B / H100 preset,
//! 1,024 in / 128 out, `ttft:p99<=200ms,tpot:p99<=50ms`, the sweep's
//! default budget) run in virtual time with `--seed 0, 1, ...`, against the
//! simulator's long-run pooled reference.
//!
//! `cargo run --release -p goodput --example search_accuracy -- [SEARCHES] [REF_SEEDS] [REF_REQUESTS] [SEARCH_TIME_S]`
//! (defaults 40 searches; reference of 20 schedules × 4,000 requests,
//! within 1 % of the converged one in BENCHMARKS.md; 270 s). With
//! `SEARCH_DUMP=FILE` every point of every search is appended to FILE, a
//! line each: seed, rate, requests, margin, hard fail, load s, measuring,
//! settled, saturated. `SEARCH_SLOWER=K` runs the same deployment K times
//! slower, its SLO K times looser: a slow server in requests per second.

mod virtual_search;

use std::time::{Duration, Instant};

use virtual_search::{Plan, Virtual};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize| std::env::args().nth(i);
    let searches: u64 = arg(1).map_or(Ok(40), |s| s.parse())?;
    let ref_seeds: u64 = arg(2).map_or(Ok(20), |s| s.parse())?;
    let ref_requests: usize = arg(3).map_or(Ok(4000), |s| s.parse())?;
    // The search's budget: `auto` (the default) or seconds.
    let budget: Option<u64> = match arg(4).as_deref() {
        None | Some("auto") => None,
        Some(s) => Some(s.parse()?),
    };
    let (v, slower) = deployment()?;
    if let Ok(spec) = std::env::var("SEARCH_POINT") {
        return saturation_of_points(&v, &spec);
    }
    let t0 = Instant::now();
    let reference = v.reference(
        ref_seeds,
        ref_requests,
        (0.02 / slower, 100.0 / slower),
        0.005,
    );
    println!(
        "reference {reference:.3} req/s ({ref_seeds} schedules x {ref_requests} requests, {:.1?})",
        t0.elapsed()
    );
    let plan = Plan {
        budget: budget.map(Duration::from_secs),
        ..Plan::default()
    };
    println!(
        "seed   goodput   error   interval          covers   points   load s   said s   2,000 at lower end"
    );
    let mut errors = Vec::new();
    let (mut covered, mut bounded) = (0, 0);
    // 2,000 open-loop requests at the interval's lower end (the headline
    // rate where there is no interval), a schedule the search never drew:
    // does the SLO hold, as a user who took the lower end would find?
    let (mut held, mut held_of) = (0, 0);
    // The load time said before the measuring points ran, against the
    // load time the search took: within 20 %?
    let (mut said_within, mut said_of) = (0, 0);
    for seed in seeds(searches) {
        let (a, s) = v.search(plan, seed);
        let err = a.rate / reference - 1.0;
        errors.push(err);
        let covers = a
            .interval
            .map(|(lo, hi)| lo <= reference && reference <= hi);
        if let Some(c) = covers {
            bounded += 1;
            covered += usize::from(c);
        }
        let load: f64 = s.observations().iter().map(|o| o.wall_s).sum();
        if let Some(path) = std::env::var_os("SEARCH_DUMP") {
            dump(&path, seed, s.observations())?;
        }
        let said = s.announced().map(|z| z.planned_s);
        if let Some(said) = said {
            said_of += 1;
            said_within += usize::from((load / said - 1.0).abs() <= 0.2);
        }
        let lower = a.interval.map_or(a.rate, |(lo, _)| lo);
        let sustained = (lower > 0.0).then(|| {
            let warmup = ((lower * 2.0).ceil() as u64).clamp(8, 500);
            let (m, _) = v.point(lower, 2000, warmup, 1_000_000 + seed, None);
            m.slo.as_ref().is_some_and(|o| o.meets)
        });
        if let Some(h) = sustained {
            held_of += 1;
            held += usize::from(h);
        }
        println!(
            "{seed:>4}   {:>7.2}   {:>+5.1}%   {:<16}  {:<6}   {:>6}   {:>6.0}   {:>6}   {}",
            a.rate,
            err * 100.0,
            a.interval
                .map_or("-".to_string(), |(lo, hi)| format!("{lo:.2}-{hi:.2}")),
            covers.map_or("-", |c| if c { "yes" } else { "no" }),
            s.observations().len(),
            load,
            said.map_or("-".to_string(), |x| format!("{x:.0}")),
            sustained.map_or("-", |h| if h { "holds" } else { "FAILS" }),
        );
    }
    summary(
        &errors,
        (covered, bounded),
        (held, held_of),
        (said_within, said_of),
    );
    Ok(())
}

/// The searches' summary line: errors against the reference, and the
/// shares (of how many) where the interval covered it, the lower end held
/// and the time said was within 20 %.
fn summary(
    errors: &[f64],
    (covered, bounded): (usize, usize),
    (held, held_of): (usize, usize),
    (said_within, said_of): (usize, usize),
) {
    if errors.is_empty() {
        // 0 searches: the reference alone.
        return;
    }
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let within = |x: f64| abs.iter().filter(|&&e| e <= x).count();
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    println!(
        "{} searches: mean error {:+.1}%, median |error| {:.1}%, within 7%: {}, within 10%: {}, within 15%: {}; interval covers the reference in {covered} of {bounded}; the SLO held for 2,000 requests at the lower end in {held} of {held_of}; load time within 20 % of the time said in {said_within} of {said_of}",
        abs.len(),
        mean * 100.0,
        abs[abs.len() / 2] * 100.0,
        within(0.07),
        within(0.10),
        within(0.15),
    );
}

/// `SEARCH_SEED_FROM=S`: the searches' seeds start at S (a search of its
/// own, to look into), else at 0.
fn seeds(searches: u64) -> std::ops::Range<u64> {
    let from: u64 = std::env::var("SEARCH_SEED_FROM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    from..from + searches
}

/// `SEARCH_POINT=RATE,REQUESTS,SEEDS`: one open-loop point's saturation
/// verdict for each seed, and nothing else.
fn saturation_of_points(v: &Virtual, spec: &str) -> Result<(), Box<dyn std::error::Error>> {
    let f: Vec<f64> = spec.split(',').map(str::parse).collect::<Result<_, _>>()?;
    let [rate, requests, seeds] = f[..] else {
        return Err("SEARCH_POINT=RATE,REQUESTS,SEEDS".into());
    };
    for seed in 0..seeds as u64 {
        let warmup = ((rate * 2.0).ceil() as u64).clamp(8, 500);
        let (m, _) = v.point(rate, requests as u64, warmup, seed, None);
        println!("{seed} {:?}", m.saturation);
    }
    Ok(())
}

/// The README's deployment, changed as the environment asks (see the
/// module comment), and how many times slower it runs.
fn deployment() -> Result<(Virtual, f64), Box<dyn std::error::Error>> {
    let mut v = Virtual::readme();
    // The load kept on, unmeasured, until every measured request is done.
    v.cooldown = std::env::var_os("SEARCH_COOLDOWN").is_some();
    // A server K times slower (`SEARCH_SLOWER=K`, `Virtual::slower`).
    let slower: f64 = std::env::var("SEARCH_SLOWER")
        .ok()
        .map_or(Ok(1.0), |s| s.parse())?;
    v = v.slower(slower);
    // Fewer sequences in a batch (`SEARCH_MAX_SEQS=N`): a server whose
    // capacity is a few times one request's pace, as a CPU engine's, so
    // that points near the edge hold a dozen requests.
    if let Some(n) = std::env::var("SEARCH_MAX_SEQS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        v.config.max_num_seqs = n;
    }
    Ok((v, slower))
}

/// Append every point of a search to `path`, a line each (see the module
/// comment).
fn dump(
    path: &std::ffi::OsStr,
    seed: u64,
    points: &[goodput_core::plan::Observation],
) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    for o in points {
        writeln!(
            f,
            "{seed} {} {} {} {} {} {} {} {}",
            o.rate,
            o.requests,
            o.margin.map_or("nan".to_string(), |m| m.to_string()),
            u8::from(o.hard_fail),
            o.wall_s,
            u8::from(o.measuring),
            u8::from(o.settled),
            u8::from(o.saturated)
        )?;
    }
    Ok(())
}
