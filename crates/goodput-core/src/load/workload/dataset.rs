//! Datasets: a user's prompts from a ShareGPT JSON, JSONL or CSV file,
//! validated, filtered by token length and sampled into rows in send order.
//!
//! Formats:
//! - **ShareGPT** (`.json`): a top-level array of `{"conversations": [{"from",
//!   "value"}, ...]}`. The prompt is the first `human` turn (`user` is taken
//!   as a synonym), the reference is the first `gpt` turn after it
//!   (`assistant` likewise), and the expected output length is that
//!   reference's token count, as vLLM does. Rows without such a pair, or
//!   where either turn is empty, are skipped and counted
//!   ([`DatasetStats::rows_skipped`]): real ShareGPT files have them. Turns
//!   after the pair are not looked at. The array is streamed (`sharegpt.rs`).
//! - **JSONL** (`.jsonl`, `.ndjson`): one object per line with a `prompt`
//!   string or a `messages` array of `{role, content}`, optional
//!   `output_tokens` (a whole number >= 1) and optional `reference` string.
//!   Blank lines are ignored; other keys are ignored; `null` counts as
//!   absent; anything else malformed is an error.
//! - **CSV** (`.csv`): a header row, a `prompt` column (the name is an
//!   option), optional `output_tokens` and `reference` columns; an empty
//!   cell in an optional column counts as absent.
//!
//! Memory: the file is read twice and never held. The first pass validates
//! every row, applies the filters, hashes the bytes and remembers where each
//! eligible row starts (16 bytes a row: its byte offset and line); the
//! sample is drawn from those; the second pass seeks to the chosen rows and
//! reads only them. Token counts are taken in the first pass only when a
//! filter needs them, and otherwise only for the chosen rows.
//!
//! Rows without an output length (JSONL or CSV rows that state none, or
//! ShareGPT rows under `--tokenizer none`) are kept by the output filter,
//! which judges only stated lengths; they are counted in
//! [`DatasetStats::rows_without_output_length`], and their length is the
//! run's `--output-tokens`. A row outside both filters counts as dropped by
//! the input filter.

mod csv;
pub mod images;
mod jsonl;
mod row;
mod sharegpt;

use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::files::{self, choices, flags, FileError, Kind};
use goodput_common::tokenizer::Tokenizer;
pub use row::{DatasetRow, RowPrompt};
use row::{Parsed, Spot};

choices! {
    /// A dataset file's format.
    pub enum DatasetFormat {
        /// A ShareGPT JSON array of conversations (`.json`).
        ShareGpt = "sharegpt",
        /// One object per line with a `prompt` or `messages` (`.jsonl`, `.ndjson`).
        Jsonl = "jsonl",
        /// A header row and a prompt column (`.csv`).
        Csv = "csv",
    }
}

choices! {
    /// Which eligible rows are sent, in what order.
    pub enum Sampling {
        /// The first rows, in file order.
        Sequential = "sequential",
        /// Distinct rows drawn at random (seeded), in the order drawn.
        Random = "random",
        /// Rows drawn at random (seeded) with replacement: a row may repeat.
        Replacement = "replacement",
    }
}

choices! {
    /// What happens when sampling without replacement asks for more rows
    /// than are eligible.
    pub enum Exhausted {
        /// Fail, naming both counts and the flags that would fix it.
        Error = "error",
        /// Send every eligible row, then repeat them in the same order.
        Cycle = "cycle",
        /// Send every eligible row once and no more.
        Truncate = "truncate",
    }
}

impl DatasetFormat {
    /// The format from the file's extension.
    pub fn detect(path: &Path) -> Result<Self, FileError> {
        match files::kind_of(path) {
            Some(Kind::Json) => Ok(DatasetFormat::ShareGpt),
            Some(Kind::Jsonl) => Ok(DatasetFormat::Jsonl),
            Some(Kind::Csv) => Ok(DatasetFormat::Csv),
            None => Err(files::unknown_format(
                path,
                flags::DATASET_FORMAT,
                Self::NAMES,
                ".json (ShareGPT), .jsonl or .ndjson, .csv",
            )),
        }
    }
}

