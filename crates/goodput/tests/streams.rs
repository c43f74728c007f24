//! The Responses API, Anthropic Messages, tool calls and structured output,
//! against a scripted server that replays each API's real wire format on
//! one token timing script (lifecycle events at once, the first token
//! 80 ms after the request, then 10 tokens 20 ms apart), and against the
//! simulator.
//!
//! The event sequences are those the APIs document (OpenAI's Responses
//! streaming events, Anthropic's Messages streaming), as vLLM and the
//! hosted APIs send them: `event:` lines, data objects naming their `type`,
//! no `[DONE]`.

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use common::{argv, goodput_command, pinned, read_json, read_records, tmp};

const FIRST_MS: u64 = 80;
const GAP_MS: u64 = 20;
const TOKENS: usize = 10;
/// How far a measured figure may sit from the script: generous, as the
/// tests share two cores with builds.
const SLACK_MS: f64 = 25.0;

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

/// One write: when (after the request was read) and what.
type Plan = Vec<(u64, String)>;

struct Replay {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Replay {
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The answer's pieces: words, or a tool call's arguments cut in `TOKENS`.
fn pieces(args: Option<&str>) -> Vec<String> {
    match args {
        None => (0..TOKENS).map(|i| format!(" w{i}")).collect(),
        Some(a) => {
            let chars: Vec<char> = a.chars().collect();
            let per = chars.len().div_ceil(TOKENS);
            let mut v: Vec<String> = chars.chunks(per).map(|c| c.iter().collect()).collect();
            v.resize(TOKENS, " ".into());
            v
        }
    }
}

/// At `t` ms: the token `i`'s write.
fn at(i: usize) -> u64 {
    FIRST_MS + i as u64 * GAP_MS
}

fn chat_plan(args: Option<&str>) -> Plan {
    let mut p = vec![(
        0,
        sse(
            None,
            &json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}),
        ),
    )];
    for (i, piece) in pieces(args).iter().enumerate() {
        let delta = match (args, i) {
            (Some(_), 0) => {
                json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":piece}}]})
            }
            (Some(_), _) => json!({"tool_calls":[{"index":0,"function":{"arguments":piece}}]}),
            (None, _) => json!({"content": piece}),
        };
        let finish = (i == TOKENS - 1).then_some(if args.is_some() {
            "tool_calls"
        } else {
            "length"
        });
        p.push((at(i), sse(None, &json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":finish}]}))));
    }
    let end = at(TOKENS - 1);
    p.push((end, sse(None, &json!({"id":"c","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":TOKENS,"total_tokens":17}}))));
    p.push((end, "data: [DONE]\n\n".into()));
    p
}

fn responses_plan(args: Option<&str>, error_mid: bool) -> Plan {
    let mut seq = 0;
    let mut ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        sse(Some(name), &data)
    };
    let r = json!({"id":"resp_1","object":"response","status":"in_progress","output":[]});
    let mut p = vec![
        (0, ev("response.created", json!({"response": r}))),
        (0, ev("response.in_progress", json!({"response": r}))),
    ];
    if args.is_none() {
        p.push((0, ev("response.output_item.added", json!({"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}))));
        p.push((0, ev("response.content_part.added", json!({"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}))));
    }
    for (i, piece) in pieces(args).iter().enumerate() {
        if error_mid && i == TOKENS / 2 {
            p.push((at(i), ev("error", json!({"code":"server_error","message":"The server had an error while processing your request.","param":null}))));
            return p;
        }
        let mut w = String::new();
        match args {
            Some(_) => {
                if i == 0 {
                    w += &ev(
                        "response.output_item.added",
                        json!({"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}),
                    );
                }
                w += &ev(
                    "response.function_call_arguments.delta",
                    json!({"item_id":"fc_1","output_index":0,"delta":piece}),
                );
            }
            None => {
                w += &ev(
                    "response.output_text.delta",
                    json!({"item_id":"msg_1","output_index":0,"content_index":0,"delta":piece}),
                )
            }
        }
        p.push((at(i), w));
    }
    let end = at(TOKENS - 1);
    p.push((
        end,
        ev(
            "response.output_item.done",
            json!({"output_index":0,"item":{}}),
        ),
    ));
    // Ten tokens at a cap of ten: the output hit max_output_tokens.
    let usage = json!({"input_tokens":7,"input_tokens_details":{"cached_tokens":0},"output_tokens":TOKENS,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":17});
    let last = match args {
        Some(_) => ev(
            "response.completed",
            json!({"response":{"id":"resp_1","status":"completed","output":[],"usage":usage}}),
        ),
        None => ev(
            "response.incomplete",
            json!({"response":{"id":"resp_1","status":"incomplete",
            "incomplete_details":{"reason":"max_output_tokens"},"output":[],"usage":usage}}),
        ),
    };
    p.push((end, last));
    p
}

fn messages_plan(args: Option<&str>) -> Plan {
    let ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        sse(Some(name), &data)
    };
    let mut p = vec![(
        0,
        ev(
            "message_start",
            json!({"message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"cache_read_input_tokens":0,"output_tokens":1}}}),
        ),
    )];
    if args.is_none() {
        p.push((
            0,
            ev(
                "content_block_start",
                json!({"index":0,"content_block":{"type":"text","text":""}}),
            ),
        ));
    }
    p.push((0, ev("ping", json!({}))));
    for (i, piece) in pieces(args).iter().enumerate() {
        let mut w = String::new();
        match args {
            Some(_) => {
                if i == 0 {
                    w += &ev(
                        "content_block_start",
                        json!({"index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}),
                    );
                }
                w += &ev(
                    "content_block_delta",
                    json!({"index":0,"delta":{"type":"input_json_delta","partial_json":piece}}),
                );
            }
            None => {
                w += &ev(
                    "content_block_delta",
                    json!({"index":0,"delta":{"type":"text_delta","text":piece}}),
                )
            }
        }
        p.push((at(i), w));
    }
    let end = at(TOKENS - 1);
    let stop = if args.is_some() {
        "tool_use"
    } else {
        "max_tokens"
    };
    p.push((end, ev("content_block_stop", json!({"index":0}))));
    p.push((end, ev("message_delta", json!({"delta":{"stop_reason":stop,"stop_sequence":null},"usage":{"output_tokens":TOKENS}}))));
    p.push((end, ev("message_stop", json!({}))));
    p
}

/// A tool call's arguments: valid for even request ids, missing the
/// required `city` for odd ones.
fn arguments(id: u64) -> &'static str {
    if id.is_multiple_of(2) {
        r#"{"city": "Paris", "days": 3}"#
    } else {
        r#"{"town": "Paris", "days": 3}"#
    }
}

fn plan(s: &Seen, id: u64, error_mid: bool) -> Plan {
    let args = s.body.get("tools").map(|_| arguments(id));
    match s.path.as_str() {
        "/v1/responses" => responses_plan(args, error_mid),
        "/v1/messages" => messages_plan(args),
        _ => chat_plan(args),
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn handle(
    req: Request<hyper::body::Incoming>,
    seen: Arc<Mutex<Vec<Seen>>>,
    error_mid: bool,
) -> Result<Response<Body>, Infallible> {
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                v.to_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let path = req.uri().path().to_string();
    if path == "/v1/models" {
        let body = json!({"object":"list","data":[{"id":"m","object":"model"}]}).to_string();
        return Ok(Response::new(
            http_body_util::Full::new(Bytes::from(body)).boxed(),
        ));
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let received = Instant::now();
    let s = Seen {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or_default(),
    };
    let id = s
        .headers
        .iter()
        .find(|(k, _)| k == "x-request-id")
        .and_then(|(_, v)| v.rsplit('-').next()?.parse().ok())
        .unwrap_or(0);
    let writes = plan(&s, id, error_mid);
    seen.lock().unwrap().push(s);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(64);
    tokio::spawn(async move {
        for (t, bytes) in writes {
            tokio::time::sleep_until((received + Duration::from_millis(t)).into()).await;
            if tx.send(Ok(Frame::data(Bytes::from(bytes)))).await.is_err() {
                return;
            }
        }
    });
    let stream = futures_stream(rx);
    let mut r = Response::new(StreamBody::new(stream).boxed());
    r.headers_mut()
        .insert("content-type", "text/event-stream".parse().unwrap());
    Ok(r)
}

/// An mpsc receiver as a body stream.
fn futures_stream(
    mut rx: tokio::sync::mpsc::Receiver<Result<Frame<Bytes>, Infallible>>,
) -> impl futures_core::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send + Sync + 'static {
    struct S(tokio::sync::mpsc::Receiver<Result<Frame<Bytes>, Infallible>>);
    impl futures_core::Stream for S {
        type Item = Result<Frame<Bytes>, Infallible>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            self.0.poll_recv(cx)
        }
    }
    let _ = &mut rx;
    S(rx)
}

async fn start(error_mid: bool) -> Replay {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let seen = seen2.clone();
            tokio::spawn(async move {
                let svc =
                    hyper::service::service_fn(move |req| handle(req, seen.clone(), error_mid));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Replay { addr, seen }
}

/// Run goodput (with `STREAMS_TEST_KEY` set) on a blocking thread.
async fn run(args: Vec<String>) -> (i32, String, String) {
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = goodput_command()
            .env("STREAMS_TEST_KEY", "sk-test-123")
            .args(pinned(&refs))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

/// Eight requests to `endpoint`; the records and the results document.
async fn measure(url: &str, endpoint: &str, extra: &[&str]) -> (Vec<Value>, Value) {
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let mut args = argv(&[
        "run",
        "--url",
        url,
        "--endpoint",
        endpoint,
        "--api-key-env",
        "STREAMS_TEST_KEY",
        "--concurrency",
        "2",
        "--num-prompts",
        "8",
        "--input-tokens",
        "16",
        "--output-tokens",
        "10",
        "--no-server-metrics",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let (code, stdout, stderr) = run(args).await;
    assert_eq!(code, 0, "{endpoint}: stdout:\n{stdout}\nstderr:\n{stderr}");
    (read_records(&records), read_json(&out))
}

fn mean(recs: &[Value], key: &str) -> f64 {
    let v: Vec<f64> = recs.iter().filter_map(|r| r[key].as_f64()).collect();
    assert_eq!(v.len(), recs.len(), "{key} missing in some records");
    v.iter().sum::<f64>() / v.len() as f64
}

fn tools_file() -> std::path::PathBuf {
    let path = tmp("tools.json");
    std::fs::write(
        &path,
        json!([{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
            "parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},
                          "required":["city"],"additionalProperties":false}}}])
        .to_string(),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_responses_and_messages_streams_time_alike() {
    let server = start(false).await;
    let mut means = Vec::new();
    for endpoint in ["chat", "responses", "messages"] {
        let (recs, doc) = measure(&server.url(), endpoint, &[]).await;
        assert_eq!(
            (doc["completed"].as_u64(), doc["failed"].as_u64()),
            (Some(8), Some(0)),
            "{endpoint}"
        );
        for r in &recs {
            assert_eq!(
                (r["output_tokens"].as_u64(), r["events"].as_u64()),
                (Some(10), Some(10)),
                "{endpoint}: {r}"
            );
            assert_eq!(r["server_prompt_tokens"], 7, "{endpoint}: usage read");
            assert_eq!(r["finish_reason"], "length", "{endpoint}: finish mapped");
        }
        let (ttft, tpot) = (mean(&recs, "ttft_ms"), mean(&recs, "tpot_ms"));
        // Lifecycle events at once must not be the first token.
        assert!(
            (ttft - FIRST_MS as f64).abs() < SLACK_MS,
            "{endpoint}: TTFT {ttft}"
        );
        assert!(
            (tpot - GAP_MS as f64).abs() < 5.0,
            "{endpoint}: TPOT {tpot}"
        );
        means.push((endpoint, ttft, tpot));
    }
    let (_, chat_ttft, chat_tpot) = means[0];
    for (endpoint, ttft, tpot) in &means[1..] {
        assert!(
            (ttft - chat_ttft).abs() < SLACK_MS,
            "{endpoint} TTFT {ttft} vs chat {chat_ttft}"
        );
        assert!(
            (tpot - chat_tpot).abs() < 5.0,
            "{endpoint} TPOT {tpot} vs chat {chat_tpot}"
        );
    }
    // The Anthropic requests carried its key header and version; the others a bearer token.
    let seen = server.seen.lock().unwrap().clone();
    let header = |s: &Seen, name: &str| {
        s.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    // The measured requests (not the pinning probe, whose max_tokens is 1).
    let measured = |path: &str| -> Vec<&Seen> {
        seen.iter()
            .filter(|s| {
                s.path == path && header(s, "x-request-id").is_some_and(|t| !t.ends_with("probe"))
            })
            .collect()
    };
    let messages = measured("/v1/messages");
    assert!(!messages.is_empty());
    for s in &messages {
        assert_eq!(header(s, "x-api-key").as_deref(), Some("sk-test-123"));
        assert_eq!(
            header(s, "anthropic-version").as_deref(),
            Some("2023-06-01")
        );
        assert_eq!(header(s, "authorization"), None);
        assert_eq!(s.body["max_tokens"], 10);
        assert_eq!(s.body["messages"][0]["role"], "user");
    }
    let responses = measured("/v1/responses");
    assert!(!responses.is_empty());
    for s in &responses {
        assert_eq!(
            header(s, "authorization").as_deref(),
            Some("Bearer sk-test-123")
        );
        assert_eq!(
            (
                s.body["max_output_tokens"].as_u64(),
                s.body["input"].is_string()
            ),
            (Some(10), true)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_are_timed_and_checked_against_their_schema() {
    let server = start(false).await;
    let tools = tools_file();
    for endpoint in ["chat", "responses", "messages"] {
        let (recs, doc) = measure(
            &server.url(),
            endpoint,
            &[
                "--tools",
                tools.to_str().unwrap(),
                "--tool-choice",
                "required",
            ],
        )
        .await;
        assert_eq!(
            doc["completed"], 8,
            "{endpoint}: a schema violation is no failure"
        );
        let seen = server.seen.lock().unwrap().clone();
        let last = seen.last().unwrap();
        match endpoint {
            "chat" => assert_eq!(last.body["tools"][0]["function"]["name"], "get_weather"),
            "responses" => assert_eq!(last.body["tools"][0]["name"], "get_weather"),
            _ => assert_eq!(last.body["tools"][0]["input_schema"]["required"][0], "city"),
        }
        for r in &recs {
            let id = r["request_id"].as_u64().unwrap();
            let ttftc = r["time_to_first_tool_call_ms"].as_f64().unwrap();
            assert!(
                (ttftc - FIRST_MS as f64).abs() < SLACK_MS,
                "{endpoint}: time to first tool call {ttftc}"
            );
            assert_eq!(r["tool_calls"], 1, "{endpoint}: {r}");
            assert_eq!(r["finish_reason"], "tool_calls", "{endpoint}");
            assert_eq!(
                r["schema_valid"],
                id.is_multiple_of(2),
                "{endpoint}: request {id}: {r}"
            );
            if !id.is_multiple_of(2) {
                let why = r["schema_error"].as_str().unwrap();
                assert!(why.contains("required property \"city\""), "{why}");
            }
        }
        let s = &doc["structured_output"];
        assert_eq!(
            (
                s["checked"].as_u64(),
                s["valid"].as_u64(),
                s["invalid"].as_u64()
            ),
            (Some(8), Some(4), Some(4)),
            "{endpoint}: {s}"
        );
        assert_eq!(s["invalid_share"], 0.5);
        assert_eq!(s["tool_calls"], 8);
        assert!(!s["first_violations"].as_array().unwrap().is_empty());
        let d = &doc["time_to_first_tool_call"];
        assert_eq!(d["count"], 8, "{endpoint}: {d}");
        matches_the_schema(&doc);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_event_mid_stream_is_a_server_error() {
    let server = start(true).await;
    let records = tmp("records.jsonl");
    let (code, stdout, stderr) = run(argv(&[
        "run",
        "--url",
        &server.url(),
        "--endpoint",
        "responses",
        "--concurrency",
        "1",
        "--num-prompts",
        "2",
        "--output-tokens",
        "10",
        "--no-server-metrics",
        "--records",
        records.to_str().unwrap(),
    ]))
    .await;
    assert!(
        code == 0 || code == 3,
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let recs = read_records(&records);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["error_kind"], "server_error", "{r}");
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .starts_with("server_error: The server had an error"),
            "{r}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_serves_each_kind() {
    let (_sim, url) = common::shards::simulator(0.25);
    let tools = tools_file();
    for (endpoint, stream) in [
        ("responses", true),
        ("messages", true),
        ("responses", false),
        ("messages", false),
    ] {
        let mut extra = vec!["--tools", tools.to_str().unwrap()];
        if !stream {
            extra.push("--no-stream");
        }
        let (recs, doc) = measure(&url, endpoint, &extra).await;
        assert_eq!(
            (doc["completed"].as_u64(), doc["failed"].as_u64()),
            (Some(8), Some(0)),
            "{endpoint}"
        );
        for r in &recs {
            assert_eq!(r["output_tokens"], 10, "{endpoint}: {r}");
            assert_eq!(r["tool_calls"], 1, "{endpoint}: {r}");
            assert_eq!(r["schema_valid"], true, "{endpoint}: {r}");
            assert!(r["time_to_first_tool_call_ms"].as_f64().unwrap() > 0.0);
        }
        assert_eq!(doc["structured_output"]["valid"], 8);
    }
    // Chat with tools, and a JSON-schema response format on each API.
    let (recs, doc) = measure(&url, "chat", &["--tools", tools.to_str().unwrap()]).await;
    assert_eq!(doc["structured_output"]["valid"], 8, "chat tools");
    assert!(
        recs.iter()
            .all(|r| r["finish_reason"] == "tool_calls"
                && r["time_to_first_tool_call_ms"].is_number())
    );
    let schema = tmp("answer.json");
    std::fs::write(&schema, json!({"type":"object","properties":{"answer":{"type":"string"},"score":{"type":"integer","minimum":1}},"required":["answer","score"],"additionalProperties":false}).to_string()).unwrap();
    let format = format!("json_schema:{}", schema.display());
    for endpoint in ["chat", "responses", "messages"] {
        let (recs, doc) = measure(&url, endpoint, &["--response-format", &format]).await;
        let s = &doc["structured_output"];
        assert_eq!(
            (
                s["checked"].as_u64(),
                s["valid"].as_u64(),
                s["tool_calls"].as_u64()
            ),
            (Some(8), Some(8), Some(0)),
            "{endpoint}: {s}"
        );
        assert!(
            recs.iter()
                .all(|r| r["output_tokens"] == 10 && r["time_to_first_tool_call_ms"].is_null()),
            "{endpoint}"
        );
    }
    // Plain text answers: each kind completes with its counts.
    for endpoint in ["responses", "messages"] {
        let (recs, doc) = measure(&url, endpoint, &[]).await;
        assert_eq!(doc["completed"], 8, "{endpoint}");
        assert_eq!(doc["total_output_tokens"], 80, "{endpoint}");
        assert!(recs
            .iter()
            .all(|r| r["events"] == 10 && r["token_source"] == "server"));
        assert!(doc["structured_output"].is_null());
    }
}

/// The results document, with its new figures, against the committed schema.
fn matches_the_schema(doc: &Value) {
    common::validate_run_document(doc);
}

/// goodput's JSON Schema subset agrees with the `jsonschema` crate on the
/// keywords it checks.
#[test]
fn the_schema_subset_agrees_with_jsonschema() {
    let schema = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2, "maxLength": 10},
            "unit": {"enum": ["c", "f"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "exact": {"const": 3}
        },
        "required": ["city"],
        "additionalProperties": false
    });
    let reference = jsonschema::validator_for(&schema).unwrap();
    let instances = [
        json!({"city": "Oslo"}),
        json!({"city": "O"}),
        json!({"city": "Oslo-Oslo-Oslo"}),
        json!({"town": "Oslo"}),
        json!({"city": "Oslo", "x": 1}),
        json!({"city": "Oslo", "unit": "k"}),
        json!({"city": "Oslo", "unit": "f", "days": 7}),
        json!({"city": "Oslo", "days": 0}),
        json!({"city": "Oslo", "days": 2.5}),
        json!({"city": "Oslo", "days": 3.0}),
        json!({"city": "Oslo", "tags": []}),
        json!({"city": "Oslo", "tags": ["a", 1]}),
        json!({"city": "Oslo", "tags": ["a", "b", "c"]}),
        json!({"city": "Oslo", "when": null}),
        json!({"city": "Oslo", "when": 5}),
        json!({"city": "Oslo", "exact": 3}),
        json!({"city": "Oslo", "exact": 4}),
        json!(["Oslo"]),
        json!("Oslo"),
    ];
    for i in &instances {
        let ours = goodput_common::json_schema::validate(&schema, i);
        assert_eq!(ours.is_ok(), reference.is_valid(i), "{i}: ours {ours:?}");
    }
    for seed in 0..10 {
        let example = goodput_common::json_schema::example(&schema, seed);
        assert!(reference.is_valid(&example), "{example}");
    }
}

/// The simulator's schema-violation fault: every second structured answer
/// is broken JSON, and the run counts it as such, not as a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_schema_violations_are_counted() {
    let sim = goodput_sim::SimServer::spawn(
        goodput_sim::SimConfig {
            time_scale: 0.25,
            faults: goodput_sim::faults::FaultConfig {
                schema_violation: goodput_sim::faults::FaultSpec::Every(2),
                ..Default::default()
            },
            ..Default::default()
        },
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .unwrap();
    let url = format!("http://{}", sim.local_addr());
    let tools = tools_file();
    let (recs, doc) = measure(&url, "messages", &["--tools", tools.to_str().unwrap()]).await;
    assert_eq!(
        (doc["completed"].as_u64(), doc["failed"].as_u64()),
        (Some(8), Some(0))
    );
    let s = &doc["structured_output"];
    assert_eq!(
        (s["checked"].as_u64(), s["invalid"].as_u64()),
        (Some(8), Some(4)),
        "{s}"
    );
    let broken = recs.iter().filter(|r| r["schema_valid"] == false).count();
    assert_eq!(broken, 4);
    assert!(recs
        .iter()
        .filter(|r| r["schema_valid"] == false)
        .all(|r| r["schema_error"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")));
}
