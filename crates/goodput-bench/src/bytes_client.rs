//! The bytes-only client: the physical floor of streaming-client cost.
//!
//! N keep-alive connections, each one task sending its share of the
//! requests one after another, on a one-thread tokio runtime: no work
//! stealing and no wake-ups across threads, the leanest a tokio client
//! runs. A response is read with one `read` per readiness event into a
//! fixed buffer and only scanned: SSE events are counted by finding `data: ` (memchr), and the
//! response ends at the chunked-encoding terminator. No HTTP parsing beyond the
//! status line, no JSON. Whatever goodput spends above this is the price of
//! its measurements.
//!
//! For the accuracy tables it keeps two timestamps per request, both on
//! `CLOCK_MONOTONIC`: right before the request is written, and right after
//! the read that brought the end of the first SSE event (the first token).
//! The clock is read after each read only until that event has ended: two or
//! three clock reads per request; after it, one clock read per read that
//! brought the start of an event (issue 22: the floor's TPOT; a vDSO clock
//! read, tens of ns against the µs an event costs), of which the last three
//! are kept to find the read that brought the last content event (the one
//! before the usage event and `[DONE]`). With `--timings FILE` they are
//! written at the end, one JSON line per request in the shape of goodput's
//! records (`request_id`, `ok`, `send_s`, `ttft_ms`, `last_event_ms`; `send_s` counts from the
//! summary's `clock_origin_monotonic_ns`), and the request's
//! `x-request-id` is `bytes-<request_id>`.

use std::io::Write as _;
use std::net::SocketAddr;

use memchr::memmem;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::clients::{self, ClientConfig, ClientSummary, Connection, Timing};
use crate::clock::monotonic_ns;

/// Marks the start of an SSE data line.
const DATA: &[u8] = b"data: ";
/// The end of a chunked body: the zero-size last chunk and an empty trailer.
/// No chunk-size line or JSON payload can contain it.
const END: &[u8] = b"\r\n0\r\n\r\n";
/// Read buffer per connection: 64 KB, so that a read under load takes all
/// the socket holds in one call.
const READ_BUFFER: usize = 64 * 1024;
/// The end of an SSE event.
const EVENT_END: &[u8] = b"\n\n";

/// Runs the client on its own 2-worker runtime and returns what it saw.
pub fn run(config: &ClientConfig) -> anyhow::Result<ClientSummary> {
    clients::run(config, "bytes", clients::Runtime::OneThread, connection)
}

/// One keep-alive connection sending its share of the requests in
/// sequence; reconnects after a failed one.
async fn connection(c: Connection) -> (ClientSummary, Vec<Timing>) {
    let (addr, body) = (c.addr, &c.body);
    let mut summary = ClientSummary::default();
    let mut timings = Vec::with_capacity(c.share);
    let mut buf = vec![0u8; READ_BUFFER];
    let mut request = Vec::with_capacity(body.len() + 256);
    let mut stream: Option<TcpStream> = None;
    for seq in 0..c.share {
        summary.requests += 1;
        let request_id = c.request_id(seq);
        request.clear();
        write_request(&mut request, addr, request_id, body);
        let mut send_ns = 0;
        let mut first_event_ns = None;
        let mut last_event_ns = None;
        let result = async {
            if stream.is_none() {
                let s = TcpStream::connect(addr).await?;
                s.set_nodelay(true)?;
                stream = Some(s);
            }
            let s = stream
                .as_mut()
                .ok_or_else(|| std::io::Error::other("no connection"))?;
            send_ns = monotonic_ns();
            s.write_all(&request).await?;
            read_response(s, &mut buf, &mut first_event_ns, &mut last_event_ns).await
        }
        .await;
        timings.push(Timing {
            request_id,
            ok: result.is_ok(),
            send_ns,
            first_event_ns,
            last_event_ns,
            sched_ns: None,
            warmup: false,
        });
        match result {
            Ok(scan) => {
                summary.ok += 1;
                summary.data_events += scan.events;
                summary.bytes += scan.bytes;
            }
            Err(e) => {
                summary.failed += 1;
                summary.first_error.get_or_insert_with(|| e.to_string());
                stream = None;
            }
        }
    }
    (summary, timings)
}

/// The floor's request: the completions request with its body, its
/// `x-request-id` `bytes-<request_id>`.
pub(crate) fn write_request(out: &mut Vec<u8>, addr: SocketAddr, request_id: u64, body: &str) {
    let _ = write!(
        out,
        "POST /v1/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\nx-request-id: bytes-{request_id}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
}

/// What one response held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseScan {
    pub(crate) events: u64,
    pub(crate) bytes: u64,
}

