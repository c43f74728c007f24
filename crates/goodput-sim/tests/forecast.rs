//! The forecast against the reference and against the properties a
//! deployment's goodput must have: more replicas serve more, a shared
//! prefix is cheaper, sessions hit the cache on their history, and the
//! answer is deterministic. Absolute numbers are not pinned (the presets
//! are recalibrated from time to time); relations are.

use std::time::{Duration, Instant};

use goodput_common::units::DurationSpec;
use goodput_common::LengthSpec;
use goodput_sim::forecast::simulate_schedule;
use goodput_sim::{
    evaluate_rates, forecast_goodput, forecast_goodput_near, reference_goodput, Deployment,
    ForecastPlan, ForecastWorkload, RefMetric, RefPlan, RefTerm, RefWorkload, Routing, Sessions,
    SharedPrefix, SimConfig,
};

fn plan() -> ForecastPlan {
    ForecastPlan {
        requests_per_point: 300,
        warmup_requests: 30,
        seeds: 2,
        seed: 0,
        max_error_rate: 0.01,
        precision: 0.02,
        threads: 1,
    }
}

fn slo() -> Vec<RefTerm> {
    vec![
        RefTerm::new(RefMetric::Ttft, 99.0, 0.100),
        RefTerm::new(RefMetric::Tpot, 99.0, 0.030),
    ]
}

fn one() -> Deployment {
    Deployment::default()
}

#[test]
fn fixed_lengths_on_one_replica_are_the_reference() {
    let start = Instant::now();
    let c = SimConfig {
        request_latency_ms: 3.0,
        ..SimConfig::default()
    };
    let p = plan();
    let ref_plan = RefPlan {
        requests_per_point: p.requests_per_point,
        warmup_requests: p.warmup_requests,
        seeds: p.seeds,
        seed: p.seed,
        max_error_rate: p.max_error_rate,
    };
    let rw = RefWorkload {
        input_tokens: 256,
        output_tokens: 64,
    };
    let r = reference_goodput(&c, &rw, &slo(), &ref_plan, 1.0, 2000.0, p.precision).unwrap();
    let w = ForecastWorkload::fixed(256, 64);
    let f = forecast_goodput(&c, &one(), &w, &slo(), &p, 1.0, 2000.0).unwrap();
    assert!(r.first_failing.is_some(), "{r:?}");
    assert_eq!(f.goodput, r.goodput);
    assert_eq!(f.first_failing, r.first_failing);
    assert_eq!(f.curve.len(), r.points.len());
    for (a, b) in f.curve.iter().zip(&r.points) {
        assert_eq!(a.rate, b.rate);
        assert_eq!(a.percentiles, b.percentiles, "at {}", a.rate);
        assert_eq!(a.error_rate, b.error_rate);
        assert_eq!(a.output_throughput, b.output_throughput);
        assert_eq!(a.meets, b.meets);
        assert_eq!(a.cached_share, 0.0);
    }
    eprintln!(
        "reference {:.3} = forecast {:.3} req/s, {} points, {:?}",
        r.goodput,
        f.goodput,
        f.curve.len(),
        start.elapsed()
    );
}

#[test]
fn two_replicas_serve_about_twice_as_much() {
    let start = Instant::now();
    let c = SimConfig::default();
    let w = ForecastWorkload::fixed(256, 64);
    // Each replica serves the same number of requests as the one alone
    // (past capacity a queue grows with the length of the run, so a run
    // shape is part of a goodput: see `goodput_sim::reference`).
    let g = |replicas: usize, routing| {
        let d = Deployment { replicas, routing };
        let p = ForecastPlan {
            requests_per_point: plan().requests_per_point * replicas,
            warmup_requests: plan().warmup_requests * replicas,
            ..plan()
        };
        let a = forecast_goodput(&c, &d, &w, &slo(), &p, 1.0, 2000.0).unwrap();
        assert!(a.first_failing.is_some(), "{a:?}");
        a.goodput
    };
    let single = g(1, Routing::RoundRobin);
    let double = g(2, Routing::RoundRobin);
    let least = g(2, Routing::LeastOutstanding);
    let ratio = double / single;
    assert!(
        (1.8..=2.2).contains(&ratio),
        "{double} / {single} = {ratio}"
    );
    let ratio = least / single;
    assert!((1.8..=2.4).contains(&ratio), "{least} / {single} = {ratio}");
    eprintln!(
        "1 replica {single:.2}, 2 round-robin {double:.2}, 2 least-outstanding {least:.2} req/s, {:?}",
        start.elapsed()
    );
}

