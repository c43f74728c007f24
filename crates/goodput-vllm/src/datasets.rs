//! vLLM's datasets as goodput reads them: the flags of its synthetic
//! prompts (`random`, `prefix_repetition`), its dataset files (`sharegpt`,
//! `custom`) and the `sonnet` file, with vLLM's checks and messages.

use std::path::Path;

use crate::cli::VllmServeArgs;

use super::refused::refuse;
use super::server_tokens::Shape;

/// `--random-range-ratio`: one ratio, or `{"input": r, "output": r}`.
pub(super) fn range_ratios(s: &str) -> Result<(f64, f64), String> {
    let bad = || {
        format!("--random-range-ratio '{s}': expected a number in [0, 1) or {{\"input\": r, \"output\": r}}")
    };
    let (i, o) = match s.trim().parse::<f64>() {
        Ok(r) => (r, r),
        Err(_) => {
            let v: serde_json::Value = serde_json::from_str(s).map_err(|_| bad())?;
            let get = |k: &str| v.get(k).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
            (get("input"), get("output"))
        }
    };
    if [i, o].iter().all(|r| (0.0..1.0).contains(r)) {
        Ok((i, o))
    } else {
        Err(bad())
    }
}

/// vLLM's `[int(L(1-r)), int(L(1+r))]`.
fn bounds(l: i64, r: f64) -> (u32, u32) {
    let lo = ((l as f64 * (1.0 - r)) as i64).clamp(1, u32::MAX as i64);
    let hi = ((l as f64 * (1.0 + r)) as i64).clamp(lo, u32::MAX as i64);
    (lo as u32, hi as u32)
}

/// A length as goodput's spec: `L`, or `uniform:LO,HI` for vLLM's
/// [`bounds`], plus `extra` tokens.
fn length(l: i64, r: f64, extra: i64) -> String {
    if r == 0.0 {
        return (l + extra).to_string();
    }
    let (lo, hi) = bounds(l, r);
    format!("uniform:{},{}", lo as i64 + extra, hi as i64 + extra)
}

pub(super) fn positive(flag: &str, v: i64) -> Result<i64, String> {
    if v >= 1 {
        Ok(v)
    } else if flag == "--num-prompts" && v == -1 {
        Err(refuse(
            "--num-prompts -1",
            "every row of the file is for spec_bench and speed_bench; give a count",
        ))
    } else {
        Err(format!("{flag} must be at least 1 (got {v})"))
    }
}

