//! A pooling answer (embeddings, rerank, score) into the record: read
//! whole, its results counted against the inputs sent, its token count as
//! the server's prompt tokens. It has no content events: its latency is the
//! whole exchange (E2EL), and TTFT, TPOT and ITL are undefined.

use crate::request::protocol::chunk::Chunk;
use crate::request::protocol::pooling::parse_answer;
use crate::request::protocol::Endpoint;
use crate::request::record::{ErrorKind, RequestError, RequestRecord, ServerUsage};

use super::response::{err, snippet};

/// Record the whole pooling answer `body`, read at `at`, to a request that
/// sent `sent` inputs. A count of results other than `sent` is malformed.
pub(super) fn pooling_response(
    endpoint: Endpoint,
    body: &[u8],
    at: u64,
    sent: u32,
    rec: &mut RequestRecord,
) -> Result<(), RequestError> {
    rec.t_done = at;
    if body.trim_ascii().is_empty() {
        return Err(err(
            ErrorKind::EmptyResponse,
            format!("an empty body ({} bytes of whitespace at most)", body.len()),
        ));
    }
    if let Some(msg) = Chunk::parse(body).ok().and_then(|c| c.error_message()) {
        return Err(err(ErrorKind::ServerError, msg));
    }
    let answer = parse_answer(endpoint, body)
        .map_err(|e| err(ErrorKind::Malformed, format!("{e}: {}", snippet(body))))?;
    rec.usage = Some(ServerUsage {
        prompt_tokens: answer.prompt_tokens,
        completion_tokens: Some(0),
        ..Default::default()
    });
    rec.finish_reason = None;
    if answer.results != sent as usize {
        return Err(err(
            ErrorKind::Malformed,
            format!(
                "{} results for {sent} inputs sent: a {endpoint} answer has one result per input",
                answer.results
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_that_differs_from_the_inputs_sent_is_malformed() {
        let body = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"usage":{"prompt_tokens":7,"total_tokens":7}}"#;
        let mut rec = RequestRecord::default();
        pooling_response(Endpoint::Embeddings, body, 9, 1, &mut rec).unwrap();
        assert_eq!(rec.t_done, 9);
        assert_eq!(rec.usage.unwrap().prompt_tokens, Some(7));
        let e = pooling_response(Endpoint::Embeddings, body, 9, 2, &mut rec).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(
            e.message.starts_with("1 results for 2 inputs sent"),
            "{}",
            e.message
        );
        let e = pooling_response(
            Endpoint::Rerank,
            br#"{"error":{"message":"boom"}}"#,
            9,
            1,
            &mut rec,
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::ServerError);
    }
}
