//! `goodput compare BASE NEW`: two saved results side by side, with the
//! significance of every change, and a pass/fail exit code for CI.
//!
//! Reads the two results files (and, when given, their records files),
//! compares them ([`goodput_core::report::compare`]), prints the comparison
//! on stdout in the chosen format, and says on stderr which `--fail-on`
//! gate failed and by how much. Exit codes: 0 every gate passed (or none was
//! given), 1 a gate failed, 2 an unreadable or mismatched input or a bad
//! expression (clap rejects a bad `--fail-on` before any file is read).

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::{Args, ValueEnum};
use goodput_core::report::compare::{self, render, FailOn, Input, RecordSamples};
use goodput_core::report::saved::Saved;

use crate::exit::{usage, Code, Exit};

/// `goodput compare`.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Figures take vLLM's flat key names: request_throughput, output_throughput, total_token_throughput, request_goodput, error_rate, and mean_X_ms, median_X_ms, pNN_X_ms for X in ttft, tpot, itl, e2el; goodput for two sweeps.\nExample: goodput compare main.json pr.json --base-records main.jsonl --new-records pr.jsonl --fail-on 'p99_ttft_ms>+10%' --fail-on 'output_throughput<-5%' --format markdown"
)]
pub struct CompareArgs {
    /// The baseline: a results file written by `run --out` or `sweep --out`.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The results to compare with it (a run with a run, a sweep with a sweep).
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// BASE's per-request records (`--records` JSONL). With --new-records, TTFT, TPOT and E2EL
    /// changes are judged by a Mann-Whitney rank test on every measured request instead of by
    /// the saved 95 % intervals.
    #[arg(long, value_name = "FILE")]
    pub base_records: Option<PathBuf>,
    /// NEW's per-request records (`--records` JSONL).
    #[arg(long, value_name = "FILE")]
    pub new_records: Option<PathBuf>,
    /// Exit 1 when a figure moves past a bound (repeatable): 'p99_ttft_ms>+10%' (NEW more than
    /// 10 % above BASE), 'output_throughput<-5%' (more than 5 % below), 'p99_ttft_ms>+20'
    /// (more than 20 ms above: an absolute change, in the figure's unit). The point change
    /// decides; whether it is significant is reported beside it.
    #[arg(long = "fail-on", value_name = "EXPR", value_parser = fail_on)]
    pub fail_on: Vec<FailOn>,
    /// Output on stdout: text (a table), markdown (for a pull-request comment) or json.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// How the comparison is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

fn fail_on(s: &str) -> Result<FailOn, String> {
    s.parse()
}

fn read_saved(path: &Path) -> Result<Saved, Exit> {
    Saved::read(path).map_err(|e| usage(anyhow!(e)))
}

fn read_records(path: &Path) -> Result<RecordSamples, Exit> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(anyhow!("reading {}: {e}", path.display())))?;
    RecordSamples::parse(&text).map_err(|e| usage(anyhow!("{}: {e}", path.display())))
}

pub fn main(args: CompareArgs) -> Result<Code, Exit> {
    let base = read_saved(&args.base)?;
    let new = read_saved(&args.new)?;
    let base_records = args.base_records.as_deref().map(read_records).transpose()?;
    let new_records = args.new_records.as_deref().map(read_records).transpose()?;
    let (base_label, new_label) = (
        args.base.display().to_string(),
        args.new.display().to_string(),
    );
    let comparison = compare::compare(
        Input {
            label: &base_label,
            saved: &base,
            records: base_records.as_ref(),
        },
        Input {
            label: &new_label,
            saved: &new,
            records: new_records.as_ref(),
        },
        &args.fail_on,
    )
    .map_err(|e| {
        let which = match &e {
            compare::CompareError::RecordsDoNotMatch { side: "BASE", .. } => {
                args.base_records.as_deref()
            }
            compare::CompareError::RecordsDoNotMatch { .. } => args.new_records.as_deref(),
            _ => None,
        };
        match which {
            Some(p) => usage(anyhow!("{}: {e}", p.display())),
            None => usage(e),
        }
    })?;
    let out = match args.format {
        Format::Text => render::text(&comparison),
        Format::Markdown => render::markdown(&comparison),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&render::json(&comparison))
                .map_err(|e| Exit(Code::Internal, e.into()))?;
            s.push('\n');
            s
        }
    };
    print!("{out}");
    let mut code = Code::Ok;
    for g in comparison.gates.iter().filter(|g| g.failed) {
        let sig = match g.significance.significant {
            Some(true) => "significant",
            Some(false) => "not significant",
            None => "significance n/a",
        };
        eprintln!(
            "goodput: --fail-on '{}' failed: {} ({sig}: {})",
            g.expression,
            g.message,
            g.significance.reason()
        );
        code = Code::GateFailed;
    }
    Ok(code)
}