/// Reads one streamed response to its terminator, counting `data: ` lines;
/// `first_event_ns` becomes the time right after the read that brought the
/// end of the first event (`CLOCK_MONOTONIC` ns), `last_event_ns` the time
/// of the read that brought the start of the last content event.
pub(crate) async fn read_response(
    stream: &mut TcpStream,
    buf: &mut [u8],
    first_event_ns: &mut Option<u64>,
    last_event_ns: &mut Option<u64>,
) -> std::io::Result<ResponseScan> {
    let mut scanner = Scanner::new();
    let mut filled = 0;
    // (events counted after the read, its time) of the last three reads that
    // brought an event start, oldest first.
    let mut recent = [(0u64, 0u64); 3];
    loop {
        if filled == buf.len() {
            filled = scanner.shift(buf, filled);
        }
        let n = stream.read(&mut buf[filled..]).await?;
        // One clock read per read, and only until the first event has ended.
        let now = (!scanner.first_event_ended()).then(monotonic_ns);
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
        let before = scanner.events;
        let result = scanner.scan(buf, filled, n)?;
        if now.is_some() && scanner.first_event_ended() {
            *first_event_ns = now;
        }
        if scanner.events > before {
            recent.rotate_left(1);
            recent[2] = (scanner.events, now.unwrap_or_else(monotonic_ns));
        }
        if let Some(scan) = result {
            *last_event_ns = last_content_event(&recent, scan.events);
            return Ok(scan);
        }
    }
}

/// The time of the read that brought the start of the last content event,
/// from the last three reads that brought event starts (`recent`, oldest
/// first, `(events counted after it, time)`), when the response held `events`
/// events: its tokens, then the usage event and `[DONE]`. Each of those reads
/// brought at least one event, so the read that brought event `events − 2` is
/// among the three.
fn last_content_event(recent: &[(u64, u64); 3], events: u64) -> Option<u64> {
    let target = events.checked_sub(2).filter(|&t| t > 0)?;
    recent
        .iter()
        .find(|&&(counted, _)| counted >= target)
        .map(|&(_, at)| at)
}

/// Where the scanner is with the response's first event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstEvent {
    /// No `data: ` seen yet.
    NotSeen,
    /// Started; its end (`\n\n`) is searched from this index on.
    Open { from: usize },
    /// Its end has been read.
    Ended,
}

/// Incremental search for event starts and the body's end in a byte stream
/// that arrives in pieces; a pattern split across two reads is still found.
struct Scanner {
    data: memmem::Finder<'static>,
    end: memmem::Finder<'static>,
    data_from: usize,
    end_from: usize,
    status_checked: bool,
    events: u64,
    bytes: u64,
    first: FirstEvent,
}

/// Bytes kept when the buffer is full: enough for a partial match of either pattern.
const KEEP: usize = 8;

impl Scanner {
    fn new() -> Self {
        Self {
            data: memmem::Finder::new(DATA),
            end: memmem::Finder::new(END),
            data_from: 0,
            end_from: 0,
            status_checked: false,
            events: 0,
            bytes: 0,
            first: FirstEvent::NotSeen,
        }
    }

    /// Whether the end of the first event has been scanned.
    fn first_event_ended(&self) -> bool {
        self.first == FirstEvent::Ended
    }

    /// Moves the last few bytes to the front of a full buffer; returns the new fill.
    fn shift(&mut self, buf: &mut [u8], filled: usize) -> usize {
        let start = filled - KEEP;
        buf.copy_within(start..filled, 0);
        self.data_from = self.data_from.saturating_sub(start);
        self.end_from = self.end_from.saturating_sub(start);
        if let FirstEvent::Open { from } = &mut self.first {
            *from = from.saturating_sub(start);
        }
        KEEP
    }

