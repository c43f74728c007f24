//! Traces: recorded arrival times and lengths, validated, sliced and
//! re-based, ready for a replay schedule.
//!
//! Formats:
//! - **Azure** LLM inference trace CSV (`TIMESTAMP,ContextTokens,GeneratedTokens`,
//!   2023 and 2024 releases). `TIMESTAMP` is a date-time such as
//!   `2023-11-16 18:17:03.9799600` (up to 9 fractional digits; the 2024
//!   files add `+00:00`), parsed here to integer nanoseconds, so offsets are
//!   exact to the 100 ns the files carry.
//! - **Mooncake** JSONL (`timestamp` in ms, `input_length`, `output_length`,
//!   `hash_ids`: one id per block of `block_tokens`, default 512, so equal
//!   ids mean a shared prefix).
//! - **Generic** JSONL or CSV: `timestamp` in a unit the user states,
//!   `input_tokens` and `output_tokens` (or `input_length`/`output_length`),
//!   and an optional `prompt`.
//!
//! Detection: `.csv` whose header is Azure's is Azure, other `.csv` generic;
//! `.jsonl`/`.ndjson` whose first object has `hash_ids` is Mooncake, other
//! JSONL generic; [`TraceOptions::format`] overrides.
//!
//! Checks and leniencies, each counted in [`TraceStats`], never silent:
//! - Timestamps must not decrease: a replay of an unsorted file would not be
//!   the recorded load, so it is an error naming the line.
//! - A length of 0 (Azure has rows with no generated tokens) is raised to 1
//!   and counted: the arrival still happened, and dropping it would thin
//!   the load.
//! - Mooncake: the published FAST'25 traces give every request
//!   `ceil(input_length / 512)` ids. Tools that write the format (Dynamo's
//!   generator) give `floor(input_length / 512)`, leaving a last partial
//!   block without an id; that is accepted and counted
//!   (`rows_tail_unhashed`): a partial block is never a cache hit, so a
//!   replay gives those tokens unique text. More ids than the length can
//!   fill, or a whole block or more without ids, would make a replay share
//!   the wrong prefixes (usually a wrong block size), and is an error.
//!
//! The whole file is always read and validated (and hashed), also past the
//! end of the slice; only rows in the slice are kept.

pub(crate) mod datetime;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::files::{self, choices, describe, flags, quote, FileError, Hashing, Kind};
use datetime::parse_datetime;

choices! {
    /// A trace file's format.
    pub enum TraceFormat {
        /// Azure LLM inference trace CSV (2023 and 2024 releases).
        Azure = "azure",
        /// Mooncake JSONL, with prefix-block hash ids.
        Mooncake = "mooncake",
        /// Generic JSONL.
        Jsonl = "jsonl",
        /// Generic CSV.
        Csv = "csv",
        /// Agent trajectories (Weka traces: calls, subagents, their order).
        Weka = "weka",
    }
}

choices! {
    /// The unit of a trace's numeric timestamps.
    pub enum TimeUnit {
        /// Seconds.
        S = "s",
        /// Milliseconds.
        Ms = "ms",
        /// Microseconds.
        Us = "us",
    }
}

impl TimeUnit {
    fn nanos(self) -> i128 {
        match self {
            TimeUnit::S => 1_000_000_000,
            TimeUnit::Ms => 1_000_000,
            TimeUnit::Us => 1_000,
        }
    }
}

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    /// When to send it: seconds after the first row kept by the slice.
    pub at_s: f64,
    /// Seconds since the first row of the file, before any slicing (what
    /// `start` and `window` are measured on).
    pub file_s: f64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Mooncake's prefix-block ids (empty for other formats).
    pub hash_ids: Vec<u64>,
    /// Generic formats' optional prompt text.
    pub prompt: Option<String>,
    /// The file line of the row (1-based).
    pub line: u64,
}

