//! The hyper client: what a general-purpose HTTP client costs on the same
//! work as the bytes-only floor ([`crate::bytes_client`]).
//!
//! The same connections and requests as the bytes-only client (N keep-alive
//! connections on a 2-worker runtime, each sending its share of the
//! requests one after another, the same body), written as a straightforward
//! hyper user would: `hyper::client::conn::http1` with its connection
//! driven by a task of its own, the request sent and its streamed body read
//! frame by frame (`BodyExt::frame`) in the connection's request task. Per
//! frame it reads the clock once and counts SSE events by finding `data: `
//! (memchr), a match split between two frames included; no JSON, no SSE
//! parsing: no more work per event than the bytes-only client does, so the
//! difference between the two is what going through hyper costs (the
//! connection task decodes the chunked body and hands each chunk to the
//! request task, a second wake-up per event).
//!
//! Timings as the bytes-only client's: `CLOCK_MONOTONIC` right before
//! `send_request`, and at the frame that brought the end of the first SSE
//! event; `x-request-id` is `hyper-<request_id>`.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use memchr::memmem;
use tokio::net::TcpStream;

use crate::clients::{self, ClientConfig, ClientSummary, Connection, Timing};
use crate::clock::monotonic_ns;

/// Marks the start of an SSE data line.
const DATA: &[u8] = b"data: ";
/// The end of an SSE event.
const EVENT_END: &[u8] = b"\n\n";
/// Bytes of a frame kept for the next one: one less than the longest
/// pattern, so a pattern split between two frames is still found.
const TAIL: usize = DATA.len() - 1;

/// Runs the client on its own 2-worker runtime and returns what it saw.
pub fn run(config: &ClientConfig) -> anyhow::Result<ClientSummary> {
    clients::run(config, "hyper", clients::Runtime::TwoWorkers, connection)
}

/// The request half of one hyper connection; `None` until connected and
/// after a failed request (the next one reconnects).
type Sender = http1::SendRequest<Full<Bytes>>;

/// One keep-alive connection sending its share of the requests in
/// sequence; reconnects after a failed one.
async fn connection(c: Connection) -> (ClientSummary, Vec<Timing>) {
    let body = Bytes::from(c.body.clone());
    let mut summary = ClientSummary::default();
    let mut timings = Vec::with_capacity(c.share);
    let mut sender: Option<Sender> = None;
    for seq in 0..c.share {
        summary.requests += 1;
        let request_id = c.request_id(seq);
        let mut send_ns = 0;
        let mut first_event_ns = None;
        let result = async {
            if sender.is_none() {
                sender = Some(connect(c.addr).await?);
            }
            let s = sender
                .as_mut()
                .ok_or_else(|| anyhow::anyhow!("no connection"))?;
            let request = http::Request::post("/v1/completions")
                .header(http::header::HOST, c.addr.to_string())
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::ACCEPT, "text/event-stream")
                .header("x-request-id", format!("hyper-{request_id}"))
                .body(Full::new(body.clone()))?;
            s.ready().await?;
            send_ns = monotonic_ns();
            let response = s.send_request(request).await?;
            read_response(response, &mut first_event_ns).await
        }
        .await;
        timings.push(Timing {
            request_id,
            ok: result.is_ok(),
            send_ns,
            first_event_ns,
            last_event_ns: None,
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
                summary.first_error.get_or_insert_with(|| format!("{e:#}"));
                sender = None;
            }
        }
    }
    (summary, timings)
}

/// A new connection: the handshake, and its connection task spawned.
async fn connect(addr: std::net::SocketAddr) -> anyhow::Result<Sender> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        // Its error, if any, is the request's too: reported there.
        let _ = connection.await;
    });
    Ok(sender)
}

/// Reads one streamed response to its end, frame by frame; `first_event_ns`
/// becomes the time of the frame that brought the end of the first event.
async fn read_response(
    response: http::Response<hyper::body::Incoming>,
    first_event_ns: &mut Option<u64>,
) -> anyhow::Result<FrameScan> {
    anyhow::ensure!(
        response.status() == http::StatusCode::OK,
        "status {}",
        response.status()
    );
    let mut body = response.into_body();
    let mut scanner = FrameScanner::default();
    while let Some(frame) = body.frame().await {
        let frame = frame?;
        let now = monotonic_ns();
        let Some(data) = frame.data_ref() else {
            continue;
        };
        let before = scanner.first_event_ended();
        scanner.feed(data);
        if !before && scanner.first_event_ended() {
            *first_event_ns = Some(now);
        }
    }
    Ok(scanner.scan())
}

/// What one response held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FrameScan {
    events: u64,
    bytes: u64,
}

