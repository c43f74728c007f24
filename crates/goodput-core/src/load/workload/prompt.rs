//! Text of an exact token count, for any tokenizer.
//!
//! Prompts are made of words from the shipped list
//! ([`goodput_common::words`]), drawn with a frequency skew and broken into
//! sentences. Every word is one token, with or without a leading space, in
//! both built-in encodings; under a model's own `tokenizer.json` a word may
//! take several. [`TextBuilder`] picks words whose costs add up to the
//! target. Under the built-in encodings that is the count (every word one
//! token, a period one more: exact by construction, which the tests encode
//! to check), and nothing is encoded. Under a model's tokenizer it learns
//! each word's cost once, when the run is prepared, then encodes the whole
//! text to check it — a boundary may merge — and repairs it by removing and
//! adding words until the count is exact. The number of repair passes is
//! bounded; a tokenizer under which no combination of words reaches the
//! count is an error that says so, never a silently wrong length.
//!
//! Text is appended to a fixed head (a shared prefix, a salt) after a
//! space, so the head's own tokens never merge with what follows under a
//! whitespace-splitting pre-tokenizer; under a model's tokenizer the check
//! encodes head and body together, so the count is exact whatever that
//! tokenizer does.

use rand::{Rng, SeedableRng};

use goodput_common::tokenizer::Tokenizer;
use goodput_common::words::words;

/// Repair passes before giving up on an exact count.
const MAX_PASSES: usize = 48;

/// Builds text of exact token counts under one tokenizer.
#[derive(Clone)]
pub struct TextBuilder {
    tokenizer: Tokenizer,
    /// Token cost of " word" for each word of the list (1 when not counting).
    cost: Vec<u32>,
    /// Word indices by cost: `by_cost[c]` holds the words costing `c` tokens.
    by_cost: Vec<Vec<usize>>,
    /// Tokens a sentence's closing period adds.
    period_cost: u32,
}

/// The token cost of " word" for each word of the list under `tokenizer`
/// (1 when it does not count). Learnt once per tokenizer and process: a run
/// builds a [`TextBuilder`] for the flags' check and another for its request
/// source, and through a Hugging Face `tokenizer.json` the list's one call a
/// word cost some 1 ms each time, on the way to the first request. Keyed by
/// the tokenizer's bytes (their SHA-256), so the same counts come back for
/// the same tokenizer whatever the path it was read from.
fn word_costs(tokenizer: &Tokenizer) -> Vec<u32> {
    type Learnt = Vec<((goodput_common::tokenizer::TokenizerKind, String), Vec<u32>)>;
    static LEARNT: std::sync::Mutex<Learnt> = std::sync::Mutex::new(Vec::new());
    let count = || -> Vec<u32> {
        words()
            .iter()
            .map(|w| {
                tokenizer
                    .count(&format!(" {w}"))
                    .map_or(1, |c| c.max(1) as u32)
            })
            .collect()
    };
    let identity = tokenizer.identity();
    let Some(sha) = identity.sha256 else {
        return count();
    };
    let key = (identity.kind, sha);
    let mut learnt = LEARNT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, cost)) = learnt.iter().find(|(k, _)| *k == key) {
        return cost.clone();
    }
    let cost = count();
    learnt.push((key, cost.clone()));
    cost
}

/// Why exact text could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot build a prompt of exactly {target} tokens with tokenizer {tokenizer}: the closest was {closest} after {MAX_PASSES} adjustments")]
pub struct ExactLengthError {
    pub target: u32,
    pub closest: u32,
    pub tokenizer: String,
}

