//! goodput-core: the engine of goodput, with no terminal I/O.
//!
//! Data flows one way: [`workload`] → schedule → client → records → metrics → report.
pub mod tokenizer;
pub mod workload;
