//! Reading OpenAI-compatible completion chunks and responses (the stream
//! events' payloads; the SSE framing around them is the client's).
//!
//! One type parses both a streamed chunk (`choices[].delta` for chat,
//! `choices[].text` for completions) and a whole non-streamed response
//! (`choices[].message`). Strings are borrowed from the event bytes where
//! they contain no escapes, so the common chunk parses without allocating
//! text.

use std::borrow::Cow;

use serde::Deserialize;

use crate::request::record::ServerUsage;

#[derive(Deserialize, Default)]
pub struct Chunk<'a> {
    /// The first choice only (goodput sends n = 1); parsed without allocating a list.
    #[serde(default, borrow)]
    pub choices: Option<FirstChoice<'a>>,
    #[serde(default)]
    pub usage: Option<UsageJson>,
    /// `{"error": {...}}` (vLLM, OpenAI) or `{"error": "..."}` (TGI).
    #[serde(default)]
    pub error: Option<serde_json::Value>,
    /// `{"object": "error", "message": ...}` (older vLLM).
    #[serde(default, borrow)]
    pub object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub message: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
pub struct Choice<'a> {
    #[serde(default, borrow)]
    pub delta: Option<Message<'a>>,
    #[serde(default, borrow)]
    pub message: Option<Message<'a>>,
    #[serde(default, borrow)]
    pub text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
pub struct Message<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// Some servers (and OpenRouter) name it `reasoning`.
    #[serde(default, borrow)]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCall<'a>>>,
}

#[derive(Deserialize, Default)]
pub struct ToolCall<'a> {
    /// Which call of the answer this delta belongs to.
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default, borrow)]
    pub function: Option<Function<'a>>,
}

#[derive(Deserialize, Default)]
pub struct Function<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub struct UsageJson {
    #[serde(default)]
    pub prompt_tokens: Option<u32>,
    #[serde(default)]
    pub completion_tokens: Option<u32>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<u32>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub struct CompletionDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u32>,
}

/// The first element of the `choices` array, or `None` for `[]`; the rest
/// are skipped.
#[derive(Default)]
pub struct FirstChoice<'a>(pub Option<Choice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<Choice<'a>>()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

impl<'a> FirstChoice<'a> {
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl From<UsageJson> for ServerUsage {
    fn from(u: UsageJson) -> Self {
        ServerUsage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
            cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
        }
    }
}

/// What one event (or one whole response) delivered.
#[derive(Debug, Default, PartialEq)]
pub struct Delivery {
    /// Visible text appended to the output (content, completion text, tool-call arguments).
    pub answer_bytes: usize,
    /// Reasoning text appended.
    pub reasoning_bytes: usize,
    pub finish_reason: Option<String>,
}

