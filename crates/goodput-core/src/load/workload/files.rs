//! Plumbing shared by the file readers ([`super::dataset`], [`super::trace`]).
//!
//! - [`FileError`]: every complaint about a user's file names the file, the
//!   line (1-based; for CSV the file line where the record starts) and the
//!   field, and says what would have been valid.
//! - [`Hashing`]: a SHA-256 of the file's bytes, taken while they stream
//!   past, so a result can say exactly which file it replayed without a
//!   second read.
//! - [`kind_of`]: the format family from the extension; each reader decides
//!   what to do with a family or with an explicit override.
//! - Small checks on JSON values and CSV cells that every format makes the
//!   same way (whole numbers, rendering what was found).
//!
//! Nothing here prints; nothing here holds more than one record.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The command-line flags that the readers' messages suggest, named once so
/// the CLI and the messages cannot drift apart.
pub mod flags {
    pub const DATASET_FORMAT: &str = "--dataset-format";
    pub const DATASET_PROMPT_COLUMN: &str = "--dataset-prompt-column";
    pub const DATASET_SAMPLING: &str = "--dataset-sampling";
    pub const DATASET_EXHAUSTED: &str = "--dataset-exhausted";
    pub const DATASET_INPUT_FILTER: &str = "--dataset-input-filter";
    pub const DATASET_OUTPUT_FILTER: &str = "--dataset-output-filter";
    pub const NUM_PROMPTS: &str = "--num-prompts";
    pub const TOKENIZER: &str = "--tokenizer";
    pub const TRACE_FORMAT: &str = "--trace-format";
    pub const TRACE_TIME_UNIT: &str = "--trace-time-unit";
    pub const TRACE_BLOCK_TOKENS: &str = "--trace-block-tokens";
}

/// Declares a closed set of named choices (a format, a sampling mode): the
/// enum, its serde names, `as_str`, `Display`, and a `FromStr` whose error
/// lists every valid spelling, so the CLI parses them the same way the
/// result JSON writes them.
macro_rules! choices {
    ($(#[$meta:meta])* pub enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every valid spelling, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The choice's name, as the command line and the result JSON spell it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!(
                        "unknown value '{s}': expected one of {}",
                        Self::NAMES.join(", ")
                    )),
                }
            }
        }
    };
}
pub(crate) use choices;

/// A file that cannot be used, and where in it.
///
/// Displayed as `data.jsonl:17: field 'output_tokens': expected a whole
/// number >= 1, found "abc"`; the line and field parts are left out when
/// the problem has none (a missing file, too few eligible rows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{problem}", location(.path, .line, .field))]
pub struct FileError {
    pub path: PathBuf,
    pub line: Option<u64>,
    pub field: Option<String>,
    pub problem: String,
}

fn location(path: &Path, line: &Option<u64>, field: &Option<String>) -> String {
    let mut s = path.display().to_string();
    if let Some(line) = line {
        s.push_str(&format!(":{line}"));
    }
    s.push_str(": ");
    if let Some(field) = field {
        s.push_str(&format!("field '{field}': "));
    }
    s
}

impl FileError {
    /// A problem with the file as a whole.
    pub fn file(path: &Path, problem: impl Into<String>) -> Self {
        FileError {
            path: path.to_path_buf(),
            line: None,
            field: None,
            problem: problem.into(),
        }
    }

    /// A problem on a line, not tied to one field.
    pub fn line(path: &Path, line: u64, problem: impl Into<String>) -> Self {
        FileError {
            line: Some(line),
            ..FileError::file(path, problem)
        }
    }

    /// A problem with one field on a line.
    pub fn field(path: &Path, line: u64, field: &str, problem: impl Into<String>) -> Self {
        FileError {
            line: Some(line),
            field: Some(field.to_string()),
            ..FileError::file(path, problem)
        }
    }

    /// The file could not be opened or read.
    pub fn io(path: &Path, err: &io::Error) -> Self {
        FileError::file(path, format!("cannot read the file: {err}"))
    }

