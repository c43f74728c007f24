//! The one fixed client-side tokenizer of a run.
//!
//! Every client-side token count in a run (prompt lengths, output lengths when
//! the server reports no usage, per-event token counts) comes from the single
//! [`Tokenizer`] built here, so numbers from servers that do not report usage
//! stay comparable. The built-in tiktoken encodings are compiled into the
//! binary and need no network.

use std::sync::Arc;

use tiktoken_rs::CoreBPE;

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
    inner: Option<Arc<CoreBPE>>,
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
            "o200k_base" => tiktoken_rs::o200k_base(),
            "cl100k_base" => tiktoken_rs::cl100k_base(),
            _ => return Err(TokenizerError::Unknown(spec.to_string())),
        }
        .map_err(|e| TokenizerError::Load {
            name: name.to_string(),
            message: e.to_string(),
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
        self.inner.as_ref().map(|b| b.encode_ordinary(text).len())
    }

    /// Token ids of `text` (no special tokens). `None` for `none`.
    pub fn encode(&self, text: &str) -> Option<Vec<u32>> {
        self.inner.as_ref().map(|b| b.encode_ordinary(text))
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

    #[test]
    fn none_counts_nothing_and_unknown_is_an_error() {
        assert_eq!(Tokenizer::from_spec("none").unwrap().count("x"), None);
        let err = Tokenizer::from_spec("gpt2").unwrap_err().to_string();
        assert!(err.contains("o200k_base"), "{err}");
    }
}
