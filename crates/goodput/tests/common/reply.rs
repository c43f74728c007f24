//! What the scripted server answers to one request, as data: the head's
//! status and headers, when the head goes out, the body as timed steps, and
//! how the body is framed and ended. Both servers (hyper's, and the raw one
//! for what hyper will not do) play the same [`Reply`], so every behaviour
//! is defined once.

use std::time::Duration;

use super::{Behavior, Script};

/// A request as the server read it.
pub struct Incoming {
    /// The `x-request-id` header (`{run}-{id}`, `{run}-probe`, `{run}-models`).
    pub tag: String,
    pub path: String,
    pub body: serde_json::Value,
    /// The `Authorization` and `X-Api-Key` headers, joined (for `EchoAuth`).
    pub echoed: String,
}

/// When (and whether) the response head goes out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HeadPlan {
    /// This long after the request was read.
    At(Duration),
    /// Never: the connection stays open and silent.
    Never,
    /// Close the connection instead (raw server only).
    Close,
    /// Reset the connection instead (raw server only).
    Reset,
}

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Framing {
    /// `Content-Length` of the whole body (fixed bodies).
    Length,
    /// `Transfer-Encoding: chunked`; with `extensions`, every chunk carries
    /// a chunk extension and the body ends with a trailer (raw server only).
    Chunked { extensions: bool },
    /// `Connection: close` and no length: the close ends the body (raw only).
    UntilClose,
    /// `Connection: close` and a `Content-Length` larger than what is sent (raw only).
    ShortLength(usize),
}

/// One step of a body.
#[derive(Debug, Clone)]
pub enum Step {
    /// Wait until this long after the request was read.
    At(Duration),
    /// Bytes of the body; `content`: a content event (its write is logged).
    Send { bytes: Vec<u8>, content: bool },
    /// Send nothing for this long, the connection open.
    Stall(Duration),
}

/// The whole answer to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub head: HeadPlan,
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub framing: Framing,
    pub steps: Vec<Step>,
    /// The body's framing is ended properly after the steps (false: the
    /// connection is closed where the steps end).
    pub complete: bool,
    /// The log entry's tag, for requests the server logs.
    pub log_tag: Option<String>,
}

impl Reply {
    fn fixed(status: u16, content_type: &str, body: &str) -> Reply {
        Reply {
            head: HeadPlan::At(Duration::ZERO),
            status,
            headers: vec![("content-type", content_type.to_string())],
            framing: Framing::Length,
            steps: vec![Step::Send {
                bytes: body.as_bytes().to_vec(),
                content: false,
            }],
            complete: true,
            log_tag: None,
        }
    }

    pub fn json(status: u16, body: &str) -> Reply {
        Reply::fixed(status, "application/json", body)
    }

    fn html(status: u16, body: &str) -> Reply {
        Reply::fixed(status, "text/html; charset=utf-8", body)
    }

    fn no_answer(head: HeadPlan) -> Reply {
        Reply {
            head,
            steps: vec![],
            ..Reply::json(200, "")
        }
    }

    fn header(mut self, name: &'static str, value: &str) -> Reply {
        self.headers.push((name, value.to_string()));
        self
    }

    fn retry_after_for(self, code: u16) -> Reply {
        if code == 429 || code == 503 {
            self.header("retry-after", "7")
        } else {
            self
        }
    }
}

pub fn request_id(tag: &str) -> Option<u64> {
    tag.rsplit('-').next()?.parse().ok()
}

/// An error page as nginx or a cloud load balancer serves it.
pub fn html_page(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html>\n<head><title>{title}</title></head>\n<body>\n<center><h1>{title}</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n"
    )
}

/// The title of the page a proxy serves instead of the API's stream.
pub const PROXY_PAGE_TITLE: &str = "Sign in to continue";

/// Where the scripted redirects point.
pub const REDIRECT_TO: &str = "https://api.example.invalid/v1/chat/completions";

fn event(bytes: impl Into<Vec<u8>>) -> Step {
    Step::Send {
        bytes: bytes.into(),
        content: false,
    }
}

