//! `goodput bench serve`: `vllm bench serve`'s command line run by goodput.
//!
//! The flags are translated into a `goodput run` command line
//! ([`translate()`]), which runs through `run_cmd` as any run does — same
//! executor, same metrics, same console summary, same exit codes — with its
//! results and records written to a scratch directory. From those two
//! files the result file is written where and as vLLM writes it
//! ([`goodput_core::output::vllm`]), and the scratch directory is removed.

mod datasets;
mod hf;
mod multimodal;
mod questions;
mod refused;
mod rerank;
mod server_tokens;
mod sonnet;
mod template;
mod translate;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::Parser;
use serde_json::Value;

use crate::cli::{BenchArgs, BenchCommand, Cli, Command, VllmServeArgs};
use crate::exit::{output_failed, usage, Code, Exit};

pub use translate::translate;

pub fn main(args: BenchArgs) -> Result<Code, Exit> {
    match args.command {
        BenchCommand::Serve(a) => serve(*a),
    }
}

/// A scratch directory of this process, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, Exit> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "goodput-bench-serve-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| usage(anyhow!("creating {}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A prompt built here: its answer's length where it sets one, a system
/// prompt before it, an image after it (a chat request's).
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub prompt: String,
    pub output: Option<u32>,
    pub system: Option<String>,
    /// An image file's bytes (PNG, JPEG, GIF or WebP).
    pub image: Option<Vec<u8>>,
}

/// Prompts whose answers' length the run's flags set.
fn rows(prompts: Vec<String>) -> Vec<Row> {
    prompts
        .into_iter()
        .map(|prompt| Row {
            prompt,
            ..Row::default()
        })
        .collect()
}

/// An image's file extension, from its first bytes: PNG, JPEG, GIF or
/// WebP, the formats a chat request's data URL carries.
fn image_extension(b: &[u8]) -> Option<&'static str> {
    match b {
        [0x89, b'P', b'N', b'G', ..] => Some("png"),
        [0xff, 0xd8, ..] => Some("jpg"),
        [b'G', b'I', b'F', ..] => Some("gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("webp"),
        _ => None,
    }
}

/// Prompts built here, one `{"prompt": …, "output_tokens": …}` a line (or
/// `messages` with the system prompt first; an image written beside the
/// file and named by `images`).
fn write_prompts(path: &Path, prompts: &[Row]) -> Result<(), Exit> {
    let failed = |p: &Path, e: std::io::Error| usage(anyhow!("writing {}: {e}", p.display()));
    let mut text = String::new();
    for (i, r) in prompts.iter().enumerate() {
        let mut row = match &r.system {
            Some(s) => serde_json::json!({ "messages": [
                { "role": "system", "content": s },
                { "role": "user", "content": r.prompt },
            ] }),
            None => serde_json::json!({ "prompt": r.prompt }),
        };
        if let Some(n) = r.output {
            row["output_tokens"] = n.into();
        }
        if let Some(img) = &r.image {
            let ext = image_extension(img).ok_or_else(|| {
                usage(anyhow!(
                    "row {}: its image is no PNG, JPEG, GIF or WebP, which goodput sends as they are (vLLM re-encodes every image as JPEG)",
                    i + 1
                ))
            })?;
            let name = format!("image-{i}.{ext}");
            let file = path.with_file_name(&name);
            std::fs::write(&file, img).map_err(|e| failed(&file, e))?;
            row["images"] = serde_json::json!([name]);
        }
        text.push_str(&row.to_string());
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| failed(path, e))
}

/// Flags of goodput's synthetic prompts, which a dataset of prompts built
/// here replaces.
const SYNTHETIC: [&str; 5] = [
    "--input-tokens",
    "--output-tokens",
    "--prefix-tokens",
    "--prefix-groups",
    "--prefix-choice",
];

/// `argv` without the flags `names` and their values.
fn without(argv: &[String], names: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut skip = false;
    for a in argv {
        if std::mem::take(&mut skip) {
            continue;
        }
        skip = names.contains(&a.as_str());
        if !skip {
            out.push(a.clone());
        }
    }
    out
}

