//! The request wing: one request on the wire and what it leaves behind.
//!
//! A request's body is built for its API ([`Endpoint`], [`RequestParams`],
//! with [`ToolDef`]s and a [`ResponseFormat`] where asked), sent by the
//! HTTP/1.1 [`Client`], and kept as a [`RequestRecord`]: every event's
//! arrival on the one [`RunClock`] of the run.

pub(crate) mod client;
pub(crate) mod clock;
pub(crate) mod protocol;
pub(crate) mod record;
pub(crate) mod tools;
pub(crate) mod transport;

pub use self::client::target::BaseUrl;
pub use self::client::tls::{read_certs, read_key, TlsOptions};
pub use self::client::{Client, ClientOptions};
pub use self::clock::RunClock;
pub use self::protocol::{Endpoint, RequestParams};
pub use self::record::{ErrorKind, Event, RequestError, RequestRecord, ServerUsage};
pub use self::tools::{
    read_response_format, read_tools, OutputSpec, ResponseFormat, ToolChoice, ToolDef,
};