/// The dataset's flags for goodput, whether its answers are pinned to
/// their length (vLLM forces `ignore_eos` for random; others only with
/// `--ignore-eos`), and its lengths where goodput builds the prompts.
pub(super) fn dataset(
    a: &VllmServeArgs,
    chat: bool,
) -> Result<(Vec<String>, bool, Option<Shape>), String> {
    let mut v: Vec<String> = Vec::new();
    let mut push = |k: &str, x: String| {
        v.push(k.to_string());
        v.push(x);
    };
    let name = a.dataset_name.as_str();
    if matches!(name, "random" | "random-mm" | "prefix_repetition") && a.dataset_path.is_some() {
        return Err(format!(
            "Cannot use '{name}' dataset with --dataset-path (as vLLM says): it makes its own prompts"
        ));
    }
    let mut shape = Shape {
        prompts: a.num_prompts.max(0) as usize,
        prefixes: 0,
        prefix_len: 0,
        input: (0, 0),
        output: (0, 0),
        seed: a.seed.max(0) as u64,
    };
    let pinned = match name {
        "random" | "random-mm" => {
            v.extend(random(a, chat, &mut shape)?);
            true
        }
        "prefix_repetition" => {
            let prefix = positive(
                "--prefix-repetition-prefix-len",
                a.prefix_repetition_prefix_len,
            )?;
            let suffix = a.prefix_repetition_suffix_len.max(0);
            let groups = positive(
                "--prefix-repetition-num-prefixes",
                a.prefix_repetition_num_prefixes,
            )?;
            if a.num_prompts < groups {
                return Err(format!(
                    "--num-prompts ({}) must be at least --prefix-repetition-num-prefixes ({groups})",
                    a.num_prompts
                ));
            }
            let output = a.output_len.unwrap_or(a.prefix_repetition_output_len);
            push("--input-tokens", (prefix + suffix).to_string());
            push(
                "--output-tokens",
                positive("--prefix-repetition-output-len", output)?.to_string(),
            );
            push("--prefix-tokens", prefix.to_string());
            push("--prefix-groups", groups.to_string());
            push("--prefix-choice", "round-robin".into());
            shape.prefixes = groups as usize;
            shape.prefix_len = prefix as u32;
            (shape.input, shape.output) = ((suffix as u32, suffix as u32), bounds(output, 0.0));
            a.ignore_eos
        }
        "sonnet" => {
            sonnet_checks(a)?;
            let output = a.output_len.unwrap_or(a.sonnet_output_len);
            push(
                "--output-tokens",
                positive("--sonnet-output-len", output)?.to_string(),
            );
            a.ignore_eos
        }
        // Its query and documents are built with the run's tokenizer
        // (`super::rerank`).
        "random-rerank" => return Ok((v, true, None)),
        "spec_bench" | "speed_bench" => {
            return Ok((question_flags(a)?, a.ignore_eos, None));
        }
        // Read and sent as rows built here (`super::hf`).
        "hf" => return Ok((v, a.ignore_eos, None)),
        "sharegpt" | "custom" => {
            v.extend(file_dataset(a, name, chat)?);
            return Ok((v, a.ignore_eos, None));
        }
        other => return Err(unread_dataset(other)),
    };
    Ok((v, pinned, (name != "sonnet").then_some(shape)))
}

/// The `--dataset-name`s goodput reads.
pub(super) const READ_DATASETS: [&str; 10] = [
    "hf",
    "random-rerank",
    "random-mm",
    "random",
    "prefix_repetition",
    "sharegpt",
    "custom",
    "sonnet",
    "spec_bench",
    "speed_bench",
];

pub(super) fn unread_dataset(name: &str) -> String {
    refuse(
        &format!("--dataset-name {name}"),
        "goodput bench serve reads random, random-mm, prefix_repetition and random-rerank, and sharegpt, custom, sonnet, spec_bench, speed_bench and hf from a local path",
    )
}

/// `random` and `random-mm`: goodput's flags for the text (and the images),
/// its lengths in `shape`.
fn random(a: &VllmServeArgs, chat: bool, shape: &mut Shape) -> Result<Vec<String>, String> {
    let mut v: Vec<String> = Vec::new();
    let mut push = |k: &str, x: String| {
        v.push(k.to_string());
        v.push(x);
    };
    if a.dataset_name == "random-mm" {
        if !chat {
            return Err("Multi-modal content (images) is only supported on 'openai-chat' backend (as vLLM says).".into());
        }
        if let Some(spec) = super::multimodal::images(a)? {
            push("--images", spec);
        }
    }
    let (ri, ro) = range_ratios(&a.random_range_ratio)?;
    let input = positive(
        "--random-input-len",
        a.input_len.unwrap_or(a.random_input_len),
    )?;
    let output = positive(
        "--random-output-len",
        a.output_len.unwrap_or(a.random_output_len),
    )?;
    let prefix = a.random_prefix_len.max(0);
    push("--input-tokens", length(input, ri, prefix));
    push("--output-tokens", length(output, ro, 0));
    if prefix > 0 {
        push("--prefix-tokens", prefix.to_string());
    }
    shape.prefixes = usize::from(prefix > 0);
    shape.prefix_len = prefix as u32;
    (shape.input, shape.output) = (bounds(input, ri), bounds(output, ro));
    Ok(v)
}