/// What the script answers to `req`.
pub fn reply(script: &Script, req: &Incoming) -> Reply {
    let tag = &req.tag;
    let v = &req.body;
    // No Prometheus endpoint here, as on a hosted API: goodput's default
    // look at the target's /metrics finds nothing and scrapes nothing.
    // Nor a /tokenize: the model's tokenizer is not asked of a hosted API.
    if req.path == "/metrics" || req.path == "/tokenize" {
        return Reply::json(404, r#"{"detail":"Not Found"}"#);
    }
    if req.path.ends_with("/models") {
        if script.models == Behavior::Hang {
            return Reply::no_answer(HeadPlan::Never);
        }
        return Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"scripted","object":"model"}]}"#,
        );
    }
    let chat = req.path.ends_with("/chat/completions");
    if script.reject_pinning && (v.get("min_tokens").is_some() || v.get("ignore_eos").is_some()) {
        let mut r = Reply::json(
            400,
            r#"{"error":{"message":"Unrecognized request argument supplied: ignore_eos"}}"#,
        );
        r.log_tag = Some(format!("{tag}-rejected"));
        return r;
    }
    let probe = tag.ends_with("-probe");
    let behavior = if probe {
        // The probe sees the same echo as every request, when they all get
        // one; else what the script says probes get.
        match (script.behavior)(u64::MAX) {
            Behavior::EchoAuth => Behavior::EchoAuth,
            _ => script.probe,
        }
    } else {
        request_id(tag).map_or(Behavior::Ok, |id| (script.behavior)(id))
    };
    match behavior {
        Behavior::EchoAuth => {
            let body = serde_json::json!({"error": {"message": format!("invalid credentials: {}", req.echoed)}});
            return Reply::json(401, &body.to_string());
        }
        Behavior::Status(code) => {
            return Reply::json(code, r#"{"error":{"message":"scripted failure"}}"#)
                .retry_after_for(code)
        }
        Behavior::StatusHtml(code) => {
            return Reply::html(
                code,
                &html_page(&format!("{code} Service Temporarily Unavailable")),
            )
            .retry_after_for(code)
        }
        Behavior::Redirect(code) => {
            return Reply::html(code, &html_page(&format!("{code} Moved")))
                .header("location", REDIRECT_TO)
        }
        Behavior::HtmlPage => return Reply::html(200, &html_page(PROXY_PAGE_TITLE)),
        Behavior::JsonError => {
            return Reply::json(
                200,
                r#"{"error":{"message":"scripted overload","type":"server_error"}}"#,
            )
        }
        Behavior::Hang => return Reply::no_answer(HeadPlan::Never),
        Behavior::CloseBeforeHead => return Reply::no_answer(HeadPlan::Close),
        Behavior::ResetBeforeHead => return Reply::no_answer(HeadPlan::Reset),
        _ => {}
    }
    let head_at = match behavior {
        Behavior::SlowHead(d) => d,
        _ => Duration::ZERO,
    };
    let words: String = (0..script.tokens_per_event).map(|_| script.word).collect();
    if v["stream"] != true || behavior == Behavior::NotStreamed {
        let text: String = (0..script.events * script.tokens_per_event)
            .map(|_| " the")
            .collect();
        let n = script.events * script.tokens_per_event;
        let body = if chat {
            serde_json::json!({"choices":[{"message":{"role":"assistant","content":text},"finish_reason":"length"}],
                "usage":{"prompt_tokens":1,"completion_tokens":n}})
        } else {
            serde_json::json!({"choices":[{"text":text,"finish_reason":"length"}],
                "usage":{"prompt_tokens":1,"completion_tokens":n}})
        };
        let mut r = Reply::json(200, &body.to_string());
        r.head = HeadPlan::At(script.ttft.max(head_at));
        r.steps = vec![Step::Send {
            bytes: body.to_string().into_bytes(),
            content: true,
        }];
        r.log_tag = Some(tag.clone());
        return r;
    }
    let max_tokens = v["max_tokens"].as_u64().unwrap_or(u64::MAX) as usize;
    let events = if probe {
        1
    } else {
        script
            .events
            .min(max_tokens.div_ceil(script.tokens_per_event))
    };
    let include_usage = script.usage && v["stream_options"]["include_usage"] == true;
    let mut r = Reply {
        head: HeadPlan::At(head_at),
        status: 200,
        headers: vec![("content-type", "text/event-stream".to_string())],
        framing: match behavior {
            Behavior::ChunkExtensions => Framing::Chunked { extensions: true },
            Behavior::CloseMidBody { length: false, .. } => Framing::UntilClose,
            Behavior::CloseMidBody { length: true, .. } => Framing::ShortLength(1 << 20),
            _ => Framing::Chunked { extensions: false },
        },
        steps: Vec::new(),
        complete: true,
        log_tag: Some(tag.clone()),
    };
    if behavior == Behavior::EmptyBody {
        return r;
    }
    let steps = &mut r.steps;
    if chat && script.role_chunk {
        steps.push(event(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
        ));
    }
    if behavior == Behavior::Empty {
        steps.push(Step::At(script.ttft));
        steps.push(event("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":0,\"total_tokens\":1}}\n\n"));
        steps.push(event("data: [DONE]\n\n"));
        return r;
    }
    for i in 0..events {
        steps.push(Step::At(script.ttft + script.interval * i as u32));
        let fault_here = matches!(behavior,
            Behavior::CutAfter(n)
            | Behavior::StallAfter(n)
            | Behavior::MalformedAfter(n)
            | Behavior::ErrorAfter(n)
            | Behavior::TextErrorAfter(n)
            | Behavior::InvalidUtf8After(n)
            | Behavior::CloseMidBody { after: n, .. } if n == i);
        if fault_here {
            match behavior {
                Behavior::TextErrorAfter(_) => {
                    steps.push(event("data: channel closed\n\n"));
                    steps.push(event("data: [DONE]\n\n"));
                }
                Behavior::MalformedAfter(_) => steps.push(event("data: {not json\n\n")),
                Behavior::ErrorAfter(_) => steps.push(event(
                    "data: {\"error\":{\"message\":\"scripted engine error\",\"code\":500}}\n\n",
                )),
                Behavior::InvalidUtf8After(_) => {
                    // A valid JSON chunk but for two bytes that are not UTF-8.
                    let mut bytes =
                        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" ".to_vec();
                    bytes.extend_from_slice(&[0xff, 0xfe]);
                    bytes.extend_from_slice(b"\"},\"finish_reason\":null}]}\n\n");
                    steps.push(event(bytes));
                }
                Behavior::StallAfter(_) => steps.push(Step::Stall(Duration::from_secs(30))),
                Behavior::CloseMidBody { .. } => r.complete = false,
                _ => {} // CutAfter: the body ends here, properly framed, without [DONE]
            }
            return r;
        }
        let finish = if i + 1 == events {
            format!("\"{}\"", script.finish)
        } else {
            "null".to_string()
        };
        // A reasoning model's first events carry `reasoning_content`, as
        // vLLM's and SGLang's reasoning parsers stream them.
        let field = if i < script.reasoning_events {
            "reasoning_content"
        } else {
            "content"
        };
        let ev = if chat {
            format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":\"{words}\"}},\"finish_reason\":{finish}}}]}}\n\n")
        } else {
            format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{words}\",\"finish_reason\":{finish}}}]}}\n\n")
        };
        steps.push(Step::Send {
            bytes: ev.into_bytes(),
            content: true,
        });
    }
    if include_usage {
        let n = events * script.tokens_per_event;
        let details = if script.reasoning_events > 0 {
            format!(
                ",\"completion_tokens_details\":{{\"reasoning_tokens\":{}}}",
                script.reasoning_events * script.tokens_per_event
            )
        } else {
            String::new()
        };
        steps.push(event(format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":{n},\"total_tokens\":{}{details}}}}}\n\n", n + 1)));
    }
    steps.push(event("data: [DONE]\n\n"));
    r
}
