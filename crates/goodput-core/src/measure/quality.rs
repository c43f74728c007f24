//! Output quality against references: exact match, ROUGE-L F1 and corpus
//! BLEU, so a run shows whether quality holds under load (a server that
//! truncates or degrades when saturated).
//!
//! - **BLEU** as sacreBLEU computes it by default: `13a` tokenization,
//!   n-grams up to 4, clipped counts summed over the corpus, the brevity
//!   penalty from the closest reference length, `exp` smoothing of zero
//!   counts; 0–100.
//! - **ROUGE-L F1** as Google's `rouge-score` computes it: lower-cased,
//!   non-alphanumerics as spaces, longest common subsequence of tokens,
//!   F1 per pair, averaged over pairs.
//! - **Exact match**: the output equals the reference after trimming
//!   whitespace.
//!
//! Tests check each against values published with those tools.

use serde::{Deserialize, Serialize};

/// sacreBLEU's `13a` tokenizer (the mteval-v13a rules).
pub fn tokenize_13a(text: &str) -> Vec<String> {
    let mut s = text
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if s.contains('&') {
        s = s
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    let chars: Vec<char> = format!(" {s} ").chars().collect();
    let mut out = String::with_capacity(chars.len() * 2);
    let is_punct = |c: char| {
        matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/') && c != ' '
    };
    for (i, &c) in chars.iter().enumerate() {
        let prev = if i > 0 { chars[i - 1] } else { ' ' };
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        if is_punct(c) {
            out.push(' ');
            out.push(c);
            out.push(' ');
        } else if (c == '.' || c == ',') && !(prev.is_ascii_digit() && next.is_ascii_digit()) {
            // A period or comma is split off unless it sits between digits.
            out.push(' ');
            out.push(c);
            out.push(' ');
        } else if c == '-' && prev.is_ascii_digit() {
            out.push(' ');
            out.push(c);
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out.split_whitespace().map(str::to_string).collect()
}

/// Sufficient statistics of corpus BLEU: clipped matches and totals per
/// n-gram order, hypothesis and (closest) reference lengths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BleuStats {
    pub matches: [u64; 4],
    pub totals: [u64; 4],
    pub hyp_len: u64,
    pub ref_len: u64,
}

fn ngrams(tokens: &[String], n: usize) -> std::collections::HashMap<&[String], u64> {
    let mut m = std::collections::HashMap::new();
    if tokens.len() >= n {
        for w in tokens.windows(n) {
            *m.entry(w).or_insert(0) += 1;
        }
    }
    m
}

impl BleuStats {
    /// Add one hypothesis against its references.
    pub fn add(&mut self, hypothesis: &str, references: &[&str]) {
        let hyp = tokenize_13a(hypothesis);
        let refs: Vec<Vec<String>> = references.iter().map(|r| tokenize_13a(r)).collect();
        self.hyp_len += hyp.len() as u64;
        // The reference length closest to the hypothesis (the shorter on a tie).
        self.ref_len += refs
            .iter()
            .map(|r| r.len())
            .min_by_key(|&l| ((l as i64 - hyp.len() as i64).abs(), l))
            .unwrap_or(0) as u64;
        for n in 1..=4 {
            let h = ngrams(&hyp, n);
            let mut max_ref: std::collections::HashMap<&[String], u64> = Default::default();
            for r in &refs {
                for (g, c) in ngrams(r, n) {
                    let e = max_ref.entry(g).or_insert(0);
                    *e = (*e).max(c);
                }
            }
            for (g, c) in &h {
                self.matches[n - 1] += (*c).min(max_ref.get(g).copied().unwrap_or(0));
            }
            self.totals[n - 1] += hyp.len().saturating_sub(n - 1) as u64;
        }
    }

    pub fn merge(&mut self, o: &BleuStats) {
        for i in 0..4 {
            self.matches[i] += o.matches[i];
            self.totals[i] += o.totals[i];
        }
        self.hyp_len += o.hyp_len;
        self.ref_len += o.ref_len;
    }

    /// Corpus BLEU, 0–100 (sacreBLEU's `exp` smoothing of zero counts).
    pub fn score(&self) -> f64 {
        if self.hyp_len == 0 {
            return 0.0;
        }
        let mut smooth = 1.0;
        let mut log_sum = 0.0;
        for n in 0..4 {
            if self.totals[n] == 0 {
                return 0.0;
            }
            let p = if self.matches[n] == 0 {
                smooth *= 2.0;
                100.0 / (smooth * self.totals[n] as f64)
            } else {
                100.0 * self.matches[n] as f64 / self.totals[n] as f64
            };
            log_sum += p.ln();
        }
        let bp = if self.hyp_len < self.ref_len {
            (1.0 - self.ref_len as f64 / self.hyp_len as f64).exp()
        } else {
            1.0
        };
        bp * (log_sum / 4.0).exp()
    }
}

/// `rouge-score`'s default tokens: lower case, runs of letters and digits.
fn rouge_tokens(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// ROUGE-L F1 of `prediction` against `target` (0–1).
pub fn rouge_l(target: &str, prediction: &str) -> f64 {
    let (t, p) = (rouge_tokens(target), rouge_tokens(prediction));
    if t.is_empty() || p.is_empty() {
        return 0.0;
    }
    // Longest common subsequence, two rows.
    let mut prev = vec![0usize; p.len() + 1];
    let mut cur = vec![0usize; p.len() + 1];
    for a in &t {
        for (j, b) in p.iter().enumerate() {
            cur[j + 1] = if a == b {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let lcs = prev[p.len()] as f64;
    if lcs == 0.0 {
        return 0.0;
    }
    let (precision, recall) = (lcs / p.len() as f64, lcs / t.len() as f64);
    2.0 * precision * recall / (precision + recall)
}

/// Exact match after trimming whitespace.
pub fn exact_match(reference: &str, output: &str) -> bool {
    reference.trim() == output.trim()
}

/// Quality of a run's outputs against their references.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// Completed requests that had a reference.
    pub scored: u64,
    pub exact_match_share: f64,
    /// Mean ROUGE-L F1 over the scored requests (0–1).
    pub rouge_l_f1: f64,
    /// Corpus BLEU (sacreBLEU defaults), 0–100.
    pub bleu: f64,
    pub bleu_stats: BleuStats,
}

/// Accumulates quality over completed requests.
#[derive(Debug, Default)]
pub struct QualityAcc {
    scored: u64,
    exact: u64,
    rouge_sum: f64,
    bleu: BleuStats,
}

impl QualityAcc {
    pub fn add(&mut self, reference: &str, output: &str) {
        self.scored += 1;
        self.exact += u64::from(exact_match(reference, output));
        self.rouge_sum += rouge_l(reference, output);
        self.bleu.add(output, &[reference]);
    }

    pub fn summary(&self) -> Option<Quality> {
        (self.scored > 0).then(|| Quality {
            scored: self.scored,
            exact_match_share: self.exact as f64 / self.scored as f64,
            rouge_l_f1: self.rouge_sum / self.scored as f64,
            bleu: self.bleu.score(),
            bleu_stats: self.bleu,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sacreBLEU's README example (two reference streams):
    /// `BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)`.
    #[test]
    fn bleu_matches_sacrebleus_published_example() {
        let hyps = [
            "The dog bit the man.",
            "It wasn't surprising.",
            "The man had just bitten him.",
        ];
        let refs = [
            ["The dog bit the man.", "The dog had bit the man."],
            ["It was not unexpected.", "No one was surprised."],
            ["The man bit him first.", "The man had bitten the dog."],
        ];
        let mut s = BleuStats::default();
        for (h, r) in hyps.iter().zip(refs.iter()) {
            s.add(h, r);
        }
        assert_eq!((s.hyp_len, s.ref_len), (17, 18));
        // 82.4/50.0/45.5/37.5 are 14/17, 7/14, 5/11 and 3/8.
        assert_eq!(s.matches, [14, 7, 5, 3]);
        assert_eq!(s.totals, [17, 14, 11, 8]);
        assert!((s.score() - 48.53).abs() < 0.005, "{}", s.score());
    }

    #[test]
    fn identical_and_disjoint_texts() {
        let mut same = BleuStats::default();
        same.add(
            "the cat sat on the mat today",
            &["the cat sat on the mat today"],
        );
        assert!((same.score() - 100.0).abs() < 1e-9);
        assert_eq!(rouge_l("a b c", "a b c"), 1.0);
        // No n-gram in common: every precision is exp-smoothed (100/2k/total),
        // as sacreBLEU's default does: (12.5 · 8.33 · 6.25 · 6.25)^¼.
        let mut none = BleuStats::default();
        none.add("alpha beta gamma delta", &["one two three four"]);
        assert_eq!(none.matches, [0; 4]);
        let expected = (12.5f64 * (100.0 / 12.0) * 6.25 * 6.25).powf(0.25);
        assert!((none.score() - expected).abs() < 1e-9, "{}", none.score());
        assert_eq!(rouge_l("alpha beta", "one two"), 0.0);
        assert!(exact_match(" yes\n", "yes"));
        assert!(!exact_match("yes", "no"));
    }

    /// rouge-score's README example: ROUGE-L precision 0.625, recall
    /// 0.5556, F1 0.5882.
    #[test]
    fn rouge_l_matches_rouge_scores_published_example() {
        let f = rouge_l(
            "The quick brown fox jumps over the lazy dog",
            "The quick brown dog jumps on the log.",
        );
        assert!((f - 0.5882352941176471).abs() < 1e-12, "{f}");
    }

    #[test]
    fn tokenization_follows_13a() {
        assert_eq!(
            tokenize_13a("It wasn't 3.5-4, \"ok\"."),
            // The apostrophe is not in 13a's punctuation classes.
            ["It", "wasn't", "3.5", "-", "4", ",", "\"", "ok", "\"", "."]
        );
    }
}
