//! `vllm bench serve`'s flags turned into a `goodput run` command line.
//!
//! One translation, no second executor: the result is the argv `goodput
//! run` parses, so every figure comes from the same run and metrics path as
//! goodput's own command. A flag goodput cannot honour is refused here,
//! before any request, naming it; none is ignored.

use std::path::{Path, PathBuf};

use goodput_core::tokenizer::Tokenizer;

use goodput_core::output::vllm::VllmMeta;

use crate::cli::VllmServeArgs;

use super::datasets::{
    dataset, positive, sonnet_prompts, sonnet_source, unread_dataset, READ_DATASETS,
};
use super::refused::{refuse, refused};
use super::server_tokens::Shape;

/// The run to make and what to write after it.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `goodput run …` (without the program name's `goodput`).
    pub argv: Vec<String>,
    /// The result file's setup keys; `model_id` and `tokenizer_id` are
    /// completed from the run when `--model` was not given.
    pub meta: VllmMeta,
    /// Where the result file goes (`--save-result`, `--append-result`).
    pub save: Option<SaveTo>,
    /// What the user should know about the translation, said on stderr.
    pub notes: Vec<String>,
    /// Prompts built here (sonnet, spec_bench, speed_bench, random-rerank,
    /// a Hugging Face dataset), to be written as a JSONL dataset the run
    /// reads in order.
    pub prompts: Option<Vec<super::Row>>,
    /// Prompts to build with the server's own tokenizer instead, where no
    /// local copy of the model's was found.
    pub by_server: Option<ByServer>,
    /// The prompts go through the model's chat template, which vLLM's
    /// client applies before a completions request and goodput asks of the
    /// server; the refusal should the server apply none.
    pub template: Option<String>,
}

/// Prompts to build through the server's `/tokenize` before the run.
#[derive(Debug, Clone)]
pub struct ByServer {
    /// The model the server is asked to count for.
    pub model: String,
    /// `--tokenizer` named it: without the server's count, the command stops.
    pub required: bool,
    pub(crate) build: Build,
}

impl ByServer {
    /// The prompts, counted by `tokenizer` (the server's, from [`crate::connect`]).
    pub fn rows(&self, tokenizer: &Tokenizer) -> Result<Vec<crate::Row>, String> {
        match &self.build {
            Build::Lengths(shape) => shape.prompts(tokenizer).map(|v| {
                v.into_iter()
                    .map(|(prompt, o)| crate::Row {
                        prompt,
                        output: Some(o),
                        ..crate::Row::default()
                    })
                    .collect()
            }),
            Build::Sonnet(text, shape) => {
                crate::sonnet::prompts(text, tokenizer, *shape).map(crate::rows)
            }
            Build::Rerank(shape) => shape.rows(tokenizer).map(crate::rows),
        }
    }

    /// The prompts are sonnet's, whose lengths depend on the tokenizer that
    /// counted them ([`crate::counted_note`]).
    pub fn is_sonnet(&self) -> bool {
        matches!(self.build, Build::Sonnet(..))
    }
}

/// What the server's tokenizer builds.
#[derive(Debug, Clone)]
pub(crate) enum Build {
    /// random and prefix_repetition: exact lengths.
    Lengths(Shape),
    /// sonnet: its file's text.
    Sonnet(String, super::sonnet::Shape),
    /// random-rerank: a shared query and documents.
    Rerank(super::rerank::Shape),
}

/// Where vLLM's result file goes.
#[derive(Debug, Clone)]
pub struct SaveTo {
    /// `--result-dir`; the working directory where not given.
    pub dir: Option<PathBuf>,
    /// `--result-filename`; vLLM's default name where not given.
    pub file_name: Option<String>,
    /// `--append-result`: added as a JSON line to the file.
    pub append: bool,
}

/// The API route goodput sends to for a backend, and the path's ending
/// vLLM requires of `--endpoint` for it.
fn route(backend: &str) -> Result<(&'static str, &'static str), String> {
    match backend {
        "vllm" | "openai" => Ok(("completions", "completions")),
        "openai-chat" => Ok(("chat", "chat/completions")),
        "openai-responses" => Ok(("responses", "responses")),
        "openai-embeddings" => Ok(("embeddings", "embeddings")),
        "vllm-rerank" => Ok(("rerank", "rerank")),
        "openai-audio" => Err(refuse("--backend openai-audio", "audio is not benchmarked here")),
        other => Err(refuse(
            &format!("--backend {other}"),
            "of the pooling backends goodput runs openai-embeddings (/v1/embeddings) and vllm-rerank (/v1/rerank)",
        )),
    }
}

