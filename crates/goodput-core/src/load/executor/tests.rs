//! The executor against a mock transport, under paused tokio time: fast,
//! deterministic, no sockets.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::*;
use crate::load::schedule::Arrival;
use crate::load::timer::TokioTimer;
use crate::load::workload::{LengthSpec, Prefetch, SessionShape, SyntheticSource, SyntheticSpec};
use crate::request::protocol::{Endpoint, RequestParams};
use crate::request::transport::mock::MockTransport;
use goodput_common::tokenizer::Tokenizer;

const MS: u64 = 1_000_000;

fn source(sessions: Option<SessionShape>) -> SyntheticSource {
    SyntheticSource::new(
        SyntheticSpec {
            sessions,
            ..SyntheticSpec::new(LengthSpec::Fixed(8), LengthSpec::Fixed(4), 1)
        },
        RequestParams {
            min_tokens: false,
            ignore_eos: false,
            ..crate::request::protocol::tests::params(Endpoint::Chat)
        },
        Tokenizer::from_spec("none").unwrap(),
        7,
    )
}

fn plan(load: Load, n: u64) -> RunPlan {
    RunPlan {
        ramp_up: None,
        shard: None,
        load,
        num_prompts: Some(n),
        duration: None,
        warmup: Warmup::None,
        drain_timeout: Duration::from_secs(60),
        seed: 3,
    }
}

struct Outcome {
    summary: ExecSummary,
    records: Vec<RequestRecord>,
    measure_start: Option<u64>,
}

async fn run(
    plan: &RunPlan,
    transport: Arc<MockTransport>,
    src: SyntheticSource,
    control: &RunControl,
) -> Outcome {
    let clock = transport.clock;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let summary = Executor {
        plan,
        transport,
        clock,
        timer: &TokioTimer,
        control,
        records: tx,
        progress: Arc::new(Progress::default()),
        start_gate: None,
    }
    .run(Prefetch::inline(Box::new(src)))
    .await;
    let mut records = Vec::new();
    let mut measure_start = None;
    while let Ok(m) = rx.try_recv() {
        match m {
            Msg::Record(r) => records.push(*r),
            Msg::MeasureStart(t) => measure_start = Some(t),
        }
    }
    records.sort_by_key(|r| r.request_id);
    Outcome {
        summary,
        records,
        measure_start,
    }
}

#[tokio::test(start_paused = true)]
async fn closed_loop_keeps_n_in_flight() {
    let clock = RunClock::start();
    // Each request takes 100 ms (first token at 40 ms, 4 tokens 20 ms apart).
    let t = MockTransport::new(
        clock,
        Duration::from_millis(40),
        Duration::from_millis(20),
        4,
    );
    let out = run(
        &plan(Load::Closed { concurrency: 4 }, 20),
        t.clone(),
        source(None),
        &RunControl::new(),
    )
    .await;
    assert_eq!(out.records.len(), 20);
    assert_eq!(t.max_in_flight.load(SeqCst), 4);
    // Five waves of four: the last request is sent at 400 ms, none later.
    let sends = t.sends.lock().unwrap().clone();
    let waves: Vec<u64> = sends.iter().map(|&(_, at)| at / MS).collect();
    for (i, w) in waves.iter().enumerate() {
        assert_eq!(*w, (i as u64 / 4) * 100, "send {i} at {w} ms");
    }
    // t_sched is when the slot freed: no lag in closed loop.
    assert!(out.records.iter().all(|r| r.t_send == Some(r.t_sched)));
    assert_eq!(out.summary.sent_measured, 20);
    assert_eq!(out.summary.ramp_end_ns, Some(0));
}

#[tokio::test(start_paused = true)]
async fn open_loop_sends_on_schedule_however_slow_the_server() {
    let clock = RunClock::start();
    // Requests take 2 s each, far longer than the 100 ms between arrivals:
    // an open loop must not wait for them (no coordinated omission).
    let t = MockTransport::new(clock, Duration::from_secs(1), Duration::from_millis(300), 4);
    let load = Load::Open {
        rate: 10.0,
        arrival: Arrival::Constant,
        max_concurrency: None,
    };
    let out = run(&plan(load, 10), t.clone(), source(None), &RunControl::new()).await;
    assert_eq!(out.records.len(), 10);
    let first = out.records[0].t_sched;
    for (i, r) in out.records.iter().enumerate() {
        assert_eq!(r.t_sched - first, i as u64 * 100 * MS, "request {i}");
        assert_eq!(r.t_send, Some(r.t_sched), "sent on time");
    }
    assert_eq!(t.max_in_flight.load(SeqCst), 10);
    assert_eq!(out.measure_start, Some(first));
}

