//! A shard's part: what it sent, as raw records on its own clock, with
//! what it takes to place them on the coordinator's.
//!
//! A part is JSON lines: one [`PartLine::Part`] header, the
//! [`PartLine::MeasureStart`] lines the executor sent (it may send two, the
//! earliest is kept), one [`PartLine::Record`] per request (warm-up
//! included, marked) in the order they finished, and one
//! [`PartLine::End`]. The same lines go over the coordinator's connection at
//! the end of a run and into `--part FILE`, which `goodput merge` reads: a
//! part without its end line is a shard that stopped before it finished.

use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::load::executor::ExecSummary;
use crate::load::schedule::Load;
use crate::output::config::RunConfig;
use crate::plan::shard::ShardOf;
use crate::request::record::RequestRecord;

/// One line of a part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartLine {
    /// The header: the first line.
    Part(Box<PartHeader>),
    /// The measured phase's start (`t_sched`, ns on the shard's clock).
    MeasureStart(u64),
    /// One request's record, on the shard's clock (warm-up included, marked).
    Record(Box<RequestRecord>),
    /// How the run ended: the last line, absent when the shard stopped first.
    End(Box<PartEnd>),
}

/// Who sent the part, the run it belongs to, and its clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartHeader {
    /// Which shard sent it, of how many, and how the plan is split among them.
    pub shard: ShardOf,
    /// The run id every shard shares (the coordinator's).
    pub run_id: String,
    /// This shard's clock minus the coordinator's, ns: a time `t` on this
    /// shard's clock is `t − clock_offset_ns` on the coordinator's.
    pub clock_offset_ns: i64,
    /// The round trip of the offset's sample (the smallest of several):
    /// the offset is exact to within half of it.
    pub clock_rtt_ns: u64,
    /// The whole plan's load (not this shard's part of it).
    pub load: Load,
    /// The whole run's configuration (the same command on every shard).
    pub config: RunConfig,
    /// The model the requests name (`--model`, or the one discovered).
    pub model: String,
    /// The client tokenizer's spec (it derives every record's metrics).
    pub tokenizer: String,
    /// The percentiles to report.
    pub percentiles: Vec<f64>,
    /// RFC 3339, UTC.
    pub started_at: String,
}

/// How the shard's run ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PartEnd {
    /// What the shard's executor knew when it returned: requests sent, and
    /// whether it was interrupted, cut off by the drain timeout or ran dry.
    pub exec: ExecSummary,
    /// The instant the shard's schedule started (the common start), ns on its clock.
    pub start_ns: u64,
    /// CPU seconds the shard's process used over its run (user + system).
    pub cpu_s: Option<f64>,
    /// Wall seconds of its run.
    pub wall_s: f64,
}

/// A part read whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Part {
    /// The header line; `None` only until it is pushed (`read` refuses a
    /// part without one).
    pub header: Option<PartHeader>,
    /// The measured phase's start, ns on the shard's clock: the earliest
    /// `MeasureStart` line (None: there was none).
    pub measure_start_ns: Option<u64>,
    /// The records, in the order their lines came (warm-up included, marked).
    pub records: Vec<RequestRecord>,
    /// None: the part ended before its end line (the shard stopped).
    pub end: Option<PartEnd>,
}

impl Part {
    /// Take one line; an error for a line out of place.
    pub fn push(&mut self, line: PartLine) -> Result<(), String> {
        match line {
            PartLine::Part(h) if self.header.is_none() => self.header = Some(*h),
            PartLine::Part(_) => return Err("a second part header".into()),
            _ if self.header.is_none() => return Err("a line before the part header".into()),
            _ if self.end.is_some() => return Err("a line after the part's end".into()),
            PartLine::MeasureStart(t) => {
                self.measure_start_ns = Some(self.measure_start_ns.map_or(t, |s| s.min(t)))
            }
            PartLine::Record(r) => self.records.push(*r),
            PartLine::End(e) => self.end = Some(*e),
        }
        Ok(())
    }

