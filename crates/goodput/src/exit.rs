//! How the process ends: the exit codes, the error that carries one, the
//! usage error (exit 2), and the codes the library crates' errors stand
//! for. Imports nothing of this crate, so every layer may use it.
//!
//! The codes and their meanings are documented in docs/cli.md ("Exit
//! codes"); every exit of the binary goes through [`Code`], so a code
//! cannot be used in one place with another meaning than in the rest.

use goodput_core::plan::RunError;

/// The exit code of the process. Ordered by number, so of two gates'
/// outcomes (`Ok`, `GateFailed`) the greater is the worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Code {
    /// 0: the command did its job and every gate passed (or none was set).
    Ok = 0,
    /// 1: a gate failed: an SLO term's point estimate, the attainment, a
    /// sweep whose goodput is 0, the error rate above `--max-error-rate`,
    /// or a `compare --fail-on` bound.
    GateFailed = 1,
    /// 2: a usage or input error (a bad flag, an unreadable or malformed
    /// file, a target that could not be set up as asked).
    Usage = 2,
    /// 3: no request completed (the target unreachable, or every request
    /// failed).
    NothingCompleted = 3,
    /// 4: an internal fault of goodput itself, never the server's (lost
    /// records, a panicked thread).
    Internal = 4,
    /// 5: `--max-time` ended a sweep's search before it had an answer (a
    /// time limit is not a signal).
    TimeLimit = 5,
    /// 6: a sharded run is missing a shard: one never registered, died or
    /// did not report, so its requests are not all in the result (which
    /// says which shard and how many requests).
    ShardMissing = 6,
    /// 7: the load ran, but an output (`--out`, `--csv`, `--html`) could not
    /// be written at its end (a full disk, a closed pipe); every other
    /// output was still written.
    OutputFailed = 7,
    /// 130 (128 + SIGINT): a signal stopped goodput before it had a result
    /// (before any measured request of a run was sent, or before a sweep
    /// measured a point or found the goodput).
    Interrupted = 130,
}

impl Code {
    /// The number the process exits with.
    pub fn number(self) -> i32 {
        self as i32
    }
}

/// An error that ends the process with a specific exit code.
#[derive(Debug)]
pub struct Exit(pub Code, pub anyhow::Error);

/// A usage or input error: exit 2.
pub fn usage(e: impl Into<anyhow::Error>) -> Exit {
    Exit(Code::Usage, e.into())
}

/// An output that could not be written once the load had begun (exit 7).
pub fn output_failed(e: impl Into<anyhow::Error>) -> Exit {
    Exit(Code::OutputFailed, e.into())
}

/// A fault of goodput itself (exit 4).
pub fn internal(e: impl Into<anyhow::Error>) -> Exit {
    Exit(Code::Internal, e.into())
}

/// A run that ended without a result, with the code its cause calls for.
/// An output file that could not be opened (exit 2, before any load) or
/// written (exit 7, after it).
impl From<goodput_core::output::FileError> for Exit {
    fn from(e: goodput_core::output::FileError) -> Exit {
        let code = if e.opening {
            Code::Usage
        } else {
            Code::OutputFailed
        };
        Exit(code, anyhow::Error::new(e))
    }
}

pub fn run_error(e: RunError) -> Exit {
    let code = match &e {
        RunError::Interrupted => Code::Interrupted,
        RunError::Internal(_) => Code::Internal,
        RunError::Shard(_) => Code::ShardMissing,
        e if e.is_unreachable() => Code::NothingCompleted,
        _ => Code::Usage,
    };
    Exit(code, anyhow::Error::new(e))
}

/// goodput-k8s's errors (the manifests' plan, the pod's helpers): the
/// user's input (exit 2) or goodput's own fault (exit 4).
impl From<goodput_k8s::Error> for Exit {
    fn from(e: goodput_k8s::Error) -> Exit {
        match e {
            goodput_k8s::Error::Usage(m) => usage(anyhow::anyhow!(m)),
            goodput_k8s::Error::Internal(m) => internal(anyhow::anyhow!(m)),
        }
    }
}

/// goodput-calibrate's errors (`calibrate`, `predict`), each with the code
/// it stands for; the message and its chain are the error's own.
impl From<goodput_calibrate::Error> for Exit {
    fn from(e: goodput_calibrate::Error) -> Exit {
        use goodput_calibrate::Error as E;
        match e {
            E::Usage(_) => usage(e),
            E::Run(e) => run_error(e),
            E::Interrupted => Exit(Code::Interrupted, e.into()),
            E::Internal(_) => internal(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Code;

    /// The numbers docs/cli.md documents ("Exit codes"): scripts depend on them.
    #[test]
    fn codes_keep_their_documented_numbers() {
        let documented = [
            (Code::Ok, 0),
            (Code::GateFailed, 1),
            (Code::Usage, 2),
            (Code::NothingCompleted, 3),
            (Code::Internal, 4),
            (Code::TimeLimit, 5),
            (Code::ShardMissing, 6),
            (Code::OutputFailed, 7),
            (Code::Interrupted, 130),
        ];
        for (code, number) in documented {
            assert_eq!(code.number(), number, "{code:?}");
        }
        assert!(
            Code::GateFailed > Code::Ok,
            "the worse gate outcome is the greater"
        );
    }

    /// goodput-calibrate's errors keep their code and their whole chain,
    /// printed as `{:#}` prints it (`main` does).
    #[test]
    fn calibrate_errors_keep_their_code_and_chain() {
        use super::Exit;
        use goodput_calibrate::Error;
        let said = |e: Error| {
            let Exit(code, e) = Exit::from(e);
            (code, format!("{e:#}"))
        };
        let spec = anyhow::anyhow!("no such file").context("reading the dataset d.jsonl");
        assert_eq!(
            said(Error::Usage(spec.into())),
            (
                Code::Usage,
                "reading the dataset d.jsonl: no such file".to_string()
            )
        );
        assert_eq!(
            said(Error::Interrupted),
            (
                Code::Interrupted,
                "calibration interrupted: no profile written".to_string()
            )
        );
        assert_eq!(said(Error::Internal("lost".into())).0, Code::Internal);
        let run = goodput_core::plan::RunError::Shard("gone".into());
        assert_eq!(
            said(Error::Run(run)),
            (Code::ShardMissing, "sharded run: gone".to_string())
        );
    }
}
