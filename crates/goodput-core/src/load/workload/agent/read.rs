//! Reading agent trace files: a path's JSON documents, each a Weka trace
//! ([`super::weka`]) or an OpenTelemetry span dump ([`super::otel`]).
//!
//! A path is read as:
//! - a directory: every `.json` file in it (sorted by name);
//! - a `.json` file: one document, or an array of them;
//! - a `.jsonl`/`.ndjson` file: one document per line.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::super::files::{self, FileError, Kind};
use super::{otel, weka, AgentStats, AgentTraces};

/// Whether `path` holds agent traces: a directory, a `.json` file, or a
/// JSON-lines file whose first object has a `requests` list (Weka) or a
/// `spans` list (OpenTelemetry).
pub fn detect(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    match files::kind_of(path) {
        Some(Kind::Json) => true,
        Some(Kind::Jsonl) => first_line(path)
            .and_then(|l| serde_json::from_str::<Value>(&l).ok())
            .is_some_and(|v| {
                v.get("requests").is_some_and(Value::is_array)
                    || v.get("spans").is_some_and(Value::is_array)
            }),
        _ => false,
    }
}

fn first_line(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    BufReader::new(f)
        .lines()
        .map_while(Result::ok)
        .find(|l| !l.trim().is_empty())
}

/// Read every trace at `path` (see the module's text): a document with a
/// `spans` list is an OpenTelemetry span dump ([`super::otel`]), any other
/// a Weka trace.
pub fn load(path: &Path) -> Result<AgentTraces, FileError> {
    let mut stats = AgentStats {
        name: files::file_name(path),
        ..AgentStats::default()
    };
    let mut trajectories = Vec::new();
    let paths: Vec<PathBuf> = if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| FileError::io(path, &e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && files::kind_of(p) == Some(Kind::Json))
            .collect();
        v.sort();
        if v.is_empty() {
            return Err(FileError::file(
                path,
                "the directory holds no .json trace files",
            ));
        }
        v
    } else {
        vec![path.to_path_buf()]
    };
    let (mut weka, mut otel) = (false, false);
    for p in &paths {
        for (line, v) in documents(p)? {
            let index = trajectories.len();
            let t = if v.get("spans").is_some() {
                otel = true;
                otel::trace(&v, p, line, index, &mut stats)?
            } else {
                weka = true;
                weka::trace(&v, p, line, index, &mut stats)?
            };
            trajectories.push(t);
        }
    }
    if trajectories.is_empty() {
        return Err(FileError::file(path, "no traces"));
    }
    stats.format = match (weka, otel) {
        (true, true) => "weka+otel",
        (false, true) => "otel",
        _ => "weka",
    }
    .into();
    stats.traces = trajectories.len() as u64;
    stats.calls = trajectories.iter().map(|t| t.calls.len() as u64).sum();
    Ok(AgentTraces {
        trajectories,
        stats,
    })
}

/// The JSON documents of one file, each with its line: one per line of
/// JSON lines; else the file's one object, or each item of its array.
fn documents(path: &Path) -> Result<Vec<(u64, Value)>, FileError> {
    let mut text = String::new();
    files::open(path)?
        .read_to_string(&mut text)
        .map_err(|e| FileError::io(path, &e))?;
    if files::kind_of(path) == Some(Kind::Jsonl) {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let n = i as u64 + 1;
            let v: Value =
                serde_json::from_str(line).map_err(|e| FileError::json(path, Some(n), &e))?;
            out.push((n, v));
        }
        return Ok(out);
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| FileError::json(path, None, &e))?;
    Ok(match v {
        Value::Array(items) => items.into_iter().map(|v| (1, v)).collect(),
        v => vec![(1, v)],
    })
}