    /// A JSON syntax or shape error reported by `serde_json`. `line` is the
    /// file line of the text that was parsed when serde's own line is
    /// relative to it (one JSONL line); `None` when serde read the file
    /// itself and its line is the file line.
    pub fn json(path: &Path, line: Option<u64>, err: &serde_json::Error) -> Self {
        if err.is_io() {
            return FileError::file(path, format!("cannot read the file: {err}"));
        }
        let suffix = format!(" at line {} column {}", err.line(), err.column());
        let text = err.to_string();
        let message = text.strip_suffix(&suffix).unwrap_or(&text);
        let problem = if err.is_data() {
            format!("{message} (column {})", err.column())
        } else {
            format!("invalid JSON at column {}: {message}", err.column())
        };
        FileError::line(path, line.unwrap_or(err.line() as u64), problem)
    }

    /// An error from the `csv` crate: a short or long record, bad UTF-8, or
    /// an I/O error.
    pub fn csv(path: &Path, err: &csv::Error) -> Self {
        let line = err.position().map(|p| p.line());
        let problem = match err.kind() {
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => format!(
                "expected {expected_len} fields, as in the header, found {len} (quote fields that contain commas)"
            ),
            csv::ErrorKind::Utf8 { err, .. } => format!(
                "field {} is not valid UTF-8; save the file as UTF-8",
                err.field() + 1
            ),
            csv::ErrorKind::Io(err) => return FileError::io(path, err),
            _ => err.to_string(),
        };
        FileError {
            line,
            ..FileError::file(path, problem)
        }
    }
}

/// Open a file for reading, naming it if that fails.
pub fn open(path: &Path) -> Result<File, FileError> {
    File::open(path).map_err(|e| FileError::io(path, &e))
}

/// The name a result records for a file: its file name, without the
/// directories (which differ between machines).
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// A reader that hashes every byte read through it.
pub struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Hashing<R> {
    pub fn new(inner: R) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// Read whatever is left (so the digest always covers the whole file,
    /// even when a parser stopped early) and return the SHA-256 as lowercase
    /// hex.
    pub fn finish(mut self) -> io::Result<String> {
        io::copy(&mut self, &mut io::sink())?;
        Ok(self
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The format family an extension names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `.json`: one JSON document.
    Json,
    /// `.jsonl` or `.ndjson`: one JSON object per line.
    Jsonl,
    /// `.csv`: a header row, then records.
    Csv,
}

/// The family of `path` from its extension (case-insensitive); `None` for
/// any other extension, which the caller reports with the formats it takes.
pub fn kind_of(path: &Path) -> Option<Kind> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "json" => Some(Kind::Json),
        "jsonl" | "ndjson" => Some(Kind::Jsonl),
        "csv" => Some(Kind::Csv),
        _ => None,
    }
}

/// The error for a file whose extension does not tell its format.
pub fn unknown_format(path: &Path, flag: &str, choices: &[&str], extensions: &str) -> FileError {
    FileError::file(
        path,
        format!(
            "cannot tell the format from the file name (known extensions: {extensions}); \
             name it with {flag} {}",
            choices.join("|")
        ),
    )
}

/// What a JSON value is, for "found ..." in a message: strings and numbers
/// as written (long strings cut), containers by kind.
pub fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        other => other.to_string(),
    }
}

/// A string as it appears in a message: quoted, cut after 40 characters.
pub fn quote(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{:?}...", &s[..cut]),
        None => format!("{s:?}"),
    }
}

/// A JSON value that must be a whole number `>= min` that fits in `u64`.
pub fn whole_number(value: &Value, min: u64) -> Result<u64, String> {
    match value.as_u64() {
        Some(n) if n >= min => Ok(n),
        _ => Err(format!(
            "expected a whole number >= {min}, found {}",
            describe(value)
        )),
    }
}

