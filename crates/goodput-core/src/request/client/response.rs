//! Reading one response: its head, its body, a stream's events into the
//! record, and — for an answer that is not a success — what it said, in the
//! kind and the words a user can act on. Every read goes through a
//! [`Reader`], so a timeout or a cancel (the watchdog shutting the socket
//! down) is reported as such instead of as a broken stream.

use std::time::Duration;

use crate::request::clock::RunClock;
use crate::request::protocol::chunk::Chunk;
use crate::request::protocol::Endpoint;
use crate::request::record::{ErrorKind, Event, RequestError, RequestRecord};

use super::h1::{BodyDecoder, BodyKind, Conn, Head};
use super::sse::{self, SseParser};
use super::typed::{on_typed_event, whole_typed, ToolSlots, Typed};
use super::watchdog::{Fired, Guard};

pub(super) fn err(kind: ErrorKind, message: String) -> RequestError {
    RequestError {
        kind,
        message,
        retry_after: None,
    }
}

/// Reads of one request. Timeouts and cancellation come from the
/// [`Watchdog`], which shuts the socket down; a read then ends and the
/// reason is reported instead of a broken stream.
pub(super) struct Reader {
    clock: RunClock,
    /// The registration; dropped (deregistered) before the connection is
    /// reused (explicitly) or closed (it is declared after the connection, so
    /// it drops first).
    guard: Option<Guard>,
    /// Bytes read so far on this request.
    bytes: usize,
}

impl Reader {
    pub(super) fn new(clock: RunClock, guard: Option<Guard>) -> Self {
        Reader {
            clock,
            guard,
            bytes: 0,
        }
    }

    /// No byte of the response arrived and the watchdog did not stop it.
    pub(super) fn nothing_received(&self) -> bool {
        self.bytes == 0 && self.fired().is_none()
    }

    fn fired(&self) -> Option<Fired> {
        self.guard.as_ref().and_then(|g| g.watch.fired())
    }

    /// The error for a failed read or write: the watchdog's reason if it
    /// stopped the request, else a broken stream.
    pub(super) fn failure(&self, message: String) -> RequestError {
        match self.fired() {
            Some(f) => fired_error(f),
            None => err(ErrorKind::StreamCut, message),
        }
    }

    /// One read; returns the bytes read (0 at end of stream) and when.
    async fn read(&mut self, conn: &mut Conn) -> Result<(usize, u64), RequestError> {
        let r = conn.fill().await;
        let at = self.clock.now_ns();
        match r {
            Ok(n) if n > 0 && self.fired().is_none() => {
                if let Some(g) = &self.guard {
                    g.watch.touch(at);
                }
                self.bytes += n;
                Ok((n, at))
            }
            Ok(n) => match self.fired() {
                Some(f) => Err(fired_error(f)),
                None => Ok((n, at)),
            },
            Err(e) if self.bytes == 0 => Err(self.failure(format!(
                "connection broken before any byte of the response: {e}"
            ))),
            Err(e) => Err(self.failure(format!("connection broken: {e}"))),
        }
    }
}

pub(super) fn fired_error(f: Fired) -> RequestError {
    let message = match f {
        Fired::TotalTimeout => "total timeout reached".to_string(),
        Fired::IdleTimeout => "no bytes for the idle timeout".to_string(),
        Fired::Cancelled => "cancelled by the user".to_string(),
        Fired::Incomplete => "still running when the drain timeout ended the run".to_string(),
    };
    err(f.kind(), message)
}

/// Read until a complete response head; returns it and when it arrived.
pub(super) async fn read_head(
    conn: &mut Conn,
    timer: &mut Reader,
) -> Result<(Head, u64), RequestError> {
    let mut at = timer.clock.now_ns();
    loop {
        match conn.parse_head() {
            Ok(Some(head)) => return Ok((head, at)),
            Ok(None) => {}
            Err(e) => return Err(err(ErrorKind::Malformed, e)),
        }
        let (n, t) = timer.read(conn).await?;
        at = t;
        if n == 0 {
            return Err(err(
                ErrorKind::StreamCut,
                "connection closed before the response head".into(),
            ));
        }
    }
}

