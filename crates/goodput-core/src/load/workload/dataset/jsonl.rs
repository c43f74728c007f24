//! JSONL datasets: one object per line with a `prompt` string or a
//! `messages` array, optional `output_tokens`, `reference` and `images`
//! (image files sent with a chat request, [`super::images`]). Blank lines
//! are skipped; a row's spot is the byte offset of its line.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use super::row::{OnRow, Output, Parsed, RowPrompt, Spot};
use crate::load::workload::files::{self, describe, FileError, Hashing};
use crate::request::protocol::Message;

/// Pass 1 over a JSONL file; returns the SHA-256.
pub(super) fn scan(path: &Path, on_row: &mut OnRow<'_>) -> Result<String, FileError> {
    let mut reader = BufReader::new(Hashing::new(files::open(path)?));
    let mut buf = Vec::new();
    let (mut offset, mut line) = (0u64, 0u64);
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| FileError::io(path, &e))?;
        if n == 0 {
            break;
        }
        line += 1;
        let spot = Spot { offset, line };
        offset += n as u64;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        on_row(spot, Some(parse_line(path, line, &buf)?))?;
    }
    reader
        .into_inner()
        .finish()
        .map_err(|e| FileError::io(path, &e))
}

/// Pass 2: the rows at `spots` (ascending).
pub(super) fn reread(path: &Path, spots: &[Spot]) -> Result<Vec<Parsed>, FileError> {
    let mut reader = BufReader::new(files::open(path)?);
    let mut buf = Vec::new();
    spots
        .iter()
        .map(|spot| {
            buf.clear();
            reader
                .seek(SeekFrom::Start(spot.offset))
                .and_then(|_| reader.read_until(b'\n', &mut buf))
                .map_err(|e| FileError::io(path, &e))?;
            parse_line(path, spot.line, &buf)
        })
        .collect()
}

fn parse_line(path: &Path, line: u64, bytes: &[u8]) -> Result<Parsed, FileError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| FileError::json(path, Some(line), &e))?;
    let Value::Object(mut obj) = value else {
        return Err(FileError::line(
            path,
            line,
            format!("expected a JSON object, found {}", describe(&value)),
        ));
    };
    let at = |field: &str, problem: String| FileError::field(path, line, field, problem);
    let present = |v: Option<Value>| v.filter(|v| !v.is_null());
    let prompt =
        match (
            present(obj.remove("prompt")),
            present(obj.remove("messages")),
        ) {
            (Some(_), Some(_)) => {
                return Err(FileError::line(
                    path,
                    line,
                    "the row has both 'prompt' and 'messages'; keep one",
                ))
            }
            (Some(p), None) => RowPrompt::Text(text(p).map_err(|e| at("prompt", e))?),
            (None, Some(m)) => messages(m).map_err(|(field, e)| at(&field, e))?,
            (None, None) => return Err(at(
                "prompt",
                "missing: a row needs a 'prompt' string or a 'messages' array of {role, content}"
                    .into(),
            )),
        };
    let output_tokens = present(obj.remove("output_tokens"))
        .map(|v| files::whole_number(&v, 1).and_then(files::to_u32))
        .transpose()
        .map_err(|e| at("output_tokens", e))?;
    let reference = match present(obj.remove("reference")) {
        None => None,
        Some(Value::String(s)) => Some(s),
        Some(v) => {
            return Err(at(
                "reference",
                format!("expected a string, found {}", describe(&v)),
            ))
        }
    };
    let images = match present(obj.remove("images")) {
        None => Vec::new(),
        Some(v) => super::images::paths(v).map_err(|(field, e)| at(&field, e))?,
    };
    Ok(Parsed {
        prompt,
        output: Output::Stated(output_tokens),
        reference,
        images,
    })
}

/// A non-empty string.
fn text(value: Value) -> Result<String, String> {
    match value {
        Value::String(s) if !s.is_empty() => Ok(s),
        other => Err(format!(
            "expected a non-empty string, found {}",
            describe(&other)
        )),
    }
}

/// A non-empty array of `{role, content}` with string values. The error
/// names the field (`messages[2].content`).
fn messages(value: Value) -> Result<RowPrompt, (String, String)> {
    let Value::Array(items) = value else {
        return Err((
            "messages".into(),
            format!(
                "expected an array of {{role, content}} objects, found {}",
                describe(&value)
            ),
        ));
    };
    if items.is_empty() {
        return Err(("messages".into(), "expected at least one message".into()));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(mut obj) = item else {
            return Err((
                format!("messages[{i}]"),
                format!(
                    "expected a {{role, content}} object, found {}",
                    describe(&item)
                ),
            ));
        };
        let mut field = |name: &str| match obj.remove(name) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err((
                format!("messages[{i}].{name}"),
                format!("expected a string, found {}", describe(&other)),
            )),
            None => Err((format!("messages[{i}].{name}"), "missing".into())),
        };
        let role = field("role")?;
        let content = field("content")?;
        out.push(Message { role, content });
    }
    Ok(RowPrompt::Messages(out))
}
