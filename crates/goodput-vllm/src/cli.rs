//! `goodput bench serve`: `vllm bench serve`'s whole command line, every
//! flag with vLLM's name, type and default, so that a script that runs
//! `vllm bench serve …` runs with `goodput bench serve …`.
//!
//! This struct only parses. [`crate::translate()`] turns it into a goodput run
//! (one translation, no second executor) and refuses by name, before any
//! request, each flag it cannot honour; none is silently ignored. The flag
//! set is vLLM's (104 arguments, 105 option strings with
//! `--no-self-timed`), held by a test against a list of vLLM's flags.

use clap::{Args, Subcommand};

/// `goodput bench …`: vLLM's `vllm bench` front door.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    // The subcommand (`serve`). A plain comment: clap would read a doc
    // comment as help text.
    #[allow(missing_docs)]
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The command line with `goodput bench serve`'s flags spelled as vLLM's
/// parser reads them: underscores in a flag's name, up to its `=` or its
/// first `.`, are dashes (`--num_prompts` is `--num-prompts`). Other
/// commands' arguments pass unchanged.
pub fn as_vllm_reads_it<I: IntoIterator<Item = std::ffi::OsString>>(
    argv: I,
) -> Vec<std::ffi::OsString> {
    let argv: Vec<std::ffi::OsString> = argv.into_iter().collect();
    let bench_serve =
        argv.get(1).is_some_and(|a| a == "bench") && argv.get(2).is_some_and(|a| a == "serve");
    if !bench_serve {
        return argv;
    }
    argv.into_iter()
        .enumerate()
        .map(|(i, arg)| match arg.to_str() {
            Some(s) if i > 2 && s.starts_with("--") => {
                let end = s.find(['=', '.']).unwrap_or(s.len());
                format!("--{}{}", s[2..end].replace('_', "-"), &s[end..]).into()
            }
            _ => arg,
        })
        .collect()
}

/// `goodput bench`'s subcommands: vLLM's `serve`.
#[derive(Subcommand, Debug, Clone)]
pub enum BenchCommand {
    /// `vllm bench serve`'s command line, run by goodput: its flags, its defaults, its result file.
    Serve(Box<VllmServeArgs>),
}