/// How to read and slice a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOptions {
    /// `None`: detected from the extension and the first row or header.
    pub format: Option<TraceFormat>,
    /// Required for generic formats; Mooncake defaults to ms; not allowed
    /// for Azure, whose timestamps are dates.
    pub time_unit: Option<TimeUnit>,
    /// Skip rows earlier than this offset from the file's first row.
    pub start: Duration,
    /// Keep rows in `[start, start + window)`; `None`: to the end.
    pub window: Option<Duration>,
    /// Tokens per Mooncake hash block.
    pub block_tokens: u32,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            format: None,
            time_unit: None,
            start: Duration::ZERO,
            window: None,
            block_tokens: 512,
        }
    }
}

/// A loaded trace: the rows of the slice, times re-based, and how it was
/// read.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub rows: Vec<TraceRow>,
    pub stats: TraceStats,
}

/// How a trace was read, for the result's description of the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    /// The file name, without directories.
    pub name: String,
    /// The format the file was read as (given or detected).
    pub format: TraceFormat,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// The unit numeric timestamps were read in (`None` for Azure's dates).
    pub time_unit: Option<TimeUnit>,
    /// Tokens per hash block (Mooncake only).
    pub block_tokens: Option<u32>,
    /// Start of the slice (s from the file's first row).
    pub start_s: f64,
    /// Length of the slice (s); `None`: to the end of the file.
    pub window_s: Option<f64>,
    /// Every row in the file.
    pub rows_read: u64,
    /// Rows kept by the slice.
    pub rows_in_slice: u64,
    /// Time from the first to the last kept row.
    pub span_s: f64,
    /// Rows (in the whole file) whose input length 0 was raised to 1.
    pub rows_input_clamped: u64,
    /// Rows (in the whole file) whose output length 0 was raised to 1.
    pub rows_output_clamped: u64,
    /// Mooncake rows whose last partial block has no hash id.
    pub rows_tail_unhashed: u64,
}

/// Read, validate and slice a trace file.
pub fn load_trace(path: &Path, opts: &TraceOptions) -> Result<Trace, FileError> {
    let format = match opts.format {
        Some(format) => format,
        None => detect(path)?,
    };
    let layout = match (format, opts.time_unit) {
        (TraceFormat::Weka, _) => {
            return Err(FileError::file(
                path,
                "agent trajectories (weka) are replayed by `goodput run --trace`; this command reads traces of independent arrivals (azure, mooncake, jsonl, csv)",
            ))
        }
        (TraceFormat::Azure, Some(unit)) => {
            return Err(FileError::file(
                path,
                format!(
                    "{} {unit} does not apply to an Azure trace, whose timestamps are dates; leave it out",
                    flags::TRACE_TIME_UNIT
                ),
            ))
        }
        (TraceFormat::Azure, None) => Layout::Azure,
        (TraceFormat::Mooncake, unit) => {
            if opts.block_tokens == 0 {
                return Err(FileError::file(
                    path,
                    format!("{} must be at least 1", flags::TRACE_BLOCK_TOKENS),
                ));
            }
            Layout::Jsonl {
                unit: unit.unwrap_or(TimeUnit::Ms),
                block_tokens: Some(opts.block_tokens),
            }
        }
        (TraceFormat::Jsonl, Some(unit)) => Layout::Jsonl {
            unit,
            block_tokens: None,
        },
        (TraceFormat::Csv, Some(unit)) => Layout::Csv(unit),
        (TraceFormat::Jsonl | TraceFormat::Csv, None) => {
            return Err(FileError::field(
                path,
                1,
                "timestamp",
                format!(
                    "the unit of the timestamps is not stated: pass {} s|ms|us",
                    flags::TRACE_TIME_UNIT
                ),
            ))
        }
    };
    let (time_unit, block_tokens) = match layout {
        Layout::Azure => (None, None),
        Layout::Csv(unit) => (Some(unit), None),
        Layout::Jsonl { unit, block_tokens } => (Some(unit), block_tokens),
    };
    let stats = TraceStats {
        name: files::file_name(path),
        format,
        sha256: String::new(),
        time_unit,
        block_tokens,
        start_s: opts.start.as_secs_f64(),
        window_s: opts.window.map(|w| w.as_secs_f64()),
        rows_read: 0,
        rows_in_slice: 0,
        span_s: 0.0,
        rows_input_clamped: 0,
        rows_output_clamped: 0,
        rows_tail_unhashed: 0,
    };
    let start_ns = opts.start.as_nanos() as i128;
    let mut collector = Collector {
        path,
        time_field: if format == TraceFormat::Azure {
            "TIMESTAMP"
        } else {
            "timestamp"
        },
        start_ns,
        end_ns: opts.window.map(|w| start_ns + w.as_nanos() as i128),
        origin_ns: None,
        previous: None,
        base_ns: None,
        last_file_s: 0.0,
        rows: Vec::new(),
        stats,
    };
    let sha256 = match layout {
        Layout::Azure => read_csv(path, None, &mut collector)?,
        Layout::Csv(unit) => read_csv(path, Some(unit), &mut collector)?,
        Layout::Jsonl { unit, block_tokens } => {
            read_jsonl(path, unit, block_tokens, &mut collector)?
        }
    };
    collector.finish(sha256)
}

