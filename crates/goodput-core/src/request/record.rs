//! Records: the raw facts of one request, as the client saw them.
//!
//! A [`RequestRecord`] holds timestamps (nanoseconds on the run's monotonic
//! clock, see [`crate::request::clock`]), the content-bearing events, what the server
//! said about usage, and — for a failed request — an [`ErrorKind`]. Nothing
//! here is derived: every metric is computed from these fields in
//! [`crate::measure::metrics`], so definitions cannot drift apart.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Warm-up requests are sent before the measured phase and excluded from every figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Warmup,
    Measure,
}

/// Why a request failed (or did not finish). Failures are data, never panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The connection (TCP or TLS) could not be opened.
    Connect,
    /// The proxy (from `https_proxy`, `http_proxy`, `ALL_PROXY`) could not be
    /// reached or refused the tunnel: not the server's failure.
    Proxy,
    /// The client's own limits stopped the request before it was sent (out of
    /// file descriptors: `EMFILE`/`ENFILE`); never the server's fault.
    ClientLimit,
    /// The total `--timeout` elapsed, or no bytes arrived for `--idle-timeout`.
    Timeout,
    /// The server answered with a non-2xx status.
    HttpStatus,
    /// The stream ended (or the connection broke) before the response was complete.
    StreamCut,
    /// A 2xx response that carried no content at all (`[DONE]` right after
    /// the role chunk, a finish with zero tokens, or a body that ended,
    /// properly framed, before any event).
    EmptyResponse,
    /// An event that is not valid JSON, not UTF-8 or not a completion chunk;
    /// or a 2xx that is not the API's answer (an HTML page, a body of another
    /// content type without one event).
    Malformed,
    /// The server sent an error object inside the stream (or as a whole 2xx
    /// JSON answer where a stream was asked for).
    ServerError,
    /// The user cancelled the request (a second Ctrl-C or SIGTERM): counted
    /// incomplete, not failed.
    Cancelled,
    /// Still running when the drain timeout ended the run: neither completed
    /// nor failed, and not part of the error rate.
    Incomplete,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::Connect,
        ErrorKind::Proxy,
        ErrorKind::ClientLimit,
        ErrorKind::Timeout,
        ErrorKind::HttpStatus,
        ErrorKind::StreamCut,
        ErrorKind::EmptyResponse,
        ErrorKind::Malformed,
        ErrorKind::ServerError,
        ErrorKind::Cancelled,
        ErrorKind::Incomplete,
    ];

    /// The kind named `name` ([`ErrorKind::as_str`]).
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The kind's name, as the results JSON writes it (`stream_cut`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Proxy => "proxy",
            ErrorKind::ClientLimit => "client_limit",
            ErrorKind::Timeout => "timeout",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::EmptyResponse => "empty_response",
            ErrorKind::Malformed => "malformed",
            ErrorKind::ServerError => "server_error",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Incomplete => "incomplete",
        }
    }
}

/// What error counts are keyed by: a failure's kind and, for an HTTP
/// status failure, the status itself. Its name — in the results JSON
/// (`errors.by_kind`, `timeseries.failures`), the console and the HTML — is
/// `http_503` for a status, else the kind's (`connect`, and `http_status`
/// when no status line arrived). Keys are ordered by that name, so a map
/// keyed by them reads in the order the JSON writes its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorKey {
    kind: ErrorKind,
    /// Only for [`ErrorKind::HttpStatus`].
    http_status: Option<u16>,
}

impl ErrorKey {
    /// The key of a failure of `kind`; `http_status` is kept only for an
    /// HTTP status failure.
    pub fn new(kind: ErrorKind, http_status: Option<u16>) -> ErrorKey {
        ErrorKey {
            kind,
            http_status: http_status.filter(|_| kind == ErrorKind::HttpStatus),
        }
    }

    /// The key of a record's failure; `None` for a record without one.
    pub fn of(rec: &RequestRecord) -> Option<ErrorKey> {
        let e = rec.error.as_ref()?;
        Some(ErrorKey::new(e.kind, rec.http_status))
    }

    pub fn kind(self) -> ErrorKind {
        self.kind
    }

    pub fn http_status(self) -> Option<u16> {
        self.http_status
    }

    /// The key's name, written into `buf` when it is a status's (at most
    /// `http_65535`), without allocating: keys are compared by it.
    fn name(self, buf: &mut [u8; 16]) -> &[u8] {
        let Some(code) = self.http_status else {
            return self.kind.as_str().as_bytes();
        };
        let len = {
            let mut cursor = std::io::Cursor::new(&mut buf[..]);
            // 10 bytes at most: the buffer cannot run out.
            let _ = std::io::Write::write_fmt(&mut cursor, format_args!("http_{code}"));
            cursor.position() as usize
        };
        &buf[..len]
    }
}

impl fmt::Display for ErrorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.http_status {
            Some(code) => write!(f, "http_{code}"),
            None => f.write_str(self.kind.as_str()),
        }
    }
}

impl FromStr for ErrorKey {
    type Err = String;

