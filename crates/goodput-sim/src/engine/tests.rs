//! Engine tests in virtual time: step times against the roofline formula,
//! a scripted KV-cache scenario, prefix caching and determinism.

use crate::config::{OutputLenDist, SimConfig};
use crate::virtual_time::{simulate, VirtualRequest};

/// The step model of Llama-3.1-8B on one H100, written out by hand from the
/// preset's calibration (see `presets.rs`): `seqs` sequences, `new_tokens`
/// processed, `prefill_pairs` query–key pairs of prefill attention and
/// `decode_context` context tokens read by decodes.
fn expected_step_s(seqs: f64, new_tokens: f64, prefill_pairs: f64, decode_context: f64) -> f64 {
    let h = crate::presets::hardware_by_name("h100-sxm").unwrap();
    let (params, layers, width) = (8.03e9, 32.0, 4096.0);
    let weights = params * 2.0 / (3350e9 * h.mbu);
    let gemm = 2.0 * params * (new_tokens + h.gemm_half_tokens) / (989e12 * h.gemm_efficiency);
    let attention = 4.0 * layers * width * prefill_pairs / (989e12 * h.attention_efficiency)
        + 131_072.0 * decode_context / (3350e9 * h.mbu);
    h.step_overhead_ms * 1e-3 + h.per_seq_overhead_us * 1e-6 * seqs + weights.max(gemm) + attention
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    let err = (actual - expected).abs() / expected;
    assert!(
        err < 0.05,
        "{what}: step {actual:.6} s vs roofline {expected:.6} s ({:.1} %)",
        err * 100.0
    );
}

#[test]
fn step_times_follow_the_roofline_for_several_batches() {
    let config = SimConfig::default();
    // One 1000-token prompt: a prefill step, then decodes with a growing context.
    let r = simulate(&config, &[VirtualRequest::unique(0.0, 1000, 4, 1)]).unwrap();
    assert_eq!(r.steps.len(), 4);
    assert_close(
        r.steps[0].time.total_s,
        expected_step_s(1.0, 1000.0, 1000.0 * 1001.0 / 2.0, 0.0),
        "prefill 1000",
    );
    assert!(r.steps[0].time.gemm_compute_bound);
    assert_close(
        r.steps[1].time.total_s,
        expected_step_s(1.0, 1.0, 0.0, 1001.0),
        "decode batch 1",
    );

    // 32 prompts of 100 tokens at once, then 32 decodes per step.
    let reqs: Vec<_> = (0..32)
        .map(|i| VirtualRequest::unique(0.0, 100, 3, i))
        .collect();
    let r = simulate(&config, &reqs).unwrap();
    assert_eq!(r.steps[0].num_seqs, 32);
    assert_close(
        r.steps[0].time.total_s,
        expected_step_s(32.0, 3200.0, 32.0 * 5050.0, 0.0),
        "prefill 32x100",
    );
    assert_eq!(r.steps[1].num_decodes, 32);
    assert_close(
        r.steps[1].time.total_s,
        expected_step_s(32.0, 32.0, 0.0, 32.0 * 101.0),
        "decode batch 32",
    );

    // A 10,000-token prompt is prefilled in chunks of the 8192-token budget.
    let r = simulate(&config, &[VirtualRequest::unique(0.0, 10_000, 2, 9)]).unwrap();
    assert_eq!(r.steps[0].prefill_tokens, 8192);
    assert_eq!(r.steps[1].prefill_tokens, 1808);
    let pairs = 1808.0 * 8192.0 + 1808.0 * 1809.0 / 2.0;
    assert_close(
        r.steps[1].time.total_s,
        expected_step_s(1.0, 1808.0, pairs, 0.0),
        "second prefill chunk",
    );
    assert_eq!(r.requests[0].token_times_s.len(), 2);

    // A mixed step: one sequence decoding while another's prompt is prefilled.
    let reqs = [
        VirtualRequest::unique(0.0, 200, 50, 1),
        VirtualRequest::unique(0.001, 500, 2, 2),
    ];
    let r = simulate(&config, &reqs).unwrap();
    let mixed = r
        .steps
        .iter()
        .find(|s| s.num_decodes == 1 && s.prefill_tokens == 500)
        .unwrap();
    let ctx = mixed.shape.decode_context_tokens as f64;
    let pairs = 500.0 * 501.0 / 2.0;
    assert_close(
        mixed.time.total_s,
        expected_step_s(2.0, 501.0, pairs, ctx),
        "mixed step",
    );
}