impl TextBuilder {
    /// A builder for `tokenizer`, with each list word's token cost learnt
    /// (once per tokenizer and process; nothing to learn under a built-in encoding).
    pub fn new(tokenizer: Tokenizer) -> Self {
        // Under the built-in encodings every word costs one token and a
        // period one more (the word list's test encodes them all): nothing
        // to learn, and nothing encoded on the way to the first request.
        let (cost, period_cost) = if tokenizer.counts_list_words_as_single_tokens() {
            (vec![1; words().len()], 1)
        } else {
            let period_cost = match (tokenizer.count(" the."), tokenizer.count(" the")) {
                (Some(a), Some(b)) => a.saturating_sub(b) as u32,
                _ => 0,
            };
            (word_costs(&tokenizer), period_cost)
        };
        let max = cost.iter().copied().max().unwrap_or(1) as usize;
        let mut by_cost = vec![Vec::new(); max + 1];
        for (i, &c) in cost.iter().enumerate() {
            by_cost[c as usize].push(i);
        }
        TextBuilder {
            tokenizer,
            cost,
            by_cost,
            period_cost,
        }
    }

    /// Whether text of the list's words is exact by construction: a
    /// built-in encoding, under which every word costs one token and a
    /// period one more (see [`closest`](Self::closest)).
    fn words_are_tokens(&self) -> bool {
        self.tokenizer.counts_list_words_as_single_tokens()
    }

    /// The tokenizer text is built and counted under.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Tokens in `text` (`None` under the `none` tokenizer).
    pub fn count(&self, text: &str) -> Option<u32> {
        self.tokenizer.count(text).map(|c| c as u32)
    }

