//! The one error type of the simulator: every message names what is wrong
//! and, where there is a choice, what would be valid.

use std::path::PathBuf;

/// Errors building, validating or starting a simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// No model preset has this name.
    #[error("unknown model profile '{name}': valid profiles are {valid}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The preset names, listed for the message.
        valid: String,
    },
    /// No hardware preset has this name.
    #[error("unknown hardware '{name}': valid hardware is {valid}")]
    UnknownHardware {
        /// The name asked for.
        name: String,
        /// The preset names, listed for the message.
        valid: String,
    },
    /// The model's weights leave no room for a KV cache on each GPU.
    #[error(
        "{model} does not fit on {tensor_parallel} x {hardware}: its weights need {weights_gib:.1} GiB \
         per GPU but only {usable_gib:.1} GiB is usable (memory x gpu_memory_utilization minus the \
         activation reserve); use more GPUs (--tensor-parallel) or hardware with more memory"
    )]
    DoesNotFit {
        /// The model profile's name.
        model: String,
        /// The hardware profile's name.
        hardware: String,
        /// GPUs the weights are split across.
        tensor_parallel: u32,
        /// Weights per GPU, GiB.
        weights_gib: f64,
        /// Memory per GPU the engine may use, less the activation reserve, GiB.
        usable_gib: f64,
    },
    /// A setting or argument has a value it does not accept.
    #[error("invalid value for {field}: {message}")]
    Invalid {
        /// What is invalid: a setting's name, a field's path or an argument.
        field: String,
        /// What is wrong and what would be valid.
        message: String,
    },
    /// A config or profile file could not be read.
    #[error("could not read config file {path}: {source}")]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A config or profile file is not valid TOML or not a valid simulator.
    #[error("invalid config file {path}: {message}")]
    ParseConfig {
        /// The file.
        path: PathBuf,
        /// The parser's or validator's message (with line and field where known).
        message: String,
    },
    /// The built-in tokenizer (o200k_base) failed to load; its message.
    #[error("could not load the built-in tokenizer: {0}")]
    Tokenizer(String),
    /// The HTTP server could not bind its address.
    #[error("could not bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A thread or runtime of the server failed to start; what failed.
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
