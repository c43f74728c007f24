//! How the process ends: the exit codes, the error that carries one, and
//! the usage error (exit 2). Imports nothing of this crate, so every layer
//! may use it.

use goodput_core::target::RunError;

/// An error that ends the process with a specific exit code.
#[derive(Debug)]
pub struct Exit(pub i32, pub anyhow::Error);

/// Exit code of a run interrupted before any measured request was sent, or
/// of a sweep before any point measured one (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit code of an internal fault of goodput itself (never the server's).
pub const EXIT_INTERNAL: i32 = 4;
/// `--max-time` ended a sweep before it had an answer.
pub const EXIT_TIME_LIMIT: i32 = 5;

pub fn usage(e: impl Into<anyhow::Error>) -> Exit {
    Exit(2, e.into())
}

pub fn run_error(e: RunError) -> Exit {
    let code = match &e {
        RunError::Interrupted => EXIT_INTERRUPTED,
        RunError::Internal(_) => EXIT_INTERNAL,
        e if e.is_unreachable() => 3,
        _ => 2,
    };
    Exit(code, anyhow::Error::new(e))
}
