//! goodput-calibrate: what `goodput calibrate` and `goodput predict` know
//! beyond their flags. The experiment that fits the simulator's step-time
//! model to a server seen only over HTTP, the same fit from results
//! already saved, and the forecast of a deployment's sustained goodput
//! from the fitted profile (or a built-in deployment), in virtual time.
//!
//! The fit, the profile and the forecaster are goodput-sim's
//! ([`goodput_sim::calibrate`], [`goodput_sim::forecast`]); the saved
//! results, the records and the traces are goodput-core's. This crate is
//! what joins them, so that the simulator keeps depending on nothing of
//! the client, and the binary keeps only its flags, its session and the
//! dispatch:
//!
//! - [`calibrate`]: the live experiment's design (a burst for the largest
//!   batch, the KV capacity, a batch-1 prefill series and a decode series)
//!   run through a [`Measure`], the caller's seam to a server: the binary
//!   runs each point as a `goodput run`, a test answers with records of its
//!   own. [`published`] reads what a server says of its own limits.
//! - [`calibrate_from`]: the fit from saved runs and sweeps, each point
//!   judged on its own and listed with what it gave.
//! - [`Prediction`]: the model, the workload (synthetic or a trace) and the
//!   SLO read, then [`Prediction::forecast`] into a [`Forecast`], which
//!   says itself as the console's text or as JSON.
//!
//! Nothing here prints: progress goes to [`Measure::say`], what goes to
//! standard output to the caller's `print`, and every failure is an
//! [`Error`], whose variants are the binary's exit codes.

#![deny(missing_docs)]

mod calibration;
mod check;
mod discover;
mod error;
mod experiment;
mod fit;
mod from_files;
mod held;
mod predict;
mod records;

pub use calibration::CalibrateOptions;
pub use discover::{published, Published};
pub use error::Error;
pub use experiment::{calibrate, Measure};
pub use fit::Written;
pub use from_files::calibrate_from;
pub use predict::{Forecast, PredictOptions, Prediction, TraceReplay};
pub use records::Rec;