    /// Scans the bytes up to `filled` (of which `new` just arrived); returns
    /// the totals once the terminator has been seen.
    fn scan(
        &mut self,
        buf: &[u8],
        filled: usize,
        new: usize,
    ) -> std::io::Result<Option<ResponseScan>> {
        self.bytes += new as u64;
        if !self.status_checked && filled >= 12 {
            if !buf.starts_with(b"HTTP/1.1 200") {
                let line = buf[..filled.min(40)]
                    .split(|&b| b == b'\r')
                    .next()
                    .unwrap_or_default();
                return Err(std::io::Error::other(format!(
                    "status line {:?}",
                    String::from_utf8_lossy(line)
                )));
            }
            self.status_checked = true;
        }
        let window = &buf[self.data_from..filled];
        let mut next_from = self.data_from;
        for pos in self.data.find_iter(window) {
            next_from = self.data_from + pos + DATA.len();
            if self.events == 0 {
                self.first = FirstEvent::Open { from: next_from };
            }
            self.events += 1;
        }
        self.data_from = next_from.max(filled.saturating_sub(DATA.len() - 1));
        if let FirstEvent::Open { from } = self.first {
            self.first = match memmem::find(&buf[from..filled], EVENT_END) {
                Some(_) => FirstEvent::Ended,
                None => FirstEvent::Open {
                    from: from.max(filled.saturating_sub(EVENT_END.len() - 1)),
                },
            };
        }
        if self.end.find(&buf[self.end_from..filled]).is_some() {
            return Ok(Some(ResponseScan {
                events: self.events,
                bytes: self.bytes,
            }));
        }
        self.end_from = filled.saturating_sub(END.len() - 1);
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `stream` through a scanner `piece` bytes at a time with a small buffer.
    fn scan_in_pieces(stream: &[u8], piece: usize, buffer: usize) -> Option<ResponseScan> {
        let mut scanner = Scanner::new();
        let mut buf = vec![0u8; buffer];
        let mut filled = 0;
        let mut rest = stream;
        while !rest.is_empty() {
            if filled == buf.len() {
                filled = scanner.shift(&mut buf, filled);
            }
            let n = piece.min(rest.len()).min(buf.len() - filled);
            buf[filled..filled + n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            filled += n;
            if let Some(scan) = scanner.scan(&buf, filled, n).unwrap() {
                return Some(scan);
            }
        }
        None
    }

    fn sample_response(events: usize) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        for i in 0..events {
            let payload = format!("data: {{\"text\":\" w{i}\"}}\n\n");
            out.extend_from_slice(format!("{:x}\r\n{payload}\r\n", payload.len()).as_bytes());
        }
        out.extend_from_slice(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
        out
    }

    #[test]
    fn counts_every_event_whatever_the_read_sizes() {
        let response = sample_response(50);
        for piece in [1, 2, 3, 5, 7, 13, 64, 4096] {
            for buffer in [16, 40, 4096] {
                let scan = scan_in_pieces(&response, piece, buffer)
                    .unwrap_or_else(|| panic!("no end found (piece {piece}, buffer {buffer})"));
                assert_eq!(scan.events, 51, "piece {piece}, buffer {buffer}");
                assert_eq!(scan.bytes, response.len() as u64);
            }
        }
    }

    #[test]
    fn first_event_ends_at_the_read_that_brings_its_blank_line() {
        let response = sample_response(5);
        let data = memmem::find(&response, DATA).unwrap();
        let end = data + memmem::find(&response[data..], EVENT_END).unwrap() + EVENT_END.len();
        for piece in [1, 2, 3, 7, 64, 4096] {
            for buffer in [16, 40, 4096] {
                let mut scanner = Scanner::new();
                let mut buf = vec![0u8; buffer];
                let (mut filled, mut consumed) = (0, 0);
                // (bytes before, bytes after) the read in which the first event ended.
                let mut ended_in = None;
                while consumed < response.len() {
                    if filled == buf.len() {
                        filled = scanner.shift(&mut buf, filled);
                    }
                    let n = piece.min(response.len() - consumed).min(buf.len() - filled);
                    buf[filled..filled + n].copy_from_slice(&response[consumed..consumed + n]);
                    consumed += n;
                    filled += n;
                    let done = scanner.scan(&buf, filled, n).unwrap();
                    if ended_in.is_none() && scanner.first_event_ended() {
                        ended_in = Some((consumed - n, consumed));
                    }
                    if done.is_some() {
                        break;
                    }
                }
                let (before, after) = ended_in.expect("first event ended");
                // The read that brought the event's last byte, not earlier or later.
                assert!(
                    before < end && end <= after,
                    "piece {piece}, buffer {buffer}: ended in {before}..{after}, event ends at {end}"
                );
            }
        }
    }

    #[test]
    fn the_last_content_event_is_found_among_the_last_three_reads() {
        // Token 5 of 5 alone, then usage and [DONE] together.
        assert_eq!(
            last_content_event(&[(4, 40), (5, 50), (7, 60)], 7),
            Some(50)
        );
        // The last token, usage and [DONE] in one read.
        assert_eq!(
            last_content_event(&[(2, 20), (3, 30), (6, 60)], 6),
            Some(60)
        );
        // Each in its own read.
        assert_eq!(
            last_content_event(&[(5, 50), (6, 60), (7, 70)], 7),
            Some(50)
        );
        // Everything in one read; no tokens at all.
        assert_eq!(last_content_event(&[(0, 0), (0, 0), (3, 9)], 3), Some(9));
        assert_eq!(last_content_event(&[(0, 0), (0, 0), (2, 9)], 2), None);
    }

    #[test]
    fn an_unfinished_body_does_not_end() {
        let response = sample_response(3);
        assert_eq!(scan_in_pieces(&response[..response.len() - 1], 5, 64), None);
    }

    #[test]
    fn non_200_is_an_error() {
        let mut scanner = Scanner::new();
        let buf = b"HTTP/1.1 404 Not Found\r\n\r\n";
        assert!(scanner.scan(buf, buf.len(), buf.len()).is_err());
    }
}