/// Every flag of `vllm bench serve`, with vLLM's defaults. As vLLM's
/// parser does, a unique prefix of a flag's name stands for it
/// (`--num-prom 10`), and underscores in a flag's name read as dashes
/// ([`as_vllm_reads_it`]).
#[derive(Args, Debug, Clone)]
#[command(
    infer_long_args = true,
    // A flag given twice takes its last value, as argparse does (and as a
    // --config file's flags give way to the command line's).
    args_override_self = true,
    about = "vllm bench serve's command line, run by goodput",
    long_about = "vllm bench serve's command line, run by goodput: replace `vllm bench serve` by `goodput bench serve` in a script. Flags keep vLLM's names and defaults; the result file (--save-result) is written where and as vLLM writes it, with goodput's own figures beside vLLM's keys. A flag goodput cannot honour stops the run before any request, naming it. Definitions that differ (TTFT, ITL) are in docs/cli.md, \"goodput bench serve\"."
)]
pub struct VllmServeArgs {
    // ---- Dataset (vLLM's add_dataset_parser) ----
    /// Accepted: goodput reads no remote code (its tokenizer is a local file).
    #[arg(long, help_heading = "Dataset")]
    pub trust_remote_code: bool,
    /// Seed of the prompts and the arrival times.
    #[arg(long, default_value_t = 0, help_heading = "Dataset")]
    pub seed: i64,
    /// Requests to send (-1: every row of a spec_bench or speed_bench file).
    #[arg(
        long,
        default_value_t = 1000,
        allow_negative_numbers = true,
        help_heading = "Dataset"
    )]
    pub num_prompts: i64,
    /// random, prefix_repetition, sharegpt, custom, sonnet, spec_bench and speed_bench here;
    /// the others are refused by name.
    #[arg(long, default_value = "random", value_parser = [
        "sharegpt", "burstgpt", "sonnet", "random", "random-mm", "random-rerank", "hf", "custom",
        "custom_audio", "custom_image", "prefix_repetition", "spec_bench", "speed_bench", "timed_trace",
    ], help_heading = "Dataset")]
    pub dataset_name: String,
    /// Hugging Face streaming (refused: nothing is downloaded).
    #[arg(long, help_heading = "Dataset")]
    pub no_stream: bool,
    /// A local dataset file (sharegpt JSON, custom JSONL).
    #[arg(long, help_heading = "Dataset")]
    pub dataset_path: Option<String>,
    /// Do not resample a dataset shorter than --num-prompts.
    #[arg(long, help_heading = "Dataset")]
    pub no_oversample: bool,
    /// custom: send each prompt as written (goodput applies no chat template on the client;
    /// without it, custom on a completions backend is refused).
    #[arg(long, help_heading = "Dataset")]
    pub skip_chat_template: bool,
    /// Refused (multimodal datasets are not read here).
    #[arg(long, help_heading = "Dataset")]
    pub enable_multimodal_chat: bool,
    /// Keep the dataset's order.
    #[arg(long, help_heading = "Dataset")]
    pub disable_shuffle: bool,
    /// custom: output tokens per request (-1: each row's output_tokens).
    #[arg(long, default_value_t = 256, help_heading = "Dataset")]
    pub custom_output_len: i64,
    /// Refused (custom_image is not read here).
    #[arg(long, help_heading = "Dataset")]
    pub custom_ensure_client_side_data: bool,
    /// spec_bench: output tokens per request.
    #[arg(long, default_value_t = 256, help_heading = "Dataset")]
    pub spec_bench_output_len: i64,
    /// spec_bench: only the rows of this category.
    #[arg(long, help_heading = "Dataset")]
    pub spec_bench_category: Option<String>,
    /// sonnet: input tokens of each prompt (at most).
    #[arg(long, default_value_t = 550, help_heading = "Dataset")]
    pub sonnet_input_len: i64,
    /// sonnet: output tokens of each request.
    #[arg(long, default_value_t = 150, help_heading = "Dataset")]
    pub sonnet_output_len: i64,
    /// sonnet: tokens of the prefix every prompt shares (the file's first lines).
    #[arg(long, default_value_t = 200, help_heading = "Dataset")]
    pub sonnet_prefix_len: i64,
    /// sharegpt: output tokens of every request instead of each conversation's answer length.
    #[arg(long, help_heading = "Dataset")]
    pub sharegpt_output_len: Option<i64>,
    /// Refused (timed_trace is not read here; goodput's --trace replays traces).
    #[arg(long, default_value_t = 16, help_heading = "Dataset")]
    pub timed_trace_chunk_hash_size: i64,
    /// Refused (timed_trace is not read here).
    #[arg(long, default_value_t = 1.0, help_heading = "Dataset")]
    pub timed_trace_sec_multiplier: f64,
    /// Refused (timed_trace is not read here).
    #[arg(long, default_value = "timestamp", help_heading = "Dataset")]
    pub timed_trace_label_timestamp: String,
    /// Refused (timed_trace is not read here).
    #[arg(long, default_value = "input_length", help_heading = "Dataset")]
    pub timed_trace_label_input_length: String,
    /// Refused (timed_trace is not read here).
    #[arg(long, default_value = "output_length", help_heading = "Dataset")]
    pub timed_trace_label_output_length: String,
    /// Refused (timed_trace is not read here).
    #[arg(long, default_value = "hash_ids", help_heading = "Dataset")]
    pub timed_trace_label_hash_ids: String,
    /// Refused (Blazedit is a Hugging Face dataset).
    #[arg(long, default_value_t = 0.0, help_heading = "Dataset")]
    pub blazedit_min_distance: f64,
    /// Refused (Blazedit is a Hugging Face dataset).
    #[arg(long, default_value_t = 1.0, help_heading = "Dataset")]
    pub blazedit_max_distance: f64,
    /// Refused (audio is not benchmarked here).
    #[arg(long, default_value_t = f64::INFINITY, help_heading = "Dataset")]
    pub asr_max_audio_len_sec: f64,
    /// Refused (audio is not benchmarked here).
    #[arg(long, default_value_t = 0.0, help_heading = "Dataset")]
    pub asr_min_audio_len_sec: f64,
    /// random: mean input tokens.
    #[arg(long, default_value_t = 1024, help_heading = "Dataset")]
    pub random_input_len: i64,
    /// random: mean output tokens.
    #[arg(long, default_value_t = 128, help_heading = "Dataset")]
    pub random_output_len: i64,
    /// random: lengths uniform in [L(1-r), L(1+r)]; a number, or {"input": r, "output": r}.
    #[arg(long, default_value = "0.0", help_heading = "Dataset")]
    pub random_range_ratio: String,
    /// random: a shared prefix of N tokens before each prompt.
    #[arg(long, default_value_t = 0, help_heading = "Dataset")]
    pub random_prefix_len: i64,
    /// Inputs per request of an embeddings or rerank benchmark.
    #[arg(long, default_value_t = 1, help_heading = "Dataset")]
    pub random_batch_size: i64,
    /// Refused (random-rerank's embeddings variant is not built here).
    #[arg(long, help_heading = "Dataset")]
    pub no_reranker: bool,
    /// random-mm: images a request carries (spread by the range ratio).
    #[arg(long, default_value_t = 1, help_heading = "Dataset")]
    pub random_mm_base_items_per_request: i64,
    /// random-mm: the count drawn from [floor(n(1-r)), ceil(n(1+r))].
    #[arg(long, default_value_t = 0.0, help_heading = "Dataset")]
    pub random_mm_num_mm_items_range_ratio: f64,
    /// random-mm: most items a request, by modality (JSON).
    #[arg(long, help_heading = "Dataset")]
    pub random_mm_limit_mm_per_prompt: Option<String>,
    /// random-mm: {(H, W, T): probability}; video buckets (T > 1) refused.
    #[arg(long, help_heading = "Dataset")]
    pub random_mm_bucket_config: Option<String>,
    /// Refused (Hugging Face datasets are not downloaded).
    #[arg(long, help_heading = "Dataset")]
    pub hf_subset: Option<String>,
    /// Refused (Hugging Face datasets are not downloaded).
    #[arg(long, help_heading = "Dataset")]
    pub hf_split: Option<String>,
    /// Refused (Hugging Face datasets are not downloaded).
    #[arg(long, help_heading = "Dataset")]
    pub hf_name: Option<String>,
    /// Refused (Hugging Face datasets are not downloaded).
    #[arg(long, help_heading = "Dataset")]
    pub hf_output_len: Option<i64>,
    /// Refused (BFCL is a Hugging Face dataset).
    #[arg(long, help_heading = "Dataset")]
    pub bfcl_categories: Option<String>,
    /// prefix_repetition: shared prefix tokens.
    #[arg(long, default_value_t = 256, help_heading = "Dataset")]
    pub prefix_repetition_prefix_len: i64,
    /// prefix_repetition: unique suffix tokens after the prefix.
    #[arg(long, default_value_t = 256, help_heading = "Dataset")]
    pub prefix_repetition_suffix_len: i64,
    /// prefix_repetition: distinct prefixes.
    #[arg(long, default_value_t = 10, help_heading = "Dataset")]
    pub prefix_repetition_num_prefixes: i64,
    /// prefix_repetition: output tokens.
    #[arg(long, default_value_t = 128, help_heading = "Dataset")]
    pub prefix_repetition_output_len: i64,
    /// speed_bench: the subset's file in --dataset-path.
    #[arg(long, default_value = "qualitative", value_parser = [
        "qualitative", "throughput_1k", "throughput_2k", "throughput_8k", "throughput_16k", "throughput_32k",
    ], help_heading = "Dataset")]
    pub speed_bench_dataset_subset: String,
    /// speed_bench: output tokens per request.
    #[arg(long, default_value_t = 4096, help_heading = "Dataset")]
    pub speed_bench_output_len: i64,
    /// speed_bench: only the rows of this category.
    #[arg(long, help_heading = "Dataset")]
    pub speed_bench_category: Option<String>,

    // ---- Serve (vLLM's add_cli_args) ----
    /// The result file's label and file-name prefix.
    #[arg(long, help_heading = "Serve")]
    pub label: Option<String>,
    /// vllm and openai (completions), openai-chat (chat), openai-responses (responses),
    /// openai-embeddings (embeddings), vllm-rerank (rerank); the others are refused by name.
    #[arg(long, default_value = "openai", value_parser = [
        "vllm", "openai", "openai-chat", "openai-responses", "openai-audio", "openai-embeddings", "openai-embeddings-chat",
        "openai-embeddings-clip", "openai-embeddings-vlm2vec", "infinity-embeddings",
        "infinity-embeddings-clip", "vllm-pooling", "vllm-rerank",
    ], help_heading = "Serve")]
    pub backend: String,
    /// The server's base URL (then --host and --port are not used). Without it and without
    /// --host/--port, goodput benchmarks its built-in simulator.
    #[arg(long, help_heading = "Serve")]
    pub base_url: Option<String>,
    /// Server host, when there is no --base-url.
    #[arg(long, default_value = "127.0.0.1", help_heading = "Serve")]
    pub host: String,
    /// Server port, when there is no --base-url.
    #[arg(long, default_value_t = 8000, help_heading = "Serve")]
    pub port: u16,
    /// API path after the base URL; it must end as --backend's API does.
    #[arg(long, default_value = "/v1/completions", help_heading = "Serve")]
    pub endpoint: String,
    /// Extra HTTP headers, KEY=VALUE.
    #[arg(long, num_args = 0.., help_heading = "Serve")]
    pub header: Vec<String>,
    /// Cap on requests in flight.
    #[arg(long, help_heading = "Serve")]
    pub max_concurrency: Option<i64>,
    /// The model's id (sent in each request unless --served-model-name is given).
    #[arg(long, help_heading = "Serve")]
    pub model: Option<String>,
    /// Input tokens of the random dataset (overrides --random-input-len).
    #[arg(long, help_heading = "Serve")]
    pub input_len: Option<i64>,
    /// Output tokens of every dataset that has an output length (overrides theirs).
    #[arg(long, help_heading = "Serve")]
    pub output_len: Option<i64>,
    /// A local tokenizer.json, or a Hugging Face id whose tokenizer.json is in the local cache.
    #[arg(long, help_heading = "Serve")]
    pub tokenizer: Option<String>,
    /// Only auto is accepted (goodput's tokenizer is a tokenizer.json).
    #[arg(long, default_value = "auto", help_heading = "Serve")]
    pub tokenizer_mode: String,
    /// Accepted; it has no effect in vLLM either.
    #[arg(long, help_heading = "Serve")]
    pub use_beam_search: bool,
    /// Refused (logprobs are not requested here).
    #[arg(long, help_heading = "Serve")]
    pub logprobs: Option<i64>,
    /// Arrivals per second; inf sends every request at once.
    #[arg(long, default_value_t = f64::INFINITY, help_heading = "Serve")]
    pub request_rate: f64,
    /// Gamma shape of the arrivals (1: Poisson).
    #[arg(long, default_value_t = 1.0, help_heading = "Serve")]
    pub burstiness: f64,
    /// Refused (probe requests are not sent here).
    #[arg(long, default_value_t = 0.0, help_heading = "Serve")]
    pub probe_request_rate: f64,
    /// No progress line.
    #[arg(long, help_heading = "Serve")]
    pub disable_tqdm: bool,
    /// Warm-up requests before the measured ones (vLLM's default: none).
    #[arg(long, default_value_t = 0, help_heading = "Serve")]
    pub num_warmups: i64,
    /// Refused (the server's profiler is not driven here).
    #[arg(long, help_heading = "Serve")]
    pub profile: bool,
    /// Write the result file.
    #[arg(long, help_heading = "Serve")]
    pub save_result: bool,
    /// Keep the per-request arrays in the result file.
    #[arg(long, help_heading = "Serve")]
    pub save_detailed: bool,
    /// Append the result to the file as one JSON line.
    #[arg(long, help_heading = "Serve")]
    pub append_result: bool,
    /// Extra KEY=VALUE strings in the result file.
    #[arg(long, num_args = 0.., help_heading = "Serve")]
    pub metadata: Vec<String>,
    /// Directory of the result file.
    #[arg(long, help_heading = "Serve")]
    pub result_dir: Option<String>,
    /// The result file's name (replaces vLLM's default name).
    #[arg(long, help_heading = "Serve")]
    pub result_filename: Option<String>,
    /// Generate exactly the output length (goodput also pins it with min_tokens).
    #[arg(long, help_heading = "Serve")]
    pub ignore_eos: bool,
    /// Refused (timed_trace is not read here).
    #[arg(long, overrides_with = "no_self_timed", help_heading = "Serve")]
    pub self_timed: bool,
    /// Refused (timed_trace is not read here).
    #[arg(long, help_heading = "Serve")]
    pub no_self_timed: bool,
    /// Metrics given mean, median, std and percentiles: ttft, tpot, itl, e2el.
    #[arg(long, help_heading = "Serve")]
    pub percentile_metrics: Option<String>,
    /// Percentiles reported, comma-separated.
    #[arg(long, default_value = "99", help_heading = "Serve")]
    pub metric_percentiles: String,
    /// Per-request thresholds KEY:MS (ttft, tpot, e2el) for request_goodput.
    #[arg(long, num_args = 1.., help_heading = "Serve")]
    pub goodput: Vec<String>,
    /// Refused (goodput's request ids carry its run id).
    #[arg(long, help_heading = "Serve")]
    pub request_id_prefix: Option<String>,
    /// Sampling: refused (not sent here), as are the other sampling flags below.
    #[arg(long, help_heading = "Sampling")]
    pub top_p: Option<f64>,
    /// Refused, as --top-p.
    #[arg(long, help_heading = "Sampling")]
    pub top_k: Option<i64>,
    /// Refused, as --top-p.
    #[arg(long, help_heading = "Sampling")]
    pub min_p: Option<f64>,
    /// Sampling temperature (sent as goodput's --temperature).
    #[arg(long, help_heading = "Sampling")]
    pub temperature: Option<f64>,
    /// Refused, as --top-p.
    #[arg(long, help_heading = "Sampling")]
    pub frequency_penalty: Option<f64>,
    /// Refused, as --top-p.
    #[arg(long, help_heading = "Sampling")]
    pub presence_penalty: Option<f64>,
    /// Refused, as --top-p.
    #[arg(long, help_heading = "Sampling")]
    pub repetition_penalty: Option<f64>,
    /// The model name sent in each request (the result file's model_id stays --model).
    #[arg(long, help_heading = "Serve")]
    pub served_model_name: Option<String>,
    /// Refused (LoRA adapters: goodput's --model takes a weighted list).
    #[arg(long, num_args = 1.., help_heading = "Serve")]
    pub lora_modules: Vec<String>,
    /// Refused with --lora-modules.
    #[arg(long, default_value = "random", value_parser = ["random", "round-robin"], help_heading = "Serve")]
    pub lora_assignment: String,
    /// Refused (goodput's --ramp-up rises to one rate over a duration).
    #[arg(long, value_parser = ["linear", "exponential"], help_heading = "Serve")]
    pub ramp_up_strategy: Option<String>,
    /// Refused with --ramp-up-strategy.
    #[arg(long, help_heading = "Serve")]
    pub ramp_up_start_rps: Option<i64>,
    /// Refused with --ramp-up-strategy.
    #[arg(long, help_heading = "Serve")]
    pub ramp_up_end_rps: Option<i64>,
    /// Wait up to this many seconds for the server to answer a first request (0: do not check).
    #[arg(long, default_value_t = 0, help_heading = "Serve")]
    pub ready_check_timeout_sec: i64,
    /// Refused (no client-side chat template).
    #[arg(long, help_heading = "Serve")]
    pub chat_template_kwargs: Option<String>,
    /// Refused (extra body fields are not sent here).
    #[arg(long, help_heading = "Serve")]
    pub extra_body: Option<String>,
    /// Refused (goodput counts tokens with a tokenizer or the server's usage).
    #[arg(long, help_heading = "Serve")]
    pub skip_tokenizer_init: bool,
    /// Do not verify the server's TLS certificate.
    #[arg(long, help_heading = "Serve")]
    pub insecure: bool,
    /// Refused (goodput's --html report has the timeline).
    #[arg(long, help_heading = "Serve")]
    pub plot_timeline: bool,
    /// Refused with --plot-timeline.
    #[arg(long, default_value = "25,50", help_heading = "Serve")]
    pub timeline_itl_thresholds: String,
    /// Refused (no dataset plot).
    #[arg(long, help_heading = "Serve")]
    pub plot_dataset_stats: bool,
}

