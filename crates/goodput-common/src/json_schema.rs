//! A documented subset of JSON Schema, shared by the client (is a tool
//! call's arguments or a structured answer valid against the schema that
//! was asked for?) and the simulator (generate an instance that is).
//!
//! Why a subset written here rather than the `jsonschema` crate: that crate
//! does build on Rust 1.88 (goodput's tests already use it, as a dev
//! dependency, to check the results schema, and to cross-check this
//! validator), but it would bring some forty crates into the binary (a
//! regex engine, URI, IDNA and e-mail parsers, a reference resolver) for
//! keywords tool definitions do not use. Tool `parameters` and
//! `response_format` schemas, as the OpenAI and Anthropic docs write them,
//! use a small core,
//! and that core is what is checked: `type` (one or a list), `properties`,
//! `required`, `additionalProperties: false` (or a schema), `enum`, `const`,
//! `items`, `minItems`/`maxItems`, `minLength`/`maxLength`,
//! `minimum`/`maximum`, `anyOf`/`oneOf` (any branch valid). Other keywords
//! (`pattern`, `format`, `$ref`, ...) are ignored: an instance is never
//! called invalid for a keyword that was not checked.

use serde_json::{Map, Value};

/// Check `instance` against `schema`; the error says where and why.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
    check(schema, instance, "$")
}

/// Parse `text` as JSON and check it against `schema`.
pub fn validate_text(schema: &Value, text: &str) -> Result<(), String> {
    let instance: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    validate(schema, &instance)
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn check(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        // `true`, `{}` or anything else accepts every instance.
        return if schema == &Value::Bool(false) {
            Err(format!("{at}: the schema allows nothing here"))
        } else {
            Ok(())
        };
    };
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = s.get(key).and_then(Value::as_array) {
            if !branches.iter().any(|b| check(b, v, at).is_ok()) {
                return Err(format!("{at}: matches none of {key}'s schemas"));
            }
        }
    }
    match s.get("type") {
        Some(Value::String(t)) if !type_matches(t, v) => {
            return Err(format!("{at}: expected {t}, got {}", kind(v)));
        }
        Some(Value::Array(ts))
            if !ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_matches(t, v)) =>
        {
            return Err(format!(
                "{at}: expected one of {}, got {}",
                Value::Array(ts.clone()),
                kind(v)
            ));
        }
        _ => {}
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(v) {
            return Err(format!(
                "{at}: {v} is not one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("{at}: {v} is not the constant {c}"));
        }
    }
    match v {
        Value::Object(o) => check_object(s, o, at),
        Value::Array(items) => check_array(s, items, at),
        Value::String(t) => {
            let n = t.chars().count() as u64;
            bounds(s, "minLength", "maxLength", n as f64, at, "length")
        }
        Value::Number(x) => bounds(
            s,
            "minimum",
            "maximum",
            x.as_f64().unwrap_or(0.0),
            at,
            "value",
        ),
        _ => Ok(()),
    }
}

fn bounds(
    s: &Map<String, Value>,
    lo: &str,
    hi: &str,
    x: f64,
    at: &str,
    what: &str,
) -> Result<(), String> {
    if let Some(min) = s.get(lo).and_then(Value::as_f64) {
        if x < min {
            return Err(format!("{at}: {what} {x} is below {lo} {min}"));
        }
    }
    if let Some(max) = s.get(hi).and_then(Value::as_f64) {
        if x > max {
            return Err(format!("{at}: {what} {x} is above {hi} {max}"));
        }
    }
    Ok(())
}

fn check_object(s: &Map<String, Value>, o: &Map<String, Value>, at: &str) -> Result<(), String> {
    let props = s.get("properties").and_then(Value::as_object);
    for name in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = name.as_str() {
            if !o.contains_key(name) {
                return Err(format!("{at}: required property \"{name}\" is missing"));
            }
        }
    }
    for (key, value) in o {
        let here = format!("{at}.{key}");
        match (
            props.and_then(|p| p.get(key)),
            s.get("additionalProperties"),
        ) {
            (Some(sub), _) => check(sub, value, &here)?,
            (None, Some(Value::Bool(false))) => {
                return Err(format!(
                    "{at}: property \"{key}\" is not allowed (additionalProperties: false)"
                ))
            }
            (None, Some(extra @ Value::Object(_))) => check(extra, value, &here)?,
            (None, _) => {}
        }
    }
    Ok(())
}

