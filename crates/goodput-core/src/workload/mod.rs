//! Workload: what to send. Builds the prompts and request bodies of a run.
pub mod words;