#[test]
fn a_shared_prefix_raises_the_goodput() {
    let start = Instant::now();
    let c = SimConfig::default();
    let unique = ForecastWorkload::fixed(1024, 64);
    let shared = ForecastWorkload {
        prefix: Some(SharedPrefix {
            tokens: 768,
            groups: 4,
        }),
        ..unique.clone()
    };
    let slo = [RefTerm::new(RefMetric::Ttft, 99.0, 0.100)];
    let g = |w| forecast_goodput(&c, &one(), w, &slo, &plan(), 1.0, 2000.0).unwrap();
    let (u, s) = (g(&unique), g(&shared));
    assert!(
        s.goodput > 1.3 * u.goodput,
        "{} vs {}",
        s.goodput,
        u.goodput
    );
    // Most of each prompt is served from the cache: 768 of 1,024 tokens,
    // less the first use of each group.
    let at = s.point_at(s.goodput).unwrap();
    assert!((0.6..0.76).contains(&at.cached_share), "{at:?}");
    assert_eq!(u.point_at(u.goodput).unwrap().cached_share, 0.0);
    eprintln!(
        "unique {:.2}, shared prefix {:.2} req/s, {:?}",
        u.goodput,
        s.goodput,
        start.elapsed()
    );
}

fn sessions(turns: u32) -> ForecastWorkload {
    ForecastWorkload {
        sessions: Some(Sessions {
            turns: LengthSpec::Fixed(turns),
            think_time: DurationSpec::Fixed(Duration::from_millis(500)),
        }),
        ..ForecastWorkload::fixed(256, 64)
    }
}

