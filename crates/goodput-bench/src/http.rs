//! Minimal HTTP/1.1 request-head parsing for the reference server.
//!
//! Only what a benchmark client sends is understood: a request line, headers,
//! and a `Content-Length` body. Chunked request bodies are refused. Parsing is
//! pure (bytes in, [`RequestHead`] out) so it is tested without sockets.

use memchr::memmem;

/// Largest request head accepted, in bytes.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The parts of a request head the reference server acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// Request method, e.g. `POST`.
    pub method: String,
    /// Request target without the query string, e.g. `/v1/completions`.
    pub path: String,
    /// Value of `Content-Length`, 0 when absent.
    pub content_length: usize,
    /// Value of `x-request-id`, when present.
    pub request_id: Option<String>,
    /// Whether the connection must be closed after the response
    /// (`Connection: close`, or HTTP/1.0 without `keep-alive`).
    pub close: bool,
}

/// Why a request head could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadError {
    /// Not valid HTTP/1.x syntax; the text says where.
    Malformed(&'static str),
    /// A feature this server does not implement (e.g. chunked request bodies).
    Unsupported(&'static str),
    /// Head or body over the size limits.
    TooLarge,
}

/// Finds the end of the request head in `buf`: the index just past the blank
/// line, or `None` when the head is not complete yet.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    memmem::find(buf, b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a complete request head (request line and headers, up to and
/// including the blank line).
pub fn parse_head(head: &[u8]) -> Result<RequestHead, HeadError> {
    let text = std::str::from_utf8(head).map_err(|_| HeadError::Malformed("head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().ok_or(HeadError::Malformed("empty head"))?;
    let mut parts = request_line.split(' ');
    let method = parts
        .next()
        .filter(|m| !m.is_empty())
        .ok_or(HeadError::Malformed("no method"))?;
    let target = parts
        .next()
        .ok_or(HeadError::Malformed("no request target"))?;
    let version = parts
        .next()
        .ok_or(HeadError::Malformed("no HTTP version"))?;
    if parts.next().is_some() {
        return Err(HeadError::Malformed("request line has extra fields"));
    }
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(HeadError::Malformed("unknown HTTP version")),
    };
    let path = target.split('?').next().unwrap_or(target).to_string();

    let mut head = RequestHead {
        method: method.to_string(),
        path,
        content_length: 0,
        request_id: None,
        close: http10,
    };
    for line in lines {
        if line.is_empty() {
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or(HeadError::Malformed("header without ':'"))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            head.content_length = value
                .parse()
                .map_err(|_| HeadError::Malformed("bad Content-Length"))?;
            if head.content_length > MAX_BODY_BYTES {
                return Err(HeadError::TooLarge);
            }
        } else if name.eq_ignore_ascii_case("x-request-id") {
            head.request_id = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("connection") {
            if value.eq_ignore_ascii_case("close") {
                head.close = true;
            } else if value.eq_ignore_ascii_case("keep-alive") {
                head.close = false;
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HeadError::Unsupported("chunked request bodies"));
        }
    }
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_post_with_body_length_and_request_id() {
        let raw = b"POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 42\r\nX-Request-Id: run7-12\r\n\r\n{";
        let end = head_end(raw).unwrap();
        assert_eq!(&raw[end..], b"{");
        let head = parse_head(&raw[..end]).unwrap();
        assert_eq!(head.method, "POST");
        assert_eq!(head.path, "/v1/completions");
        assert_eq!(head.content_length, 42);
        assert_eq!(head.request_id.as_deref(), Some("run7-12"));
        assert!(!head.close);
    }

    #[test]
    fn incomplete_head_has_no_end() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n"), None);
    }

    #[test]
    fn connection_close_and_http10() {
        let head = parse_head(b"GET / HTTP/1.1\r\nconnection: Close\r\n\r\n").unwrap();
        assert!(head.close);
        let head = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        assert!(head.close);
        let head = parse_head(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").unwrap();
        assert!(!head.close);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            parse_head(b"GET / HTTP/2\r\n\r\n"),
            Err(HeadError::Malformed("unknown HTTP version"))
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
            Err(HeadError::Malformed("bad Content-Length"))
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(HeadError::Unsupported("chunked request bodies"))
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n"),
            Err(HeadError::TooLarge)
        );
    }
}
