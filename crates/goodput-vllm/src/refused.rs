//! The flags of `vllm bench serve` that goodput does not honour: each is
//! refused by name, with why and what to use instead, when it is given a
//! value other than vLLM's default.

use crate::cli::VllmServeArgs;

/// Refused flags: the name, and why, with what to use instead.
pub(super) fn refuse(flag: &str, why: &str) -> String {
    format!("{flag} is not supported by goodput bench serve: {why}")
}

const HF: &str =
    "its Hugging Face dataset's prompts are built with vLLM's template, which goodput does not reproduce";
const MULTIMODAL: &str =
    "multimodal chat transformations and a custom dataset's client-side media are not applied (random-mm's images are sent as vLLM sends them)";
const TRACE: &str =
    "timed_trace is not read (goodput run --trace replays Mooncake and Azure traces)";
const BFCL: &str = "function-calling requests are not built from BFCL here";
const AUDIO: &str = "audio is not benchmarked here";
const RERANK: &str =
    "random-rerank's embeddings variant is not built (with --backend vllm-rerank, random-rerank is)";
const SAMPLING: &str = "sampling parameters other than --temperature are not sent";
const LORA: &str =
    "use goodput run --model 'base=0.5,adapter=0.5' (a weighted list of model names)";
const RAMP: &str = "goodput's --ramp-up raises the rate to --request-rate over a duration, not from one rate to another";
const TOKENIZER_MODE: &str = "goodput reads a tokenizer.json (the auto mode's file)";
const LOGPROBS: &str = "logprobs are not requested";
const PROBE: &str = "probe requests are not sent; goodput's schedule lag and from-schedule latencies show the client's delays";
const PROFILE: &str = "the server's profiler is not driven";
const REQUEST_ID: &str =
    "goodput's x-request-id carries its run id and the request's, which its records join on";
const READY: &str =
    "goodput checks the server before the run (GET /v1/models) and stops if it does not answer";
const TEMPLATE: &str = "no chat template is applied on the client";
const EXTRA_BODY: &str = "extra body fields are not sent";
const SKIP_TOKENIZER: &str =
    "goodput counts tokens from the server's usage or a local tokenizer; run without it";
const TIMELINE: &str = "goodput run --html writes a report with the run's time series";
const PLOT: &str = "no plot is drawn (goodput run --html writes a report with charts)";
const BATCH: &str = "it applies to the embeddings and rerank backends only";

/// Each flag goodput does not honour, when given a value other than vLLM's
/// default: its name and why.
pub(super) fn refused(a: &VllmServeArgs) -> Vec<String> {
    let pooling = a.backend.contains("embeddings") || a.backend == "vllm-rerank";
    #[rustfmt::skip]
    let rules: [(bool, &str, &str); 37] = [
        (a.enable_multimodal_chat, "--enable-multimodal-chat", MULTIMODAL),
        (a.custom_ensure_client_side_data, "--custom-ensure-client-side-data", MULTIMODAL),
        (a.timed_trace_chunk_hash_size != 16, "--timed-trace-chunk-hash-size", TRACE),
        (a.timed_trace_sec_multiplier != 1.0, "--timed-trace-sec-multiplier", TRACE),
        (a.timed_trace_label_timestamp != "timestamp", "--timed-trace-label-timestamp", TRACE),
        (a.timed_trace_label_input_length != "input_length", "--timed-trace-label-input-length", TRACE),
        (a.timed_trace_label_output_length != "output_length", "--timed-trace-label-output-length", TRACE),
        (a.timed_trace_label_hash_ids != "hash_ids", "--timed-trace-label-hash-ids", TRACE),
        (a.self_timed, "--self-timed", TRACE),
        (a.no_self_timed, "--no-self-timed", TRACE),
        (a.blazedit_min_distance != 0.0, "--blazedit-min-distance", HF),
        (a.blazedit_max_distance != 1.0, "--blazedit-max-distance", HF),
        (a.asr_max_audio_len_sec != f64::INFINITY, "--asr-max-audio-len-sec", AUDIO),
        (a.asr_min_audio_len_sec != 0.0, "--asr-min-audio-len-sec", AUDIO),
        (a.no_reranker, "--no-reranker", RERANK),
        (a.bfcl_categories.is_some(), "--bfcl-categories", BFCL),
        (a.tokenizer_mode != "auto", "--tokenizer-mode", TOKENIZER_MODE),
        (a.logprobs.is_some(), "--logprobs", LOGPROBS),
        (a.probe_request_rate != 0.0, "--probe-request-rate", PROBE),
        (a.profile, "--profile", PROFILE),
        (a.request_id_prefix.is_some(), "--request-id-prefix", REQUEST_ID),
        (a.top_p.is_some(), "--top-p", SAMPLING),
        (a.top_k.is_some(), "--top-k", SAMPLING),
        (a.min_p.is_some(), "--min-p", SAMPLING),
        (a.frequency_penalty.is_some(), "--frequency-penalty", SAMPLING),
        (a.presence_penalty.is_some(), "--presence-penalty", SAMPLING),
        (a.repetition_penalty.is_some(), "--repetition-penalty", SAMPLING),
        (!a.lora_modules.is_empty(), "--lora-modules", LORA),
        (a.lora_assignment != "random", "--lora-assignment", LORA),
        (a.ramp_up_strategy.is_some(), "--ramp-up-strategy", RAMP),
        (a.ramp_up_start_rps.is_some(), "--ramp-up-start-rps", RAMP),
        (a.ramp_up_end_rps.is_some(), "--ramp-up-end-rps", RAMP),
        (a.ready_check_timeout_sec != 0, "--ready-check-timeout-sec", READY),
        (a.chat_template_kwargs.is_some(), "--chat-template-kwargs", TEMPLATE),
        (a.extra_body.is_some(), "--extra-body", EXTRA_BODY),
        (a.skip_tokenizer_init, "--skip-tokenizer-init", SKIP_TOKENIZER),
        (a.random_batch_size != 1 && !pooling, "--random-batch-size", BATCH),
    ];
    #[rustfmt::skip]
    let plots: [(bool, &str, &str); 3] = [
        (a.plot_timeline, "--plot-timeline", TIMELINE),
        (a.timeline_itl_thresholds != "25,50", "--timeline-itl-thresholds", TIMELINE),
        (a.plot_dataset_stats, "--plot-dataset-stats", PLOT),
    ];
    rules
        .iter()
        .chain(plots.iter())
        .filter(|(given, _, _)| *given)
        .map(|(_, flag, why)| refuse(flag, why))
        .collect()
}