/// How to read and sample a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetOptions {
    /// `None`: from the extension.
    pub format: Option<DatasetFormat>,
    /// The CSV column holding the prompt.
    pub prompt_column: String,
    /// Rows to return.
    pub num: usize,
    /// Which eligible rows are sent, in what order.
    pub sampling: Sampling,
    /// What happens when sampling without replacement runs out of eligible rows.
    pub exhausted: Exhausted,
    /// Keep rows whose prompt has this many tokens (inclusive); `None`: all.
    pub input_filter: Option<(u32, u32)>,
    /// Keep rows whose stated output length is in this range (inclusive);
    /// rows without one are kept. `None`: all.
    pub output_filter: Option<(u32, u32)>,
    /// Seed of the random sampling (`random`, `replacement`).
    pub seed: u64,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            format: None,
            prompt_column: "prompt".into(),
            num: 200,
            sampling: Sampling::Sequential,
            exhausted: Exhausted::Error,
            input_filter: None,
            output_filter: None,
            seed: 0,
        }
    }
}

/// A loaded dataset: the rows to send, in send order, and how they were
/// chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub rows: Vec<DatasetRow>,
    pub stats: DatasetStats,
}

/// How a dataset was read and sampled, for the result's description of the
/// workload. Counts are rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetStats {
    /// The file name, without directories.
    pub name: String,
    pub format: DatasetFormat,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// Every row in the file (ShareGPT: array elements; blank lines aside).
    pub rows_read: u64,
    /// ShareGPT rows without a non-empty human turn and a gpt reply.
    pub rows_skipped: u64,
    pub rows_dropped_input_filter: u64,
    pub rows_dropped_output_filter: u64,
    /// Eligible rows that state no output length.
    pub rows_without_output_length: u64,
    /// Rows left after skipping and filtering: the pool sampled from.
    pub rows_eligible: u64,
    /// The number asked for (`num`).
    pub rows_requested: u64,
    /// The number returned: `rows_requested`, or `rows_eligible` if truncated.
    pub rows_selected: u64,
    pub input_filter_tokens: Option<[u32; 2]>,
    pub output_filter_tokens: Option<[u32; 2]>,
    pub sampling: Sampling,
    pub exhausted: Exhausted,
    pub seed: u64,
    /// Too few eligible rows, so they were repeated.
    pub cycled: bool,
    /// Too few eligible rows, so fewer than requested were returned.
    pub truncated: bool,
}

/// Read, validate, filter and sample a dataset file.
pub fn load_dataset(
    path: &Path,
    opts: &DatasetOptions,
    tokenizer: &Tokenizer,
) -> Result<Dataset, FileError> {
    let format = match opts.format {
        Some(format) => format,
        None => DatasetFormat::detect(path)?,
    };
    check_filters(path, opts, tokenizer)?;

    // Pass 1: validate everything, filter, remember where eligible rows are.
    let mut stats = DatasetStats::before_reading(path, format, opts);
    let eligible = find_eligible(path, opts, tokenizer, &mut stats)?;

    // Choose, then pass 2: read only the chosen rows, in file order.
    let choice = choose(eligible.len(), opts).map_err(|()| shortfall(path, &stats))?;
    stats.cycled = choice.cycled;
    stats.truncated = choice.truncated;
    let mut distinct = choice.order.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let spots: Vec<Spot> = distinct.iter().map(|&i| eligible[i]).collect();
    drop(eligible);
    let parsed = match format {
        DatasetFormat::ShareGpt => sharegpt::reread(path, &spots)?,
        DatasetFormat::Jsonl => jsonl::reread(path, &spots)?,
        DatasetFormat::Csv => csv::reread(path, &opts.prompt_column, &spots)?,
    };
    let mut images = images::Reader::new(path);
    let distinct_rows: Vec<Option<DatasetRow>> = parsed
        .into_iter()
        .zip(&spots)
        .map(|(mut row, spot)| {
            let files = std::mem::take(&mut row.images);
            let mut row = row.into_row(spot.line, tokenizer);
            row.images = images.read(&files, spot.line)?;
            Ok(Some(row))
        })
        .collect::<Result<_, FileError>>()?;
    let rows = in_send_order(&choice.order, &distinct, distinct_rows);
    stats.rows_selected = rows.len() as u64;
    Ok(Dataset { rows, stats })
}

