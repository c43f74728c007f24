//! `goodput bench serve`: `vllm bench serve`'s command line run by goodput.
//!
//! The flags are translated into a `goodput run` command line
//! ([`translate()`]), which runs through `run_cmd` as any run does — same
//! executor, same metrics, same console summary, same exit codes — with its
//! results and records written to a scratch directory. From those two
//! files the result file is written where and as vLLM writes it
//! ([`goodput_core::output::vllm`]), and the scratch directory is removed.

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Parser;

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

/// The prompts the plan builds with the server's own tokenizer, asked
/// through the run's connection settings ([`goodput_vllm::build_by_server`]).
fn built_by_server(plan: &mut Plan, argv: &[String]) -> Result<Option<Vec<Row>>, Exit> {
    if plan.by_server.is_none() {
        return Ok(None);
    }
    let mut note = |n: String| eprintln!("goodput: note: {n}");
    goodput_vllm::build_by_server(plan, client_options(argv)?, &mut note)
        .map_err(|e| usage(anyhow!(e)))
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
        let path = goodput_vllm::write_result(&plan.meta, save, &results, &records)
            .map_err(|e| output_failed(anyhow!(e)))?;
        eprintln!("goodput: vLLM result file written: {}", path.display());
    }
    outcome
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
