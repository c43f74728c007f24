//! The request wing: one request on the wire and what it leaves behind.
//!
//! [`protocol`] builds each API's request body and reads its stream;
//! [`client`] is the HTTP/1.1 client that sends it over a
//! [`transport::Transport`]; [`tools`] answers tool calls; [`record`] holds
//! the raw timestamps of one request, on the [`clock`] every record shares.

pub mod client;
pub mod clock;
pub mod protocol;
pub mod record;
pub mod tools;
pub mod transport;