#[test]
fn sessions_resend_their_history_and_hit_the_cache() {
    let c = SimConfig::default();
    let w = sessions(4);
    let p = ForecastPlan {
        requests_per_point: 200,
        warmup_requests: 20,
        ..plan()
    };
    let reqs = simulate_schedule(&c, &one(), &w, &p, 0, 1.0).unwrap();
    assert_eq!(reqs.iter().filter(|q| q.measured).count(), 200);
    assert!(reqs.iter().all(|q| !q.failed()));
    let mut checked = 0;
    for q in reqs.iter().filter(|q| q.turn > 0) {
        let prev = reqs
            .iter()
            .find(|r| r.session == q.session && r.turn == q.turn - 1)
            .unwrap();
        // The conversation so far, then a new message.
        assert_eq!(q.prompt_tokens, prev.prompt_tokens + 64 + 256);
        // The previous prompt's full blocks are served from the cache.
        assert_eq!(q.cached_tokens, prev.prompt_tokens / 16 * 16, "{q:?}");
        // Sent a think time after the previous turn's last token.
        assert!((q.arrival_s - prev.last_token_s.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(q.replica, prev.replica);
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
    assert!(reqs
        .iter()
        .filter(|q| q.turn == 0)
        .all(|q| q.cached_tokens == 0));
    // The warm-up is whole sessions started while fewer than 20 warm-up
    // requests had been sent, every turn counted.
    let warm = reqs.iter().filter(|q| !q.measured).count();
    assert!((20..20 + 4 * 4).contains(&warm) && warm % 4 == 0, "{warm}");
}

#[test]
fn sessions_cost_less_than_their_unshared_prompts() {
    let start = Instant::now();
    let c = SimConfig::default();
    let slo = [RefTerm::new(RefMetric::Ttft, 99.0, 0.100)];
    let p = plan();
    let s = forecast_goodput(&c, &one(), &sessions(4), &slo, &p, 0.1, 100.0).unwrap();
    let at = s.point_at(s.goodput).unwrap();
    assert!(at.cached_share > 0.4, "{at:?}");
    // A session is 4 requests, so more requests than sessions are served
    // per second; not 4x in a run this short, whose measured window opens
    // with first turns only (the warm-up sessions' later turns load the
    // engine but are not counted) and ends with sessions cut short.
    let per_session = at.request_throughput / s.goodput;
    assert!((2.0..4.5).contains(&per_session), "{per_session}: {at:?}");
    eprintln!(
        "sessions: {:.2} sessions/s, {:.0} % cached, {:?}",
        s.goodput,
        at.cached_share * 100.0,
        start.elapsed()
    );
}

#[test]
fn the_answer_is_deterministic_and_the_curve_sorted() {
    let c = SimConfig::default();
    let w = ForecastWorkload {
        input: "uniform:128,512".parse().unwrap(),
        output: "exponential:64".parse().unwrap(),
        ..sessions(3)
    };
    let d = Deployment {
        replicas: 2,
        routing: Routing::LeastOutstanding,
    };
    let p = plan();
    let a = forecast_goodput(&c, &d, &w, &slo(), &p, 0.5, 100.0).unwrap();
    let b = forecast_goodput(&c, &d, &w, &slo(), &p, 0.5, 100.0).unwrap();
    let threaded = ForecastPlan { threads: 2, ..p };
    let t = forecast_goodput(&c, &d, &w, &slo(), &threaded, 0.5, 100.0).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, t);
    assert!(a.goodput > 0.5 && a.first_failing.is_some(), "{a:?}");
    assert!(a.curve.windows(2).all(|w| w[0].rate < w[1].rate));
    let rates = [8.0, 1.0, 4.0, 2.0];
    let curve = evaluate_rates(&c, &d, &w, &slo(), &p, &rates).unwrap();
    assert_eq!(
        curve.iter().map(|p| p.rate).collect::<Vec<_>>(),
        [1.0, 2.0, 4.0, 8.0]
    );
    // More load, more output and a longer tail.
    assert!(curve
        .windows(2)
        .all(|w| w[0].output_throughput < w[1].output_throughput));
    assert!(curve[0].percentiles[0] < curve[3].percentiles[0]);
}

#[test]
fn a_growing_queue_fails_the_point() {
    let c = SimConfig::default();
    let w = ForecastWorkload::fixed(256, 64);
    let loose = [RefTerm::new(RefMetric::E2el, 99.0, 1e6)];
    let curve = evaluate_rates(&c, &one(), &w, &loose, &plan(), &[1.0, 1000.0]).unwrap();
    assert!(curve[0].meets && !curve[0].saturated, "{:?}", curve[0]);
    assert!(curve[1].saturated && !curve[1].meets, "{:?}", curve[1]);
    assert!(curve[1].queue.last_third > 2.0 * curve[1].queue.first_third);
}

#[test]
fn bad_inputs_are_refused() {
    let c = SimConfig::default();
    let w = ForecastWorkload::fixed(256, 64);
    let zero = Deployment {
        replicas: 0,
        ..one()
    };
    assert!(forecast_goodput(&c, &zero, &w, &slo(), &plan(), 1.0, 2.0).is_err());
    assert!(forecast_goodput(&c, &one(), &w, &slo(), &plan(), 2.0, 1.0).is_err());
    let coarse = ForecastPlan {
        precision: 0.0,
        ..plan()
    };
    assert!(forecast_goodput(&c, &one(), &w, &slo(), &coarse, 1.0, 2.0).is_err());
    assert!(evaluate_rates(&c, &one(), &w, &slo(), &plan(), &[f64::NAN]).is_err());
}

#[test]
fn routing_policies_pick_replicas_as_documented() {
    let c = SimConfig::default();
    let w = ForecastWorkload::fixed(256, 64);
    let p = ForecastPlan {
        requests_per_point: 60,
        warmup_requests: 0,
        ..plan()
    };
    let on = |routing, rate| {
        let d = Deployment {
            replicas: 2,
            routing,
        };
        simulate_schedule(&c, &d, &w, &p, 0, rate).unwrap()
    };
    let rr = on(Routing::RoundRobin, 1.0);
    assert!(rr.iter().enumerate().all(|(i, q)| q.replica == i % 2));
    // Least outstanding: a tie (both idle, or equally busy) goes to the
    // first replica, so a request goes to the second only when the first
    // has more requests in flight than it.
    for rate in [1.0, 50.0] {
        let reqs = on(Routing::LeastOutstanding, rate);
        let in_flight = |r: usize, t: f64| {
            reqs.iter()
                .filter(|q| q.replica == r && q.arrival_s < t && q.done_s() > t)
                .count()
        };
        let mut second = 0;
        for q in &reqs {
            let (a, b) = (in_flight(0, q.arrival_s), in_flight(1, q.arrival_s));
            assert_eq!(q.replica, usize::from(b < a), "at {rate}/s: {q:?}");
            second += q.replica;
        }
        assert!(second > 0 && second < reqs.len(), "at {rate}/s: {second}");
    }
}

#[test]
fn a_search_from_a_guess_finds_the_same_edge() {
    let c = SimConfig::default();
    let w = ForecastWorkload::fixed(256, 64);
    let p = plan();
    let wide = forecast_goodput(&c, &one(), &w, &slo(), &p, 1.0, 2000.0).unwrap();
    assert!(wide.first_failing.is_some(), "{wide:?}");
    for guess in [wide.goodput * 0.8, wide.goodput * 1.7] {
        let near = forecast_goodput_near(&c, &one(), &w, &slo(), &p, guess, 1.25).unwrap();
        let f = near.first_failing.unwrap();
        assert!((f - near.goodput) / f < p.precision, "{near:?}");
        // The same edge, to the search's resolution (the bracket differs).
        assert!((near.goodput / wide.goodput - 1.0).abs() < 0.05, "{near:?}");
        assert!(near.curve.len() < wide.curve.len(), "{}", near.curve.len());
        assert!(near.curve.windows(2).all(|w| w[0].rate < w[1].rate));
    }
    // An impossible SLO steps down to a thousandth of the guess, then gives up.
    let never = [RefTerm::new(RefMetric::Ttft, 99.0, 1e-6)];
    let a = forecast_goodput_near(&c, &one(), &w, &never, &p, 10.0, 10.0).unwrap();
    assert_eq!(a.goodput, 0.0);
    assert!(a.curve.iter().all(|p| !p.meets));
}
