//! goodput-sim: a simulated LLM inference engine served over the same
//! OpenAI-compatible HTTP API real servers speak.
//!
//! The engine ([`engine`]) batches like vLLM (continuous batching under a
//! token budget, chunked prefill, a paged KV cache with prefix caching and
//! preemption) and times each step with a roofline ([`roofline`]) of a model
//! on an accelerator ([`presets`]). It runs on a clock it is given: in real
//! time on its own thread behind [`SimServer`], or in virtual time through
//! [`virtual_time::simulate`], where it is exactly deterministic.
//!
//! ```no_run
//! use goodput_sim::{SimConfig, SimServer};
//! let server = SimServer::spawn(SimConfig::default(), "127.0.0.1:0".parse().unwrap()).unwrap();
//! println!("serving {} on http://{}", server.model_name(), server.local_addr());
//! server.shutdown();
//! ```

#![deny(missing_docs)]

pub mod calibrate;
pub mod closed_loop;
pub mod config;
pub mod engine;
pub mod error;
pub mod faults;
pub mod forecast;
pub mod kv;
pub mod metrics;
pub mod power;
pub mod presets;
pub mod priority;
mod rate_search;
pub mod realtime;
pub mod reference;
pub mod roofline;
mod server;
pub mod stats;
pub mod text;
pub mod virtual_time;

pub use calibrate::{fit, Fit, FitOptions, Observation, ObservationKind, Profile, ServerLimits};
pub use closed_loop::{simulate_closed_loop, ClosedLoopReport};
pub use config::{LoraConfig, OutputLenDist, SimArgs, SimConfig};
pub use engine::SchedulingPolicy;
pub use error::SimError;
pub use faults::{FaultConfig, FaultSpec};
pub use forecast::{
    evaluate_rates, forecast_goodput, forecast_goodput_near, Deployment, ForecastAnswer,
    ForecastPlan, ForecastPoint, ForecastWorkload, Routing, Sessions, SharedPrefix,
};
pub use priority::{EnginePriority, PriorityRequest};
pub use reference::{
    evaluate_rate, reference_goodput, RefAnswer, RefMetric, RefPlan, RefPoint, RefTerm, RefWorkload,
};
pub use server::SimServer;
pub use stats::SimStats;
pub use virtual_time::{simulate, VirtualReport, VirtualRequest};