#[tokio::test(start_paused = true)]
async fn max_concurrency_holds_requests_back_and_the_wait_shows_as_lag() {
    let clock = RunClock::start();
    let t = MockTransport::new(
        clock,
        Duration::from_millis(500),
        Duration::from_millis(100),
        1,
    );
    let load = Load::Open {
        rate: 10.0,
        arrival: Arrival::Constant,
        max_concurrency: Some(2),
    };
    let out = run(&plan(load, 6), t.clone(), source(None), &RunControl::new()).await;
    assert_eq!(t.max_in_flight.load(SeqCst), 2);
    let lag: Vec<u64> = out
        .records
        .iter()
        .map(|r| (r.t_send.unwrap() - r.t_sched) / MS)
        .collect();
    // Arrivals every 100 ms, each request 500 ms, two at a time.
    assert_eq!(lag, vec![0, 0, 300, 300, 600, 600]);
}

#[tokio::test(start_paused = true)]
async fn stopping_ends_sending_and_lets_in_flight_requests_finish() {
    let clock = RunClock::start();
    let t = MockTransport::new(
        clock,
        Duration::from_millis(200),
        Duration::from_millis(10),
        4,
    );
    let control = RunControl::new();
    let c = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(250)).await;
        c.stop_sending();
    });
    let out = run(
        &plan(Load::Closed { concurrency: 3 }, 1000),
        t,
        source(None),
        &control,
    )
    .await;
    assert!(out.summary.interrupted);
    // Two waves were sent (at 0 and 230 ms); all six finished normally.
    assert_eq!(out.records.len(), 6);
    assert!(out.records.iter().all(|r| r.ok()));
}

#[tokio::test(start_paused = true)]
async fn cancelling_stops_in_flight_requests_as_cancelled() {
    let clock = RunClock::start();
    let t = MockTransport::new(clock, Duration::from_secs(10), Duration::from_millis(10), 4);
    let control = RunControl::new();
    let c = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.stop_sending();
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel_in_flight();
    });
    let out = run(
        &plan(Load::Closed { concurrency: 3 }, 100),
        t,
        source(None),
        &control,
    )
    .await;
    assert_eq!(out.records.len(), 3);
    for r in &out.records {
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Cancelled));
        assert_eq!(r.t_done / MS, 200);
    }
    assert!(!out.summary.drain_timed_out);
}

#[tokio::test(start_paused = true)]
async fn the_drain_timeout_ends_stuck_requests_as_incomplete() {
    let clock = RunClock::start();
    let t = MockTransport::with(
        clock,
        Box::new(|id| {
            if id == 1 {
                Duration::from_secs(100)
            } else {
                Duration::from_millis(10)
            }
        }),
        Duration::from_millis(1),
        2,
    );
    let mut p = plan(Load::Closed { concurrency: 2 }, 4);
    p.drain_timeout = Duration::from_secs(3);
    let out = run(&p, t, source(None), &RunControl::new()).await;
    assert!(out.summary.drain_timed_out);
    assert_eq!(out.records.len(), 4);
    let kinds: Vec<Option<ErrorKind>> = out
        .records
        .iter()
        .map(|r| r.error.as_ref().map(|e| e.kind))
        .collect();
    assert_eq!(kinds, vec![None, Some(ErrorKind::Incomplete), None, None]);
    assert_eq!(
        out.records[1].t_done / MS,
        3000 + out.records[3].t_sched / MS,
        "stopped at the drain timeout"
    );
}