fn check_array(s: &Map<String, Value>, items: &[Value], at: &str) -> Result<(), String> {
    bounds(
        s,
        "minItems",
        "maxItems",
        items.len() as f64,
        at,
        "item count",
    )?;
    if let Some(sub) = s.get("items") {
        for (i, item) in items.iter().enumerate() {
            check(sub, item, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An instance of `schema` (the simulator's structured answer): every
/// property given (required or not), the first `enum`/`const` option,
/// strings and numbers at their lower bounds, arrays at `minItems` (at
/// least one item). `seed` varies the words of free strings.
pub fn example(schema: &Value, seed: u64) -> Value {
    example_at(schema, seed, 0)
}

fn example_at(schema: &Value, seed: u64, depth: u32) -> Value {
    let Some(s) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(first) = s
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(first) = ["anyOf", "oneOf"]
        .iter()
        .find_map(|k| s.get(*k).and_then(Value::as_array).and_then(|b| b.first()))
    {
        return example_at(first, seed, depth);
    }
    let t = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if s.contains_key("properties") => "object",
        _ => "string",
    };
    match t {
        "object" if depth < 8 => {
            let mut o = Map::new();
            for (i, (k, sub)) in s
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .enumerate()
            {
                o.insert(
                    k.clone(),
                    example_at(sub, seed.wrapping_add(i as u64), depth + 1),
                );
            }
            Value::Object(o)
        }
        "array" if depth < 8 => {
            let n = s
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 16);
            let item = s.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(
                (0..n)
                    .map(|i| example_at(&item, seed.wrapping_add(i), depth + 1))
                    .collect(),
            )
        }
        "integer" | "number" => {
            let min = s
                .get("minimum")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                .ceil();
            let max = s.get("maximum").and_then(Value::as_f64).unwrap_or(f64::MAX);
            Value::from(min.min(max.floor()) as i64)
        }
        "boolean" => Value::Bool(seed.is_multiple_of(2)),
        "null" => Value::Null,
        "string" => {
            let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(1) as usize;
            let max = s.get("maxLength").and_then(Value::as_u64).unwrap_or(64) as usize;
            let words = crate::words::words();
            let mut text = words[(seed as usize) % words.len()].to_string();
            while text.chars().count() < min {
                text.push('x');
            }
            Value::String(text.chars().take(max.max(min)).collect())
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn weather() -> Value {
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 2},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
            },
            "required": ["city", "unit"],
            "additionalProperties": false
        })
    }

    #[test]
    fn conforming_instances_pass_and_each_violation_is_named() {
        let s = weather();
        assert_eq!(
            validate_text(&s, r#"{"city":"Oslo","unit":"c","days":3}"#),
            Ok(())
        );
        let cases = [
            (r#"{"city":"Oslo"}"#, "required property \"unit\""),
            (r#"{"city":"Oslo","unit":"k"}"#, "is not one of"),
            (r#"{"city":"Oslo","unit":"c","days":9}"#, "above maximum"),
            (r#"{"city":"Oslo","unit":"c","x":1}"#, "not allowed"),
            (
                r#"{"city":3,"unit":"c"}"#,
                "$.city: expected string, got number",
            ),
            (
                r#"{"city":"Oslo","unit":"c","tags":["a","b","c"]}"#,
                "item count",
            ),
            (r#"{"city":"Oslo","unit":"c","tags":[1]}"#, "$.tags[0]"),
            (r#"{"city":"Oslo","#, "not valid JSON"),
            (r#"[1]"#, "expected object"),
        ];
        for (text, why) in cases {
            let e = validate_text(&s, text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn examples_validate_against_their_schema() {
        for seed in 0..20 {
            let s = weather();
            let v = example(&s, seed);
            assert_eq!(validate(&s, &v), Ok(()), "{v}");
        }
        let s = json!({"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]});
        assert_eq!(example(&s, 0), json!(5));
        assert!(validate(&s, &json!("x")).is_ok() && validate(&s, &json!(true)).is_err());
    }
}
