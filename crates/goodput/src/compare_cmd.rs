//! `goodput compare BASE NEW`: two saved results side by side, with the
//! significance of every change, and a pass/fail exit code for CI.
//!
//! Reads the two results files (and, when given, their records files),
//! compares them ([`goodput_core::output::compare`]), prints the comparison
//! on stdout in the chosen format, and says on stderr which `--fail-on`
//! gate failed and by how much. Exit codes: 0 every gate passed (or none was
//! given), 1 a gate failed, 2 an unreadable or mismatched input or a bad
//! expression (clap rejects a bad `--fail-on` before any file is read).

use std::path::Path;

use anyhow::anyhow;
use goodput_core::output::compare::{self, render, Input, RecordSamples};
use goodput_core::output::Saved;

use crate::cli::{CompareArgs, Format};
use crate::exit::{usage, Code, Exit};

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