/// Read a whole (non-streamed) body, keeping at most `limit` bytes.
pub(super) async fn read_body(
    conn: &mut Conn,
    head: &Head,
    timer: &mut Reader,
    limit: usize,
) -> Result<Vec<u8>, RequestError> {
    let mut decoder = BodyDecoder::new(head.body);
    let mut body = Vec::new();
    loop {
        let n = decoder
            .decode(conn.buffered(), |d| {
                let room = limit.saturating_sub(body.len());
                body.extend_from_slice(&d[..d.len().min(room)]);
            })
            .map_err(|e| err(ErrorKind::Malformed, e))?;
        conn.consume(n);
        if decoder.is_done() {
            return Ok(body);
        }
        let (read, _) = timer.read(conn).await?;
        if read == 0 {
            if decoder.eof() {
                return Ok(body);
            }
            return Err(err(
                ErrorKind::StreamCut,
                "connection closed mid-body".into(),
            ));
        }
    }
}

/// Read a streamed (SSE) response into `rec`. Returns whether the body was
/// read to its end (so the connection may be reused).
pub(super) async fn read_stream(
    conn: &mut Conn,
    head: &Head,
    timer: &mut Reader,
    rec: &mut RequestRecord,
    endpoint: Endpoint,
) -> Result<bool, RequestError> {
    let mut decoder = BodyDecoder::new(head.body);
    let mut parser = SseParser::new();
    let mut state = StreamState {
        endpoint,
        ..Default::default()
    };
    reserve_answer(rec);
    let mut at = rec.t_head.or(rec.t_send).unwrap_or_default();
    let mut body_bytes = 0usize;
    // A body whose type says it is no event stream keeps its start: if no
    // event comes, it is read as a whole answer (an error object, a quote).
    let other_type = head.media_type().filter(|t| t != "text/event-stream");
    let mut kept = Vec::new();
    loop {
        let n = decoder
            .decode(conn.buffered(), |data| {
                body_bytes += data.len();
                if other_type.is_some() && kept.len() < KEPT {
                    kept.extend_from_slice(&data[..data.len().min(KEPT - kept.len())]);
                }
                parser.feed(data, |ev| state.on_event(ev, at, rec))
            })
            .map_err(|e| {
                err(
                    ErrorKind::Malformed,
                    format!("invalid chunked encoding: {e}"),
                )
            })?;
        conn.consume(n);
        if let Some(e) = state.failure.take() {
            rec.t_done = at;
            return Err(e);
        }
        if parser.overflowed() {
            rec.t_done = at;
            return Err(err(
                ErrorKind::Malformed,
                format!(
                    "an event or line longer than {} MiB without an end: not an SSE stream",
                    sse::MAX_EVENT >> 20
                ),
            ));
        }
        if state.done && rec.t_done == 0 {
            rec.t_done = at;
        }
        if decoder.is_done() {
            break;
        }
        if state.done {
            // [DONE] seen; the body's terminator normally came with it. Wait
            // briefly for it so the connection can be reused, else drop it.
            match tokio::time::timeout(Duration::from_millis(50), timer.read(conn)).await {
                Ok(Ok((r, _))) if r > 0 => continue,
                _ => return Ok(false),
            }
        }
        let (read, t) = timer.read(conn).await?;
        at = t;
        if read == 0 {
            decoder.eof();
            break;
        }
    }
    if !state.done {
        parser.finish(|ev| state.on_event(ev, at, rec));
        rec.t_done = at;
        if let Some(e) = state.failure.take() {
            return Err(e);
        }
        if !state.done && rec.finish_reason.is_none() {
            if state.events == 0 {
                let framed_end = decoder.is_done();
                if let Some(e) =
                    no_event(head, other_type.as_deref(), &kept, body_bytes, framed_end)
                {
                    return Err(e);
                }
            }
            return Err(err(
                ErrorKind::StreamCut,
                format!(
                    "stream ended after {} content events without {}",
                    rec.events.len(),
                    end_marker(endpoint)
                ),
            ));
        }
    }
    Ok(decoder.is_done())
}

/// Room for the answer up front: growing the text and the events by
/// doubling showed as copies on the request path (about 2 % of the client's
/// CPU at 256 streams of 200 tokens). Tokens average under 8 bytes of text.
fn reserve_answer(rec: &mut RequestRecord) {
    let expected = rec.max_tokens.unwrap_or(16).min(4096) as usize;
    rec.events.reserve(expected);
    rec.output_text.reserve(expected * 8);
}

