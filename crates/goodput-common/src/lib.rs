//! goodput-common: what the benchmark client and the simulator share.
//!
//! Each grammar a user types is defined once, here, and every crate parses
//! it the same way (ripgrep's habit): durations ([`units`]), length
//! distributions ([`lengths`]), the API endpoint ([`endpoint`]). The built-in
//! tokenizers ([`tokenizer`]) and the word list ([`words`]) live here too, so
//! the simulator counts tokens exactly as the client does without depending
//! on the client's HTTP and TLS stack.
pub mod clock;
pub mod endpoint;
pub mod lengths;
pub mod tokenizer;
pub mod units;
pub mod words;

pub use endpoint::Endpoint;
pub use lengths::LengthSpec;
