//! CSV datasets: a header row, a prompt column (named by an option),
//! optional `output_tokens` and `reference` columns. A row's spot is the
//! byte offset and line where its record starts (a quoted field may span
//! lines).

use std::path::Path;

use super::row::{OnRow, Output, Parsed, RowPrompt, Spot};
use crate::load::workload::files::{self, flags, FileError, Hashing};

/// Column positions in a dataset CSV.
struct Columns {
    prompt: usize,
    output_tokens: Option<usize>,
    reference: Option<usize>,
}

impl Columns {
    fn find<R: std::io::Read>(
        path: &Path,
        reader: &mut ::csv::Reader<R>,
        prompt_column: &str,
    ) -> Result<Self, FileError> {
        let headers = reader.headers().map_err(|e| FileError::csv(path, &e))?;
        let find = |name: &str| {
            files::column(headers, &[name]).map_err(|e| FileError::field(path, 1, name, e))
        };
        let prompt = find(prompt_column)?.ok_or_else(|| {
            FileError::field(
                path,
                1,
                prompt_column,
                format!(
                    "no such column; the header has {} (name the prompt column with {})",
                    files::header_list(headers),
                    flags::DATASET_PROMPT_COLUMN
                ),
            )
        })?;
        Ok(Columns {
            prompt,
            output_tokens: find("output_tokens")?,
            reference: find("reference")?,
        })
    }

    fn parse(
        &self,
        path: &Path,
        line: u64,
        record: &::csv::StringRecord,
        headers: &::csv::StringRecord,
    ) -> Result<Parsed, FileError> {
        let cell = |i: usize| record.get(i).unwrap_or("");
        let name = |i: usize| headers.get(i).unwrap_or("?").to_string();
        let prompt = cell(self.prompt);
        if prompt.is_empty() {
            return Err(FileError::field(
                path,
                line,
                &name(self.prompt),
                "expected a non-empty prompt",
            ));
        }
        let output_tokens = match self.output_tokens {
            Some(i) if !cell(i).trim().is_empty() => Some(
                files::whole_number_cell(cell(i), 1)
                    .and_then(files::to_u32)
                    .map_err(|e| FileError::field(path, line, &name(i), e))?,
            ),
            _ => None,
        };
        let reference = self
            .reference
            .map(cell)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        Ok(Parsed {
            prompt: RowPrompt::Text(prompt.to_string()),
            output: Output::Stated(output_tokens),
            reference,
            images: Vec::new(),
        })
    }
}

/// Pass 1 over a CSV file; returns the SHA-256.
pub(super) fn scan(
    path: &Path,
    prompt_column: &str,
    on_row: &mut OnRow<'_>,
) -> Result<String, FileError> {
    let mut reader = files::csv_reader(Hashing::new(files::open(path)?));
    let columns = Columns::find(path, &mut reader, prompt_column)?;
    let headers = reader
        .headers()
        .map_err(|e| FileError::csv(path, &e))?
        .clone();
    let mut record = ::csv::StringRecord::new();
    while reader
        .read_record(&mut record)
        .map_err(|e| FileError::csv(path, &e))?
    {
        let (offset, line) = record.position().map_or((0, 0), |p| (p.byte(), p.line()));
        let parsed = columns.parse(path, line, &record, &headers)?;
        on_row(Spot { offset, line }, Some(parsed))?;
    }
    reader
        .into_inner()
        .finish()
        .map_err(|e| FileError::io(path, &e))
}

/// Pass 2: the records at `spots` (ascending).
pub(super) fn reread(
    path: &Path,
    prompt_column: &str,
    spots: &[Spot],
) -> Result<Vec<Parsed>, FileError> {
    let mut reader = files::csv_reader(files::open(path)?);
    let columns = Columns::find(path, &mut reader, prompt_column)?;
    let headers = reader
        .headers()
        .map_err(|e| FileError::csv(path, &e))?
        .clone();
    let mut record = ::csv::StringRecord::new();
    spots
        .iter()
        .map(|spot| {
            let mut pos = ::csv::Position::new();
            pos.set_byte(spot.offset).set_line(spot.line);
            reader.seek(pos).map_err(|e| FileError::csv(path, &e))?;
            if !reader
                .read_record(&mut record)
                .map_err(|e| FileError::csv(path, &e))?
            {
                return Err(FileError::line(
                    path,
                    spot.line,
                    "the record is gone: the file changed while it was read",
                ));
            }
            columns.parse(path, spot.line, &record, &headers)
        })
        .collect()
}