    /// A word drawn with the frequency skew (squaring a uniform draw favours
    /// the frequent words at the head of the list, which reads like text).
    fn skewed<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        let u: f64 = rng.random();
        ((u * u) * self.cost.len() as f64) as usize % self.cost.len()
    }

    /// Append words to `parts` whose nominal costs add up to exactly `n`
    /// (a sentence break every 6 to 17 words). Returns false when no word
    /// is cheap enough to finish (a tokenizer without one-token words).
    fn push_words<R: Rng + ?Sized>(&self, rng: &mut R, mut n: u32, parts: &mut Vec<Part>) -> bool {
        let mut sentence_left: u32 = rng.random_range(6..18);
        while n > 0 {
            let mut w = self.skewed(rng);
            if self.cost[w] > n {
                // Finish with a word that fits exactly, or the costliest that fits.
                let fit = (1..=n.min(self.by_cost.len() as u32 - 1) as usize)
                    .rev()
                    .find(|&c| !self.by_cost[c].is_empty());
                let Some(c) = fit else { return false };
                let pool = &self.by_cost[c];
                w = pool[rng.random_range(0..pool.len())];
            }
            n -= self.cost[w];
            sentence_left = sentence_left.saturating_sub(1);
            // A sentence ends once it is long enough and its period fits.
            let end = sentence_left == 0 && n >= self.period_cost;
            if end {
                n -= self.period_cost;
                sentence_left = rng.random_range(6..18);
            }
            parts.push(Part::Word(w, end));
        }
        true
    }

    /// Tokens a part adds, by the costs learned.
    fn part_cost(&self, p: Part) -> u32 {
        let Part::Word(w, end) = p;
        self.cost[w] + if end { self.period_cost } else { 0 }
    }

    /// Text of exactly `target` tokens when joined after `head` (which has
    /// about `head_tokens` tokens; `head` may be empty). Returns the body
    /// only (starting with a space when `head` is not empty) and the full
    /// count.
    pub fn body<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        head: &str,
        head_tokens: u32,
        target: u32,
    ) -> Result<(String, Option<u32>), ExactLengthError> {
        let (text, count) = self.closest(rng, head, head_tokens, target);
        match count {
            Some(c) if c != target => Err(ExactLengthError {
                target,
                closest: c,
                tokenizer: self.tokenizer.spec().to_string(),
            }),
            _ => Ok((text, count)),
        }
    }

    /// As [`body`](Self::body), but when no exact text was found, the
    /// closest, with its true count.
    ///
    /// Under the built-in encodings the text is not encoded again: every
    /// word of the list is one token with or without a leading space, a
    /// period is a piece of its own, and the split pattern cuts the text at
    /// every space, so the words' costs add up exactly (the tests encode
    /// what this builds and compare). There `head_tokens` must be the
    /// head's exact count, as it is for every caller: their heads are words
    /// of the list, counted or one token each. Encoding a 32-token prompt
    /// to check it was half of the request builder's CPU, on a core the
    /// send loop and the server share (issue 22, at 20,000 req/s).
    pub fn closest<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        head: &str,
        head_tokens: u32,
        target: u32,
    ) -> (String, Option<u32>) {
        let want = target.saturating_sub(head_tokens);
        let mut parts = Vec::with_capacity(want as usize + want as usize / 8 + 2);
        let mut ok = self.push_words(rng, want, &mut parts);
        let mut text = self.render(head, &parts);
        if self.words_are_tokens() && ok {
            let body: u32 = parts.iter().map(|&p| self.part_cost(p)).sum();
            return (text.split_off(head.len()), Some(head_tokens + body));
        }
        let Some(mut count) = self.tokenizer.count(&text).map(|c| c as u32) else {
            return (text.split_off(head.len()), None);
        };
        let mut passes = 0;
        while ok && count != target && passes < MAX_PASSES {
            passes += 1;
            if count > target {
                // Remove words worth the excess (at least one), then refill
                // any shortfall on the next pass.
                let mut excess = count - target;
                while excess > 0 {
                    match parts.pop() {
                        Some(p) => excess = excess.saturating_sub(self.part_cost(p)),
                        None => break,
                    }
                }
            } else {
                ok = self.push_words(rng, target - count, &mut parts);
            }
            text = self.render(head, &parts);
            count = self.tokenizer.count(&text).map_or(count, |c| c as u32);
        }
        (text.split_off(head.len()), Some(count))
    }

    /// Words whose learned costs add up to `n` tokens, without encoding to
    /// check: exact by construction under the built-in encodings (every
    /// word one token), close under a model's tokenizer. For text that is
    /// checked as a whole afterwards (a trace's prompt of many blocks).
    pub fn nominal<R: Rng + ?Sized>(&self, rng: &mut R, n: u32) -> String {
        let mut parts = Vec::with_capacity(n as usize + n as usize / 8 + 2);
        self.push_words(rng, n, &mut parts);
        self.render("", &parts)
    }

    /// Check, when a run is prepared, that exact lengths can be built under
    /// this tokenizer (the built-in encodings always can; a model's
    /// tokenizer needs words it encodes in one token to finish a count).
    pub fn check(&self) -> Result<(), ExactLengthError> {
        // Every word of the list is one token in the built-in encodings (a
        // test of the word list checks it): nothing to find out.
        if !self.tokenizer.is_model_tokenizer() {
            return Ok(());
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(0);
        for n in [1, 2, 7, 64, 999] {
            self.body(&mut rng, "", 0, n)?;
        }
        Ok(())
    }

    fn render(&self, head: &str, parts: &[Part]) -> String {
        let list = words();
        let mut s = String::with_capacity(head.len() + parts.len() * 8);
        s.push_str(head);
        for p in parts {
            let Part::Word(w, end) = *p;
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(list[w]);
            if end {
                s.push('.');
            }
        }
        s
    }

    /// Words `[a, b, ...]` joined with spaces, and their token count.
    pub fn join(&self, words_: &[&str]) -> (String, Option<u32>) {
        let text = words_.join(" ");
        let n = self.count(&text);
        (text, n)
    }
}

#[derive(Debug, Clone, Copy)]
enum Part {
    /// A word (index in the list), and whether it ends a sentence.
    Word(usize, bool),
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn exact_counts_for_the_built_in_encodings_from_1_to_thousands() {
        for spec in ["tiktoken:o200k_base", "tiktoken:cl100k_base"] {
            let b = TextBuilder::new(Tokenizer::from_spec(spec).unwrap());
            // Counted by construction, which the encodings below check.
            assert!(b.words_are_tokens(), "{spec}");
            let mut rng = rand::rngs::StdRng::seed_from_u64(5);
            for n in [1u32, 2, 3, 7, 31, 128, 500, 1024, 3000, 8192] {
                let (text, count) = b.body(&mut rng, "", 0, n).unwrap();
                assert_eq!(count, Some(n), "{spec} {n}");
                assert_eq!(b.count(&text), Some(n), "{spec} {n}");
                // After a head, the whole text counts as asked.
                let head = "alpha beta gamma.";
                let h = b.count(head).unwrap();
                let (body, count) = b.body(&mut rng, head, h, n + h).unwrap();
                assert_eq!(count, Some(n + h));
                assert_eq!(b.count(&format!("{head}{body}")), Some(n + h), "{spec} {n}");
            }
            assert!(b.check().is_ok());
        }
    }