/// The base URL goodput is given: vLLM's `--base-url` (or
/// `http://HOST:PORT`) followed by `--endpoint` up to its API route, which
/// goodput adds itself; the route part must end with `/v1`.
fn base_url(a: &VllmServeArgs, ending: &str) -> Result<String, String> {
    let root = match &a.base_url {
        Some(b) => b.trim_end_matches('/').to_string(),
        None if a.host.contains(':') => format!("http://[{}]:{}", a.host, a.port),
        None => format!("http://{}:{}", a.host, a.port),
    };
    let path = a.endpoint.trim_end_matches('/');
    let Some(prefix) = path.strip_suffix(ending) else {
        return Err(format!(
            "--endpoint {} does not end with '{ending}', which --backend {} sends to (vLLM: \"URL must end with {ending}\")",
            a.endpoint, a.backend
        ));
    };
    let prefix = prefix.trim_end_matches('/');
    if !prefix.ends_with("/v1") {
        return Err(refuse(
            &format!("--endpoint {}", a.endpoint),
            "goodput sends to the API routes under a path ending in /v1 (/v1/completions, /v1/chat/completions, …)",
        ));
    }
    Ok(format!("{root}{prefix}"))
}

/// A local tokenizer.json for a name: a path (a `.json` file, or a
/// directory holding a tokenizer.json), else the Hugging Face cache's copy
/// of that model id. Another file (llama.cpp serves a `.gguf` under its
/// path) is no tokenizer.json.
fn local_tokenizer(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.is_file() && p.extension().is_some_and(|e| e == "json") {
        return Some(p.to_path_buf());
    }
    if p.join("tokenizer.json").is_file() {
        return Some(p.join("tokenizer.json"));
    }
    let file = super::hf::snapshot("models", name)?.join("tokenizer.json");
    file.is_file().then_some(file)
}

/// `--metric-percentiles`: numbers in (0, 100].
fn percentiles(s: &str) -> Result<Vec<f64>, String> {
    s.split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .ok()
                .filter(|p| *p > 0.0 && *p <= 100.0)
                .ok_or_else(|| format!("--metric-percentiles '{s}': '{p}' is not a percentile"))
        })
        .collect()
}

/// A flag pair for goodput's command line.
fn flag(argv: &mut Vec<String>, k: &str, x: String) {
    argv.push(k.to_string());
    argv.push(x);
}

/// The load: prompts (`count` where a file's rows set it), seed,
/// arrivals, the cap on requests in flight and the warm-up.
fn load(a: &VllmServeArgs, count: Option<usize>, argv: &mut Vec<String>) -> Result<(), String> {
    let n = match count {
        Some(n) => n as i64,
        None => positive("--num-prompts", a.num_prompts)?,
    };
    flag(argv, "--num-prompts", n.to_string());
    if a.seed < 0 {
        return Err(format!("--seed must be 0 or more (got {})", a.seed));
    }
    flag(argv, "--seed", a.seed.to_string());
    if a.request_rate.is_nan() || a.request_rate <= 0.0 {
        return Err(format!(
            "--request-rate must be above 0 (got {})",
            a.request_rate
        ));
    }
    let rate = if a.request_rate.is_finite() {
        a.request_rate.to_string()
    } else {
        "inf".into()
    };
    flag(argv, "--request-rate", rate);
    if a.burstiness.is_nan() || a.burstiness <= 0.0 {
        return Err(format!(
            "--burstiness must be above 0 (got {})",
            a.burstiness
        ));
    }
    if a.burstiness.is_infinite() {
        flag(argv, "--arrival", "constant".into());
    } else if a.burstiness != 1.0 {
        flag(argv, "--burstiness", a.burstiness.to_string());
    }
    if let Some(c) = a.max_concurrency {
        if c <= 0 {
            return Err("--max-concurrency must be greater than 0".into());
        }
        flag(argv, "--max-concurrency", c.to_string());
    }
    if a.num_warmups < 0 {
        return Err(format!(
            "--num-warmups must be 0 or more (got {})",
            a.num_warmups
        ));
    }
    flag(argv, "--warmup", a.num_warmups.to_string());
    Ok(())
}

