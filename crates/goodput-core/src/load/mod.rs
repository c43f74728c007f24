//! The load wing: what is sent, and when.
//!
//! [`workload`] turns a source (synthetic lengths, a dataset, a trace) into
//! requests; [`schedule`] gives each its intended send time; [`executor`]
//! is the one engine that runs every load shape, waking on [`timer`].

pub(crate) mod background;
pub mod executor;
pub mod schedule;
pub mod timer;
pub mod workload;