/// What ends a stream of `endpoint`, for the message of one that did not.
fn end_marker(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Responses => "response.completed",
        Endpoint::Messages => "message_stop",
        _ => "[DONE] or finish_reason",
    }
}

struct StreamState {
    done: bool,
    failure: Option<RequestError>,
    /// Events received (any `data`, `[DONE]` included).
    events: u64,
    /// How the events are shaped: chat/completions chunks, or typed events.
    endpoint: Endpoint,
    /// Which tool call each streamed call index is.
    tools: ToolSlots,
}

impl Default for StreamState {
    fn default() -> Self {
        StreamState {
            done: false,
            failure: None,
            events: 0,
            endpoint: Endpoint::Chat,
            tools: ToolSlots::default(),
        }
    }
}

impl StreamState {
    fn on_event(&mut self, data: &[u8], at: u64, rec: &mut RequestRecord) {
        if self.done || self.failure.is_some() {
            return;
        }
        self.events += 1;
        if data == b"[DONE]" {
            self.done = true;
            return;
        }
        // An event stream is UTF-8 throughout; bytes that are not would be
        // accepted by the JSON parser in fields goodput skips, and mangled
        // text in the fields it reads.
        let text = match std::str::from_utf8(data) {
            Ok(s) => s,
            Err(e) => {
                let at_byte = e.valid_up_to();
                self.failure = Some(err(
                    ErrorKind::Malformed,
                    format!(
                        "event is not valid UTF-8 (byte 0x{:02x} at offset {at_byte}): {}",
                        data[at_byte],
                        snippet(data)
                    ),
                ));
                return;
            }
        };
        if self.endpoint.typed_events() {
            match on_typed_event(self.endpoint, &mut self.tools, data, at, rec) {
                Ok(Typed::Continue) => {}
                Ok(Typed::End) => self.done = true,
                Ok(Typed::ServerError(msg)) => {
                    self.failure = Some(err(ErrorKind::ServerError, msg))
                }
                Err(e) => self.unreadable(data, e),
            }
            return;
        }
        let chunk = match Chunk::parse_str(text) {
            Ok(c) => c,
            Err(e) => return self.unreadable(data, e),
        };
        if let Some(msg) = chunk.error_message() {
            self.failure = Some(err(ErrorKind::ServerError, msg));
            return;
        }
        let d = chunk.deliver(&mut rec.output_text);
        if let Some(u) = chunk.usage {
            rec.usage = Some(u.into());
        }
        if chunk.has_tool_calls() {
            self.tools.chat_deltas(&chunk, at, rec);
        }
        if d.answer_bytes + d.reasoning_bytes > 0 {
            let per_chunk_usage = if chunk.choices.as_ref().is_some_and(|c| !c.is_empty()) {
                chunk.usage.and_then(|u| u.completion_tokens)
            } else {
                None
            };
            rec.events.push(Event {
                at_ns: at,
                text_end: rec.output_text.len() as u32,
                usage_completion_tokens: per_chunk_usage,
                reasoning: d.answer_bytes == 0,
            });
        }
        if d.finish_reason.is_some() {
            rec.finish_reason = d.finish_reason;
        }
    }
}

impl StreamState {
    /// An event that did not parse. Plain text where a JSON chunk belongs
    /// (`data: channel closed`, as an engine whose worker died sends) is
    /// the server's error, in its own words; broken JSON is malformed.
    fn unreadable(&mut self, data: &[u8], e: serde_json::Error) {
        self.failure = Some(if is_plain_text(data) {
            err(
                ErrorKind::ServerError,
                format!("the server sent a text event: {}", snippet(data)),
            )
        } else {
            err(
                ErrorKind::Malformed,
                format!("event is not valid JSON ({e}): {}", snippet(data)),
            )
        });
    }
}

/// What a response that ended without one event was, when it was no cut
/// stream: a body of another type (`other_type`, its start `kept`) where a
/// stream was asked for, or an empty body that its framing (a length, the
/// last chunk: `framed_end`) ended properly, with nothing cut and nothing
/// said. None: the stream was cut.
fn no_event(
    head: &Head,
    other_type: Option<&str>,
    kept: &[u8],
    body_bytes: usize,
    framed_end: bool,
) -> Option<RequestError> {
    if let Some(t) = other_type {
        return Some(not_a_stream(head.status, t, kept));
    }
    if body_bytes == 0 && head.body != BodyKind::UntilClose && framed_end {
        return Some(err(
            ErrorKind::EmptyResponse,
            format!(
                "HTTP {} with an empty body: the response ended, properly framed, without one event",
                head.status
            ),
        ));
    }
    None
}