    /// A model's own tokenizer.json under which most words of the list take
    /// several tokens: a WordPiece vocabulary of 300 whole words, the
    /// letters, and their continuations.
    pub(crate) fn small_tokenizer_json() -> Tokenizer {
        let mut vocab = serde_json::Map::new();
        let mut add = |t: String| {
            let n = vocab.len();
            vocab.entry(t).or_insert(serde_json::json!(n));
        };
        add("[UNK]".into());
        for p in [".", ",", "!", "?", "'"] {
            add(p.into());
        }
        for c in 'a'..='z' {
            add(c.to_string());
            add(format!("##{c}"));
        }
        for w in words().iter().take(300) {
            add(w.to_lowercase());
        }
        let json = serde_json::json!({
            "version": "1.0",
            "normalizer": {"type": "Lowercase"},
            "pre_tokenizer": {"type": "Whitespace"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": vocab},
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        });
        let path = std::env::temp_dir().join(format!(
            "goodput-test-tokenizer-{}.json",
            std::process::id()
        ));
        std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
        let t = Tokenizer::from_spec(path.to_str().unwrap()).unwrap();
        assert!(t.is_model_tokenizer());
        t
    }

    #[test]
    fn word_costs_are_learnt_once_per_tokenizer_and_are_its_own() {
        let split = small_tokenizer_json();
        let direct: Vec<u32> = words()
            .iter()
            .map(|w| split.count(&format!(" {w}")).unwrap().max(1) as u32)
            .collect();
        // The second builder takes the learnt costs: the same ones.
        for _ in 0..2 {
            assert_eq!(TextBuilder::new(split.clone()).cost, direct);
        }
        // Another tokenizer's costs are its own (every word one token).
        let o200k = TextBuilder::new(Tokenizer::from_spec("o200k_base").unwrap());
        assert!(o200k.cost.iter().all(|&c| c == 1));
        assert_ne!(o200k.cost, direct);
    }

    #[test]
    fn exact_counts_under_a_model_tokenizer_json_that_splits_words() {
        let b = TextBuilder::new(small_tokenizer_json());
        assert!(
            b.by_cost.len() > 5,
            "words cost up to {} tokens",
            b.by_cost.len() - 1
        );
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        for n in [1u32, 2, 5, 17, 128, 1000, 4000] {
            let (text, count) = b.body(&mut rng, "", 0, n).unwrap();
            assert_eq!((count, b.count(&text)), (Some(n), Some(n)), "{n}");
            let head = "the first request.";
            let h = b.count(head).unwrap();
            let (body, _) = b.body(&mut rng, head, h, n + h).unwrap();
            assert_eq!(b.count(&format!("{head}{body}")), Some(n + h), "{n}");
        }
        assert!(b.check().is_ok());
    }

    #[test]
    fn text_reads_like_sentences() {
        let b = TextBuilder::new(Tokenizer::from_spec("o200k_base").unwrap());
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let (text, _) = b.body(&mut rng, "", 0, 300).unwrap();
        assert!(text.matches('.').count() >= 10, "{text}");
        let distinct: std::collections::HashSet<&str> = text.split(' ').collect();
        assert!(distinct.len() > 60);
    }

    #[test]
    fn without_a_tokenizer_words_stand_for_tokens() {
        let b = TextBuilder::new(Tokenizer::from_spec("none").unwrap());
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let (text, count) = b.body(&mut rng, "", 0, 50).unwrap();
        assert_eq!(count, None);
        assert_eq!(text.split(' ').count(), 50);
    }
}