/// How a format's rows are laid out and read.
#[derive(Clone, Copy)]
enum Layout {
    /// CSV with date-time stamps.
    Azure,
    /// CSV with numeric stamps in a unit.
    Csv(TimeUnit),
    /// JSONL with numeric stamps; Mooncake when `block_tokens` is given.
    Jsonl {
        unit: TimeUnit,
        block_tokens: Option<u32>,
    },
}

/// The format from the extension and, within a family, the content.
fn detect(path: &Path) -> Result<TraceFormat, FileError> {
    match files::kind_of(path) {
        Some(Kind::Csv) => {
            let mut reader = files::csv_reader(files::open(path)?);
            let headers = reader.headers().map_err(|e| FileError::csv(path, &e))?;
            Ok(if is_azure_header(headers) {
                TraceFormat::Azure
            } else {
                TraceFormat::Csv
            })
        }
        Some(Kind::Jsonl) => {
            let mut reader = BufReader::new(files::open(path)?);
            let mut line = Vec::new();
            loop {
                line.clear();
                if reader
                    .read_until(b'\n', &mut line)
                    .map_err(|e| FileError::io(path, &e))?
                    == 0
                {
                    return Ok(TraceFormat::Jsonl);
                }
                if !line.iter().all(u8::is_ascii_whitespace) {
                    break;
                }
            }
            // A first line that does not parse is reported by the real read.
            let first: Option<Map<String, Value>> = serde_json::from_slice(&line).ok();
            Ok(match first {
                Some(obj) if obj.contains_key("hash_ids") => TraceFormat::Mooncake,
                _ => TraceFormat::Jsonl,
            })
        }
        Some(Kind::Json) | None => Err(files::unknown_format(
            path,
            flags::TRACE_FORMAT,
            TraceFormat::NAMES,
            ".csv (Azure or generic), .jsonl or .ndjson (Mooncake or generic)",
        )),
    }
}

const AZURE_COLUMNS: [&str; 3] = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"];

fn is_azure_header(headers: &csv::StringRecord) -> bool {
    headers.len() == AZURE_COLUMNS.len()
        && headers
            .iter()
            .zip(AZURE_COLUMNS)
            .all(|(h, want)| h.trim().eq_ignore_ascii_case(want))
}

/// A row as read, before the checks every format shares.
struct Raw {
    line: u64,
    ns: i128,
    input: u32,
    output: u32,
    hash_ids: Vec<u64>,
    /// Mooncake: the last partial block has no id.
    tail_unhashed: bool,
    prompt: Option<String>,
}