/// Bytes kept of a body that is not an event stream, for its message.
const KEPT: usize = 4096;

/// A 2xx of another content type where a stream was asked for, and not one
/// event in it: the server's error object if it is one, else malformed.
fn not_a_stream(status: u16, media_type: &str, body: &[u8]) -> RequestError {
    if let Some(msg) = Chunk::parse(body).ok().and_then(|c| c.error_message()) {
        return err(
            ErrorKind::ServerError,
            format!(
                "{msg} (HTTP {status}: an error object as {media_type} where a stream was asked for)"
            ),
        );
    }
    err(
        ErrorKind::Malformed,
        format!(
            "HTTP {status} with content-type {media_type} and not one event: not an event stream (did the server ignore \"stream\": true?): {}",
            snippet(body)
        ),
    )
}

/// A non-streamed response: the whole answer is one event at the end.
pub(super) fn whole_response(
    body: &[u8],
    at: u64,
    rec: &mut RequestRecord,
    endpoint: Endpoint,
) -> Result<(), RequestError> {
    rec.t_done = at;
    if body.trim_ascii().is_empty() {
        return Err(err(
            ErrorKind::EmptyResponse,
            format!("an empty body ({} bytes of whitespace at most)", body.len()),
        ));
    }
    if endpoint.typed_events() {
        return match whole_typed(body, at, rec, endpoint) {
            Ok(None) => Ok(()),
            Ok(Some(msg)) => Err(err(ErrorKind::ServerError, msg)),
            Err(e) => Err(err(
                ErrorKind::Malformed,
                format!("response is not valid JSON ({e}): {}", snippet(body)),
            )),
        };
    }
    let chunk = Chunk::parse(body).map_err(|e| {
        err(
            ErrorKind::Malformed,
            format!("response is not valid JSON ({e}): {}", snippet(body)),
        )
    })?;
    if let Some(msg) = chunk.error_message() {
        return Err(err(ErrorKind::ServerError, msg));
    }
    let d = chunk.deliver(&mut rec.output_text);
    rec.usage = chunk.usage.map(Into::into);
    rec.finish_reason = d.finish_reason;
    if chunk.has_tool_calls() {
        ToolSlots::default().chat_deltas(&chunk, at, rec);
    }
    if d.answer_bytes + d.reasoning_bytes > 0 {
        rec.events.push(Event {
            at_ns: at,
            text_end: rec.output_text.len() as u32,
            usage_completion_tokens: None,
            reasoning: d.answer_bytes == 0,
        });
    }
    Ok(())
}

/// Text that does not even try to be JSON: it starts with no `{`, `[` or
/// `"`, and is valid UTF-8 with a letter in it.
fn is_plain_text(data: &[u8]) -> bool {
    let t = data.trim_ascii_start();
    !matches!(t.first(), None | Some(b'{' | b'[' | b'"'))
        && std::str::from_utf8(t).is_ok_and(|s| s.chars().any(char::is_alphabetic))
}

/// A web page where the API's answer belongs, whatever its status (a
/// proxy's sign-in page, a gateway's error page): what it is, and what was
/// asked for (an event stream when `stream`, else JSON).
pub(super) fn a_web_page(head: &Head, body: &[u8], stream: bool) -> RequestError {
    err(
        ErrorKind::Malformed,
        format!(
            "HTTP {} with content-type {} where {} was asked for (a proxy's or gateway's page?): {}",
            head.status,
            head.content_type.as_deref().unwrap_or_default(),
            if stream {
                "an event stream (text/event-stream)"
            } else {
                "JSON"
            },
            describe_body(head, body)
        ),
    )
}

/// A success that carried no content: no answer, with what the server did
/// say (its finish reason and completion tokens).
pub(super) fn no_content(status: u16, rec: &RequestRecord) -> RequestError {
    err(
        ErrorKind::EmptyResponse,
        format!(
            "HTTP {} with no content (finish_reason {}, completion_tokens {})",
            status,
            rec.finish_reason.as_deref().unwrap_or("none"),
            rec.usage
                .and_then(|u| u.completion_tokens)
                .map_or("not reported".into(), |n| n.to_string())
        ),
    )
}

