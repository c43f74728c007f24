//! Streams whose events name their own type (OpenAI's Responses API,
//! Anthropic's Messages API), read into one shape: what text an event
//! carried and of which part (answer, reasoning, tool-call arguments),
//! where a tool call began, what usage and finish it reported, whether it
//! ended the stream or was an error. Each API's reading is in its own
//! module ([`super::responses`], [`super::messages`]), which the client
//! picks by endpoint; chat and completions
//! chunks keep their own parser ([`super::chunk`]).
//!
//! Finish reasons are mapped onto chat's, so the token-counting rules that
//! read them work unchanged: `max_tokens` / `incomplete` (max output
//! tokens) → `length`, `end_turn` / `completed` → `stop`, `tool_use` →
//! `tool_calls`, `stop_sequence` → `stop`.

use std::borrow::Cow;

use crate::request::record::ServerUsage;
use crate::request::tools::ToolCallRecord;

/// Which part of the answer an event's text belongs to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Part {
    #[default]
    Answer,
    Reasoning,
    /// A tool call's arguments (JSON text, in pieces).
    ToolArguments,
}

/// What one typed event said.
#[derive(Debug, Default, PartialEq)]
pub struct TypedEvent<'a> {
    /// Text appended to the output (may be empty).
    pub text: Option<Cow<'a, str>>,
    pub part: Part,
    /// The tool call (output item or content block index) this event's
    /// arguments, or the call it starts, belong to.
    pub tool_index: Option<u32>,
    /// A tool call begins here, with this function name.
    pub tool_start: Option<Cow<'a, str>>,
    /// Usage reported by this event; fields it does not report are `None`.
    pub usage: Option<ServerUsage>,
    /// Mapped onto chat's finish reasons (see the module's comment).
    pub finish_reason: Option<&'static str>,
    /// The last event of the stream (`response.completed`, `message_stop`).
    pub end: bool,
    /// The server reported a failure, in its words.
    pub error: Option<String>,
}

/// A whole (non-streamed) answer.
#[derive(Debug, Default, PartialEq)]
pub struct WholeAnswer {
    pub reasoning: String,
    pub answer: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub usage: Option<ServerUsage>,
    pub finish_reason: Option<&'static str>,
    pub error: Option<String>,
}

/// Merge usage reported in pieces (Anthropic's input in `message_start`,
/// output in `message_delta`): each field keeps its latest report.
pub fn merge_usage(into: &mut Option<ServerUsage>, new: ServerUsage) {
    let u = into.get_or_insert_with(ServerUsage::default);
    u.prompt_tokens = new.prompt_tokens.or(u.prompt_tokens);
    u.completion_tokens = new.completion_tokens.or(u.completion_tokens);
    u.reasoning_tokens = new.reasoning_tokens.or(u.reasoning_tokens);
    u.cached_tokens = new.cached_tokens.or(u.cached_tokens);
}