/// `sharegpt` or `custom` from a local file: goodput's dataset flags.
fn file_dataset(a: &VllmServeArgs, name: &str, chat: bool) -> Result<Vec<String>, String> {
    let mut v: Vec<String> = Vec::new();
    let mut push = |k: &str, x: String| {
        v.push(k.to_string());
        v.push(x);
    };
    let Some(path) = &a.dataset_path else {
        return Err(format!(
            "--dataset-name {name} needs --dataset-path (a local file)"
        ));
    };
    if !Path::new(path).is_file() {
        return Err(format!(
            "--dataset-path {path}: no such local file (goodput downloads nothing: give the path of the {name} file)"
        ));
    }
    if name == "custom" && !chat && !a.skip_chat_template {
        return Err(refuse(
            "--dataset-name custom without --skip-chat-template",
            "vLLM applies the model's chat template on the client before a completions request, which goodput cannot; add --skip-chat-template to send each prompt as written, or use --backend openai-chat --endpoint /v1/chat/completions (the server applies the template)",
        ));
    }
    push("--dataset", path.clone());
    push(
        "--dataset-format",
        if name == "sharegpt" {
            "sharegpt"
        } else {
            "jsonl"
        }
        .into(),
    );
    let output = match name {
        "sharegpt" => a.output_len.or(a.sharegpt_output_len),
        _ => a
            .output_len
            .or(Some(a.custom_output_len).filter(|&n| n != -1)),
    };
    if let Some(n) = output {
        push(
            "--output-tokens",
            positive("the output length", n)?.to_string(),
        );
    }
    push(
        "--dataset-sampling",
        if a.disable_shuffle {
            "sequential"
        } else {
            "random"
        }
        .into(),
    );
    push(
        "--dataset-exhausted",
        if a.no_oversample { "truncate" } else { "cycle" }.into(),
    );
    Ok(v)
}
/// What the sonnet dataset needs: a local file.
fn sonnet_checks(a: &VllmServeArgs) -> Result<(), String> {
    if a.dataset_path.is_none() {
        return Err("--dataset-name sonnet needs --dataset-path (a local text file of poem lines, as vLLM's benchmarks/sonnet.txt)".into());
    }
    Ok(())
}

/// The tokenizer the run's `--tokenizer` names (goodput's own without one).
pub(super) fn run_tokenizer(argv: &[String]) -> Result<goodput_core::tokenizer::Tokenizer, String> {
    let spec = argv
        .windows(2)
        .find(|w| w[0] == "--tokenizer")
        .map_or(goodput_core::tokenizer::DEFAULT_TOKENIZER, |w| {
            w[1].as_str()
        });
    goodput_core::tokenizer::Tokenizer::from_spec(spec).map_err(|e| e.to_string())
}

/// The sonnet dataset's prompts, counted with the run's tokenizer.
pub(super) fn sonnet_prompts(
    text: &str,
    shape: super::sonnet::Shape,
    argv: &[String],
    notes: &mut Vec<String>,
) -> Result<Vec<String>, String> {
    let tokenizer = run_tokenizer(argv)?;
    notes.push(super::sonnet::counted_note(tokenizer.spec()));
    super::sonnet::prompts(text, &tokenizer, shape)
}

/// The sonnet file's text and the shape vLLM's flags give.
pub(super) fn sonnet_source(
    a: &crate::cli::VllmServeArgs,
) -> Result<(String, super::sonnet::Shape), String> {
    let path = a.dataset_path.as_deref().unwrap_or_default();
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!("--dataset-path {path}: {e} (goodput downloads nothing: give the path of the sonnet text file)")
    })?;
    let shape = super::sonnet::Shape {
        input_len: positive("--sonnet-input-len", a.sonnet_input_len)? as usize,
        prefix_len: a.sonnet_prefix_len.max(0) as usize,
        prompts: a.num_prompts.max(0) as usize,
        seed: a.seed.max(0) as u64,
    };
    Ok((text, shape))
}

/// goodput's flags for the question file's answers.
fn question_flags(a: &VllmServeArgs) -> Result<Vec<String>, String> {
    let name = a.dataset_name.as_str();
    let (flag, n) = match name {
        "spec_bench" => ("--spec-bench-output-len", a.spec_bench_output_len),
        _ => ("--speed-bench-output-len", a.speed_bench_output_len),
    };
    let n = positive(flag, n)?;
    Ok(vec!["--output-tokens".into(), n.to_string()])
}
