//! What can go wrong setting the client up (a request's failure is no
//! error here: it is an error kind on its record).

/// Errors setting the client up (not request failures: those are records).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid URL '{url}': {why}")]
    BadUrl { url: String, why: String },
    #[error("cannot resolve {host}: {message}")]
    Resolve { host: String, message: String },
    #[error("invalid header '{0}': expected 'Name: value'")]
    BadHeader(String),
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("{0}")]
    Request(String),
}