/// The client's settings for asking the server before the run (its
/// `/tokenize`, its chat template): the run's connection flags.
fn client_options(argv: &[String]) -> Result<goodput_core::request::ClientOptions, Exit> {
    // The connection's flags, before the dataset the prompts will be.
    let run = parse_run(&without(argv, &["--dataset-exhausted"]))?;
    let t = &run.common.target;
    let url = t.url.clone().unwrap_or_default();
    let kind = goodput_core::output::Target::Server;
    let opts = crate::spec::target_options(t, &run.common.workload, url, None, false, kind);
    Ok(opts.client)
}

/// The prompts through the model's chat template, asked of the server
/// where vLLM's client applies it; the plan's refusal where it applies none.
fn templated(plan: &translate::Plan, argv: &[String], prompts: &mut [Row]) -> Result<(), Exit> {
    let Some(refusal) = &plan.template else {
        return Ok(());
    };
    let model = argv
        .windows(2)
        .find(|w| w[0] == "--model")
        .map_or("", |w| w[1].as_str());
    match template::apply(client_options(argv)?, model, prompts) {
        Ok(note) => {
            eprintln!("goodput: note: {note}");
            Ok(())
        }
        Err(why) => Err(usage(anyhow!("{refusal} ({why})"))),
    }
}

/// The prompts the plan builds with the server's own tokenizer, its
/// `/tokenize` asked through the run's connection settings; `None` where
/// the server counts nothing and the plan may do without (said, and the
/// result file's tokenizer_id set to goodput's own).
fn built_by_server(plan: &mut translate::Plan, argv: &[String]) -> Result<Option<Vec<Row>>, Exit> {
    let Some(by) = plan.by_server.take() else {
        return Ok(None);
    };
    let name = plan.meta.tokenizer_id.clone().unwrap_or_default();
    let tokenizer = match server_tokens::connect(client_options(argv)?, &by.model) {
        Ok(t) => t,
        Err(why) if by.required => {
            return Err(usage(anyhow!(
                "--tokenizer {name}: no local copy (a tokenizer.json, a directory holding one, or the model in the Hugging Face cache), and {why}; goodput downloads nothing"
            )))
        }
        Err(why) => {
            eprintln!("goodput: note: {} ({why})", translate::no_local_tokenizer(&name));
            if let translate::Build::Sonnet(..) = by.build {
                let default = goodput_core::tokenizer::DEFAULT_TOKENIZER;
                eprintln!("goodput: note: {}", sonnet::counted_note(default));
            }
            plan.meta.tokenizer_id = Some(goodput_core::tokenizer::DEFAULT_TOKENIZER.into());
            return Ok(None);
        }
    };
    let rows: Vec<Row> = match &by.build {
        translate::Build::Lengths(shape) => shape.prompts(&tokenizer).map(|v| {
            v.into_iter()
                .map(|(prompt, o)| Row {
                    prompt,
                    output: Some(o),
                    ..Row::default()
                })
                .collect()
        }),
        translate::Build::Sonnet(text, shape) => {
            sonnet::prompts(text, &tokenizer, *shape).map(rows)
        }
        translate::Build::Rerank(shape) => shape.rows(&tokenizer).map(rows),
    }
    .map_err(|e| usage(anyhow!(e)))?;
    let counted = format!("{name}'s tokenizer, through the server's /tokenize");
    eprintln!(
        "goodput: note: no local tokenizer for {name}: {} prompts built to lengths counted by {counted}; the run counts with goodput's {} and the server's usage",
        rows.len(),
        goodput_core::tokenizer::DEFAULT_TOKENIZER
    );
    if let translate::Build::Sonnet(..) = by.build {
        eprintln!("goodput: note: {}", sonnet::counted_note(&counted));
    }
    Ok(Some(rows))
}

/// `goodput run`'s arguments from a translated command line.
fn parse_run(argv: &[String]) -> Result<crate::cli::RunArgs, Exit> {
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Run(r),
        }) => Ok(*r),
        Ok(_) => unreachable!("the translation starts with `run`"),
        Err(e) => Err(usage(anyhow!(
            "the translated command line was refused ({}): {e}",
            argv[1..].join(" ")
        ))),
    }
}