/// What is reported: the percentiles (those asked, and 50 for the median)
/// and the metrics that get keys in the result file; returns (metrics,
/// percentiles) for the file.
fn reported(
    a: &VllmServeArgs,
    endpoint: &str,
    argv: &mut Vec<String>,
) -> Result<(Vec<String>, Vec<f64>), String> {
    let metric_percentiles = percentiles(&a.metric_percentiles)?;
    let mut asked = metric_percentiles.clone();
    if !asked.contains(&50.0) {
        asked.push(50.0);
    }
    asked.sort_by(f64::total_cmp);
    let labels: Vec<String> = asked
        .iter()
        .map(|p| goodput_core::measure::pct_label(*p))
        .collect();
    flag(argv, "--percentiles", labels.join(","));
    let pooling = endpoint == "embeddings" || endpoint == "rerank";
    let metrics = a
        .percentile_metrics
        .as_deref()
        .unwrap_or(if pooling { "e2el" } else { "ttft,tpot,itl" })
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    Ok((metrics, metric_percentiles))
}

/// The tokenizer: `--tokenizer`, else the model's, from a local copy;
/// else, for prompts goodput builds (`build`), the server's own through its
/// `/tokenize` (when it answers); the name written as the result file's
/// tokenizer_id (the tokenizer the prompts were built with: vLLM's is always
/// the model's), and a note where goodput's own is used.
fn tokenizer(
    a: &VllmServeArgs,
    argv: &mut Vec<String>,
    notes: &mut Vec<String>,
    build: Option<Build>,
) -> Result<(String, Option<ByServer>), String> {
    let default = goodput_core::tokenizer::DEFAULT_TOKENIZER;
    let Some(name) = a.tokenizer.as_deref().or(a.model.as_deref()) else {
        return Ok((default.to_string(), None));
    };
    if let Some(path) = local_tokenizer(name) {
        flag(argv, "--tokenizer", path.display().to_string());
        return Ok((name.to_string(), None));
    }
    let required = a.tokenizer.is_some();
    let model = a.served_model_name.as_ref().or(a.model.as_ref());
    match (build, model) {
        (Some(build), Some(model)) => {
            let model = model.clone();
            let by_server = ByServer { model, required, build };
            Ok((name.to_string(), Some(by_server)))
        }
        _ if required => Err(format!(
            "--tokenizer {name}: no local copy (a tokenizer.json, a directory holding one, or the model in the Hugging Face cache, $HF_HOME/hub); goodput downloads nothing, and asks the server's /tokenize only for the prompts it builds (random, prefix_repetition, sonnet). Without --tokenizer, prompts are built with goodput's own tokenizer and counts come from the server's usage"
        )),
        _ => {
            notes.push(no_local_tokenizer(name));
            Ok((default.to_string(), None))
        }
    }
}

/// The note where goodput's own tokenizer stands in for the model's.
pub fn no_local_tokenizer(name: &str) -> String {
    format!(
        "no local tokenizer for {name} (none in the Hugging Face cache): prompts are built with goodput's {} and every count comes from the server's usage, where vLLM would load the model's tokenizer",
        goodput_core::tokenizer::DEFAULT_TOKENIZER
    )
}

/// `KEY=VALUE` items (`--header`, `--metadata`), split at the first `=`
/// and trimmed, with vLLM's message for one without `=`.
fn pairs(flag: &str, items: &[String]) -> Result<Vec<(String, String)>, String> {
    items
        .iter()
        .map(|m| match m.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_string(), v.trim().to_string())),
            None => Err(format!(
                "{flag} '{m}': Invalid {} format. Please use KEY=VALUE format.",
                flag.trim_start_matches('-')
            )),
        })
        .collect()
}

/// Every flag goodput does not honour, named at once.
fn refusals(a: &VllmServeArgs) -> Result<(), String> {
    let errors = refused(a);
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors[0].clone()),
        n => Err(format!(
            "{n} flags are not supported:\n  {}",
            errors.join("\n  ")
        )),
    }
}

