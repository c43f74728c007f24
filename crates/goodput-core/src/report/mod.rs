//! Report: pure exporters. Results in, bytes out (hyperfine's exporters
//! are the model): each takes a list of results, so a sweep or a comparison
//! is never a special case.
pub mod compare;
pub mod console;
pub mod csv;
pub mod html;
pub mod json;
pub mod saved;

use crate::result::RunResult;

/// Renders results to bytes.
pub trait Exporter {
    fn export(&self, results: &[RunResult]) -> Vec<u8>;
}

/// The console summary table of each result.
pub struct Console;

impl Exporter for Console {
    fn export(&self, results: &[RunResult]) -> Vec<u8> {
        results
            .iter()
            .map(console::summary)
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes()
    }
}

/// The results JSON, pretty-printed, with a trailing newline.
pub struct Json;

impl Exporter for Json {
    fn export(&self, results: &[RunResult]) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(&json::document(results)).unwrap_or_default();
        out.push(b'\n');
        out
    }
}