/// Applies the shared checks (time order, lengths), slices and re-bases.
struct Collector<'a> {
    path: &'a Path,
    time_field: &'static str,
    start_ns: i128,
    end_ns: Option<i128>,
    /// The first row's timestamp.
    origin_ns: Option<i128>,
    /// The previous row's timestamp and line.
    previous: Option<(i128, u64)>,
    /// The first kept row's offset from the origin.
    base_ns: Option<i128>,
    last_file_s: f64,
    rows: Vec<TraceRow>,
    stats: TraceStats,
}

impl Collector<'_> {
    fn push(&mut self, raw: Raw) -> Result<(), FileError> {
        if let Some((previous, line)) = self.previous {
            if raw.ns < previous {
                return Err(FileError::field(
                    self.path,
                    raw.line,
                    self.time_field,
                    format!(
                        "earlier than the row before it (line {line}) by {} s; a trace must be sorted by time",
                        (previous - raw.ns) as f64 / 1e9
                    ),
                ));
            }
        }
        self.previous = Some((raw.ns, raw.line));
        self.stats.rows_read += 1;
        let origin = *self.origin_ns.get_or_insert(raw.ns);
        let file_ns = raw.ns - origin;
        self.last_file_s = file_ns as f64 / 1e9;

        let clamp = |n: u32, clamped: &mut u64| {
            if n == 0 {
                *clamped += 1;
            }
            n.max(1)
        };
        let input_tokens = clamp(raw.input, &mut self.stats.rows_input_clamped);
        let output_tokens = clamp(raw.output, &mut self.stats.rows_output_clamped);
        self.stats.rows_tail_unhashed += u64::from(raw.tail_unhashed);

        let in_slice = file_ns >= self.start_ns && self.end_ns.is_none_or(|end| file_ns < end);
        if in_slice {
            let base = *self.base_ns.get_or_insert(file_ns);
            self.rows.push(TraceRow {
                at_s: (file_ns - base) as f64 / 1e9,
                file_s: file_ns as f64 / 1e9,
                input_tokens,
                output_tokens,
                hash_ids: raw.hash_ids,
                prompt: raw.prompt,
                line: raw.line,
            });
        }
        Ok(())
    }

    fn finish(mut self, sha256: String) -> Result<Trace, FileError> {
        if self.stats.rows_read == 0 {
            return Err(FileError::file(self.path, "the trace has no rows"));
        }
        let Some(last) = self.rows.last() else {
            let window = match self.stats.window_s {
                Some(w) => format!("{} s", self.stats.start_s + w),
                None => "the end".into(),
            };
            return Err(FileError::file(
                self.path,
                format!(
                    "no row falls in the slice from {} s to {window}; the trace spans 0 to {} s",
                    self.stats.start_s, self.last_file_s
                ),
            ));
        };
        self.stats.span_s = last.at_s;
        self.stats.rows_in_slice = self.rows.len() as u64;
        self.stats.sha256 = sha256;
        Ok(Trace {
            rows: self.rows,
            stats: self.stats,
        })
    }
}

// ---- JSONL: Mooncake and generic ----

/// Mooncake (`block_tokens` is `Some`) or generic JSONL; returns the SHA-256.
fn read_jsonl(
    path: &Path,
    unit: TimeUnit,
    block_tokens: Option<u32>,
    collector: &mut Collector<'_>,
) -> Result<String, FileError> {
    let mut reader = BufReader::new(Hashing::new(files::open(path)?));
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        if reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| FileError::io(path, &e))?
            == 0
        {
            break;
        }
        line += 1;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let raw = parse_json_row(path, line, &buf, unit, block_tokens)?;
        collector.push(raw)?;
    }
    reader
        .into_inner()
        .finish()
        .map_err(|e| FileError::io(path, &e))
}