/// The whole translation.
pub fn translate(a: &VllmServeArgs) -> Result<Plan, String> {
    refusals(a)?;
    let (endpoint, ending) = route(&a.backend)?;
    let mut argv: Vec<String> = vec!["run".into()];
    flag(&mut argv, "--url", base_url(a, ending)?);
    flag(&mut argv, "--endpoint", endpoint.into());
    if let Some(m) = a.served_model_name.as_ref().or(a.model.as_ref()) {
        flag(&mut argv, "--model", m.clone());
    }
    // A dataset goodput does not read is named before any other complaint
    // (vLLM's --num-prompts -1 is a spec_bench or speed_bench request).
    if !READ_DATASETS.contains(&a.dataset_name.as_str()) {
        return Err(unread_dataset(&a.dataset_name));
    }
    let questions = match a.dataset_name.as_str() {
        "spec_bench" | "speed_bench" => Some(super::questions::prompts(a)?),
        _ => None,
    };
    let rerank = rerank_shape(a, endpoint)?;
    let questions_count = questions.as_ref().map(Vec::len);
    let count = questions_count.or(rerank.map(|r| r.requests()));
    load(a, count, &mut argv)?;
    let (data, pinned, shape) = dataset(a, endpoint == "chat")?;
    argv.extend(data);
    if endpoint == "embeddings" || endpoint == "rerank" {
        let batch = positive("--random-batch-size", a.random_batch_size)?;
        flag(&mut argv, "--batch-size", batch.to_string());
    }
    if rerank.is_some() {
        // The last request takes the documents left, not the next query.
        flag(&mut argv, "--dataset-exhausted", "truncate".into());
    }
    if !pinned && !a.ignore_eos {
        argv.push("--no-pin-output".into());
    }
    if let Some(t) = a.temperature {
        flag(&mut argv, "--temperature", t.to_string());
    }
    for (k, v) in pairs("--header", &a.header)? {
        flag(&mut argv, "--header", format!("{k}: {v}"));
    }
    for g in &a.goodput {
        flag(&mut argv, "--goodput", g.clone());
    }
    let (percentile_metrics, metric_percentiles) = reported(a, endpoint, &mut argv)?;
    let mut notes = Vec::new();
    let built = Built {
        shape,
        rerank,
        questions,
    };
    let (tokenizer_id, prompts, by_server) = prompts_of(a, &mut argv, &mut notes, built)?;
    if a.insecure {
        argv.push("--insecure".into());
    }
    if a.disable_tqdm {
        argv.push("--no-progress".into());
    }
    let save = (a.save_result || a.append_result).then(|| SaveTo {
        dir: a.result_dir.as_ref().map(PathBuf::from),
        file_name: a.result_filename.clone(),
        append: a.append_result,
    });
    let meta = VllmMeta {
        date: goodput_core::output::vllm::now_date(),
        backend: a.backend.clone(),
        label: a.label.clone(),
        model_id: a.model.clone().unwrap_or_default(),
        tokenizer_id: Some(tokenizer_id),
        num_prompts: match &questions_count {
            Some(n) => *n as u64,
            None => a.num_prompts as u64,
        },
        request_rate: a.request_rate,
        burstiness: a.burstiness,
        max_concurrency: a.max_concurrency.map(|c| c as u64),
        metadata: pairs("--metadata", &a.metadata)?,
        percentile_metrics,
        metric_percentiles,
        save_detailed: a.save_detailed,
    };
    Ok(Plan {
        argv,
        meta,
        save,
        notes,
        prompts,
        by_server,
        template: super::template::needed(a, endpoint == "chat"),
    })
}

/// The tokenizer's id, the prompts built here, those to build by the server.
type PromptsOf = (String, Option<Vec<super::Row>>, Option<ByServer>);

/// What the dataset's prompts are built from, where goodput builds them.
struct Built {
    shape: Option<Shape>,
    rerank: Option<super::rerank::Shape>,
    questions: Option<Vec<String>>,
}