    /// Read a part from JSON lines; `what` names the source in errors
    /// (with the line number). A part cut short (no end line, or a last
    /// line cut mid-way, as a killed process leaves it) is read as far as
    /// it goes.
    pub fn read(reader: impl BufRead, what: &str) -> Result<Part, String> {
        let mut part = Part::default();
        let mut lines = reader.lines().enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let line = line.map_err(|e| format!("{what}: line {}: {e}", i + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<PartLine>(&line) {
                Ok(l) => part
                    .push(l)
                    .map_err(|e| format!("{what}: line {}: {e}", i + 1))?,
                // The last line of a part whose writer was killed.
                Err(_) if lines.peek().is_none() && part.end.is_none() => break,
                Err(e) => {
                    return Err(format!(
                        "{what}: line {}: not a part line ({e}); a part is written by `goodput run --shards N --part FILE`",
                        i + 1
                    ))
                }
            }
        }
        if part.header.is_none() {
            return Err(format!("{what}: no part header (is it a part file?)"));
        }
        Ok(part)
    }
}

/// A part file (`--part`), written as the part is made: the header at
/// the start, each record as it finishes (flushed in batches), the end
/// line last — so a shard killed mid-run leaves the records it finished.
/// A write error stops the writing and is kept, to be said once.
pub struct PartWriter {
    out: Option<std::io::BufWriter<std::fs::File>>,
    path: std::path::PathBuf,
    buf: Vec<u8>,
    error: Option<String>,
}

impl PartWriter {
    /// Open `path` for appending and write `header`.
    pub fn open(path: &std::path::Path, header: &PartHeader) -> PartWriter {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map(|f| std::io::BufWriter::with_capacity(1 << 16, f));
        let mut w = PartWriter {
            path: path.to_path_buf(),
            buf: Vec::with_capacity(1024),
            error: None,
            out: None,
        };
        match out {
            Ok(f) => w.out = Some(f),
            Err(e) => w.error = Some(e.to_string()),
        }
        w.line(&PartLine::Part(Box::new(header.clone())));
        w
    }

    /// Write one line (buffered).
    pub fn line(&mut self, line: &PartLine) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        self.buf.clear();
        write_line(&mut self.buf, line);
        if let Err(e) = std::io::Write::write_all(out, &self.buf) {
            self.error = Some(e.to_string());
            self.out = None;
        }
    }

    /// Flush what is buffered.
    pub fn flush(&mut self) {
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = std::io::Write::flush(out) {
                self.error = Some(e.to_string());
                self.out = None;
            }
        }
    }

    /// Write the end line and flush; the error that stopped the writing, if any.
    pub fn finish(mut self, end: &PartEnd) -> Option<String> {
        self.line(&PartLine::End(Box::new(end.clone())));
        self.flush();
        self.error.map(|e| {
            format!(
                "the part file {} could not be written: {e}",
                self.path.display()
            )
        })
    }
}

/// Write one line (JSON and a newline) to `out`.
pub fn write_line(out: &mut Vec<u8>, line: &PartLine) {
    // Serializing these types cannot fail: no map has non-string keys.
    let _ = serde_json::to_writer(&mut *out, line);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::record::Event;

    #[test]
    fn records_round_trip_and_a_cut_part_reads_to_its_cut() {
        let rec = RequestRecord {
            request_id: 7,
            shard: 2,
            t_sched: 10,
            t_send: Some(12),
            t_done: 99,
            events: vec![Event {
                at_ns: 40,
                text_end: 3,
                usage_completion_tokens: None,
                reasoning: false,
            }],
            output_text: "abc".into(),
            reference: Some("xyz".into()),
            ..Default::default()
        };
        let mut out = Vec::new();
        write_line(&mut out, &PartLine::Record(Box::new(rec.clone())));
        let back: PartLine = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, PartLine::Record(Box::new(rec)));
        assert!(String::from_utf8_lossy(&out).contains("[40,3,null,false]"));
        let e = Part::read(&out[..], "p").unwrap_err();
        assert!(e.contains("before the part header"), "{e}");
    }
}