#[tokio::test(start_paused = true)]
async fn warmup_requests_come_first_and_the_measured_phase_is_announced() {
    let clock = RunClock::start();
    let t = MockTransport::new(
        clock,
        Duration::from_millis(50),
        Duration::from_millis(10),
        2,
    );
    let mut p = plan(Load::Closed { concurrency: 2 }, 4);
    p.warmup = Warmup::Requests(3);
    let out = run(&p, t, source(None), &RunControl::new()).await;
    let phases: Vec<bool> = out.records.iter().map(|r| r.warmup).collect();
    assert_eq!(phases, vec![true, true, true, false, false, false, false]);
    let first_measured = out.records.iter().find(|r| !r.warmup).unwrap().t_sched;
    assert_eq!(out.measure_start, Some(first_measured));
    assert_eq!((out.summary.sent_warmup, out.summary.sent_measured), (3, 4));
}

/// Two users, sessions of three turns with 1 s think time: a session's next
/// turn goes exactly think time after its previous turn ended, carries the
/// response, and holds the user's slot meanwhile.
#[tokio::test(start_paused = true)]
async fn sessions_send_each_turn_after_the_previous_response_and_think_time() {
    let clock = RunClock::start();
    let t = MockTransport::new(
        clock,
        Duration::from_millis(100),
        Duration::from_millis(50),
        3,
    );
    let shape = SessionShape {
        turns: LengthSpec::Fixed(3),
        think_time: goodput_common::units::DurationSpec::Fixed(Duration::from_secs(1)),
    };
    let out = run(
        &plan(Load::Closed { concurrency: 2 }, 12),
        t.clone(),
        source(Some(shape)),
        &RunControl::new(),
    )
    .await;
    assert_eq!(out.records.len(), 12);
    assert!(t.max_in_flight.load(SeqCst) <= 2);
    let mut by_session: std::collections::BTreeMap<u64, Vec<&RequestRecord>> = Default::default();
    for r in &out.records {
        by_session.entry(r.session.unwrap().0).or_default().push(r);
    }
    assert_eq!(by_session.len(), 4, "two users ran two sessions each");
    for turns in by_session.values() {
        assert_eq!(
            turns
                .iter()
                .map(|r| r.session.unwrap().1)
                .collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        for w in turns.windows(2) {
            assert_eq!(
                w[1].t_sched,
                w[0].t_done + 1000 * MS,
                "think time after the response"
            );
            assert_eq!(w[1].t_send, Some(w[1].t_sched));
        }
    }
    // A user's second session starts when its first one ends.
    let starts: Vec<u64> = by_session.values().map(|t| t[0].t_sched / MS).collect();
    assert_eq!(starts, vec![0, 0, 2600, 2600]);
}

/// Open loop with sessions under a cap of one: a session's turn falling due
/// while a new arrival waits for the (held) slot is sent first; the loop
/// neither spins nor stalls (a review found it could).
#[tokio::test(start_paused = true)]
async fn open_loop_sessions_under_a_cap_send_due_turns_first() {
    let clock = RunClock::start();
    // Each request takes 2 s; turns follow after 1 s of think time.
    let t = MockTransport::new(clock, Duration::from_secs(2), Duration::from_millis(1), 1);
    let shape = SessionShape {
        turns: LengthSpec::Fixed(2),
        think_time: goodput_common::units::DurationSpec::Fixed(Duration::from_secs(1)),
    };
    let load = Load::Open {
        rate: 10.0,
        arrival: Arrival::Constant,
        max_concurrency: Some(1),
    };
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        run(
            &plan(load, 6),
            t.clone(),
            source(Some(shape)),
            &RunControl::new(),
        ),
    )
    .await
    .expect("the executor finished");
    assert_eq!(out.records.len(), 6);
    assert_eq!(t.max_in_flight.load(SeqCst), 1);
    // Session 0: turn 0 at 0 s (done 2 s), turn 1 due at 3 s holds the slot;
    // then session 1 at 5 s, its turn at 8 s, session 2 at 10 s and 13 s.
    let sends: Vec<u64> = t
        .sends
        .lock()
        .unwrap()
        .iter()
        .map(|&(_, at)| at / (1000 * MS))
        .collect();
    assert_eq!(sends, vec![0, 3, 5, 8, 10, 13]);
}

