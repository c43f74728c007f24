//! HTTP/1.1 on the request path, by hand.
//!
//! Measured first, then written: with hyper's client connection, every body
//! chunk crossed from the connection task to the request task through a
//! channel, costing a second task wake-up per streamed event (goodput spent
//! 2.25× the CPU of a bytes-only client at 256 streams) and delaying the
//! event's timestamp by however long that hop waited for a worker (p99 TTFT
//! error of several ms at 256 streams, tens at 1,024). Here the request's own
//! task writes the request and reads the socket: `t_send` is taken right
//! before the `write`, each event's arrival right after the `read` that
//! brought it, and there is one wake-up per read.
//!
//! Scope: what an OpenAI-compatible server answers to a POST or GET —
//! `Content-Length`, `Transfer-Encoding: chunked` or close-delimited bodies,
//! keep-alive unless `Connection: close`, interim 1xx heads skipped.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// A plain or TLS byte stream.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    /// The socket's file descriptor (for the watchdog's shutdown).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Plain(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.get_ref().0.as_raw_fd(),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Initial read buffer per connection (grows when a response needs more);
/// small, because thousands of connections each hold one: at 10,000
/// streams each KB here is 10 MB of resident memory (the allocator touches
/// every block it hands out). 2 KB holds a dozen ordinary stream events.
const READ_CHUNK: usize = 2 * 1024;

/// One keep-alive connection and its read buffer.
pub struct Conn {
    pub io: Stream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Requests this connection has carried (0: fresh).
    pub uses: u64,
}

/// What the response head said.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: BodyKind,
    /// The server will close the connection after this response.
    pub close: bool,
    /// `Content-Type`, as sent.
    pub content_type: Option<String>,
    /// `Location` (where a redirect points), as sent.
    pub location: Option<String>,
}

impl Head {
    /// The media type (`Content-Type` without its parameters), lower-cased.
    pub fn media_type(&self) -> Option<String> {
        let ct = self.content_type.as_deref()?;
        let t = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        (!t.is_empty()).then_some(t)
    }

    /// The body is a web page (`text/html`, XHTML): never an API's answer.
    pub fn is_html(&self) -> bool {
        matches!(
            self.media_type().as_deref(),
            Some("text/html" | "application/xhtml+xml")
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BodyKind {
    Chunked,
    Length(u64),
    /// Ends when the server closes the connection.
    UntilClose,
}

impl Conn {
    pub fn new(io: Stream) -> Self {
        Conn {
            io,
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            uses: 0,
        }
    }

    /// Bytes read but not yet consumed.
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// One `read` into the buffer; `Ok(0)` at end of stream.
    pub async fn fill(&mut self) -> io::Result<usize> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let len = self.buf.len();
                self.buf.resize(len * 2, 0);
            }
        }
        let end = self.end;
        let n = self.io.read(&mut self.buf[end..]).await?;
        self.end += n;
        Ok(n)
    }

    /// Whether the connection is still usable for a new request: not closed
    /// by the server and carrying no unread bytes. A non-blocking peek at the
    /// socket, before anything is written: end of stream (the server closed
    /// an idle keep-alive connection), an error, or stray bytes (a TLS
    /// close_notify, a late response) all mean it must not be reused.
    pub fn is_open(&self) -> bool {
        if !self.buffered().is_empty() {
            return false;
        }
        let mut byte = 0u8;
        // SAFETY: recv into a one-byte buffer we own, on a socket this
        // connection owns; MSG_PEEK consumes nothing and MSG_DONTWAIT never blocks.
        let n = unsafe {
            libc::recv(
                self.io.raw_fd(),
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n < 0 && {
            let e = std::io::Error::last_os_error().raw_os_error();
            e == Some(libc::EAGAIN) || e == Some(libc::EWOULDBLOCK)
        }
    }

    /// Write a whole request.
    pub async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.io.write_all(bytes).await
    }

    /// Parse a complete response head from the buffer, if there is one
    /// (interim 1xx heads are consumed and skipped).
    pub fn parse_head(&mut self) -> Result<Option<Head>, String> {
        match parse_head(self.buffered())? {
            Some((head, n)) => {
                self.consume(n);
                Ok(Some(head))
            }
            None => Ok(None),
        }
    }
}

/// Parse a response head at the start of `data`: the head and the bytes it
/// took (including any skipped interim 1xx heads), or `None` if incomplete.
pub fn parse_head(data: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut offset = 0;
    loop {
        let data = &data[offset..];
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(data) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if data.len() > MAX_HEAD {
                    return Err(format!("response head larger than {MAX_HEAD} bytes"));
                }
                return Ok(None);
            }
            Err(e) => return Err(format!("invalid response head: {e}")),
        };
        offset += n;
        let status = resp.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            continue;
        }
        let mut head = Head {
            status,
            retry_after: None,
            body: BodyKind::UntilClose,
            close: resp.version == Some(0),
            content_type: None,
            location: None,
        };
        let mut chunked = false;
        let mut length = None;
        for h in resp.headers.iter() {
            let v = std::str::from_utf8(h.value).unwrap_or("").trim();
            if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = v.to_ascii_lowercase().contains("chunked");
            } else if h.name.eq_ignore_ascii_case("content-length") {
                length = v.parse::<u64>().ok();
            } else if h.name.eq_ignore_ascii_case("connection") {
                let v = v.to_ascii_lowercase();
                if v.contains("close") {
                    head.close = true;
                } else if v.contains("keep-alive") {
                    head.close = false;
                }
            } else if h.name.eq_ignore_ascii_case("retry-after") {
                head.retry_after = Some(v.to_string());
            } else if h.name.eq_ignore_ascii_case("content-type") {
                head.content_type = Some(v.to_string());
            } else if h.name.eq_ignore_ascii_case("location") {
                head.location = Some(v.to_string());
            }
        }
        head.body = if chunked {
            BodyKind::Chunked
        } else if let Some(l) = length {
            BodyKind::Length(l)
        } else if status == 204 || status == 304 {
            BodyKind::Length(0)
        } else {
            head.close = true;
            BodyKind::UntilClose
        };
        return Ok(Some((head, offset)));
    }
}