impl DatasetStats {
    /// The stats of a file not read yet: the options, every count 0.
    fn before_reading(path: &Path, format: DatasetFormat, opts: &DatasetOptions) -> Self {
        DatasetStats {
            name: files::file_name(path),
            format,
            sha256: String::new(),
            rows_read: 0,
            rows_skipped: 0,
            rows_dropped_input_filter: 0,
            rows_dropped_output_filter: 0,
            rows_without_output_length: 0,
            rows_eligible: 0,
            rows_requested: opts.num as u64,
            rows_selected: 0,
            input_filter_tokens: opts.input_filter.map(|(lo, hi)| [lo, hi]),
            output_filter_tokens: opts.output_filter.map(|(lo, hi)| [lo, hi]),
            sampling: opts.sampling,
            exhausted: opts.exhausted,
            seed: opts.seed,
            cycled: false,
            truncated: false,
        }
    }
}

/// The first pass: read and validate every row, apply the filters, and
/// return where each eligible row starts; `stats` gets the counts and the
/// file's hash.
fn find_eligible(
    path: &Path,
    opts: &DatasetOptions,
    tokenizer: &Tokenizer,
    stats: &mut DatasetStats,
) -> Result<Vec<Spot>, FileError> {
    let mut eligible: Vec<Spot> = Vec::new();
    let mut on_row = |spot: Spot, row: Option<Parsed>| {
        stats.rows_read += 1;
        let Some(row) = row else {
            stats.rows_skipped += 1;
            return Ok(());
        };
        if let Some((lo, hi)) = opts.input_filter {
            let n = row.input_tokens(tokenizer).unwrap_or(0);
            if n < lo || n > hi {
                stats.rows_dropped_input_filter += 1;
                return Ok(());
            }
        }
        if !row.has_output_length(tokenizer) {
            stats.rows_without_output_length += 1;
        } else if let Some((lo, hi)) = opts.output_filter {
            let n = row.output_tokens(tokenizer).unwrap_or(0);
            if n < lo || n > hi {
                stats.rows_dropped_output_filter += 1;
                return Ok(());
            }
        }
        eligible.push(spot);
        Ok(())
    };
    let sha256 = match stats.format {
        DatasetFormat::ShareGpt => sharegpt::scan(path, &mut on_row)?,
        DatasetFormat::Jsonl => jsonl::scan(path, &mut on_row)?,
        DatasetFormat::Csv => csv::scan(path, &opts.prompt_column, &mut on_row)?,
    };
    stats.sha256 = sha256;
    stats.rows_eligible = eligible.len() as u64;
    Ok(eligible)
}

/// The chosen rows in send order (`order`, indices among the eligible
/// rows), from the distinct rows read (`rows`, in the order of the sorted
/// `distinct` indices): each row is moved out at its last use and cloned
/// before.
fn in_send_order(
    order: &[usize],
    distinct: &[usize],
    mut rows: Vec<Option<DatasetRow>>,
) -> Vec<DatasetRow> {
    let slots: Vec<usize> = order
        .iter()
        .map(|i| distinct.partition_point(|d| d < i))
        .collect();
    let mut uses = vec![0usize; distinct.len()];
    for &slot in &slots {
        uses[slot] += 1;
    }
    slots
        .iter()
        .filter_map(|&slot| {
            uses[slot] -= 1;
            if uses[slot] == 0 {
                rows[slot].take()
            } else {
                rows[slot].clone()
            }
        })
        .collect()
}