/// The thread that builds requests ahead of the executor hands them over in
/// order and ends with the source.
#[tokio::test]
async fn prefetched_requests_arrive_in_order_and_end_with_the_source() {
    struct Five(u64);
    impl crate::load::workload::RequestSource for Five {
        fn next(&mut self) -> Option<crate::load::workload::Planned> {
            (self.0 < 5).then(|| {
                self.0 += 1;
                crate::load::workload::Planned {
                    request: PreparedRequest {
                        id: self.0,
                        ..Default::default()
                    },
                    at: None,
                }
            })
        }
        fn follow_ups(&self) -> Option<Arc<dyn crate::load::workload::FollowUps>> {
            None
        }
    }
    let mut p = Prefetch::start(Box::new(Five(0)), 2).unwrap();
    p.primed().await;
    let mut ids = Vec::new();
    while let Some(x) = p.next().await {
        ids.push(x.1.request.id);
    }
    assert_eq!(ids, vec![1, 2, 3, 4, 5]);
}

/// A closed-loop ramp opens its slots one by one over the ramp; the
/// steady-state window starts at its end.
#[tokio::test(start_paused = true)]
async fn a_closed_loop_ramp_opens_slots_over_the_ramp() {
    let clock = RunClock::start();
    let t = MockTransport::new(
        clock,
        Duration::from_millis(900),
        Duration::from_millis(20),
        6,
    );
    let mut p = plan(Load::Closed { concurrency: 4 }, 4);
    p.ramp_up = Some(crate::load::schedule::RampUp {
        duration: Duration::from_millis(300),
        strategy: crate::load::schedule::RampStrategy::Linear,
    });
    let out = run(&p, t.clone(), source(None), &RunControl::new()).await;
    let sends: Vec<u64> = t
        .sends
        .lock()
        .unwrap()
        .iter()
        .map(|&(_, at)| at / MS)
        .collect();
    assert_eq!(sends, vec![0, 100, 200, 300]);
    assert_eq!(out.summary.ramp_end_ns, Some(300 * MS));
}

/// A trace's send schedule is its timestamps divided by the speed, to the
/// nanosecond under paused time.
#[tokio::test(start_paused = true)]
async fn a_trace_is_sent_at_its_scaled_timestamps() {
    let path = std::env::temp_dir().join(format!("goodput-exec-trace-{}.csv", std::process::id()));
    std::fs::write(
        &path,
        "timestamp,input_tokens,output_tokens\n0,8,4\n100,8,4\n350,8,4\n1000,8,4\n1002,8,4\n",
    )
    .unwrap();
    let trace = crate::load::workload::trace::load_trace(
        &path,
        &crate::load::workload::trace::TraceOptions {
            time_unit: Some(crate::load::workload::trace::TimeUnit::Ms),
            ..Default::default()
        },
    )
    .unwrap();
    let src = crate::load::workload::replay::TraceSource::new(
        Arc::new(trace),
        2.0,
        512,
        None,
        crate::load::workload::replay::BuildContext {
            params: crate::request::protocol::tests::params(Endpoint::Completions),
            text: crate::load::workload::TextBuilder::new(Tokenizer::from_spec("none").unwrap()),
            cache_bust: true,
            seed: 1,
            nonce: 9,
        },
    );
    let clock = RunClock::start();
    let t = MockTransport::new(
        clock,
        Duration::from_millis(30),
        Duration::from_millis(5),
        4,
    );
    let p = RunPlan {
        load: Load::Open {
            rate: 2.0,
            arrival: Arrival::Trace,
            max_concurrency: None,
        },
        num_prompts: None,
        ..plan(Load::Closed { concurrency: 1 }, 0)
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let summary = Executor {
        plan: &p,
        transport: t.clone(),
        clock,
        timer: &TokioTimer,
        control: &RunControl::new(),
        records: tx,
        progress: Arc::new(Progress::default()),
        start_gate: None,
    }
    .run(Prefetch::inline(Box::new(src)))
    .await;
    assert!(summary.source_exhausted);
    let mut sched = Vec::new();
    while let Ok(m) = rx.try_recv() {
        if let Msg::Record(r) = m {
            assert_eq!(r.t_send, Some(r.t_sched), "no lag");
            sched.push(r.t_sched);
        }
    }
    sched.sort();
    let origin = sched[0];
    let offsets: Vec<u64> = sched.iter().map(|s| s - origin).collect();
    assert_eq!(offsets, vec![0, 50 * MS, 175 * MS, 500 * MS, 501 * MS]);
    let _ = std::fs::remove_file(&path);
}
