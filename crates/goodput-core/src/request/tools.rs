//! Tool calls and structured output: what a run asks for (`--tools`,
//! `--tool-choice`, `--response-format`), how each API spells it in a
//! request body, and whether an answer kept to the schema it was given.
//!
//! The check is a pure function of what a request's record holds (its tool
//! calls, its answer text) and the [`OutputSpec`] it was sent with, so a
//! reply that breaks the schema is counted where every other per-request
//! figure is derived ([`crate::measure::metrics`]). A schema violation is not a
//! transport failure: the request completed; its answer was wrong.
//! Validation uses the JSON Schema subset of
//! [`goodput_common::json_schema`] (which keywords, and why a subset).

use std::path::Path;

use goodput_common::json_schema;
use goodput_common::Endpoint;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One function tool, as given in `--tools` (OpenAI's shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// The function's name, as the model calls it.
    pub name: String,
    /// What the function does, for the model (sent empty when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

/// `--tool-choice`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    Auto,
    /// The model must call some tool; an answer without a call fails the check.
    Required,
    /// The model must not call a tool.
    None,
    /// This one function.
    Named(String),
}

impl ToolChoice {
    /// `auto`, `required`, `none` or a tool's name (one of `tools`).
    pub fn parse(s: &str, tools: &[ToolDef]) -> Result<ToolChoice, String> {
        match s.trim() {
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            "none" => Ok(ToolChoice::None),
            name if tools.iter().any(|t| t.name == name) => Ok(ToolChoice::Named(name.into())),
            other => Err(format!(
                "invalid --tool-choice '{other}': valid values are auto, required, none or the name of a tool in --tools ({})",
                tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

/// `--response-format`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Any JSON object.
    JsonObject,
    /// JSON valid against this schema (`name` from the file's stem).
    JsonSchema {
        /// The schema's name: the file's `name` beside `schema`, else its stem.
        name: String,
        /// The JSON schema the answer must validate against.
        schema: Value,
    },
}

/// What a run asks of the answers' shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSpec {
    /// The tools offered with every request (`--tools`); empty: none.
    #[serde(default)]
    pub tools: Vec<ToolDef>,
    /// Whether and which tool the model must call (`--tool-choice`).
    pub tool_choice: ToolChoice,
    /// The shape the answer's text must have (`--response-format`); `None`: any.
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
}

/// One tool call of an answer, as streamed (or returned whole).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The function's name (empty if the server never sent one).
    pub name: String,
    /// Its arguments' JSON text, concatenated from the deltas.
    pub arguments: String,
}

fn read_json(path: &Path, what: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {what} file {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{what} file {} is not valid JSON: {e}", path.display()))
}

/// The tools of a `--tools` file: a JSON array of
/// `{"type":"function","function":{"name","description","parameters"}}`
/// (the flat `{"name","parameters"}` shape is accepted too).
pub fn read_tools(path: &Path) -> Result<Vec<ToolDef>, String> {
    let v = read_json(path, "--tools")?;
    let Some(items) = v.as_array() else {
        return Err(format!(
            "--tools file {}: expected a JSON array of tool definitions",
            path.display()
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let f = item.get("function").unwrap_or(item);
            let name = f.get("name").and_then(Value::as_str).ok_or_else(|| {
                format!(
                    "--tools file {}: tool {i} has no \"function\": {{\"name\": ...}}",
                    path.display()
                )
            })?;
            Ok(ToolDef {
                name: name.into(),
                description: f.get("description").and_then(Value::as_str).map(Into::into),
                parameters: f
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            })
        })
        .collect()
}

/// `json_object` or `json_schema:FILE` (FILE holds the schema itself, or
/// OpenAI's `{"name","schema"}` wrapper).
pub fn read_response_format(spec: &str) -> Result<ResponseFormat, String> {
    match spec.trim().split_once(':') {
        None if spec.trim() == "json_object" => Ok(ResponseFormat::JsonObject),
        Some(("json_schema", file)) => {
            let path = Path::new(file);
            let v = read_json(path, "--response-format")?;
            let (name, schema) = match (v.get("schema"), v.get("name").and_then(Value::as_str)) {
                (Some(s), Some(n)) => (n.to_string(), s.clone()),
                _ => (
                    path.file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "schema".into()),
                    v,
                ),
            };
            Ok(ResponseFormat::JsonSchema { name, schema })
        }
        _ => Err(format!(
            "invalid --response-format '{spec}': valid values are json_object and json_schema:FILE"
        )),
    }
}

impl OutputSpec {
    /// Add `tools`, `tool_choice` and the response format to `body`, as
    /// `endpoint` spells them.
    pub fn insert(&self, endpoint: Endpoint, body: &mut Map<String, Value>) {
        if !self.tools.is_empty() {
            let tools: Vec<Value> = self.tools.iter().map(|t| tool_json(endpoint, t)).collect();
            body.insert("tools".into(), tools.into());
            body.insert("tool_choice".into(), self.choice_json(endpoint));
        }
        let Some(format) = &self.response_format else {
            return;
        };
        let chat_format = match format {
            ResponseFormat::JsonObject => json!({"type": "json_object"}),
            ResponseFormat::JsonSchema { name, schema } => json!({
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": true}
            }),
        };
        match (endpoint, format) {
            (Endpoint::Responses, ResponseFormat::JsonObject) => {
                body.insert("text".into(), json!({"format": {"type": "json_object"}}));
            }
            (Endpoint::Responses, ResponseFormat::JsonSchema { name, schema }) => {
                body.insert(
                    "text".into(),
                    json!({"format": {"type": "json_schema", "name": name, "schema": schema, "strict": true}}),
                );
            }
            // Anthropic has no response_format: the schema is asked for as
            // vLLM's Anthropic endpoint and most gateways take it, the same
            // field chat uses.
            _ => {
                body.insert("response_format".into(), chat_format);
            }
        }
    }

    fn choice_json(&self, endpoint: Endpoint) -> Value {
        match (endpoint, &self.tool_choice) {
            (Endpoint::Messages, ToolChoice::Auto) => json!({"type": "auto"}),
            (Endpoint::Messages, ToolChoice::Required) => json!({"type": "any"}),
            (Endpoint::Messages, ToolChoice::None) => json!({"type": "none"}),
            (Endpoint::Messages, ToolChoice::Named(n)) => json!({"type": "tool", "name": n}),
            (Endpoint::Responses, ToolChoice::Named(n)) => json!({"type": "function", "name": n}),
            (_, ToolChoice::Named(n)) => json!({"type": "function", "function": {"name": n}}),
            (_, ToolChoice::Auto) => "auto".into(),
            (_, ToolChoice::Required) => "required".into(),
            (_, ToolChoice::None) => "none".into(),
        }
    }

    /// Did the answer keep to what was asked? `None`: nothing to check
    /// (no tool call and no response format). Each tool call's arguments
    /// are checked against its tool's `parameters`; without a tool call,
    /// the answer text against the response format. The error names the
    /// first violation.
    pub fn check(&self, calls: &[ToolCallRecord], answer: &str) -> Option<Result<(), String>> {
        if !calls.is_empty() {
            if self.tool_choice == ToolChoice::None {
                return Some(Err("a tool was called where tool_choice was none".into()));
            }
            for (i, c) in calls.iter().enumerate() {
                let Some(tool) = self.tools.iter().find(|t| t.name == c.name) else {
                    return Some(Err(format!("tool call {i}: no tool named \"{}\"", c.name)));
                };
                if let ToolChoice::Named(named) = &self.tool_choice {
                    if *named != c.name {
                        return Some(Err(format!(
                            "tool call {i}: \"{}\" was called where tool_choice named \"{named}\"",
                            c.name
                        )));
                    }
                }
                if let Err(e) = json_schema::validate_text(&tool.parameters, &c.arguments) {
                    return Some(Err(format!("tool call {i} ({}): {e}", c.name)));
                }
            }
            return Some(Ok(()));
        }
        let required_call = matches!(
            self.tool_choice,
            ToolChoice::Required | ToolChoice::Named(_)
        ) && !self.tools.is_empty();
        if required_call {
            return Some(Err("a tool call was required and none came".into()));
        }
        match self.response_format.as_ref()? {
            ResponseFormat::JsonObject => Some(match serde_json::from_str::<Value>(answer) {
                Ok(Value::Object(_)) => Ok(()),
                Ok(_) => Err("$: expected a JSON object".into()),
                Err(e) => Err(format!("not valid JSON: {e}")),
            }),
            ResponseFormat::JsonSchema { schema, .. } => {
                Some(json_schema::validate_text(schema, answer))
            }
        }
    }
}

/// A tool definition as `endpoint` takes it: chat's nested function,
/// Responses' flat function, Anthropic's `input_schema`.
fn tool_json(endpoint: Endpoint, t: &ToolDef) -> Value {
    let description = t.description.clone().unwrap_or_default();
    match endpoint {
        Endpoint::Responses => json!({
            "type": "function", "name": t.name, "description": description, "parameters": t.parameters
        }),
        Endpoint::Messages => json!({
            "name": t.name, "description": description, "input_schema": t.parameters
        }),
        _ => json!({
            "type": "function",
            "function": {"name": t.name, "description": description, "parameters": t.parameters}
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> OutputSpec {
        OutputSpec {
            tools: vec![ToolDef {
                name: "get_weather".into(),
                description: Some("Weather".into()),
                parameters: json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
            }],
            tool_choice: ToolChoice::Auto,
            response_format: None,
        }
    }

    #[test]
    fn each_api_gets_its_own_tool_shape() {
        let mut s = spec();
        s.tool_choice = ToolChoice::Named("get_weather".into());
        let body = |e| {
            let mut m = Map::new();
            s.insert(e, &mut m);
            Value::Object(m)
        };
        let chat = body(Endpoint::Chat);
        assert_eq!(chat["tools"][0]["function"]["name"], "get_weather");
        assert_eq!(chat["tool_choice"]["function"]["name"], "get_weather");
        let responses = body(Endpoint::Responses);
        assert_eq!(responses["tools"][0]["name"], "get_weather");
        assert_eq!(
            responses["tool_choice"],
            json!({"type":"function","name":"get_weather"})
        );
        let messages = body(Endpoint::Messages);
        assert_eq!(messages["tools"][0]["input_schema"]["required"][0], "city");
        assert_eq!(
            messages["tool_choice"],
            json!({"type":"tool","name":"get_weather"})
        );
    }

    #[test]
    fn calls_are_checked_against_their_tools_schema() {
        let s = spec();
        let call = |args: &str| ToolCallRecord {
            name: "get_weather".into(),
            arguments: args.into(),
        };
        assert_eq!(s.check(&[call(r#"{"city":"Oslo"}"#)], ""), Some(Ok(())));
        let e = s
            .check(&[call(r#"{"town":"Oslo"}"#)], "")
            .unwrap()
            .unwrap_err();
        assert!(e.contains("required property \"city\""), "{e}");
        assert!(s.check(&[call(r#"{"city":"#)], "").unwrap().is_err());
        // Nothing asked of a plain answer under `auto`.
        assert_eq!(s.check(&[], "hello"), None);
        let mut s = spec();
        s.tool_choice = ToolChoice::None;
        s.response_format = Some(ResponseFormat::JsonObject);
        assert_eq!(s.check(&[], r#"{"a":1}"#), Some(Ok(())));
        assert!(s.check(&[], "[1]").unwrap().is_err());
        // A call where `none` was asked breaks it.
        let e = s.check(&[call(r#"{"city":"Oslo"}"#)], "").unwrap();
        assert!(e.unwrap_err().contains("tool_choice was none"));
    }

    /// A named choice is kept only by a call to that tool: another listed
    /// tool called instead breaks it.
    #[test]
    fn a_named_choice_is_kept_only_by_that_tool() {
        let mut s = spec();
        s.tools.push(ToolDef {
            name: "get_time".into(),
            description: None,
            parameters: json!({"type":"object"}),
        });
        s.tool_choice = ToolChoice::Named("get_weather".into());
        let call = |name: &str, args: &str| ToolCallRecord {
            name: name.into(),
            arguments: args.into(),
        };
        let weather = call("get_weather", r#"{"city":"Oslo"}"#);
        assert_eq!(s.check(std::slice::from_ref(&weather), ""), Some(Ok(())));
        let e = s.check(&[call("get_time", "{}")], "").unwrap().unwrap_err();
        assert!(
            e.contains("\"get_time\" was called where tool_choice named \"get_weather\""),
            "{e}"
        );
    }

    #[test]
    fn bad_choices_name_what_is_valid() {
        let e = ToolChoice::parse("weather", &spec().tools).unwrap_err();
        assert!(
            e.contains("auto, required, none") && e.contains("get_weather"),
            "{e}"
        );
        assert!(read_response_format("yaml").is_err());
    }
}
