//! What the server saw: its Prometheus `/metrics` scraped during every run
//! (`--server-metrics URL`; by default the target's own `/metrics` when it
//! answers), read whatever the engine calls things ([`engines`]: vLLM,
//! SGLang, TGI, llama.cpp), kept as a time series and summarised over the
//! measured window: peak KV-cache use, preemptions, the prefix-cache hit
//! share, and the server's own TTFT beside the client's, so the gap —
//! network, HTTP stack, tokenization and queueing outside the engine's
//! clock — is visible. Where a figure is not what its name suggests (the
//! run's model labels no series, so every model's were summed; aborted
//! requests sit in the server's latency histograms; vLLM's ITL is per step
//! under speculative decoding; a hit share from a weaker source), the
//! results carry a note ([`ServerMetrics::notes`]).
//!
//! The window: a baseline scrape as the measured phase starts (at once
//! when there is no warm-up; as soon as the first measured request is sent
//! otherwise) and a final one after the last measured request finished.
//! Engines observe TTFT when a request's first token is produced, so the
//! server's TTFT histogram over this window holds the measured requests
//! (and only the warm-up requests whose first token came after the first
//! measured send); finished-request counters and E2EL, observed at the end
//! of each request, also hold the warm-up requests still running when the
//! measured phase began. When the server's TTFT count differs from the
//! requests the client measured, a note says so.
//! Counters and histograms are the difference of the two
//! ([`engines::Snapshot::delta`]); a counter that went backwards (the server
//! restarted) voids the window, and the summary says so. Scraping runs on
//! its own task and connection, never on the request path; a scrape that
//! fails is counted, not fatal.
//!
//! [`scrape`] holds the scraper and its running state; [`results`] what a
//! run keeps of it (the time series, the window's summary, the notes).

pub mod engines;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod parse;
pub mod results;
pub mod scrape;

pub use results::{ServerMetrics, ServerSample, ServerSummary};
pub use scrape::{default_url, ScrapeOptions, Scraper};
