//! `goodput bench serve`: `vllm bench serve`'s command line run by goodput.
//!
//! The flags are translated into a `goodput run` command line
//! ([`translate()`]), which runs through `run_cmd` as any run does — same
//! executor, same metrics, same console summary, same exit codes — with its
//! results and records written to a scratch directory. From those two
//! files the result file is written where and as vLLM writes it
//! ([`goodput_core::report::vllm`]), and the scratch directory is removed.

mod refused;
mod sonnet;
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

/// Prompts built by the translation, one `{"prompt": …}` a line.
fn write_prompts(path: &Path, prompts: &[String]) -> Result<(), Exit> {
    let mut text = String::new();
    for p in prompts {
        text.push_str(&serde_json::json!({ "prompt": p }).to_string());
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| usage(anyhow!("writing {}: {e}", path.display())))
}

fn serve(a: VllmServeArgs) -> Result<Code, Exit> {
    let plan = translate(&a).map_err(|e| usage(anyhow!(e)))?;
    for n in &plan.notes {
        eprintln!("goodput: note: {n}");
    }
    let scratch = Scratch::new()?;
    let results = scratch.0.join("results.json");
    let records = scratch.0.join("records.jsonl");
    let mut argv = vec!["goodput".to_string()];
    argv.extend(plan.argv.iter().cloned());
    for (k, v) in [("--out", &results), ("--records", &records)] {
        argv.push(k.into());
        argv.push(v.display().to_string());
    }
    if let Some(prompts) = &plan.prompts {
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
    let run_args = match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::Run(r),
        }) => r,
        Ok(_) => unreachable!("the translation starts with `run`"),
        Err(e) => {
            return Err(usage(anyhow!(
                "the translated command line was refused ({}): {e}",
                argv[1..].join(" ")
            )))
        }
    };
    let outcome = crate::run_cmd::main(*run_args);
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
    meta: &goodput_core::report::vllm::VllmMeta,
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
    let out = goodput_core::report::vllm::document(&doc, &lines, &meta);
    let name = save
        .file_name
        .clone()
        .unwrap_or_else(|| goodput_core::report::vllm::default_file_name(&meta));
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