    /// `http_503` (a status of three digits or more), or a kind's name.
    fn from_str(s: &str) -> Result<ErrorKey, String> {
        let status = s
            .strip_prefix("http_")
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u16>().ok());
        match (status, ErrorKind::from_name(s)) {
            (Some(code), _) => Ok(ErrorKey::new(ErrorKind::HttpStatus, Some(code))),
            (None, Some(kind)) => Ok(ErrorKey::new(kind, None)),
            (None, None) => Err(format!(
                "unknown error kind '{s}' (expected http_<status> or one of: {})",
                ErrorKind::ALL.map(ErrorKind::as_str).join(", ")
            )),
        }
    }
}

impl Ord for ErrorKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        self.name(&mut a).cmp(other.name(&mut b))
    }
}

impl PartialOrd for ErrorKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for ErrorKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ErrorKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A failure, with what is known about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestError {
    /// What kind of failure it was.
    pub kind: ErrorKind,
    /// Human-readable detail (truncated response body, I/O error text...).
    pub message: String,
    /// The `Retry-After` header of a 429/503, as sent.
    pub retry_after: Option<String>,
}

/// One content-bearing stream event. Serialized compactly, as
/// `[at_ns, text_end, usage_completion_tokens, reasoning]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(from = "EventTuple", into = "EventTuple")]
pub struct Event {
    /// Arrival time (ns on the run clock), taken when its bytes were read.
    pub at_ns: u64,
    /// End offset of this event's text in [`RequestRecord::output_text`].
    pub text_end: u32,
    /// Cumulative `usage.completion_tokens` carried by this event, where the
    /// server streams per-chunk usage.
    pub usage_completion_tokens: Option<u32>,
    /// The event carried only reasoning text (`reasoning_content`).
    pub reasoning: bool,
}

type EventTuple = (u64, u32, Option<u32>, bool);

impl From<EventTuple> for Event {
    fn from((at_ns, text_end, usage_completion_tokens, reasoning): EventTuple) -> Event {
        Event {
            at_ns,
            text_end,
            usage_completion_tokens,
            reasoning,
        }
    }
}

impl From<Event> for EventTuple {
    fn from(e: Event) -> EventTuple {
        (e.at_ns, e.text_end, e.usage_completion_tokens, e.reasoning)
    }
}

/// What the server reported in `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerUsage {
    /// Prompt tokens as the server counted them (Anthropic's cache reads and
    /// writes included).
    pub prompt_tokens: Option<u32>,
    /// Tokens generated, as the server counted them.
    pub completion_tokens: Option<u32>,
    /// Of the generated tokens, those spent on reasoning.
    pub reasoning_tokens: Option<u32>,
    /// Prompt tokens served from the server's prefix cache.
    pub cached_tokens: Option<u32>,
}

/// Where a call of an agent's trajectory sits: the trace it came from, the
/// agent that made it (0 the main agent, k > 0 the trace's k-th subagent),
/// how deep that agent is nested, and the calls (indices in the
/// trajectory, as `turn` is) it waited for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCall {
    /// The trace's `id`.
    pub trace: std::sync::Arc<str>,
    /// The agent: 0 the main one, k the k-th subagent.
    pub agent: u32,
    /// Subagent nesting: 0 for the main agent.
    pub depth: u32,
    /// The calls it waited for.
    pub parents: Vec<u32>,
}