/// A CSV cell that must be a whole number `>= min` (surrounding spaces
/// allowed).
pub fn whole_number_cell(cell: &str, min: u64) -> Result<u64, String> {
    match cell.trim().parse::<u64>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(format!(
            "expected a whole number >= {min}, found {}",
            quote(cell)
        )),
    }
}

/// A token count as `u32`, which every length in goodput is. Counts past
/// four billion tokens are not real prompts; they are reported, not cut.
pub fn to_u32(n: u64) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("expected at most {} tokens, found {n}", u32::MAX))
}

/// A CSV reader with a header row that rejects records whose field count
/// differs from the header's.
pub fn csv_reader<R: Read>(inner: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(inner)
}

/// The header's column names, for "the header has: ..." in a message.
pub fn header_list(headers: &csv::StringRecord) -> String {
    let names: Vec<String> = headers.iter().map(quote).collect();
    if names.is_empty() {
        "no columns".into()
    } else {
        names.join(", ")
    }
}

/// The index of the column called `names[0]` or one of its aliases
/// (case-insensitive). Two of them at once is ambiguous and an error.
pub fn column(headers: &csv::StringRecord, names: &[&str]) -> Result<Option<usize>, String> {
    let found: Vec<usize> = headers
        .iter()
        .enumerate()
        .filter(|(_, h)| names.iter().any(|n| h.trim().eq_ignore_ascii_case(n)))
        .map(|(i, _)| i)
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [i] => Ok(Some(*i)),
        _ => Err(format!(
            "the header names this column more than once ({}); keep one",
            found
                .iter()
                .map(|&i| quote(&headers[i]))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Test helpers: small files in a fresh directory under the system's temp
/// directory.
#[cfg(test)]
pub(crate) mod scratch {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Write `contents` to a new file called `name` in a directory no other
    /// test uses, and return its path.
    pub fn file(name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "goodput-files-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create a scratch directory");
        let path = dir.join(name);
        std::fs::write(&path, contents).expect("write a scratch file");
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_file_line_and_field() {
        let e = FileError::field(
            Path::new("data.jsonl"),
            17,
            "output_tokens",
            whole_number(&Value::String("abc".into()), 1).unwrap_err(),
        );
        assert_eq!(
            e.to_string(),
            "data.jsonl:17: field 'output_tokens': expected a whole number >= 1, found \"abc\""
        );
        let e = FileError::file(Path::new("a/b.csv"), "too few rows");
        assert_eq!(e.to_string(), "a/b.csv: too few rows");
    }

    #[test]
    fn json_error_keeps_the_message_and_moves_the_position() {
        let err = serde_json::from_str::<Value>("{\"a\": }").unwrap_err();
        let e = FileError::json(Path::new("x.jsonl"), Some(9), &err);
        assert_eq!(e.line, Some(9));
        assert!(
            e.problem
                .starts_with("invalid JSON at column 7: expected value"),
            "{}",
            e.problem
        );
        assert!(!e.problem.contains("line 1"), "{}", e.problem);
    }

    #[test]
    fn hashing_covers_bytes_left_unread() {
        let data = b"hello world";
        let mut r = Hashing::new(&data[..]);
        let mut first = [0u8; 5];
        r.read_exact(&mut first).unwrap();
        assert_eq!(
            r.finish().unwrap(),
            "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
        );
    }

    #[test]
    fn kinds_by_extension() {
        assert_eq!(kind_of(Path::new("a.JSON")), Some(Kind::Json));
        assert_eq!(kind_of(Path::new("a.ndjson")), Some(Kind::Jsonl));
        assert_eq!(kind_of(Path::new("dir.v2/a.csv")), Some(Kind::Csv));
        assert_eq!(kind_of(Path::new("a.txt")), None);
        assert_eq!(kind_of(Path::new("noext")), None);
    }

    #[test]
    fn quote_cuts_long_strings_on_a_char_boundary() {
        let long = "é".repeat(50);
        let q = quote(&long);
        assert!(q.ends_with("...") && q.chars().filter(|&c| c == 'é').count() == 40);
    }
}
