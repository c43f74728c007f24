//! `goodput bench serve`: `vllm bench serve`'s command line run by goodput.
//!
//! The flags are translated into a `goodput run` command line
//! ([`translate()`]), which runs through `run_cmd` as any run does — same
//! executor, same metrics, same console summary, same exit codes — with its
//! results and records written to a scratch directory. From those two
//! files the result file is written where and as vLLM writes it
//! ([`goodput_core::output::vllm`]), and the scratch directory is removed.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::Parser;
use serde_json::Value;

use goodput_vllm::{translate, without, Plan, Row, SYNTHETIC};

use crate::cli::{BenchArgs, BenchCommand, Cli, Command, VllmServeArgs};
use crate::exit::{output_failed, usage, Code, Exit};

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
fn templated(plan: &Plan, argv: &[String], prompts: &mut [Row]) -> Result<(), Exit> {
    let Some(refusal) = &plan.template else {
        return Ok(());
    };
    let model = argv
        .windows(2)
        .find(|w| w[0] == "--model")
        .map_or("", |w| w[1].as_str());
    match goodput_vllm::apply_template(client_options(argv)?, model, prompts) {
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
fn built_by_server(plan: &mut Plan, argv: &[String]) -> Result<Option<Vec<Row>>, Exit> {
    let Some(by) = plan.by_server.take() else {
        return Ok(None);
    };
    let name = plan.meta.tokenizer_id.clone().unwrap_or_default();
    let tokenizer = match goodput_vllm::connect(client_options(argv)?, &by.model) {
        Ok(t) => t,
        Err(why) if by.required => {
            return Err(usage(anyhow!(
                "--tokenizer {name}: no local copy (a tokenizer.json, a directory holding one, or the model in the Hugging Face cache), and {why}; goodput downloads nothing"
            )))
        }
        Err(why) => {
            eprintln!("goodput: note: {} ({why})", goodput_vllm::no_local_tokenizer(&name));
            if by.is_sonnet() {
                let default = goodput_core::tokenizer::DEFAULT_TOKENIZER;
                eprintln!("goodput: note: {}", goodput_vllm::counted_note(default));
            }
            plan.meta.tokenizer_id = Some(goodput_core::tokenizer::DEFAULT_TOKENIZER.into());
            return Ok(None);
        }
    };
    let rows: Vec<Row> = by.rows(&tokenizer).map_err(|e| usage(anyhow!(e)))?;
    let counted = format!("{name}'s tokenizer, through the server's /tokenize");
    eprintln!(
        "goodput: note: no local tokenizer for {name}: {} prompts built to lengths counted by {counted}; the run counts with goodput's {} and the server's usage",
        rows.len(),
        goodput_core::tokenizer::DEFAULT_TOKENIZER
    );
    if by.is_sonnet() {
        eprintln!("goodput: note: {}", goodput_vllm::counted_note(&counted));
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
        goodput_vllm::write_prompts(&path, prompts).map_err(|e| usage(anyhow!(e)))?;
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
    save: &goodput_vllm::SaveTo,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM's everyday command line, translated, parses as a `goodput run`
    /// (goodput-vllm holds what each flag becomes; the parser is here).
    #[test]
    fn the_everyday_line_parses_as_a_run() {
        let line = "goodput bench serve --backend vllm --model M --dataset-name random \
            --random-input-len 1024 --random-output-len 128 --num-prompts 200 --request-rate 10 \
            --max-concurrency 64 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 \
            --goodput ttft:200 tpot:50 --save-result --result-dir D --result-filename F --ignore-eos --port 8001";
        let argv = line.split_whitespace();
        let Ok(Cli {
            command: Command::Bench(b),
        }) = Cli::try_parse_from(argv)
        else {
            panic!("parses as bench serve");
        };
        let BenchCommand::Serve(a) = b.command;
        let plan = translate(&a).expect("translates");
        let mut run = vec!["goodput".to_string()];
        run.extend(plan.argv);
        let r = parse_run(&run).expect("parses as a run");
        assert_eq!(r.common.bounds.num_prompts, Some(200));
        assert_eq!(r.common.load.request_rate, Some(10.0));
    }
}