fn small_cache(blocks: usize) -> SimConfig {
    SimConfig {
        num_gpu_blocks_override: Some(blocks),
        max_num_seqs: 8,
        ..SimConfig::default()
    }
}

#[test]
fn scripted_kv_scenario_admits_preempts_and_hits_exactly() {
    // 8 blocks of 16 tokens; three 32-token prompts (2 blocks each), 40 output tokens each.
    let reqs: Vec<_> = (0..3)
        .map(|i| VirtualRequest::unique(0.0, 32, 40, i))
        .collect();
    let r = simulate(&small_cache(8), &reqs).unwrap();
    let preempting: Vec<usize> = r
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.preempted > 0)
        .map(|(i, _)| i + 1)
        .collect();
    // Step 1 admits all three (6 blocks). Step 2: R0 and R1 take the last two
    // blocks for their 33rd token; R2 finds none and, being newest, is
    // preempted. At step 18 R0 and R1 take R2's freed (cached) blocks. At
    // step 34 R0 needs a fifth block: R1, now newest, is preempted.
    assert_eq!(preempting, vec![2, 34]);
    assert_eq!(r.counters.preemptions, 2);
    assert_eq!(
        r.requests.iter().map(|o| o.preemptions).collect::<Vec<_>>(),
        vec![0, 1, 1]
    );
    // R0 finishes at step 40; at step 41 R1 is readmitted with its two prompt
    // blocks still cached (32 tokens hit) and R2 with none (evicted at step 18).
    assert_eq!(r.steps[40].admitted, 2);
    assert_eq!(r.counters.admissions, 5);
    assert_eq!(r.counters.prefix_cache_hits, 32);
    assert_eq!(r.counters.prefix_cache_queries, 5 * 32);
    // cached_tokens reports the first admission only.
    assert!(r.requests.iter().all(|o| o.cached_tokens == 0));
    assert!(r.requests.iter().all(|o| o.token_times_s.len() == 40));
    // No more preemptions after 34: R1 finishes before R2 outgrows its blocks.
    assert_eq!(r.steps.len(), 79);
}

#[test]
fn a_shared_prefix_is_served_from_the_cache() {
    // Long enough that the prefill is compute-bound, so skipping it shows.
    let prefix: Vec<u32> = (0..4096).collect();
    let mut a = prefix.clone();
    a.extend(10_000..10_036);
    let mut b = prefix.clone();
    b.extend(20_000..20_036);
    let reqs = [
        VirtualRequest {
            arrival_s: 0.0,
            prompt_token_ids: a,
            output_tokens: 5,
        },
        VirtualRequest {
            arrival_s: 1.0,
            prompt_token_ids: b,
            output_tokens: 5,
        },
        VirtualRequest {
            arrival_s: 2.0,
            prompt_token_ids: prefix.clone(),
            output_tokens: 5,
        },
    ];
    let r = simulate(&SimConfig::default(), &reqs).unwrap();
    assert_eq!(r.requests[0].cached_tokens, 0);
    assert_eq!(r.requests[1].cached_tokens, 4096);
    // A prompt that is entirely cached still recomputes its last block.
    assert_eq!(r.requests[2].cached_tokens, 4080);
    let ttft = |i: usize| r.requests[i].ttft_s(reqs[i].arrival_s).unwrap();
    assert!(ttft(1) < ttft(0) / 2.0, "{} vs {}", ttft(1), ttft(0));

    let off = SimConfig {
        enable_prefix_caching: false,
        ..SimConfig::default()
    };
    let r = simulate(&off, &reqs).unwrap();
    assert_eq!(r.requests[1].cached_tokens, 0);
}

#[test]
fn same_requests_give_the_same_token_timeline() {
    let config = SimConfig {
        output_len: OutputLenDist::Uniform { min: 10, max: 300 },
        max_num_seqs: 16,
        num_gpu_blocks_override: Some(300),
        ..SimConfig::default()
    };
    let reqs: Vec<_> = (0..80u32)
        .map(|i| {
            let out =
                crate::config::sample_output_len(&config.output_len, config.seed, u64::from(i));
            VirtualRequest::unique(
                f64::from(i) * 0.013,
                50 + (i as usize * 37) % 400,
                out,
                i % 7,
            )
        })
        .collect();
    let a = simulate(&config, &reqs).unwrap();
    let b = simulate(&config, &reqs).unwrap();
    assert_eq!(a, b);
    assert!(
        a.counters.preemptions > 0,
        "the scenario should exercise preemption"
    );
    let mut other = config.clone();
    other.seed = 1;
    let reqs2: Vec<_> = reqs
        .iter()
        .enumerate()
        .map(|(i, r)| VirtualRequest {
            output_tokens: crate::config::sample_output_len(
                &other.output_len,
                other.seed,
                i as u64,
            ),
            ..r.clone()
        })
        .collect();
    assert_ne!(simulate(&other, &reqs2).unwrap().requests, a.requests);
}