/// The tokenizer's id for the result file, the prompts built here (with
/// the run's tokenizer, kept should the server's not answer) and those to
/// build through the server's `/tokenize` instead.
fn prompts_of(
    a: &VllmServeArgs,
    argv: &mut Vec<String>,
    notes: &mut Vec<String>,
    built: Built,
) -> Result<PromptsOf, String> {
    let sonnet = match a.dataset_name.as_str() {
        "sonnet" => Some(sonnet_source(a)?),
        _ => None,
    };
    let build = match (&sonnet, built.shape, built.rerank) {
        (Some((text, shape)), ..) => Some(Build::Sonnet(text.clone(), *shape)),
        (None, _, Some(r)) => Some(Build::Rerank(r)),
        (None, shape, None) => shape.map(Build::Lengths),
    };
    let (tokenizer_id, by_server) = tokenizer(a, argv, notes, build)?;
    let mut said = Vec::new();
    let prompts = match (sonnet, built.rerank) {
        (Some((text, shape)), _) => Some(sonnet_prompts(&text, shape, argv, &mut said)?),
        (None, Some(r)) => Some(r.rows(&super::datasets::run_tokenizer(argv)?)?),
        (None, None) if a.dataset_name == "hf" => {
            let tokenizer = super::datasets::run_tokenizer(argv)?;
            let (rows, note) = super::hf::rows(a, &tokenizer)?;
            notes.push(note);
            // A short set kept short (--no-oversample) is sent once.
            if let Some(i) = argv.iter().position(|x| x == "--num-prompts") {
                argv[i + 1] = rows.len().to_string();
            }
            return Ok((tokenizer_id, Some(rows), by_server));
        }
        (None, None) => built.questions,
    }
    .map(super::rows);
    if by_server.is_none() {
        notes.extend(said);
    }
    Ok((tokenizer_id, prompts, by_server))
}

/// random-rerank's shape, on the rerank route only (its query and
/// documents are what `/v1/rerank` reads).
fn rerank_shape(a: &VllmServeArgs, endpoint: &str) -> Result<Option<super::rerank::Shape>, String> {
    if a.dataset_name != "random-rerank" {
        return Ok(None);
    }
    if endpoint != "rerank" {
        return Err(refuse(
            "--dataset-name random-rerank without --backend vllm-rerank",
            "its shared query and documents are a /v1/rerank request's",
        ));
    }
    let (ratio, _) = super::datasets::range_ratios(&a.random_range_ratio)?;
    let input = a.input_len.unwrap_or(a.random_input_len);
    Ok(Some(super::rerank::Shape {
        documents: positive("--num-prompts", a.num_prompts)? as usize,
        batch: positive("--random-batch-size", a.random_batch_size)? as usize,
        input_len: positive("--random-input-len", input)? as u32,
        range_ratio: ratio,
        seed: a.seed.max(0) as u64,
    }))
}

