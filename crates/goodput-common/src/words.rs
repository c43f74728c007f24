//! The word list synthetic text is drawn from.
//!
//! `words.txt` holds common English words in frequency order, each of which is
//! exactly one token, with and without a leading space, in both built-in
//! encodings (`o200k_base`, `cl100k_base`). Text made of these words joined
//! by single spaces (a period after a word one token more) therefore has a
//! token count known by construction, which the prompt builder uses under
//! those encodings; a test checks the whole list. The simulator uses the
//! same list for its output text so that client-side and server-side counts
//! agree exactly.

use std::sync::OnceLock;

static RAW: &str = include_str!("words.txt");

/// All words, most frequent first.
pub fn words() -> &'static [&'static str] {
    static WORDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| RAW.lines().filter(|l| !l.is_empty()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::Tokenizer;

    #[test]
    fn at_least_a_thousand_distinct_single_token_words() {
        let w = words();
        let distinct: std::collections::HashSet<_> = w.iter().collect();
        assert!(distinct.len() >= 1000, "{}", distinct.len());
        assert_eq!(distinct.len(), w.len());
        for spec in ["o200k_base", "cl100k_base"] {
            let t = Tokenizer::from_spec(spec).unwrap();
            assert!(t.counts_list_words_as_single_tokens());
            for word in w {
                assert_eq!(t.count(&format!(" {word}")), Some(1), "{spec}: {word}");
                assert_eq!(t.count(word), Some(1), "{spec}: {word}");
                // A sentence's period is a token of its own.
                assert_eq!(t.count(&format!(" {word}.")), Some(2), "{spec}: {word}.");
            }
        }
    }
}
