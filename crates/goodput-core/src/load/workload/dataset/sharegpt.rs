//! ShareGPT JSON, streamed: the top-level array is walked one element at a
//! time with a serde [`Visitor`] over `serde_json::Deserializer::from_reader`,
//! so a 600 MB file is never held; only the element being looked at is.
//!
//! Each element's starting byte offset and line are tracked by [`Tracked`],
//! a reader between serde_json and the file (serde_json reads its input one
//! byte at a time, so the bytes it has consumed are exactly the bytes that
//! went through). Errors name that line, and the second pass seeks there
//! to read a chosen element again.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::row::{OnRow, Output, Parsed, RowPrompt, Spot};
use crate::load::workload::files::{self, describe, FileError, Hashing};

/// Pass 1: every element, in order; returns the SHA-256 of the file.
pub(super) fn scan(path: &Path, on_row: &mut OnRow<'_>) -> Result<String, FileError> {
    let mut hashing = Hashing::new(files::open(path)?);
    let position = Position::default();
    let mut failed = None;
    let result = {
        let reader = Tracked {
            inner: BufReader::new(&mut hashing),
            position: &position,
        };
        let mut de = serde_json::Deserializer::from_reader(reader);
        let rows = Rows {
            path,
            position: &position,
            on_row,
            failed: &mut failed,
        };
        de.deserialize_seq(rows).and_then(|()| de.end())
    };
    if let Some(err) = failed {
        return Err(err);
    }
    result.map_err(|e| FileError::json(path, None, &e))?;
    hashing.finish().map_err(|e| FileError::io(path, &e))
}

/// Pass 2: the elements starting at `spots` (ascending).
pub(super) fn reread(path: &Path, spots: &[Spot]) -> Result<Vec<Parsed>, FileError> {
    let mut reader = BufReader::new(files::open(path)?);
    let mut out = Vec::with_capacity(spots.len());
    for spot in spots {
        reader
            .seek(SeekFrom::Start(spot.offset))
            .map_err(|e| FileError::io(path, &e))?;
        let mut de = serde_json::Deserializer::from_reader(&mut reader);
        let value =
            Value::deserialize(&mut de).map_err(|e| FileError::json(path, Some(spot.line), &e))?;
        match parse(path, spot.line, value)? {
            Some(row) => out.push(row),
            None => {
                return Err(FileError::line(
                    path,
                    spot.line,
                    "the row changed while the file was read",
                ))
            }
        }
    }
    Ok(out)
}

/// One element: `Some` row with a prompt and a reply, `None` for a row
/// without a usable pair, an error for a row of the wrong shape.
fn parse(path: &Path, line: u64, value: Value) -> Result<Option<Parsed>, FileError> {
    const SHAPE: &str = r#"a ShareGPT row is {"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", "value": "..."}]}"#;
    let at = |field: &str, problem: String| FileError::field(path, line, field, problem);
    let Value::Object(mut row) = value else {
        return Err(FileError::line(
            path,
            line,
            format!("expected an object, found {}; {SHAPE}", describe(&value)),
        ));
    };
    let turns = match row.remove("conversations") {
        Some(Value::Array(turns)) => turns,
        Some(other) => {
            return Err(at(
                "conversations",
                format!(
                    "expected an array of turns, found {}; {SHAPE}",
                    describe(&other)
                ),
            ))
        }
        None => return Err(at("conversations", format!("missing; {SHAPE}"))),
    };
    let mut prompt = None;
    for (i, turn) in turns.into_iter().enumerate() {
        let Value::Object(mut turn) = turn else {
            return Err(at(
                &format!("conversations[{i}]"),
                format!(
                    "expected a {{from, value}} object, found {}",
                    describe(&turn)
                ),
            ));
        };
        let from =
            string(&mut turn, "from").map_err(|e| at(&format!("conversations[{i}].from"), e))?;
        let value =
            string(&mut turn, "value").map_err(|e| at(&format!("conversations[{i}].value"), e))?;
        match (&prompt, Speaker::of(&from)) {
            (None, Some(Speaker::Human)) if value.is_empty() => return Ok(None),
            (None, Some(Speaker::Human)) => prompt = Some(value),
            (Some(_), Some(Speaker::Gpt)) if value.is_empty() => return Ok(None),
            (Some(_), Some(Speaker::Gpt)) => {
                return Ok(prompt.map(|p| Parsed {
                    prompt: RowPrompt::Text(p),
                    output: Output::OfReference,
                    reference: Some(value),
                    images: Vec::new(),
                }))
            }
            _ => {}
        }
    }
    Ok(None)
}

fn string(turn: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    match turn.remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!("expected a string, found {}", describe(&other))),
        None => Err("missing".into()),
    }
}

/// The two sides of a ShareGPT conversation; other speakers (`system`, ...)
/// are passed over.
enum Speaker {
    Human,
    Gpt,
}

impl Speaker {
    fn of(from: &str) -> Option<Speaker> {
        match from {
            "human" | "user" => Some(Speaker::Human),
            "gpt" | "assistant" => Some(Speaker::Gpt),
            _ => None,
        }
    }
}

/// Where serde_json is in the file, and where the element it is reading
/// started.
#[derive(Default)]
struct Position {
    /// Bytes consumed so far.
    offset: Cell<u64>,
    /// Newlines consumed so far.
    newlines: Cell<u64>,
    /// Waiting for the first byte of the next element.
    armed: Cell<bool>,
    /// Offset and line of the last element's first byte.
    start: Cell<(u64, u64)>,
}

impl Position {
    fn see(&self, bytes: &[u8]) {
        for &b in bytes {
            if self.armed.get() && !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b',' | b'[') {
                self.start.set((self.offset.get(), self.newlines.get() + 1));
                self.armed.set(false);
            }
            if b == b'\n' {
                self.newlines.set(self.newlines.get() + 1);
            }
            self.offset.set(self.offset.get() + 1);
        }
    }
}

/// A reader that tells [`Position`] about every byte it passes on.
struct Tracked<'a, R> {
    inner: R,
    position: &'a Position,
}

impl<R: Read> Read for Tracked<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.position.see(&buf[..n]);
        Ok(n)
    }
}

/// Visits the top-level array, handing each element to `on_row`. A
/// [`FileError`] from a row is kept in `failed` (serde's error type cannot
/// carry it) and the walk stops.
struct Rows<'a, 'f> {
    path: &'a Path,
    position: &'a Position,
    on_row: &'a mut OnRow<'f>,
    failed: &'a mut Option<FileError>,
}

impl<'de> Visitor<'de> for Rows<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#"a ShareGPT file: a JSON array of {"conversations": [...]} rows"#)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.position.armed.set(true);
            let Some(value) = seq.next_element::<Value>()? else {
                return Ok(());
            };
            let (offset, line) = self.position.start.get();
            let outcome = parse(self.path, line, value)
                .and_then(|row| (self.on_row)(Spot { offset, line }, row));
            if let Err(err) = outcome {
                *self.failed = Some(err);
                return Err(de::Error::custom("stopped at a bad row"));
            }
        }
    }
}
