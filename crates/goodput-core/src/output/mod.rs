//! The output wing: what a run produced and how it is shown.
//!
//! A [`RunResult`] is a run's result (it round-trips through JSON, and
//! [`Saved`] reads any saved file back); [`RunConfig`] is the plan it ran;
//! [`Console`], [`Json`], [`Csv`] and [`Html`] are the pure exporters, and
//! [`compare`] sets two results side by side.

pub(crate) mod config;
pub(crate) mod file;
pub(crate) mod report;
pub(crate) mod result;

pub use self::config::{RunConfig, Target, WorkloadSource};
pub use self::file::{FileError, OutFile};
pub use self::report::console::intervals_apart;
pub use self::report::saved::Saved;
pub use self::report::{Console, Csv, Exporter, Html, Json};
pub use self::result::{now_rfc3339, RunResult};

/// Comparing two results: the figures, their significance and the gates
/// (`goodput compare`).
pub mod compare {
    pub use crate::output::report::compare::{
        compare, metrics_figures, repeats_figures, CompareError, FailOn, Figure, Input,
        RecordSamples, Samples,
    };

    /// The comparison written as text, Markdown or JSON.
    pub mod render {
        pub use crate::output::report::compare::render::{json, markdown, text};
    }
}

/// The JSON file vLLM's `bench serve` writes (`--save-result`), for the
/// drop-in.
pub mod vllm {
    pub use crate::output::report::vllm::{default_file_name, document, now_date, VllmMeta};
}