/// Where the scanner is with the response's first event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum FirstEvent {
    /// No `data: ` seen yet.
    #[default]
    NotSeen,
    /// Started, its end (`\n\n`) not seen yet.
    Open,
    /// Its end has been read.
    Ended,
}

/// Counts `data: ` in a body that arrives in frames, and finds the end of
/// the first event; a pattern split between two frames is found through
/// the previous frame's last bytes (`tail`), never by copying a frame.
#[derive(Debug, Default)]
struct FrameScanner {
    events: u64,
    bytes: u64,
    first: FirstEvent,
    tail: [u8; TAIL],
    tail_len: usize,
}

impl FrameScanner {
    fn first_event_ended(&self) -> bool {
        self.first == FirstEvent::Ended
    }

    fn scan(&self) -> FrameScan {
        FrameScan {
            events: self.events,
            bytes: self.bytes,
        }
    }

    /// One data frame.
    fn feed(&mut self, frame: &[u8]) {
        self.bytes += frame.len() as u64;
        let was_open = self.first == FirstEvent::Open;
        // The previous frame's tail and this frame's head: matches that start
        // in the tail are the ones split between the two frames.
        let mut joint = [0u8; 2 * TAIL];
        let head = &frame[..frame.len().min(TAIL)];
        joint[..self.tail_len].copy_from_slice(&self.tail[..self.tail_len]);
        joint[self.tail_len..self.tail_len + head.len()].copy_from_slice(head);
        let joint = &joint[..self.tail_len + head.len()];
        // Where, in this frame, the first event's end is searched from.
        let mut open_from = 0;
        let split = memmem::find_iter(joint, DATA)
            .filter(|&at| at < self.tail_len)
            .map(|at| at + DATA.len() - self.tail_len);
        for end in split.chain(memmem::find_iter(frame, DATA).map(|at| at + DATA.len())) {
            if self.first == FirstEvent::NotSeen {
                self.first = FirstEvent::Open;
                open_from = end;
            }
            self.events += 1;
        }
        if self.first == FirstEvent::Open {
            let split_end =
                was_open && memmem::find_iter(joint, EVENT_END).any(|at| at < self.tail_len);
            if split_end || memmem::find(&frame[open_from..], EVENT_END).is_some() {
                self.first = FirstEvent::Ended;
            }
        }
        self.keep_tail(frame);
    }

    /// Keep the last bytes of everything fed so far, for the next frame.
    fn keep_tail(&mut self, frame: &[u8]) {
        if frame.len() >= TAIL {
            self.tail.copy_from_slice(&frame[frame.len() - TAIL..]);
            self.tail_len = TAIL;
            return;
        }
        let keep = (TAIL - frame.len()).min(self.tail_len);
        self.tail
            .copy_within(self.tail_len - keep..self.tail_len, 0);
        self.tail[keep..keep + frame.len()].copy_from_slice(frame);
        self.tail_len = keep + frame.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of `events` content events, a usage-less `[DONE]` at the end.
    fn sample_body(events: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..events {
            out.extend_from_slice(format!("data: {{\"text\":\" w{i}\"}}\n\n").as_bytes());
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
        out
    }

    #[test]
    fn counts_every_event_whatever_the_frame_sizes() {
        let body = sample_body(50);
        for piece in [1, 2, 3, 4, 5, 6, 7, 13, 64, 4096] {
            let mut scanner = FrameScanner::default();
            for frame in body.chunks(piece) {
                scanner.feed(frame);
            }
            let scan = scanner.scan();
            assert_eq!(scan.events, 51, "frames of {piece}");
            assert_eq!(scan.bytes, body.len() as u64);
        }
    }

    #[test]
    fn first_event_ends_in_the_frame_that_brings_its_blank_line() {
        let body = sample_body(5);
        let end = memmem::find(&body, EVENT_END).unwrap() + EVENT_END.len();
        for piece in [1, 2, 3, 5, 7, 64] {
            let mut scanner = FrameScanner::default();
            let mut ended_in = None;
            for (i, frame) in body.chunks(piece).enumerate() {
                scanner.feed(frame);
                if ended_in.is_none() && scanner.first_event_ended() {
                    ended_in = Some((i * piece, i * piece + frame.len()));
                }
            }
            let (before, after) = ended_in.expect("first event ended");
            assert!(
                before < end && end <= after,
                "frames of {piece}: ended in {before}..{after}, event ends at {end}"
            );
        }
    }

    #[test]
    fn a_blank_line_before_the_first_event_does_not_end_it() {
        let mut scanner = FrameScanner::default();
        scanner.feed(b": ping\n");
        scanner.feed(b"\ndata: x");
        assert!(!scanner.first_event_ended());
        scanner.feed(b"\n\n");
        assert!(scanner.first_event_ended());
        assert_eq!(scanner.scan().events, 1);
    }
}
