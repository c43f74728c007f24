//! goodput-core: the engine of goodput, with no terminal I/O.
//!
//! Data flows one way: [`workload`] → [`schedule`] → [`executor`] +
//! [`client`] → [`record`] → [`metrics`] → [`report`].
pub mod client;
pub mod clock;
pub mod executor;
pub mod metrics;
pub mod record;
pub mod report;
pub mod run;
pub mod schedule;
pub mod stats;
pub mod timer;
pub mod tokenizer;
pub mod units;
pub mod workload;
