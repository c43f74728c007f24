//! Text in and out: counting prompt tokens with the client's default
//! encoding, and making output words.
//!
//! Prompts are tokenized with `tiktoken:o200k_base`, the client's default, so
//! `usage.prompt_tokens` equals the client's count: `/v1/completions` adds no
//! BOS token, and a chat prompt counts the tokens of each message's content
//! and nothing else (no role or template tokens). Output tokens are words
//! from the shared word list, each exactly one token with a leading space,
//! chosen from the seed, the request's index and the token's index.

use std::sync::OnceLock;

use goodput_common::tokenizer::Tokenizer;
use goodput_common::words::words;

use crate::error::SimError;

/// The encoding prompts are counted with.
pub const PROMPT_ENCODING: &str = "tiktoken:o200k_base";

/// The process-wide tokenizer (loading it takes ~0.2 s, so it is loaded once).
pub fn tokenizer() -> Result<&'static Tokenizer, SimError> {
    static TOKENIZER: OnceLock<Result<Tokenizer, String>> = OnceLock::new();
    TOKENIZER
        .get_or_init(|| Tokenizer::from_spec(PROMPT_ENCODING).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| SimError::Tokenizer(e.clone()))
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The word (without its leading space) of output token `token` of request
/// `request`.
pub fn output_word(seed: u64, request: u64, token: u32) -> &'static str {
    let w = words();
    if w.is_empty() {
        return "the";
    }
    let h = mix(mix(seed ^ mix(request)) ^ u64::from(token));
    w[(h % w.len() as u64) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_words_are_single_tokens_and_json_safe() {
        let t = tokenizer().unwrap();
        let text: String = (0..200)
            .map(|i| format!(" {}", output_word(3, 9, i)))
            .collect();
        assert_eq!(t.count(&text), Some(200));
        assert!(words()
            .iter()
            .all(|w| w.bytes().all(|b| b.is_ascii_alphabetic())));
        assert_eq!(output_word(3, 9, 5), output_word(3, 9, 5));
    }
}