/// The raw record of one request. It serializes whole (a sharded run's
/// parts carry records from shard to coordinator, and to `goodput merge`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The request's id: unique within the run, in the order requests were made.
    pub request_id: u64,
    /// The shard that sent it (0 in a run of one process).
    #[serde(default)]
    pub shard: u32,
    /// Sent in the warm-up, before the measured phase: excluded from every figure.
    pub warmup: bool,
    /// The session, the 0-based turn and the session's number of turns, for
    /// a turn of a multi-turn session.
    pub session: Option<(u64, u32, u32)>,
    /// For a call of an agent's trajectory: its trace, agent and parents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<std::sync::Arc<AgentCall>>,
    /// When the schedule said the request should be sent.
    pub t_sched: u64,
    /// When a new connection began opening for it (None: pooled connection).
    pub t_connect: Option<u64>,
    /// When the request began to be written on an established connection;
    /// `None` for a request that never got a connection (it was never sent,
    /// and has no latency or schedule lag).
    pub t_send: Option<u64>,
    /// When the status line and headers arrived.
    pub t_head: Option<u64>,
    /// End of the response: `[DONE]`, end of body, or the error. Every
    /// record has one, failures included.
    pub t_done: u64,
    /// The content-bearing events, in arrival order (one for a whole,
    /// unstreamed answer).
    pub events: Vec<Event>,
    /// All content-bearing text received, concatenated (content, reasoning, tool-call arguments).
    pub output_text: String,
    /// What the server reported in `usage`; `None` when it reported none.
    pub usage: Option<ServerUsage>,
    /// Why generation stopped, as the server said (`stop`, `length`, `tool_calls`).
    pub finish_reason: Option<String>,
    /// The response's HTTP status; `None` when no status line arrived.
    pub http_status: Option<u16>,
    /// Why the request failed or did not finish; `None` when it completed.
    pub error: Option<RequestError>,
    /// Prompt tokens as the client's tokenizer counted them when building the prompt.
    pub prompt_tokens_client: Option<u32>,
    /// Leading prompt tokens sent before in this run (what a prefix cache
    /// could reuse at most).
    pub cacheable_tokens: u32,
    /// The expected answer, when the workload has one (quality).
    pub reference: Option<std::sync::Arc<str>>,
    /// `max_tokens` sent.
    pub max_tokens: Option<u32>,
    /// The context the server gives one sequence, where it said so when the
    /// run began (llama.cpp's slot context on `/props`): a `length` finish
    /// of a request whose prompt and `max_tokens` fit in it is `max_tokens`,
    /// since its context cannot have run out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u32>,
    /// Whether the response was streamed.
    pub streamed: bool,
    /// The model (or LoRA adapter) it was sent to, when the run mixes
    /// models; `None` in a run of one model.
    #[serde(default)]
    pub model: Option<std::sync::Arc<str>>,
    /// Its priority class (`--priority-mix`), when the run has classes.
    #[serde(default)]
    pub class: Option<std::sync::Arc<str>>,
    /// Inputs sent in a pooling request (embeddings, rerank documents,
    /// score texts); `None` for a completion.
    #[serde(default)]
    pub inputs: Option<u32>,
    /// Images sent in a chat request, and their encoded bytes (the files'
    /// bytes, before base64).
    #[serde(default)]
    pub images: Option<u32>,
    /// The images' encoded bytes, summed.
    #[serde(default)]
    pub image_bytes: Option<u64>,
    /// The answer's tool calls, their arguments as received (their text is
    /// in `output_text` too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<crate::request::tools::ToolCallRecord>,
    /// When the first piece of a tool call's arguments arrived (chat's
    /// `delta.tool_calls[].function.arguments`, Responses'
    /// `response.function_call_arguments.delta`, Anthropic's
    /// `input_json_delta`), non-empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_first_tool_call: Option<u64>,
    /// What the answer is checked against (`--tools`, `--response-format`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_check: Option<std::sync::Arc<crate::request::tools::OutputSpec>>,
}

impl RequestRecord {
    /// The phase it was sent in: warm-up or measured.
    pub fn phase(&self) -> Phase {
        if self.warmup {
            Phase::Warmup
        } else {
            Phase::Measure
        }
    }

    /// Completed successfully.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Ended by goodput before it finished — the drain timeout, or the
    /// user's second signal (`cancelled`): neither completed nor failed,
    /// so never an error against `--max-error-rate`.
    pub fn incomplete(&self) -> bool {
        matches!(&self.error, Some(e) if matches!(e.kind, ErrorKind::Incomplete | ErrorKind::Cancelled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_are_named_as_serialized() {
        for kind in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            assert_eq!(ErrorKind::from_name(kind.as_str()), Some(kind));
        }
    }

    /// A sharded run's parts carry records whole: the model and class of a
    /// mix round-trip, and a record written before them reads as none.
    #[test]
    fn records_carry_their_model_and_class_through_serde() {
        let rec = RequestRecord {
            model: Some("adapter-a".into()),
            class: Some("interactive".into()),
            ..Default::default()
        };
        let text = serde_json::to_string(&rec).unwrap();
        assert_eq!(serde_json::from_str::<RequestRecord>(&text).unwrap(), rec);
        let mut old = serde_json::to_value(RequestRecord::default()).unwrap();
        let o = old.as_object_mut().unwrap();
        o.remove("model");
        o.remove("class");
        let back: RequestRecord = serde_json::from_value(old).unwrap();
        assert_eq!((back.model, back.class), (None, None));
    }

    /// Keys read and write the names of the results JSON, a status only
    /// with an HTTP status failure, and sort as those names do.
    #[test]
    fn error_keys_are_their_names() {
        let status = |code| ErrorKey::new(ErrorKind::HttpStatus, Some(code));
        let kind = |k| ErrorKey::new(k, None);
        assert_eq!(status(503).to_string(), "http_503");
        assert_eq!(kind(ErrorKind::HttpStatus).to_string(), "http_status");
        assert_eq!(
            ErrorKey::new(ErrorKind::Connect, Some(503)),
            kind(ErrorKind::Connect)
        );
        let mut keys = vec![
            kind(ErrorKind::Timeout),
            status(65535),
            kind(ErrorKind::HttpStatus),
            status(500),
            kind(ErrorKind::ClientLimit),
            status(429),
            kind(ErrorKind::Connect),
        ];
        for k in &keys {
            assert_eq!(k.to_string().parse::<ErrorKey>(), Ok(*k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.to_string());
        }
        let mut names: Vec<String> = keys.iter().map(ToString::to_string).collect();
        keys.sort();
        names.sort();
        assert_eq!(
            keys.iter().map(ToString::to_string).collect::<Vec<_>>(),
            names
        );
        for bad in ["http_", "http_x1", "http_70000", "refused"] {
            assert!(bad.parse::<ErrorKey>().is_err(), "{bad}");
        }
    }
}
