//! The console summary, in `vllm bench serve`'s layout and section names,
//! with a 95 % interval after every estimate. Pure: a result in, text out.
//!
//! A run's summary is `run` (the server's own view in `server`), a
//! sweep's `sweep`, a repeat set's `repeat`; `layout` holds the
//! rules, padded lines and number formats they share.

mod frontier;
mod groups;
mod inputs;
mod layout;
mod repeat;
mod run;
mod server;
mod sweep;
mod tasks;
#[cfg(test)]
pub(crate) mod tests;

use std::fmt::Write;

use crate::output::report::saved::Saved;

#[cfg(test)]
pub(crate) use groups::tests::grouped_result;
#[cfg(test)]
pub(crate) use layout::estimate;
pub use layout::intervals_apart;
pub use repeat::repeat_summary;
pub use run::summary;
pub use sweep::{start_note, sweep_summary};

/// The console text for labelled results: each one's summary (a run's
/// table, a sweep's, a repeat set's), headed by `# label` when there are
/// several.
pub fn render(items: &[(String, Saved)]) -> String {
    let mut out = String::new();
    for (label, saved) in items {
        if items.len() > 1 {
            let _ = writeln!(out, "# {label}");
        }
        out.push_str(&match saved {
            Saved::Run(r) => summary(r),
            Saved::Sweep(s) => sweep_summary(s),
            Saved::Repeat(r) => repeat_summary(r),
        });
    }
    out
}