#[cfg(test)]
pub(super) mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{BenchCommand, Cli, Command};

    /// The parsed `goodput bench serve` flags of `extra`.
    pub(crate) fn args(extra: &[&str]) -> VllmServeArgs {
        let mut argv = vec!["goodput", "bench", "serve"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv) {
            Ok(Cli {
                command: Command::Bench(b),
            }) => {
                let BenchCommand::Serve(a) = b.command;
                *a
            }
            other => panic!("{extra:?}: {:?}", other.err()),
        }
    }

    fn value<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
        argv.iter()
            .position(|a| a == flag)
            .and_then(|i| argv.get(i + 1))
            .map(String::as_str)
    }

    /// A dataset goodput does not read is what the user hears about first,
    /// even with the `--num-prompts -1` that only it takes.
    #[test]
    fn an_unread_dataset_is_named_before_its_num_prompts() {
        let e = translate(&args(&[
            "--dataset-name",
            "burstgpt",
            "--num-prompts",
            "-1",
        ]))
        .unwrap_err();
        assert!(
            e.contains("--dataset-name burstgpt is not supported"),
            "{e}"
        );
    }

    /// The issue's everyday line turns into goodput's flags.
    #[test]
    fn the_everyday_line() {
        let a = args(&[
            "--backend",
            "vllm",
            "--model",
            "M",
            "--dataset-name",
            "random",
            "--random-input-len",
            "1024",
            "--random-output-len",
            "128",
            "--num-prompts",
            "200",
            "--request-rate",
            "10",
            "--max-concurrency",
            "64",
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
            "--metric-percentiles",
            "50,90,99",
            "--goodput",
            "ttft:200",
            "tpot:50",
            "--save-result",
            "--result-dir",
            "D",
            "--result-filename",
            "F",
            "--ignore-eos",
            "--port",
            "8001",
        ]);
        let plan = translate(&a).unwrap();
        let v = &plan.argv;
        assert_eq!(value(v, "--url"), Some("http://127.0.0.1:8001/v1"));
        assert_eq!(value(v, "--endpoint"), Some("completions"));
        assert_eq!(value(v, "--input-tokens"), Some("1024"));
        assert_eq!(value(v, "--output-tokens"), Some("128"));
        assert_eq!(value(v, "--request-rate"), Some("10"));
        assert_eq!(value(v, "--max-concurrency"), Some("64"));
        assert_eq!(
            value(v, "--warmup"),
            Some("0"),
            "vLLM warms nothing up by default"
        );
        assert_eq!(value(v, "--percentiles"), Some("50,90,99"));
        assert!(!v.contains(&"--no-pin-output".to_string()));
        let goodput: Vec<&String> = v.iter().skip_while(|a| *a != "--goodput").collect();
        assert_eq!(goodput[1], "ttft:200");
        assert_eq!(
            plan.meta.percentile_metrics,
            ["ttft", "tpot", "itl", "e2el"]
        );
        let save = plan.save.unwrap();
        assert_eq!(save.dir, Some(PathBuf::from("D")));
        assert_eq!(save.file_name.as_deref(), Some("F"));
        // That it parses as a `goodput run` is the binary's test
        // (`bench_cmd::tests`), where goodput's parser is.
    }

    #[test]
    fn lengths_ratios_and_prefixes() {
        let a = args(&[
            "--random-input-len",
            "100",
            "--random-output-len",
            "10",
            "--random-range-ratio",
            r#"{"input": 0.5, "output": 0.0}"#,
            "--random-prefix-len",
            "20",
        ]);
        let plan = translate(&a).unwrap();
        assert_eq!(value(&plan.argv, "--input-tokens"), Some("uniform:70,170"));
        assert_eq!(value(&plan.argv, "--output-tokens"), Some("10"));
        assert_eq!(value(&plan.argv, "--prefix-tokens"), Some("20"));
        let a = args(&[
            "--dataset-name",
            "prefix_repetition",
            "--num-prompts",
            "20",
            "--prefix-repetition-num-prefixes",
            "4",
        ]);
        let plan = translate(&a).unwrap();
        assert_eq!(value(&plan.argv, "--input-tokens"), Some("512"));
        assert_eq!(value(&plan.argv, "--prefix-groups"), Some("4"));
        assert_eq!(value(&plan.argv, "--prefix-choice"), Some("round-robin"));
        // vLLM does not force ignore_eos here: the answers end where the model ends them.
        assert!(plan.argv.contains(&"--no-pin-output".to_string()));
        assert!(translate(&args(&["--random-range-ratio", "1.5"])).is_err());
    }

    #[test]
    fn urls_endpoints_and_refusals() {
        let a = args(&[
            "--base-url",
            "https://h.example/proxy",
            "--backend",
            "openai-chat",
            "--endpoint",
            "/v1/chat/completions",
        ]);
        let plan = translate(&a).unwrap();
        assert_eq!(
            value(&plan.argv, "--url"),
            Some("https://h.example/proxy/v1")
        );
        assert_eq!(value(&plan.argv, "--endpoint"), Some("chat"));
        let e = translate(&args(&["--backend", "openai-chat"])).unwrap_err();
        assert!(e.contains("does not end with 'chat/completions'"), "{e}");
        let e = translate(&args(&["--profile", "--top-k", "5"])).unwrap_err();
        assert!(e.starts_with("2 flags are not supported"), "{e}");
        assert!(e.contains("--profile") && e.contains("--top-k"), "{e}");
        let e = translate(&args(&["--dataset-path", "x.json"])).unwrap_err();
        assert!(
            e.contains("Cannot use 'random' dataset with --dataset-path"),
            "{e}"
        );
        let e = translate(&args(&["--header", "novalue"])).unwrap_err();
        assert!(e.contains("KEY=VALUE"), "{e}");
        let plan = translate(&args(&["--header", "X-Team=infra", "--burstiness", "0.5"])).unwrap();
        assert_eq!(value(&plan.argv, "--header"), Some("X-Team: infra"));
        assert_eq!(value(&plan.argv, "--burstiness"), Some("0.5"));
        // vLLM's Responses API backend, as its docs run it.
        let a = args(&[
            "--backend",
            "openai-responses",
            "--endpoint",
            "/v1/responses",
        ]);
        let plan = translate(&a).unwrap();
        assert_eq!(value(&plan.argv, "--endpoint"), Some("responses"));
        let e = translate(&args(&["--num-prompts", "-1"])).unwrap_err();
        assert!(e.contains("--num-prompts -1 is not supported"), "{e}");
    }
}
