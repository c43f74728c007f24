//! Report: pure exporters. Results in, bytes out.
pub mod console;
pub mod json;
pub mod records;
