//! The load wing: what is sent, and when.
//!
//! A [`WorkloadSpec`] says what the requests are (synthetic lengths, a
//! dataset, a trace); a [`Load`] and its [`Schedule`] say when each is
//! sent; a [`RunPlan`] hands both to the one executor every load shape runs
//! on, which waits on a [`Timer`].

pub(crate) mod background;
pub(crate) mod descriptors;
pub(crate) mod executor;
pub(crate) mod schedule;
pub(crate) mod timer;
pub(crate) mod workload;

pub use self::background::lower_thread_priority;
pub use self::descriptors::{check_fd_limit, raise_fd_limit, reserve_fd_table};
pub use self::executor::{ExecSummary, Progress, RunControl, RunPlan, Warmup, WarmupPolicy};
pub use self::schedule::{Arrival, Load, RampStrategy, RampUp, Schedule};
pub use self::timer::{PreciseTimer, Timer};
pub use self::workload::agent::{
    AgentStats, AgentTraces, Replay as AgentReplay, Timing as AgentTiming, DEFAULT_GAP_CAP,
};
pub use self::workload::dataset::{
    load_dataset, DatasetFormat, DatasetOptions, Exhausted, Sampling,
};
pub use self::workload::mixes::{parse_models, PriorityMix, RequestMix};
pub use self::workload::prompt::TextBuilder;
pub use self::workload::synthetic::{GroupChoice, PrefixSpec, SessionShape, SyntheticSpec};
pub use self::workload::trace::{load_trace, TimeUnit, TraceFormat, TraceOptions, TraceStats};
pub use self::workload::{ImageSpec, LengthSpec, SourceSpec, WorkloadSpec, MAX_IMAGES, MAX_SIDE};