/// Render a request head. `extra` headers are pre-rendered `Name: value\r\n` lines.
pub fn request_head(
    out: &mut Vec<u8>,
    method: &str,
    path: &str,
    extra: &[u8],
    request_id: &str,
    body_len: usize,
) {
    use std::io::Write;
    let _ = write!(out, "{method} {path} HTTP/1.1\r\n");
    out.extend_from_slice(extra);
    let _ = write!(
        out,
        "x-request-id: {request_id}\r\ncontent-length: {body_len}\r\n\r\n"
    );
}

/// Incremental body decoder: feeds the payload bytes of a chunked,
/// length-delimited or close-delimited body, however the reads split it.
#[derive(Debug)]
pub struct BodyDecoder {
    kind: BodyKind,
    state: ChunkState,
    remaining: u64,
    size: u64,
    size_digits: usize,
    done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ChunkState {
    Size,
    /// Skipping a chunk extension up to the line end.
    Extension,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// Trailer lines after the last chunk; `bool`: the current line is empty so far.
    Trailer(bool),
    TrailerLf(bool),
}

impl BodyDecoder {
    pub fn new(kind: BodyKind) -> Self {
        let remaining = match kind {
            BodyKind::Length(n) => n,
            _ => 0,
        };
        BodyDecoder {
            kind,
            state: ChunkState::Size,
            remaining,
            size: 0,
            size_digits: 0,
            done: matches!(kind, BodyKind::Length(0)),
        }
    }

    /// The body is complete.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The connection's end of stream arrived: fine for a close-delimited body.
    pub fn eof(&mut self) -> bool {
        if self.kind == BodyKind::UntilClose {
            self.done = true;
        }
        self.done
    }

    /// Decode from `input`, handing payload slices to `out`. Returns the
    /// number of bytes consumed (all of them, unless the body ended first).
    pub fn decode(&mut self, input: &[u8], mut out: impl FnMut(&[u8])) -> Result<usize, String> {
        if input.is_empty() || self.done {
            return Ok(0);
        }
        match self.kind {
            BodyKind::UntilClose => {
                out(input);
                Ok(input.len())
            }
            BodyKind::Length(_) => {
                let take = input.len().min(self.remaining as usize);
                out(&input[..take]);
                self.remaining -= take as u64;
                self.done = self.remaining == 0;
                Ok(take)
            }
            BodyKind::Chunked => self.decode_chunked(input, out),
        }
    }

    /// Decode a chunked body's framing byte by byte (sizes, extensions,
    /// trailers), handing each chunk's data to `out`. Returns the bytes
    /// consumed.
    #[inline]
    fn decode_chunked(
        &mut self,
        input: &[u8],
        mut out: impl FnMut(&[u8]),
    ) -> Result<usize, String> {
        let mut i = 0;
        while i < input.len() && !self.done {
            let b = input[i];
            match self.state {
                ChunkState::Size => {
                    i += 1;
                    match (b as char).to_digit(16) {
                        Some(d) if self.size_digits < 16 => {
                            self.size = self.size * 16 + d as u64;
                            self.size_digits += 1;
                        }
                        Some(_) => return Err("chunk size too large".into()),
                        None if self.size_digits == 0 => {
                            return Err(format!("invalid chunk size byte 0x{b:02x}"))
                        }
                        None if b == b'\r' => self.state = ChunkState::SizeLf,
                        None if b == b'\n' => self.after_size(),
                        None if b == b';' || b == b' ' || b == b'\t' => {
                            self.state = ChunkState::Extension
                        }
                        None => return Err(format!("invalid chunk size byte 0x{b:02x}")),
                    }
                }
                ChunkState::Extension => {
                    i += 1;
                    if b == b'\r' {
                        self.state = ChunkState::SizeLf;
                    } else if b == b'\n' {
                        self.after_size();
                    }
                }
                ChunkState::SizeLf => {
                    i += 1;
                    if b != b'\n' {
                        return Err("chunk size line not ended by CRLF".into());
                    }
                    self.after_size();
                }
                ChunkState::Data => {
                    let take = (input.len() - i).min(self.remaining as usize);
                    out(&input[i..i + take]);
                    i += take;
                    self.remaining -= take as u64;
                    if self.remaining == 0 {
                        self.state = ChunkState::DataCr;
                    }
                }
                ChunkState::DataCr => {
                    i += 1;
                    match b {
                        b'\r' => self.state = ChunkState::DataLf,
                        b'\n' => self.next_chunk(),
                        _ => return Err("chunk data not followed by CRLF".into()),
                    }
                }
                ChunkState::DataLf => {
                    i += 1;
                    if b != b'\n' {
                        return Err("chunk data not followed by CRLF".into());
                    }
                    self.next_chunk();
                }
                ChunkState::Trailer(empty) => {
                    i += 1;
                    match b {
                        b'\r' => self.state = ChunkState::TrailerLf(empty),
                        b'\n' if empty => self.done = true,
                        b'\n' => self.state = ChunkState::Trailer(true),
                        _ => self.state = ChunkState::Trailer(false),
                    }
                }
                ChunkState::TrailerLf(empty) => {
                    i += 1;
                    if b != b'\n' {
                        return Err("trailer line not ended by CRLF".into());
                    }
                    if empty {
                        self.done = true;
                    } else {
                        self.state = ChunkState::Trailer(true);
                    }
                }
            }
        }
        Ok(i)
    }