/// goodput's command line as far as `bench` (the binary's own parser
/// holds the rest), for the tests here.
#[cfg(test)]
#[derive(clap::Parser, Debug)]
#[command(name = "goodput")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `goodput bench`, the one command the tests here parse.
#[cfg(test)]
#[derive(clap::Subcommand, Debug)]
pub(crate) enum Command {
    Bench(BenchArgs),
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, Command};

    /// vLLM's flags, one per line (`tests/serve_flags.txt`).
    fn vllm_flags() -> Vec<&'static str> {
        include_str!("../tests/serve_flags.txt")
            .lines()
            .filter(|l| l.starts_with("--"))
            .collect()
    }

    fn serve_command() -> clap::Command {
        Cli::command()
            .find_subcommand("bench")
            .and_then(|b| b.find_subcommand("serve"))
            .expect("goodput bench serve")
            .clone()
    }

    /// The same flags as vLLM's parser, no more and no fewer.
    #[test]
    fn every_vllm_flag_and_no_other() {
        let mut ours: Vec<String> = serve_command()
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .filter(|l| l != "--help")
            .collect();
        ours.sort();
        let mut theirs: Vec<String> = vllm_flags().iter().map(|s| s.to_string()).collect();
        theirs.sort();
        assert_eq!(ours, theirs);
        assert_eq!(theirs.len(), 105);
    }

    /// Each flag parses alone, with a value of its type where it takes one.
    #[test]
    fn each_flag_parses() {
        let cmd = serve_command();
        for flag in vllm_flags() {
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(&flag[2..]))
                .expect("listed");
            let mut argv = vec!["goodput", "bench", "serve", flag];
            let takes_value = arg.get_action().takes_values();
            let choices = arg.get_possible_values();
            let value = match choices.first() {
                Some(v) => v.get_name().to_string(),
                None => "1".to_string(),
            };
            if takes_value {
                argv.push(&value);
            }
            let parsed = Cli::try_parse_from(&argv);
            assert!(
                matches!(
                    parsed,
                    Ok(Cli {
                        command: Command::Bench(_)
                    })
                ),
                "{argv:?}: {:?}",
                parsed.err()
            );
        }
    }

    /// vLLM's parser reads `--num_prompts` as `--num-prompts` and a unique
    /// prefix as the flag it begins; so does goodput's, and an ambiguous
    /// prefix is a usage error, as argparse makes it.
    #[test]
    fn underscores_and_prefixes_read_as_vllm_reads_them() {
        let parse = |args: &[&str]| {
            let argv = ["goodput", "bench", "serve"]
                .iter()
                .chain(args)
                .map(std::ffi::OsString::from);
            Cli::try_parse_from(super::as_vllm_reads_it(argv))
        };
        let Ok(Cli {
            command: Command::Bench(b),
        }) = parse(&[
            "--num_prompts",
            "7",
            "--random_input_len=64",
            "--random-output",
            "9",
            "--dataset-name",
            "random",
        ])
        else {
            panic!("parses");
        };
        let super::BenchCommand::Serve(a) = b.command;
        assert_eq!(
            (a.num_prompts, a.random_input_len, a.random_output_len),
            (7, 64, 9)
        );
        assert!(
            parse(&["--random", "1"]).is_err(),
            "ambiguous: many --random-* flags"
        );
        // A value keeps its underscores; other commands are not rewritten.
        let argv = [
            "goodput",
            "bench",
            "serve",
            "--dataset-name",
            "prefix_repetition",
        ];
        let out = super::as_vllm_reads_it(argv.iter().map(std::ffi::OsString::from));
        assert_eq!(out[4], "prefix_repetition");
        let argv = ["goodput", "run", "--num_prompts", "3"];
        let out = super::as_vllm_reads_it(argv.iter().map(std::ffi::OsString::from));
        assert_eq!(out[2], "--num_prompts");
    }

    /// vLLM's defaults where goodput reads them.
    #[test]
    fn defaults_are_vllm_s() {
        let Ok(Cli {
            command: Command::Bench(b),
        }) = Cli::try_parse_from(["goodput", "bench", "serve"])
        else {
            panic!("parses");
        };
        let super::BenchCommand::Serve(a) = b.command;
        assert_eq!(a.num_prompts, 1000);
        assert_eq!(a.dataset_name, "random");
        assert_eq!(a.backend, "openai");
        assert_eq!(a.endpoint, "/v1/completions");
        assert_eq!((a.host.as_str(), a.port), ("127.0.0.1", 8000));
        assert!(a.request_rate.is_infinite());
        assert_eq!(a.burstiness, 1.0);
        assert_eq!((a.random_input_len, a.random_output_len), (1024, 128));
        assert_eq!(a.metric_percentiles, "99");
        assert_eq!(a.num_warmups, 0);
        assert_eq!(a.seed, 0);
    }
}
