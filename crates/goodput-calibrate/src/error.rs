//! The one error of the crate, whose variants are the binary's exit codes:
//! an input that cannot be used (a usage error, exit 2), a design point's
//! run that ended without a result (exit codes as goodput-core's
//! [`RunError`] calls for), a signal (130) and a fault of goodput itself
//! (4).
//!
//! A usage error keeps the whole chain of what went wrong: the context
//! ("the profile FILE", "writing the profile FILE") and under it the
//! simulator's, the loader's or the file system's own error with its
//! sources, so that the binary prints the same `context: error: source`
//! line as before the crate was split out.

use goodput_core::plan::RunError;

/// A boxed error, with its sources.
type Boxed = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a calibration or a forecast ended without a result.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input that cannot be used: a profile, a simulator spec, a trace,
    /// an SLO term, saved results that observe nothing, a file that cannot
    /// be written. The binary's usage error (exit 2). The boxed error is
    /// the message, its sources the chain below it.
    #[error(transparent)]
    Usage(Boxed),
    /// A design point's run ended without a result; the binary's exit code
    /// is the one its cause calls for.
    #[error(transparent)]
    Run(RunError),
    /// A signal stopped the calibration before it had a profile.
    #[error("calibration interrupted: no profile written")]
    Interrupted,
    /// A fault of goodput itself, never the server's.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// A usage error: a sentence, or another error with its sources.
    pub(crate) fn usage(e: impl Into<Boxed>) -> Error {
        Error::Usage(e.into())
    }

    /// A usage error said in context: `what` was being done when `e`
    /// happened (printed `what: e: e's sources`).
    pub(crate) fn context(what: impl Into<String>, e: impl Into<Boxed>) -> Error {
        Error::Usage(Box::new(Context {
            what: what.into(),
            source: e.into(),
        }))
    }
}

/// What was being done, and the error that stopped it.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
struct Context {
    what: String,
    #[source]
    source: Boxed,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cause after the first, as anyhow's `{:#}` prints the chain.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut s = e.to_string();
        let mut next = e.source();
        while let Some(c) = next {
            s += &format!(": {c}");
            next = c.source();
        }
        s
    }

    #[test]
    fn a_context_is_printed_before_the_error_and_its_sources() {
        let io = std::io::Error::other("disk full");
        let e = Error::context("writing the profile p.toml", io);
        assert_eq!(chain(&e), "writing the profile p.toml: disk full");
        let e = Error::usage("only 3 observations");
        assert_eq!(chain(&e), "only 3 observations");
    }
}