    fn after_size(&mut self) {
        if self.size == 0 {
            self.state = ChunkState::Trailer(true);
        } else {
            self.remaining = self.size;
            self.state = ChunkState::Data;
        }
    }

    fn next_chunk(&mut self) {
        self.size = 0;
        self.size_digits = 0;
        self.state = ChunkState::Size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_parse_and_interim_heads_are_skipped() {
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\nhi";
        let (h, n) = parse_head(raw).unwrap().unwrap();
        assert_eq!(
            (h.status, h.retry_after.as_deref(), h.body, h.close),
            (503, Some("7"), BodyKind::Length(2), false)
        );
        assert_eq!(&raw[n..], b"hi");
        let (h, _) = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!((h.body, h.close), (BodyKind::Chunked, true));
        let (h, _) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.body, h.close), (BodyKind::UntilClose, true));
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Len").unwrap(), None);
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        let (h, _) = parse_head(b"HTTP/1.1 302 Found\r\nContent-Type: Text/HTML; charset=utf-8\r\nLocation: https://example.com/login\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                h.media_type().as_deref(),
                h.is_html(),
                h.location.as_deref()
            ),
            (Some("text/html"), true, Some("https://example.com/login"))
        );
        let (h, _) = parse_head(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (h.media_type().as_deref(), h.is_html()),
            (Some("text/event-stream"), false)
        );
    }

    fn decode_all(kind: BodyKind, parts: &[&[u8]]) -> (Vec<u8>, bool, usize) {
        let mut d = BodyDecoder::new(kind);
        let mut out = Vec::new();
        let mut consumed = 0;
        for p in parts {
            consumed += d.decode(p, |s| out.extend_from_slice(s)).unwrap();
        }
        (out, d.is_done(), consumed)
    }

    #[test]
    fn chunked_split_at_every_byte() {
        let body = b"7\r\ndata: a\r\n1;ext=1\r\n\n\r\n0\r\nX-Trailer: 1\r\n\r\n";
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            let (out, done, consumed) = decode_all(BodyKind::Chunked, &[a, b]);
            assert_eq!(out, b"data: a\n", "cut {cut}");
            assert!(done, "cut {cut}");
            assert_eq!(consumed, body.len());
        }
    }

    #[test]
    fn chunked_stops_at_its_end_and_leaves_the_rest() {
        let mut d = BodyDecoder::new(BodyKind::Chunked);
        let input = b"3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK";
        let mut out = Vec::new();
        let n = d.decode(input, |s| out.extend_from_slice(s)).unwrap();
        assert_eq!(
            (out.as_slice(), d.is_done(), &input[n..]),
            (&b"abc"[..], true, &b"HTTP/1.1 200 OK"[..])
        );
    }

    #[test]
    fn bad_chunk_sizes_are_errors() {
        let mut d = BodyDecoder::new(BodyKind::Chunked);
        assert!(d.decode(b"zz\r\n", |_| {}).is_err());
        let mut d = BodyDecoder::new(BodyKind::Chunked);
        assert!(d.decode(b"2\r\nabX", |_| {}).is_err());
    }

    #[test]
    fn length_and_close_delimited() {
        let (out, done, consumed) = decode_all(BodyKind::Length(5), &[b"he", b"llo, extra"]);
        assert_eq!((out.as_slice(), done, consumed), (&b"hello"[..], true, 5));
        let mut d = BodyDecoder::new(BodyKind::UntilClose);
        let mut out = Vec::new();
        d.decode(b"abc", |s| out.extend_from_slice(s)).unwrap();
        assert!(!d.is_done());
        assert!(d.eof());
        assert_eq!(out, b"abc");
        assert!(!BodyDecoder::new(BodyKind::Chunked).eof());
    }
}