/// What a non-2xx answer said: its status, where a redirect points
/// (goodput follows none: following would send the request a second time),
/// and its body.
pub(super) fn status_message(head: &Head, body: &[u8]) -> String {
    let redirect = match (&head.location, head.status) {
        (Some(to), 300..=399) => format!(" (a redirect to {to}, not followed)"),
        (None, 300..=399) => " (a redirect without a Location, not followed)".to_string(),
        _ => String::new(),
    };
    format!(
        "HTTP {}{redirect}: {}",
        head.status,
        describe_body(head, body)
    )
}

/// A body in a few words: an HTML page by its title, anything else as an excerpt.
fn describe_body(head: &Head, body: &[u8]) -> String {
    let starts_html = {
        let t = body.trim_ascii_start();
        t.len() >= 5
            && (t[..5].eq_ignore_ascii_case(b"<!doc") || t[..5].eq_ignore_ascii_case(b"<html"))
    };
    if !(head.is_html() || starts_html) {
        return snippet(body);
    }
    match html_title(body) {
        Some(title) => format!("an HTML page titled \"{title}\""),
        None => format!("an HTML page: {}", snippet(body)),
    }
}

/// The text of an HTML page's `<title>`, whitespace collapsed.
fn html_title(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title: String = text[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(120)
        .collect();
    (!title.is_empty()).then_some(title)
}

/// A short, printable excerpt of a body.
pub fn snippet(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(300)]);
    let mut s = s.replace(['\n', '\r'], " ");
    if b.len() > 300 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &[u8]) -> Head {
        super::super::h1::parse_head(raw).unwrap().unwrap().0
    }

    #[test]
    fn a_redirect_says_where_it_points_and_that_it_was_not_followed() {
        let h = head(b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://api.example.com/v1/chat/completions\r\nContent-Type: text/html\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(
            status_message(&h, b"<html><head><title>301 Moved Permanently</title></head></html>"),
            "HTTP 301 (a redirect to https://api.example.com/v1/chat/completions, not followed): an HTML page titled \"301 Moved Permanently\""
        );
        let h = head(b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n");
        assert!(status_message(&h, b"").contains("a redirect without a Location"));
    }

    #[test]
    fn an_html_page_is_named_by_its_title_and_json_is_quoted() {
        let html = head(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 0\r\n\r\n");
        let page = b"<!DOCTYPE html>\n<HTML><HEAD><TITLE>\n  503   Service\n Temporarily Unavailable </TITLE></HEAD><body>...</body></HTML>";
        assert_eq!(
            status_message(&html, page),
            "HTTP 503: an HTML page titled \"503 Service Temporarily Unavailable\""
        );
        // A page sent without its content type is still a page.
        let json = head(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n");
        assert!(describe_body(&json, b"  <!doctype html><p>oops</p>").starts_with("an HTML page: "));
        assert_eq!(
            status_message(&json, br#"{"error":{"message":"boom"}}"#),
            r#"HTTP 500: {"error":{"message":"boom"}}"#
        );
        assert_eq!(html_title(b"<title></title>"), None);
        assert_eq!(html_title(b"<title>never closed"), None);
    }

    #[test]
    fn a_body_that_is_no_stream_is_the_servers_error_or_malformed() {
        let e = not_a_stream(
            200,
            "application/json",
            br#"{"error":{"message":"model overloaded","code":503}}"#,
        );
        assert_eq!(e.kind, ErrorKind::ServerError);
        assert!(
            e.message
                .starts_with("model overloaded (HTTP 200: an error object as application/json"),
            "{}",
            e.message
        );
        let e = not_a_stream(
            200,
            "application/json",
            br#"{"choices":[{"message":{"content":"hi"}}]}"#,
        );
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(
            e.message.contains("did the server ignore")
                && e.message
                    .ends_with(r#"{"choices":[{"message":{"content":"hi"}}]}"#),
            "{}",
            e.message
        );
        let e = not_a_stream(200, "text/plain", b"");
        assert_eq!(e.kind, ErrorKind::Malformed);
    }

    #[test]
    fn an_empty_whole_response_is_empty_not_malformed() {
        let mut rec = RequestRecord::default();
        let e = whole_response(b" \r\n", 5, &mut rec, Endpoint::Chat).unwrap_err();
        assert_eq!((e.kind, rec.t_done), (ErrorKind::EmptyResponse, 5));
        let e = whole_response(b"<html>", 5, &mut rec, Endpoint::Chat).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
    }

    #[test]
    fn an_event_that_is_not_utf8_is_malformed_and_says_where() {
        let mut rec = RequestRecord::default();
        let mut state = StreamState::default();
        // Valid JSON, but for two bytes that are not UTF-8 in a field
        // the JSON parser would skip without looking.
        let mut data = br#"{"id":""#.to_vec();
        data.extend_from_slice(&[0xff, 0xfe]);
        data.extend_from_slice(br#"","choices":[{"index":0,"delta":{"content":"hi"}}]}"#);
        state.on_event(&data, 1, &mut rec);
        let e = state.failure.expect("a failure");
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(
            e.message
                .starts_with("event is not valid UTF-8 (byte 0xff at offset 7)"),
            "{}",
            e.message
        );
        assert!(rec.events.is_empty());
    }

    /// A Responses stream: lifecycle events are no content events, the
    /// tool call is gathered with its first argument piece's time, and
    /// `response.completed` ends the stream with the usage and a
    /// `tool_calls` finish; an Anthropic `error` event is a server error.
    #[test]
    fn typed_streams_read_as_chat_does() {
        let mut rec = RequestRecord::default();
        let mut state = StreamState {
            endpoint: Endpoint::Responses,
            ..Default::default()
        };
        let events: [(&str, u64); 6] = [
            (
                r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
                1,
            ),
            (
                r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","name":"f","arguments":""}}"#,
                2,
            ),
            (
                r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":""}"#,
                3,
            ),
            (
                r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"a\":"}"#,
                4,
            ),
            (
                r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"1}"}"#,
                5,
            ),
            (
                r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":3,"output_tokens":2}}}"#,
                6,
            ),
        ];
        for (data, at) in events {
            state.on_event(data.as_bytes(), at, &mut rec);
        }
        assert!(state.done && state.failure.is_none());
        assert_eq!(
            rec.events.iter().map(|e| e.at_ns).collect::<Vec<_>>(),
            [4, 5]
        );
        assert_eq!((rec.t_first_tool_call, rec.tool_calls.len()), (Some(4), 1));
        assert_eq!(
            (
                rec.tool_calls[0].name.as_str(),
                rec.tool_calls[0].arguments.as_str()
            ),
            ("f", "{\"a\":1}")
        );
        assert_eq!(rec.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(rec.usage.and_then(|u| u.completion_tokens), Some(2));
        let mut state = StreamState {
            endpoint: Endpoint::Messages,
            ..Default::default()
        };
        state.on_event(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            1,
            &mut rec,
        );
        let e = state.failure.expect("a failure");
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::ServerError, "overloaded_error: Overloaded")
        );
    }

    /// What reading one content event costs, per API: chat's fast path
    /// (which the typed events' dispatch must not slow), then the typed
    /// events. A timing, printed, not asserted.
    #[test]
    #[ignore = "a timing, not a check: cargo test --release -p goodput-core --lib event_cost -- --ignored --nocapture"]
    fn event_cost() {
        let chat = br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}"#;
        let responses = br#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":" word","sequence_number":5}"#;
        let messages = br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word"}}"#;
        let cases: [(Endpoint, &[u8]); 3] = [
            (Endpoint::Chat, chat),
            (Endpoint::Responses, responses),
            (Endpoint::Messages, messages),
        ];
        for round in 0..3 {
            for (endpoint, data) in cases {
                let n = 2_000_000u64;
                let mut rec = RequestRecord::default();
                let mut state = StreamState {
                    endpoint,
                    ..Default::default()
                };
                let t = std::time::Instant::now();
                for i in 0..n {
                    if i % 1000 == 0 {
                        rec.events.clear();
                        rec.output_text.clear();
                    }
                    state.on_event(data, i, &mut rec);
                }
                let ns = t.elapsed().as_nanos() as f64 / n as f64;
                println!("round {round} {endpoint}: {ns:.1} ns per content event");
            }
        }
    }
}