impl<'a> Chunk<'a> {
    /// The chunk in `data`: the hand-written reader for the usual shape,
    /// serde for everything else (and for every error); see
    /// [`Chunk::parse_str`].
    pub fn parse(data: &'a [u8]) -> Result<Chunk<'a>, serde_json::Error> {
        match std::str::from_utf8(data) {
            Ok(s) => Self::parse_str(s),
            Err(_) => serde_json::from_slice(data),
        }
    }

    /// The first choice's delta or message has tool calls.
    pub fn has_tool_calls(&self) -> bool {
        matches!(&self.choices, Some(FirstChoice(Some(c)))
            if [&c.delta, &c.message].into_iter().flatten().any(|m| m.tool_calls.is_some()))
    }

    /// The first choice's tool-call pieces: (call index, name, arguments).
    pub fn tool_deltas(&self) -> impl Iterator<Item = (Option<u32>, Option<&str>, &str)> {
        let c = match &self.choices {
            Some(FirstChoice(Some(c))) => Some(c),
            _ => None,
        };
        c.into_iter()
            .flat_map(|c| [&c.delta, &c.message].into_iter().flatten())
            .flat_map(|m| m.tool_calls.iter().flatten().enumerate())
            .filter_map(|(position, call)| {
                let f = call.function.as_ref()?;
                // A whole message's calls carry no index: their position is.
                Some((
                    call.index.or(Some(position as u32)),
                    f.name.as_deref(),
                    f.arguments.as_deref().unwrap_or_default(),
                ))
            })
    }

    /// The server's error message, if this chunk is an error object.
    pub fn error_message(&self) -> Option<String> {
        if let Some(e) = &self.error {
            if e.is_null() {
                return None;
            }
            let msg = e
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| match e {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
            return Some(msg);
        }
        if self.object.as_deref() == Some("error") {
            return Some(self.message.as_deref().unwrap_or("error").to_string());
        }
        None
    }

    /// Append the text this chunk carries to `out`; report what it was.
    pub fn deliver(&self, out: &mut String) -> Delivery {
        let mut d = Delivery::default();
        let Some(FirstChoice(Some(c))) = &self.choices else {
            return d;
        };
        if let Some(t) = &c.text {
            out.push_str(t);
            d.answer_bytes += t.len();
        }
        for m in [&c.delta, &c.message].into_iter().flatten() {
            if let Some(t) = m.reasoning_content.as_ref().or(m.reasoning.as_ref()) {
                out.push_str(t);
                d.reasoning_bytes += t.len();
            }
            if let Some(t) = &m.content {
                out.push_str(t);
                d.answer_bytes += t.len();
            }
            for call in m.tool_calls.iter().flatten() {
                if let Some(f) = &call.function {
                    for t in [&f.name, &f.arguments].into_iter().flatten() {
                        out.push_str(t);
                        d.answer_bytes += t.len();
                    }
                }
            }
        }
        d.finish_reason = c.finish_reason.as_ref().map(|s| s.to_string());
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deliver(json: &str) -> (String, Delivery) {
        let c = Chunk::parse(json.as_bytes()).unwrap();
        let mut s = String::new();
        let d = c.deliver(&mut s);
        (s, d)
    }

    #[test]
    fn role_only_chunk_carries_no_content() {
        let (s, d) = deliver(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        );
        assert_eq!(s, "");
        assert_eq!(d.answer_bytes + d.reasoning_bytes, 0);
    }

    #[test]
    fn chat_completion_and_reasoning_text() {
        assert_eq!(
            deliver(r#"{"choices":[{"delta":{"content":" hi"}}]}"#).0,
            " hi"
        );
        assert_eq!(deliver(r#"{"choices":[{"text":" a\"b"}]}"#).0, " a\"b");
        let (s, d) = deliver(r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#);
        assert_eq!(
            (s.as_str(), d.reasoning_bytes, d.answer_bytes),
            ("think", 5, 0)
        );
        let (s, _) = deliver(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\""}}]}}]}"#,
        );
        assert_eq!(s, "{\"x\"");
    }

    #[test]
    fn tool_calls_of_a_whole_message_are_apart() {
        let c = Chunk::parse(br#"{"choices":[{"message":{"content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"[]"}}]}}]}"#).unwrap();
        assert!(c.has_tool_calls());
        let calls: Vec<_> = c.tool_deltas().collect();
        assert_eq!(
            calls,
            [(Some(0), Some("f"), "{}"), (Some(1), Some("g"), "[]")]
        );
    }

    #[test]
    fn only_the_first_choice_is_followed() {
        let (s, _) = deliver(r#"{"choices":[{"text":"a"},{"text":"b","x":[1,{"y":2}]}]}"#);
        assert_eq!(s, "a");
        assert!(Chunk::parse(br#"{"choices":[]}"#)
            .unwrap()
            .choices
            .unwrap()
            .is_empty());
    }

    #[test]
    fn usage_chunk_and_error_objects() {
        let c = Chunk::parse(br#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":3}}}"#).unwrap();
        let u: ServerUsage = c.usage.unwrap().into();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cached_tokens),
            (Some(5), Some(7), Some(3))
        );
        let e = Chunk::parse(br#"{"error":{"message":"boom","code":500}}"#).unwrap();
        assert_eq!(e.error_message().as_deref(), Some("boom"));
        let e = Chunk::parse(br#"{"error":"overloaded","error_type":"x"}"#).unwrap();
        assert_eq!(e.error_message().as_deref(), Some("overloaded"));
        let e = Chunk::parse(br#"{"object":"error","message":"bad"}"#).unwrap();
        assert_eq!(e.error_message().as_deref(), Some("bad"));
        assert!(Chunk::parse(br#"{"choices":[]}"#)
            .unwrap()
            .error_message()
            .is_none());
    }
}