fn serve(a: VllmServeArgs) -> Result<Code, Exit> {
    let mut plan = translate(&a).map_err(|e| usage(anyhow!(e)))?;
    for n in &plan.notes {
        eprintln!("goodput: note: {n}");
    }
    let mut argv = vec!["goodput".to_string()];
    argv.extend(plan.argv.iter().cloned());
    let mut prompts: Option<Vec<Row>> = plan.prompts.take();
    if let Some(rows) = built_by_server(&mut plan, &argv)? {
        if prompts.is_none() {
            argv = without(&argv, &SYNTHETIC);
        }
        prompts = Some(rows);
    }
    if let Some(rows) = prompts.as_mut() {
        templated(&plan, &argv, rows)?;
    }
    let scratch = Scratch::new()?;
    let results = scratch.0.join("results.json");
    let records = scratch.0.join("records.jsonl");
    for (k, v) in [("--out", &results), ("--records", &records)] {
        argv.push(k.into());
        argv.push(v.display().to_string());
    }
    if let Some(prompts) = &prompts {
        let path = scratch.0.join("prompts.jsonl");
        write_prompts(&path, prompts)?;
        for (k, v) in [
            ("--dataset", path.display().to_string()),
            ("--dataset-format", "jsonl".into()),
            ("--dataset-sampling", "sequential".into()),
        ] {
            argv.push(k.into());
            argv.push(v);
        }
    }
    argv.push("--records-itl".into());
    // vLLM's lines as vLLM prints them, for the scripts that read them.
    argv.push("--intervals-apart".into());
    if a.save_detailed {
        argv.push("--records-text".into());
    }
    let outcome = crate::run_cmd::main(parse_run(&argv)?);
    // The run's code stands; the result file is written whenever the run
    // ended and wrote results (a failed gate, no request completed), as
    // vLLM writes its file after any run that ended — but not after a
    // signal cut it short, after which vLLM writes none: a script must not
    // read a cut run as a whole one.
    let interrupted = matches!(
        outcome,
        Ok(Code::Interrupted) | Err(Exit(Code::Interrupted, _))
    );
    if interrupted && plan.save.is_some() {
        eprintln!(
            "goodput: interrupted: no vLLM result file written (as vllm bench serve writes none)"
        );
        return outcome;
    }
    if let (Some(save), true) = (&plan.save, results.is_file()) {
        let path = write_result(&plan.meta, save, &results, &records)?;
        eprintln!("goodput: vLLM result file written: {}", path.display());
    }
    outcome
}

/// Read the run's files and write vLLM's result file; its path.
fn write_result(
    meta: &goodput_core::output::vllm::VllmMeta,
    save: &translate::SaveTo,
    results: &Path,
    records: &Path,
) -> Result<PathBuf, Exit> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map_err(|e| output_failed(anyhow!("reading {}: {e}", p.display())))
    };
    let doc: Value = serde_json::from_str(&read(results)?)
        .map_err(|e| output_failed(anyhow!("reading {}: {e}", results.display())))?;
    let lines: Vec<Value> = read(records)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["phase"] == "measure")
        .collect();
    let mut meta = meta.clone();
    if meta.model_id.is_empty() {
        meta.model_id = doc["model_id"].as_str().unwrap_or_default().to_string();
    }
    let out = goodput_core::output::vllm::document(&doc, &lines, &meta);
    let name = save
        .file_name
        .clone()
        .unwrap_or_else(|| goodput_core::output::vllm::default_file_name(&meta));
    let path = match &save.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| output_failed(anyhow!("creating {}: {e}", dir.display())))?;
            dir.join(name)
        }
        None => PathBuf::from(name),
    };
    let text = serde_json::to_string(&out)
        .map_err(|e| output_failed(anyhow!("writing {}: {e}", path.display())))?;
    let written = (|| -> std::io::Result<()> {
        if save.append {
            // vLLM: opened for appending, a newline before the object when
            // the file is not empty: JSON lines.
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            if f.metadata()?.len() > 0 {
                f.write_all(b"\n")?;
            }
            f.write_all(text.as_bytes())
        } else {
            std::fs::write(&path, text.as_bytes())
        }
    })();
    written.map_err(|e| output_failed(anyhow!("writing {}: {e}", path.display())))?;
    Ok(path)
}
