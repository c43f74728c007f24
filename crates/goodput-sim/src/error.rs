//! The one error type of the simulator: every message names what is wrong
//! and, where there is a choice, what would be valid.

use std::path::PathBuf;

/// Errors building, validating or starting a simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("unknown model profile '{name}': valid profiles are {valid}")]
    UnknownModel { name: String, valid: String },
    #[error("unknown hardware '{name}': valid hardware is {valid}")]
    UnknownHardware { name: String, valid: String },
    #[error(
        "{model} does not fit on {tensor_parallel} x {hardware}: its weights need {weights_gib:.1} GiB \
         per GPU but only {usable_gib:.1} GiB is usable (memory x gpu_memory_utilization minus the \
         activation reserve); use more GPUs (--tensor-parallel) or hardware with more memory"
    )]
    DoesNotFit {
        model: String,
        hardware: String,
        tensor_parallel: u32,
        weights_gib: f64,
        usable_gib: f64,
    },
    #[error("invalid value for {field}: {message}")]
    Invalid { field: String, message: String },
    #[error("could not read config file {path}: {source}")]
    ReadConfig {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    ParseConfig { path: PathBuf, message: String },
    #[error("could not load the built-in tokenizer: {0}")]
    Tokenizer(String),
    #[error("could not bind {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("could not start the simulator: {0}")]
    Start(String),
}

impl SimError {
    /// Shorthand for [`SimError::Invalid`].
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        SimError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}
