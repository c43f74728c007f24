//! Images in a chat request: the last user message's text becomes a text
//! part followed by one `image_url` part per image, as OpenAI's and vLLM's
//! chat API take them:
//!
//! ```json
//! {"role": "user", "content": [
//!   {"type": "text", "text": "..."},
//!   {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}
//! ]}
//! ```

use bytes::Bytes;
use serde_json::{json, Value};

/// `body` (a chat request) with `urls` attached to its last user message;
/// `Err` when it is no chat request with one.
pub fn with_images(body: &[u8], urls: &[String]) -> Result<Bytes, String> {
    let mut v: Value =
        serde_json::from_slice(body).map_err(|e| format!("not a JSON request body: {e}"))?;
    let message = v
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|m| {
            m.iter_mut()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
        .ok_or("images go with a chat request's user message; this request has none")?;
    let mut parts = match message.get_mut("content").map(Value::take) {
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        Some(Value::Array(parts)) => parts,
        _ => Vec::new(),
    };
    parts.extend(
        urls.iter()
            .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
    );
    message["content"] = Value::Array(parts);
    serde_json::to_vec(&v)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_follow_the_last_user_messages_text() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}"#;
        let urls = vec!["data:image/png;base64,AAAA".to_string()];
        let v: Value = serde_json::from_slice(&with_images(body, &urls).unwrap()).unwrap();
        assert_eq!(v["messages"][0]["content"], "a");
        let parts = &v["messages"][2]["content"];
        assert_eq!(parts[0], json!({"type": "text", "text": "c"}));
        assert_eq!(parts[1]["type"], "image_url");
        assert_eq!(parts[1]["image_url"]["url"], urls[0]);
        assert!(with_images(br#"{"prompt":"x"}"#, &urls)
            .unwrap_err()
            .contains("chat request"));
    }
}