/// Filters must be satisfiable and, for input lengths, countable.
fn check_filters(
    path: &Path,
    opts: &DatasetOptions,
    tokenizer: &Tokenizer,
) -> Result<(), FileError> {
    if opts.input_filter.is_some() && !tokenizer.is_enabled() {
        return Err(FileError::file(
            path,
            format!(
                "{} needs token counts, but {} none counts none; choose a tokenizer",
                flags::DATASET_INPUT_FILTER,
                flags::TOKENIZER
            ),
        ));
    }
    for (flag, filter) in [
        (flags::DATASET_INPUT_FILTER, opts.input_filter),
        (flags::DATASET_OUTPUT_FILTER, opts.output_filter),
    ] {
        if let Some((lo, hi)) = filter {
            if lo > hi {
                return Err(FileError::file(
                    path,
                    format!("{flag}: the range {lo}..={hi} is empty; give the smaller bound first"),
                ));
            }
        }
    }
    Ok(())
}

/// The chosen eligible rows (indices in file order of eligibility), in send
/// order, possibly repeated.
struct Choice {
    order: Vec<usize>,
    cycled: bool,
    truncated: bool,
}

/// Draw `opts.num` of `eligible` rows. `Err` when there are too few and
/// `opts.exhausted` says to fail (or there are none at all).
fn choose(eligible: usize, opts: &DatasetOptions) -> Result<Choice, ()> {
    let num = opts.num;
    if eligible == 0 {
        return Err(());
    }
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let all = |rng: &mut StdRng| -> Vec<usize> {
        match opts.sampling {
            Sampling::Random => rand::seq::index::sample(rng, eligible, eligible).into_vec(),
            _ => (0..eligible).collect(),
        }
    };
    let choice = |order, cycled, truncated| Choice {
        order,
        cycled,
        truncated,
    };
    Ok(match opts.sampling {
        Sampling::Replacement => choice(
            (0..num).map(|_| rng.random_range(0..eligible)).collect(),
            false,
            false,
        ),
        Sampling::Sequential if num <= eligible => choice((0..num).collect(), false, false),
        Sampling::Random if num <= eligible => choice(
            rand::seq::index::sample(&mut rng, eligible, num).into_vec(),
            false,
            false,
        ),
        _ => match opts.exhausted {
            Exhausted::Error => return Err(()),
            Exhausted::Truncate => choice(all(&mut rng), false, true),
            Exhausted::Cycle => {
                let once = all(&mut rng);
                choice((0..num).map(|k| once[k % eligible]).collect(), true, false)
            }
        },
    })
}

/// The error for too few eligible rows: both counts, where the others went,
/// and the flags that would fix it.
fn shortfall(path: &Path, stats: &DatasetStats) -> FileError {
    let mut whereabouts = vec![format!("{} read", stats.rows_read)];
    for (n, what) in [
        (stats.rows_skipped, "without a human prompt and gpt reply"),
        (stats.rows_dropped_input_filter, "outside the input filter"),
        (
            stats.rows_dropped_output_filter,
            "outside the output filter",
        ),
    ] {
        if n > 0 {
            whereabouts.push(format!("{n} {what}"));
        }
    }
    let filtered = stats.rows_dropped_input_filter + stats.rows_dropped_output_filter > 0;
    let widen = if filtered {
        format!(
            "; or widen {} or {}",
            flags::DATASET_INPUT_FILTER,
            flags::DATASET_OUTPUT_FILTER
        )
    } else {
        String::new()
    };
    let (eligible, requested) = (stats.rows_eligible, stats.rows_requested);
    let problem = if eligible == 0 {
        format!("no row is eligible ({}){widen}", whereabouts.join(", "))
    } else {
        format!(
            "{eligible} rows are eligible but {requested} were requested ({}); \
             request fewer with {} {eligible}, repeat the rows with {} cycle, \
             send only these {eligible} with {} truncate, \
             or draw with replacement with {} replacement{widen}",
            whereabouts.join(", "),
            flags::NUM_PROMPTS,
            flags::DATASET_EXHAUSTED,
            flags::DATASET_EXHAUSTED,
            flags::DATASET_SAMPLING,
        )
    };
    FileError::file(path, problem)
}

#[cfg(test)]
mod tests;
