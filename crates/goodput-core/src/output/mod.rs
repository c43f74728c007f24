//! The output wing: what a run produced and how it is shown.
//!
//! [`result`] is a run's result (it round-trips through JSON), [`config`]
//! the plan it ran, and [`report`] the pure exporters (console, JSON, CSV,
//! HTML, compare).

pub mod config;
pub mod report;
pub mod result;
