//! The simulator behaves like a GPU server, seen from a client over real
//! HTTP: TTFT is the prefill time at low load and grows with the prompt,
//! TPOT grows with the batch, past capacity the queue and TTFT grow while
//! throughput flattens, a small KV cache preempts, and a repeated prefix is
//! served faster from the prefix cache. Timing bounds are generous: the
//! precise figures are the engine tests' and the benchmarks' job.

mod common;

use std::time::{Duration, Instant};

use common::*;
use goodput_sim::roofline::{BatchShape, Roofline};
use goodput_sim::SimConfig;

/// The modelled time of one prefill step of `n` fresh tokens.
fn prefill_s(config: &SimConfig, n: u64) -> f64 {
    let r = Roofline::new(
        &config.model,
        &config.hardware,
        config.tensor_parallel,
        config.time_scale,
    );
    let mut shape = BatchShape::default();
    shape.add(0, n, false);
    r.step_time(&shape).total_s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_is_the_prefill_time_and_grows_with_the_prompt() {
    let config = SimConfig::default();
    let server = start(config.clone());
    let addr = server.local_addr();
    let mut last = Duration::ZERO;
    for (i, n) in [200u64, 2000, 6000].into_iter().enumerate() {
        let r = stream_completion(addr, &prompt(n as usize, i), 2).await;
        let ttft = r.ttft().as_secs_f64();
        let expected = prefill_s(&config, n);
        // Over the prefill: HTTP and the server's tokenization of the prompt,
        // which in a debug build costs a few µs a token (15-47 ms at 6,000).
        let slack = 0.03 + 8e-6 * n as f64;
        assert!(
            ttft >= expected * 0.95 && ttft < expected + slack,
            "{n} tokens: TTFT {:.1} ms, prefill {:.1} ms",
            ttft * 1e3,
            expected * 1e3
        );
        assert!(r.ttft() > last);
        last = r.ttft();
    }
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpot_grows_with_the_number_of_running_sequences() {
    let server = start(SimConfig::default());
    let addr = server.local_addr();
    let alone = stream_completion(addr, &prompt(200, 0), 60).await.tpot();
    let tasks: Vec<_> = (0..128)
        .map(|i| {
            tokio::spawn(async move { stream_completion(addr, &prompt(200, i + 1), 60).await })
        })
        .collect();
    let mut crowded = Vec::new();
    for t in tasks {
        crowded.push(t.await.unwrap().tpot());
    }
    crowded.sort();
    let median = crowded[crowded.len() / 2];
    assert!(
        median.as_secs_f64() > alone.as_secs_f64() * 1.1,
        "TPOT alone {alone:?}, median of 128 concurrent {median:?}"
    );
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_capacity_the_queue_and_ttft_grow_while_throughput_flattens() {
    // 4 sequences of 40 tokens at ~4 ms per step: about 25 requests/s.
    let config = SimConfig {
        max_num_seqs: 4,
        time_scale: 0.5,
        ..SimConfig::default()
    };
    let server = start(config);
    let addr = server.local_addr();
    let start_at = Instant::now();
    let mut tasks = Vec::new();
    // (seconds since start, waiting requests, generated tokens so far)
    let mut probes: Vec<(f64, f64, f64)> = Vec::new();
    for i in 0..150usize {
        // 100 requests/s, open loop
        tokio::time::sleep_until((start_at + Duration::from_millis(10 * i as u64)).into()).await;
        tasks.push(tokio::spawn(async move {
            stream_completion(addr, &prompt(50, i), 40).await
        }));
        if i == 50 || i == 149 {
            let m = metrics(addr).await;
            probes.push((
                start_at.elapsed().as_secs_f64(),
                metric(&m, "vllm:num_requests_waiting"),
                metric(&m, "vllm:generation_tokens_total"),
            ));
        }
    }
    let mut real = Vec::new();
    for t in tasks {
        real.push(t.await.unwrap());
    }
    assert!(real.iter().all(|r| r.status == 200));
    let (early, late) = (probes[0], probes[1]);
    assert!(late.1 > early.1 + 40.0, "waiting {} -> {}", early.1, late.1);
    let ttft_early = real[5].ttft();
    let ttft_late = real[145].ttft();
    assert!(
        ttft_late > ttft_early * 5 && ttft_late > Duration::from_millis(1500),
        "{ttft_early:?} -> {ttft_late:?}"
    );
    // Throughput between the probes sits at capacity: ~4 tokens per 4 ms step.
    let tput = (late.2 - early.2) / (late.0 - early.0);
    assert!(
        (700.0..1400.0).contains(&tput),
        "output throughput {tput:.0} tokens/s"
    );
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_kv_cache_preempts_and_still_completes() {
    let config = SimConfig {
        num_gpu_blocks_override: Some(64),
        time_scale: 0.2,
        ..SimConfig::default()
    };
    let server = start(config);
    let addr = server.local_addr();
    let tasks: Vec<_> = (0..8)
        .map(|i| tokio::spawn(async move { stream_completion(addr, &prompt(100, i), 200).await }))
        .collect();
    for t in tasks {
        let r = t.await.unwrap();
        assert_eq!(r.content_times().len(), 200);
    }
    let m = metrics(addr).await;
    let preemptions = metric(&m, "vllm:num_preemptions_total");
    assert!(preemptions >= 1.0, "preemptions: {preemptions}");
    assert_eq!(server.stats().preemptions as f64, preemptions);
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_prefix_is_cached_and_faster() {
    let server = start(SimConfig::default());
    let addr = server.local_addr();
    let shared = prompt(4000, 3);
    let first = stream_completion(addr, &format!("{shared} first question"), 2).await;
    let second = stream_completion(addr, &format!("{shared} second question"), 2).await;
    let usage = |r: &Reply| -> serde_json::Value {
        let ev = r.events();
        serde_json::from_str(&ev[ev.len() - 2].1).unwrap()
    };
    assert_eq!(
        usage(&first)["usage"]["prompt_tokens_details"]["cached_tokens"],
        0
    );
    let cached = usage(&second)["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!((3968..=4000).contains(&cached), "cached {cached}");
    assert!(
        second.ttft() * 2 < first.ttft(),
        "TTFT {:?} then {:?}",
        first.ttft(),
        second.ttft()
    );
    let m = metrics(addr).await;
    assert_eq!(metric(&m, "vllm:prefix_cache_hits_total"), cached as f64);
    server.shutdown();
}