fn parse_json_row(
    path: &Path,
    line: u64,
    bytes: &[u8],
    unit: TimeUnit,
    block_tokens: Option<u32>,
) -> Result<Raw, FileError> {
    let at = |field: &str, problem: String| FileError::field(path, line, field, problem);
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| FileError::json(path, Some(line), &e))?;
    let Value::Object(mut obj) = value else {
        return Err(FileError::line(
            path,
            line,
            format!("expected a JSON object, found {}", describe(&value)),
        ));
    };
    let ns = match obj.get("timestamp") {
        Some(v) => json_stamp(v, unit).map_err(|e| at("timestamp", e))?,
        None => return Err(at("timestamp", "missing".into())),
    };
    let length = |names: [&str; 2]| -> Result<u32, FileError> {
        let found: Vec<&str> = names.into_iter().filter(|n| obj.contains_key(*n)).collect();
        match found.as_slice() {
            [name] => files::whole_number(&obj[*name], 0)
                .and_then(files::to_u32)
                .map_err(|e| at(name, e)),
            [] => Err(at(
                names[0],
                format!("missing (also accepted as '{}')", names[1]),
            )),
            _ => Err(at(
                names[0],
                format!("given twice, also as '{}'; keep one", names[1]),
            )),
        }
    };
    let input = length(["input_tokens", "input_length"])?;
    let output = length(["output_tokens", "output_length"])?;
    let mut raw = Raw {
        line,
        ns,
        input,
        output,
        hash_ids: Vec::new(),
        tail_unhashed: false,
        prompt: None,
    };
    match block_tokens {
        Some(block) => {
            raw.hash_ids = match obj.remove("hash_ids") {
                Some(Value::Array(ids)) => ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| {
                        files::whole_number(id, 0).map_err(|e| at(&format!("hash_ids[{i}]"), e))
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(at(
                        "hash_ids",
                        format!("expected an array of block ids, found {}", describe(&other)),
                    ))
                }
                None => return Err(at("hash_ids", "missing".into())),
            };
            raw.tail_unhashed = check_blocks(raw.input, raw.hash_ids.len() as u64, block)
                .map_err(|(field, e)| at(field, e))?;
        }
        None => {
            raw.prompt = match obj.remove("prompt") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s),
                Some(other) => {
                    return Err(at(
                        "prompt",
                        format!("expected a string, found {}", describe(&other)),
                    ))
                }
            };
        }
    }
    Ok(raw)
}

/// Mooncake's block rule (see the module docs). `Ok(true)`: the last
/// partial block has no id.
fn check_blocks(input: u32, ids: u64, block: u32) -> Result<bool, (&'static str, String)> {
    let (input, block) = (u64::from(input), u64::from(block));
    if ids > 0 && input <= (ids - 1) * block {
        return Err((
            "hash_ids",
            format!(
                "{ids} blocks of {block} tokens need more than {} input tokens, but input_length is {input}; \
                 is the block size right ({})?",
                (ids - 1) * block,
                flags::TRACE_BLOCK_TOKENS
            ),
        ));
    }
    if input >= (ids + 1) * block {
        return Err((
            "input_length",
            format!(
                "{input} tokens fill {} whole blocks of {block}, but hash_ids has {ids}; \
                 is the block size right ({})?",
                input / block,
                flags::TRACE_BLOCK_TOKENS
            ),
        ));
    }
    Ok(input > ids * block)
}

/// A JSON timestamp in `unit` as nanoseconds.
fn json_stamp(value: &Value, unit: TimeUnit) -> Result<i128, String> {
    let ns = if let Some(n) = value.as_i64() {
        Some(i128::from(n) * unit.nanos())
    } else if let Some(n) = value.as_u64() {
        Some(i128::from(n) * unit.nanos())
    } else {
        value.as_f64().and_then(|x| scaled(x, unit))
    };
    ns.ok_or_else(|| format!("expected a number in {unit}, found {}", describe(value)))
}

/// A CSV timestamp cell in `unit` as nanoseconds.
fn cell_stamp(cell: &str, unit: TimeUnit) -> Result<i128, String> {
    let t = cell.trim();
    let ns = match t.parse::<i64>() {
        Ok(n) => Some(i128::from(n) * unit.nanos()),
        Err(_) => t.parse::<f64>().ok().and_then(|x| scaled(x, unit)),
    };
    ns.ok_or_else(|| format!("expected a number in {unit}, found {}", quote(cell)))
}

