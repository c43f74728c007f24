//! `goodput merge PART...`: a sharded run's part files (`--part`) merged
//! offline into the one result the coordinator computes live: every record
//! on the coordinator's clock, every figure from the union. A shard whose
//! part is missing or cut short is named, its unaccounted requests counted,
//! and the exit code is 6.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use goodput_core::measure::RecordsSink;
use goodput_core::output::Saved;
use goodput_core::output::{self, Exporter};
use goodput_core::plan::Part;

use crate::cli::MergeArgs;
use crate::exit::{usage, Code, Exit};

pub fn main(args: MergeArgs) -> Result<Code, Exit> {
    let mut parts = Vec::new();
    for path in &args.parts {
        parts.extend(read_parts(path)?);
    }
    let records = match &args.records {
        Some(p) => Some(Box::new(std::io::BufWriter::new(
            std::fs::File::create(p)
                .map_err(|e| usage(anyhow!("creating {}: {e}", p.display())))?,
        )) as Box<dyn std::io::Write + Send>),
        None => None,
    };
    let mut sink = RecordsSink::new(records, false);
    let runs = goodput_core::plan::merge_parts(parts, &mut sink).map_err(|e| usage(anyhow!(e)))?;
    drop(sink);
    let mut code = Code::Ok;
    for (i, run) in runs.iter().enumerate() {
        let label = format!("merged {}", run.run_id);
        let items = [(label, Saved::Run(Box::new(run.clone())))];
        if !args.quiet {
            print!(
                "{}",
                String::from_utf8_lossy(&output::Console.to_bytes(&items))
            );
        }
        if let Some(out) = &args.out {
            write(&numbered(out, i), &output::Json.to_bytes(&items))?;
        }
        if let Some(html) = &args.html {
            write(&numbered(html, i), &output::Html.to_bytes(&items))?;
        }
        if let Some(e) = crate::sharding::missing(run) {
            eprintln!("goodput: {:#}", e.1);
            code = code.max(Code::ShardMissing);
        } else if run.metrics.completed == 0 {
            code = code.max(Code::NothingCompleted);
        }
    }
    Ok(code)
}

/// Every part in one file (a sharded sweep's file holds one per point).
fn read_parts(path: &Path) -> Result<Vec<Part>, Exit> {
    let text =
        std::fs::read(path).map_err(|e| usage(anyhow!("reading {}: {e}", path.display())))?;
    let what = path.display().to_string();
    // Parts begin at their header lines.
    let mut parts = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"{\"part\"") && pos > start {
            parts.push(
                Part::read(BufReader::new(&text[start..pos]), &what)
                    .map_err(|e| usage(anyhow!(e)))?,
            );
            start = pos;
        }
        pos += line.len();
    }
    if pos > start {
        parts.push(
            Part::read(BufReader::new(&text[start..pos]), &what).map_err(|e| usage(anyhow!(e)))?,
        );
    }
    Ok(parts)
}

/// `FILE` for the first run, `FILE` with `.N` before its extension for the Nth after.
fn numbered(path: &Path, i: usize) -> PathBuf {
    if i == 0 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{i}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{i}"),
    };
    path.with_file_name(name)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Exit> {
    std::fs::write(path, bytes).map_err(|e| usage(anyhow!("writing {}: {e}", path.display())))
}