#[test]
fn requests_that_can_never_fit_are_rejected_not_stuck() {
    // The context limit defaults to what the 4-block (64-token) cache holds.
    let r = simulate(&small_cache(4), &[VirtualRequest::unique(0.0, 60, 10, 0)]).unwrap();
    let err = r.requests[0].rejected.as_ref().unwrap().to_string();
    assert!(err.contains("maximum context length is 64 tokens"), "{err}");
    assert!(r.steps.is_empty());
}

#[test]
fn past_capacity_the_queue_grows_while_throughput_flattens() {
    let config = SimConfig {
        max_num_seqs: 8,
        ..SimConfig::default()
    };
    let run = |rate: f64| {
        let reqs: Vec<_> = (0..400u32)
            .map(|i| VirtualRequest::unique(f64::from(i) / rate, 200, 100, i))
            .collect();
        let r = simulate(&config, &reqs).unwrap();
        let send_end = 399.0 / rate;
        let tput = r.output_throughput(send_end * 0.25, send_end);
        let first = r.requests[10].ttft_s(reqs[10].arrival_s).unwrap();
        let last = r.requests[390].ttft_s(reqs[390].arrival_s).unwrap();
        (tput, first, last)
    };
    // Capacity is about 8 sequences / ~8 ms per step / 100 tokens ≈ 10 req/s.
    let (low_tput, low_first, low_last) = run(4.0);
    let (over_tput, over_first, over_last) = run(30.0);
    let (far_tput, _, far_last) = run(60.0);
    assert!(
        (low_last - low_first).abs() < 0.05,
        "below capacity TTFT stays flat"
    );
    assert!(
        over_last > 10.0 * over_first.max(0.01),
        "{over_first} -> {over_last}"
    );
    assert!(far_last > over_last);
    assert!(over_tput > low_tput * 1.5);
    assert!(
        (far_tput - over_tput).abs() / over_tput < 0.05,
        "{over_tput} vs {far_tput}"
    );
}

/// Speculative decoding: each decoding step emits 1 to K + 1 tokens of a
/// sequence, never more than it has left; the counters add up to the
/// tokens emitted and follow the acceptance the draws promise.
#[test]
fn speculative_decoding_emits_the_accepted_tokens_and_counts_them() {
    let config = SimConfig {
        spec: crate::engine::SpecDecode {
            tokens: 3,
            acceptance: 0.7,
        },
        ..SimConfig::default()
    };
    let reqs: Vec<_> = (0..64)
        .map(|i| VirtualRequest::unique(0.0, 200, 500, i))
        .collect();
    let r = simulate(&config, &reqs).unwrap();
    let c = r.counters;
    assert_eq!(c.generation_tokens, 64 * 500);
    // Every token after the first came from a draft's step: the drafts'
    // steps emitted 1 + accepted each, cut short only at a request's end.
    let emitted_by_drafts = c.generation_tokens - 64;
    assert!(emitted_by_drafts <= c.spec_drafts + c.spec_accepted_tokens);
    assert!(emitted_by_drafts + 64 * 3 >= c.spec_drafts + c.spec_accepted_tokens);
    assert_eq!(c.spec_draft_tokens, 3 * c.spec_drafts);
    let rate = c.spec_accepted_tokens as f64 / c.spec_draft_tokens as f64;
    assert!((rate - 0.511).abs() < 0.015, "{rate}");
    let per_pos = c.spec_accepted_per_pos;
    assert_eq!(per_pos[..3].iter().sum::<u64>(), c.spec_accepted_tokens);
    assert!(per_pos[0] >= per_pos[1] && per_pos[1] >= per_pos[2]);
    assert_eq!(per_pos[3], 0);
    // Fewer steps than without speculation, each a little longer.
    let plain = simulate(&SimConfig::default(), &reqs).unwrap();
    assert!(
        r.steps.len() * 2 < plain.steps.len(),
        "{} {}",
        r.steps.len(),
        plain.steps.len()
    );
    assert!(r.end_s < 0.7 * plain.end_s, "{} {}", r.end_s, plain.end_s);
}
