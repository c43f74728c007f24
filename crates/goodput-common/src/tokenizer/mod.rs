//! The one fixed client-side tokenizer of a run.
//!
//! Every client-side token count in a run (prompt lengths, output lengths when
//! the server reports no usage, per-event token counts) comes from the single
//! [`Tokenizer`] built here, so numbers from servers that do not report usage
//! stay comparable. The built-in tiktoken encodings are compiled into the
//! binary and need no network.

mod bpe;

use std::sync::Arc;

use bpe::Bpe;

/// The split pattern of `o200k_base` (as published with tiktoken).
const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+(?!\S)",
    "|",
    r"\s+"
);

/// The split pattern of `cl100k_base`.
const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

/// Errors building a tokenizer from a `--tokenizer` spec.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("unknown tokenizer '{0}': valid values are tiktoken:o200k_base, tiktoken:cl100k_base or none")]
    Unknown(String),
    #[error("could not load the built-in encoding {name}: {message}")]
    Load { name: String, message: String },
}

/// A tokenizer, cheap to clone (shared behind an `Arc`).
#[derive(Clone)]
pub struct Tokenizer {
    spec: String,
    inner: Option<Arc<Bpe>>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("spec", &self.spec)
            .finish()
    }
}

/// The default tokenizer spec.
pub const DEFAULT_TOKENIZER: &str = "tiktoken:o200k_base";

impl Tokenizer {
    /// Build from a spec: `tiktoken:o200k_base`, `tiktoken:cl100k_base`, or `none`.
    pub fn from_spec(spec: &str) -> Result<Self, TokenizerError> {
        let name = spec.strip_prefix("tiktoken:").unwrap_or(spec);
        let bpe = match name {
            "none" => {
                return Ok(Tokenizer {
                    spec: "none".into(),
                    inner: None,
                })
            }
            "o200k_base" => Bpe::new(
                include_str!("../../assets/o200k_base.tiktoken"),
                O200K_PATTERN,
            ),
            "cl100k_base" => Bpe::new(
                include_str!("../../assets/cl100k_base.tiktoken"),
                CL100K_PATTERN,
            ),
            _ => return Err(TokenizerError::Unknown(spec.to_string())),
        }
        .map_err(|message| TokenizerError::Load {
            name: name.to_string(),
            message,
        })?;
        Ok(Tokenizer {
            spec: format!("tiktoken:{name}"),
            inner: Some(Arc::new(bpe)),
        })
    }

    /// The canonical spec string, as recorded in a result's `config`.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// Whether this tokenizer counts tokens (`none` does not).
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Number of tokens in `text` (no special tokens, no BOS). `None` for the
    /// `none` tokenizer.
    pub fn count(&self, text: &str) -> Option<usize> {
        self.inner.as_ref().map(|b| b.count(text))
    }

    /// Token ids of `text` (no special tokens). `None` for `none`.
    pub fn encode(&self, text: &str) -> Option<Vec<u32>> {
        self.inner.as_ref().map(|b| b.encode(text))
    }

    /// The text of the tokens `ids`. `None` for `none` and when an id is not
    /// in the vocabulary.
    ///
    /// `decode(encode(t)) == t`; ids that cut a character in two (part of an
    /// emoji's byte tokens) give U+FFFD for the partial character.
    pub fn decode(&self, ids: &[u32]) -> Option<String> {
        let bytes = self.inner.as_ref()?.decode(ids)?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_both_builtin_encodings() {
        for spec in ["tiktoken:o200k_base", "cl100k_base"] {
            let t = Tokenizer::from_spec(spec).unwrap();
            assert_eq!(t.count(" the"), Some(1));
            assert_eq!(t.count("hello world"), Some(2));
        }
    }

    /// The compact encoder against tiktoken-rs, the reference, on text of
    /// every kind the split patterns distinguish.
    #[test]
    fn matches_tiktoken_rs_exactly() {
        use rand::{Rng, SeedableRng};
        let mut texts: Vec<String> = vec![
            "Hello, world! It's 2026; we'll see.\n\n  Indented\tline\r\nand CAPS'LL DON'T".into(),
            "fn main() { let x = vec![1, 2, 3]; println!(\"{x:?}\"); }   \n\n\n".into(),
            "日本語のテキスト、中文文本，한국어 텍스트 — émigré naïve façade 😀👍🏽 ∑∫√".into(),
            "1234567890 3.14159 -42 +7e10 0x1F 100,000.00".into(),
            "   leading and trailing spaces   ".into(),
            " ".repeat(300),
            "a".repeat(1000),
            "https://example.com/path?q=1&r=two#frag /usr/local/bin//".into(),
        ];
        let alphabet: Vec<char> = "abcXYZ019 \n\t.,'!?-_/\\\"éü日本😀ßΩж".chars().collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for _ in 0..300 {
            let len = rng.random_range(0..200);
            texts.push(
                (0..len)
                    .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                    .collect(),
            );
        }
        let words = crate::words::words();
        texts.push(words.join(" "));
        for (spec, reference) in [
            ("o200k_base", tiktoken_rs::o200k_base().unwrap()),
            ("cl100k_base", tiktoken_rs::cl100k_base().unwrap()),
        ] {
            let ours = Tokenizer::from_spec(spec).unwrap();
            for t in &texts {
                assert_eq!(
                    ours.encode(t).unwrap(),
                    reference.encode_ordinary(t),
                    "{spec}: {t:?}"
                );
                assert_eq!(ours.count(t).unwrap(), reference.encode_ordinary(t).len());
                assert_eq!(ours.decode(&ours.encode(t).unwrap()).as_ref(), Some(t));
            }
        }
    }

    #[test]
    fn none_counts_nothing_and_unknown_is_an_error() {
        assert_eq!(Tokenizer::from_spec("none").unwrap().count("x"), None);
        assert_eq!(Tokenizer::from_spec("none").unwrap().decode(&[1]), None);
        let err = Tokenizer::from_spec("gpt2").unwrap_err().to_string();
        assert!(err.contains("o200k_base"), "{err}");
    }

    #[test]
    fn builtin_decode_rejects_ids_outside_the_vocabulary() {
        let t = Tokenizer::from_spec("cl100k_base").unwrap();
        let ids = t.encode("hello world").unwrap();
        assert_eq!(t.decode(&ids).as_deref(), Some("hello world"));
        assert_eq!(t.decode(&[]).as_deref(), Some(""));
        assert_eq!(t.decode(&[ids[0], 5_000_000]), None);
    }
}
