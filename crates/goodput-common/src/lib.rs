//! goodput-common: what the benchmark client and the simulator share.
//!
//! Each grammar a user types is defined once, here, and every crate parses
//! it the same way (ripgrep's habit): durations ([`units`]), length
//! distributions ([`lengths`]), the API endpoint ([`endpoint`]). The built-in
//! tokenizers ([`tokenizer`]) and the word list ([`words`]) live here too, so
//! the simulator counts tokens exactly as the client does without depending
//! on the client's HTTP and TLS stack. The definition of a percentile
//! ([`percentile`]) is here so that goodput's metrics and its own benchmarks
//! compute the same one.

#![deny(missing_docs)]
pub mod clock;
pub mod endpoint;
pub mod image;
pub mod json_schema;
pub mod lengths;
pub mod percentile;
pub mod tokenizer;
pub mod units;
pub mod words;

pub use endpoint::Endpoint;
pub use lengths::LengthSpec;

/// The random stream of a run's arrival times for `--seed seed` (its own
/// stream, so arrival times do not depend on the prompts drawn). Open-loop
/// Poisson gaps are unit exponential draws from
/// `StdRng::seed_from_u64(schedule_seed(seed))` divided by the rate, so the
/// simulator's reference can replay exactly the schedule a run sends.
pub fn schedule_seed(seed: u64) -> u64 {
    seed ^ 0x5c4e_d01e_5eed_0001
}