/// A fractional timestamp, rounded to the nanosecond.
fn scaled(x: f64, unit: TimeUnit) -> Option<i128> {
    let ns = (x * unit.nanos() as f64).round();
    (ns.is_finite() && ns.abs() < 1e30).then_some(ns as i128)
}

// ---- CSV: Azure and generic ----

/// Column positions: timestamp, input, output, and an optional prompt.
struct Columns {
    names: [String; 3],
    at: [usize; 3],
    prompt: Option<usize>,
}

/// Azure (`unit` is `None`: dates) or generic CSV; returns the SHA-256.
fn read_csv(
    path: &Path,
    unit: Option<TimeUnit>,
    collector: &mut Collector<'_>,
) -> Result<String, FileError> {
    let mut reader = files::csv_reader(Hashing::new(files::open(path)?));
    let headers = reader
        .headers()
        .map_err(|e| FileError::csv(path, &e))?
        .clone();
    let columns = find_columns(path, &headers, unit.is_none())?;
    let mut record = csv::StringRecord::new();
    while reader
        .read_record(&mut record)
        .map_err(|e| FileError::csv(path, &e))?
    {
        let line = record.position().map_or(0, |p| p.line());
        let at =
            |k: usize, problem: String| FileError::field(path, line, &columns.names[k], problem);
        let cell = |k: usize| record.get(columns.at[k]).unwrap_or("");
        let ns = match unit {
            None => parse_datetime(cell(0)).ok_or_else(|| {
                format!(
                    "expected a date-time like 2023-11-16 18:17:03.9799600, found {}",
                    quote(cell(0))
                )
            }),
            Some(unit) => cell_stamp(cell(0), unit),
        }
        .map_err(|e| at(0, e))?;
        let length = |k: usize| {
            files::whole_number_cell(cell(k), 0)
                .and_then(files::to_u32)
                .map_err(|e| at(k, e))
        };
        let (input, output) = (length(1)?, length(2)?);
        let prompt = columns
            .prompt
            .and_then(|i| record.get(i))
            .filter(|p| !p.is_empty())
            .map(str::to_string);
        collector.push(Raw {
            line,
            ns,
            input,
            output,
            hash_ids: Vec::new(),
            tail_unhashed: false,
            prompt,
        })?;
    }
    reader
        .into_inner()
        .finish()
        .map_err(|e| FileError::io(path, &e))
}

fn find_columns(
    path: &Path,
    headers: &csv::StringRecord,
    azure: bool,
) -> Result<Columns, FileError> {
    let wanted: [&[&str]; 3] = if azure {
        [&["TIMESTAMP"], &["ContextTokens"], &["GeneratedTokens"]]
    } else {
        [
            &["timestamp"],
            &["input_tokens", "input_length"],
            &["output_tokens", "output_length"],
        ]
    };
    let mut at = [0; 3];
    let mut names: [String; 3] = Default::default();
    for (k, aliases) in wanted.iter().enumerate() {
        let index = files::column(headers, aliases)
            .map_err(|e| FileError::field(path, 1, aliases[0], e))?
            .ok_or_else(|| {
                let also = match aliases {
                    [_, alias] => format!(" (or '{alias}')"),
                    _ => String::new(),
                };
                FileError::field(
                    path,
                    1,
                    aliases[0],
                    format!(
                        "no such column{also}; the header has {}",
                        files::header_list(headers)
                    ),
                )
            })?;
        at[k] = index;
        names[k] = headers[index].trim().to_string();
    }
    let prompt = if azure {
        None
    } else {
        files::column(headers, &["prompt"]).map_err(|e| FileError::field(path, 1, "prompt", e))?
    };
    Ok(Columns { names, at, prompt })
}

#[cfg(test)]
mod tests;
