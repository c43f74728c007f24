//! Reading the streams whose events name their type (Responses, Anthropic
//! Messages) into the record, with the same timing rules as chat: only
//! events that carry text (answer, reasoning, tool-call arguments) are
//! content events; lifecycle events are read for their usage, finish and
//! end, and never timed. Also where every API's tool calls are gathered
//! into the record, with the arrival of the first piece of arguments.

use crate::request::protocol::chunk::Chunk;
use crate::request::protocol::typed::{merge_usage, Part, TypedEvent};
use crate::request::protocol::{messages, responses, Endpoint};
use crate::request::record::{Event, RequestRecord};
use crate::request::tools::ToolCallRecord;

/// Which of the record's tool calls each streamed call index is (chat's
/// `tool_calls[].index`, Responses' `output_index`, Anthropic's block
/// `index`).
#[derive(Debug, Default)]
pub(super) struct ToolSlots {
    slots: Vec<(Option<u32>, usize)>,
}

impl ToolSlots {
    /// The record's call for `index`, opened (with `name`) if new.
    fn slot<'r>(
        &mut self,
        index: Option<u32>,
        name: Option<&str>,
        rec: &'r mut RequestRecord,
    ) -> &'r mut ToolCallRecord {
        let pos = match self.slots.iter().find(|(i, _)| *i == index) {
            Some(&(_, pos)) => pos,
            None => {
                rec.tool_calls.push(ToolCallRecord::default());
                self.slots.push((index, rec.tool_calls.len() - 1));
                rec.tool_calls.len() - 1
            }
        };
        let call = &mut rec.tool_calls[pos];
        if let Some(n) = name.filter(|n| call.name.is_empty() && !n.is_empty()) {
            call.name = n.to_string();
        }
        call
    }

    /// A piece of a call's arguments arrived at `at`.
    fn arguments(&mut self, index: Option<u32>, text: &str, at: u64, rec: &mut RequestRecord) {
        self.slot(index, None, rec).arguments.push_str(text);
        if !text.is_empty() {
            rec.t_first_tool_call.get_or_insert(at);
        }
    }

    /// A chat chunk's tool-call deltas (its text is already in the output).
    pub(super) fn chat_deltas(&mut self, chunk: &Chunk<'_>, at: u64, rec: &mut RequestRecord) {
        for (index, name, args) in chunk.tool_deltas() {
            self.slot(index, name, rec);
            self.arguments(index, args, at, rec);
        }
    }
}

/// What a typed event did to the stream.
pub(super) enum Typed {
    Continue,
    /// The last event (`response.completed`, `message_stop`).
    End,
    /// The server reported a failure, in its words.
    ServerError(String),
}

/// Read one event's data as `endpoint` shapes it.
fn parse(endpoint: Endpoint, data: &[u8]) -> Result<TypedEvent<'_>, serde_json::Error> {
    match endpoint {
        Endpoint::Messages => messages::parse_event(data),
        _ => responses::parse_event(data),
    }
}

/// One typed event (Responses, Anthropic Messages) into the record.
pub(super) fn on_typed_event(
    endpoint: Endpoint,
    tools: &mut ToolSlots,
    data: &[u8],
    at: u64,
    rec: &mut RequestRecord,
) -> Result<Typed, serde_json::Error> {
    let ev = parse(endpoint, data)?;
    if let Some(msg) = ev.error {
        return Ok(Typed::ServerError(msg));
    }
    if let Some(u) = ev.usage {
        merge_usage(&mut rec.usage, u);
    }
    if let Some(name) = &ev.tool_start {
        tools.slot(ev.tool_index, Some(name), rec);
    }
    if let Some(text) = ev.text.as_deref().filter(|t| !t.is_empty()) {
        rec.output_text.push_str(text);
        if ev.part == Part::ToolArguments {
            tools.arguments(ev.tool_index, text, at, rec);
        }
        rec.events.push(Event {
            at_ns: at,
            text_end: rec.output_text.len() as u32,
            usage_completion_tokens: None,
            reasoning: ev.part == Part::Reasoning,
        });
    }
    if let Some(f) = ev.finish_reason {
        rec.finish_reason = Some(finish_with_tools(f, rec).into());
    }
    if !ev.end {
        return Ok(Typed::Continue);
    }
    if rec.finish_reason.is_none() {
        rec.finish_reason = Some(finish_with_tools("stop", rec).into());
    }
    Ok(Typed::End)
}

/// A Responses answer that called a tool says `completed`; chat's finish
/// for it is `tool_calls`.
fn finish_with_tools(f: &'static str, rec: &RequestRecord) -> &'static str {
    if f == "stop" && !rec.tool_calls.is_empty() {
        "tool_calls"
    } else {
        f
    }
}

/// A whole (non-streamed) Responses or Anthropic answer: one event at the
/// end, as for chat. `Ok(Some(message))`: the server's error object.
pub(super) fn whole_typed(
    body: &[u8],
    at: u64,
    rec: &mut RequestRecord,
    endpoint: Endpoint,
) -> Result<Option<String>, serde_json::Error> {
    let a = match endpoint {
        Endpoint::Messages => messages::parse_whole(body)?,
        _ => responses::parse_whole(body)?,
    };
    if let Some(msg) = a.error {
        return Ok(Some(msg));
    }
    rec.output_text.push_str(&a.reasoning);
    rec.output_text.push_str(&a.answer);
    for call in &a.tool_calls {
        rec.output_text.push_str(&call.arguments);
    }
    if !a.tool_calls.is_empty() {
        rec.t_first_tool_call = Some(at);
    }
    rec.tool_calls = a.tool_calls;
    rec.usage = a.usage;
    rec.finish_reason = a.finish_reason.map(|f| finish_with_tools(f, rec).into());
    if !rec.output_text.is_empty() {
        rec.events.push(Event {
            at_ns: at,
            text_end: rec.output_text.len() as u32,
            usage_completion_tokens: None,
            reasoning: a.answer.is_empty() && rec.tool_calls.is_empty(),
        });
    }
    Ok(None)
}
