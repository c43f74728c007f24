//! A compact byte-pair encoder for the built-in tiktoken encodings.
//!
//! Measured first: `tiktoken-rs` keeps every token three times as a separate
//! heap vector (encoder map, decoder map, sorted list), ~50 MiB and ~0.2 s
//! to build for `o200k_base` — half of goodput's memory at 1,024 streams
//! and most of its start-up. Here all token bytes live in one arena, in
//! rank order, with each rank's offset beside it (for decoding), and the
//! rank table is one open-addressing array of 8-byte slots (3.5 MB with the
//! arena for `o200k_base`, built at compile time; see [`rank_table`]). The
//! algorithm is tiktoken's: split the text with the encoding's pattern, take
//! a piece that is a token as one token, otherwise merge its byte pairs
//! lowest rank first. A test checks counts and ids against `tiktoken-rs` on
//! varied text.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::{Anchored, Input};

use super::rank_table;

/// How o200k_base's pattern ends: a run of whitespace not followed by a
/// non-space, else any run. Only the lookahead needs fancy-regex's
/// backtracking VM, which cost about 1,600 instructions a token (callgrind,
/// counting prompts and answers): without it a lazy DFA (regex-automata's)
/// splits the text, and [`fast_pieces`] gives back the lookahead's one
/// character. A test holds the two to the same pieces.
const LOOKAHEAD: &str = r"|\s+(?!\S)|\s+";

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// Each thread's own search cache for the encoders' split, by encoder id.
    static OWN_CACHE: std::cell::RefCell<Vec<(u64, Cache)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's own search cache for `dfa`. A shared cache
/// would need a lock or a pool: through the `regex` crate's pool every
/// thread but the first (the workload's, the aggregator's) took a lock on
/// each piece, a third of a long prompt's preparation.
fn with_own_cache<R>(id: u64, dfa: &DFA, f: impl FnOnce(&mut Cache) -> R) -> R {
    OWN_CACHE.with(|own| {
        let mut own = own.borrow_mut();
        let at = match own.iter().position(|(i, _)| *i == id) {
            Some(at) => at,
            None => {
                // A process holds one or two encoders; a thread that made
                // many (tests) keeps only the latest few.
                if own.len() >= 4 {
                    own.remove(0);
                }
                own.push((id, dfa.create_cache()));
                own.len() - 1
            }
        };
        f(&mut own[at].1)
    })
}

/// The pieces of `text` under `fast` (a pattern ending in `|\s+` where the
/// original ended in [`LOOKAHEAD`]). The two differ only on a run of two or
/// more whitespace characters without a line break, followed by a
/// non-space: `\s+(?!\S)` leaves the run's last character for the next
/// piece (the space before a word), plain `\s+` takes it. A run with a line
/// break is the earlier alternative `\s*[\r\n]+`'s in both.
fn fast_pieces(fast: &DFA, cache: &mut Cache, text: &str, mut f: impl FnMut(&[u8])) {
    let mut at = 0;
    while at < text.len() {
        // Anchored at `at`: a forward scan only, whose end is the piece's.
        // The patterns match every character, so a miss only means a piece
        // the rest of the text is (and so would the lazy DFA giving up,
        // which it does not under its default configuration).
        let rest = &text[at..];
        let input = Input::new(rest).anchored(Anchored::Yes);
        let Some(m) = fast.try_search_fwd(cache, &input).ok().flatten() else {
            f(rest.as_bytes());
            return;
        };
        let piece = &rest[..m.offset()];
        let mut end = m.offset();
        if end < rest.len()
            && piece.chars().all(char::is_whitespace)
            && !piece.contains(['\r', '\n'])
        {
            if let Some((last, _)) = piece.char_indices().last().filter(|&(i, _)| i > 0) {
                end = last;
            }
        }
        if m.offset() == 0 {
            // Cannot happen with these patterns; never loop on it.
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        f(&rest.as_bytes()[..end]);
        at += end;
    }
}

/// A rank table's arena, offsets and slots ([`rank_table`]).
type Table = (Cow<'static, [u8]>, Cow<'static, [u8]>, Cow<'static, [u8]>);

pub struct Bpe {
    /// Every token's bytes in rank order, each rank's offset in them, and
    /// the open-addressing table of 8-byte slots over them ([`rank_table`]):
    /// built into the binary for the built-in encodings, built at run time
    /// from a rank file otherwise.
    arena: Cow<'static, [u8]>,
    offsets: Cow<'static, [u8]>,
    slots: Cow<'static, [u8]>,
    mask: usize,
    /// How a slot's key holds the rank and the tag.
    layout: rank_table::KeyLayout,
    /// The split pattern's source, and fancy-regex's backtracking limit.
    source: (String, Option<usize>),
    /// The compiled split, made on first use ([`Bpe::split`]); `None` for
    /// a pattern that did not compile.
    split: OnceLock<Option<Split>>,
    /// Tells this encoder's split apart in a thread's [`with_own_cache`].
    id: u64,
}

/// How text is cut into pieces.
enum Split {
    /// The pattern without its lookahead (see [`LOOKAHEAD`]) as a forward
    /// lazy DFA, searched anchored at each piece's start: all a split needs
    /// (the `regex` crate's `Regex` also compiles the reverse automaton
    /// that finds where an unanchored match starts: 2.6–2.8 ms and 2.6 MB
    /// of peak memory for o200k's Unicode classes, against 1.4–1.5 ms and
    /// 1.9 MB; and a count of 1,000 tokens takes 32 µs against 46).
    Fast(Box<DFA>),
    /// fancy-regex, for patterns without that form (cl100k's possessive
    /// quantifiers) and for a backtracking limit.
    Fancy(fancy_regex::Regex),
}

impl Split {
    /// The split `pattern` compiles to: the lazy DFA when it has a form one
    /// takes (and no backtracking limit is asked for), else fancy-regex.
    fn compile(pattern: &str, limit: Option<usize>) -> Result<Split, String> {
        if limit.is_none() {
            let fast = pattern
                .strip_suffix(LOOKAHEAD)
                .and_then(|head| DFA::new(&format!("(?:{head}|\\s+)")).ok());
            if let Some(fast) = fast {
                return Ok(Split::Fast(Box::new(fast)));
            }
        }
        let mut builder = fancy_regex::RegexBuilder::new(pattern);
        if let Some(l) = limit {
            builder.backtrack_limit(l);
        }
        builder.build().map(Split::Fancy).map_err(|e| e.to_string())
    }
}

impl Bpe {
    /// Build from a `.tiktoken` rank file and the encoding's split pattern
    /// (the tests; a run uses the compiled tables, [`Bpe::from_static`]).
    #[cfg(test)]
    pub fn new(ranks_file: &str, pattern: &str) -> Result<Bpe, String> {
        Self::with_backtrack_limit(ranks_file, pattern, None)
    }

    /// As [`Bpe::new`], with fancy-regex's backtracking limit set: the split
    /// is then always fancy-regex's (tests use a tiny limit to exercise the
    /// fallback, and a large one to compare the two splits).
    #[cfg(test)]
    pub fn with_backtrack_limit(
        ranks_file: &str,
        pattern: &str,
        limit: Option<usize>,
    ) -> Result<Bpe, String> {
        let (arena, offsets, slots) = rank_table::build_table(ranks_file)?;
        let table = (Cow::Owned(arena), Cow::Owned(offsets), Cow::Owned(slots));
        Self::from_table(table, pattern, limit)
    }

    /// From a table built at compile time (the built-in encodings).
    pub fn from_static(
        (arena, offsets, slots): (&'static [u8], &'static [u8], &'static [u8]),
        pattern: &str,
    ) -> Result<Bpe, String> {
        let table = (
            Cow::Borrowed(arena),
            Cow::Borrowed(offsets),
            Cow::Borrowed(slots),
        );
        Self::from_table(table, pattern, None)
    }

    fn from_table(
        (arena, offsets, slots): Table,
        pattern: &str,
        limit: Option<usize>,
    ) -> Result<Bpe, String> {
        let n = slots.len() / 8;
        let words = offsets.len() / 4;
        let last = (words > 0).then(|| rank_table::word(&offsets, words - 1));
        if n == 0
            || !n.is_power_of_two()
            || !slots.len().is_multiple_of(8)
            || !offsets.len().is_multiple_of(4)
            || last.is_none_or(|end| end as usize != arena.len())
        {
            return Err(format!(
                "a rank table of {} + {} + {} bytes is no table",
                arena.len(),
                offsets.len(),
                slots.len()
            ));
        }
        let layout = rank_table::KeyLayout::new(words);
        // The split is compiled on first use: its Unicode classes were a
        // quarter of a 1-request run's CPU (3 ms of o200k's through the
        // `regex` crate, on the way to the first request, which needs no
        // count under a built-in encoding).
        // A pattern given with a backtracking limit (the tests') is compiled
        // at once, so that its errors are this call's.
        let split = OnceLock::new();
        if limit.is_some() {
            let _ = split.set(Some(Split::compile(pattern, limit)?));
        }
        Ok(Bpe {
            arena,
            offsets,
            slots,
            mask: n - 1,
            layout,
            source: (pattern.to_string(), limit),
            split,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// The split, compiled by the first call (another thread's call waits
    /// for it). The built-in patterns compile (a test compiles both); were
    /// one not to, its text would be one piece, still counted whole by the
    /// byte-pair merge.
    fn split(&self) -> Option<&Split> {
        let (pattern, limit) = &self.source;
        self.split
            .get_or_init(|| Split::compile(pattern, *limit).ok())
            .as_ref()
    }

    /// Compile the split now (a run does it on a thread of its own while it
    /// connects, so that its first count does not wait for it).
    pub fn prepare(&self) {
        let _ = self.split();
    }

    /// The rank of `bytes` if it is a token.
    #[inline]
    pub fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let h = rank_table::hash(bytes);
        let tag = self.layout.tag(h);
        let mut i = h as usize & self.mask;
        loop {
            let key = rank_table::word(&self.slots, 2 * i);
            if key == 0 {
                return None;
            }
            if self.layout.tag_of(key) == tag {
                let at = rank_table::word(&self.slots, 2 * i + 1);
                let (start, len) = ((at >> 8) as usize, (at & 0xff) as usize);
                if len == bytes.len() && &self.arena[start..start + len] == bytes {
                    return Some(self.layout.rank(key));
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Call `f` with each piece the split pattern cuts `text` into. Every
    /// byte of `text` is in exactly one piece: where the pattern gives up
    /// (fancy-regex's backtracking limit, on pathological input), the rest
    /// of the text from the end of the last match becomes one piece, which
    /// the byte-pair merge still encodes, so no text goes uncounted.
    fn pieces(&self, text: &str, mut f: impl FnMut(&[u8])) {
        let pattern = match self.split() {
            Some(Split::Fast(fast)) => {
                return with_own_cache(self.id, fast, |cache| fast_pieces(fast, cache, text, f));
            }
            Some(Split::Fancy(pattern)) => pattern,
            None => {
                f(text.as_bytes());
                return;
            }
        };
        let mut end = 0;
        for m in pattern.find_iter(text) {
            match m {
                Ok(m) => {
                    // The patterns match every character, so matches are contiguous;
                    // anything between two matches would still be a piece of its own.
                    if m.start() > end {
                        f(&text.as_bytes()[end..m.start()]);
                    }
                    f(m.as_str().as_bytes());
                    end = m.end();
                }
                Err(_) => break,
            }
        }
        if end < text.len() {
            f(&text.as_bytes()[end..]);
        }
    }

    /// Boundaries of the tokens of one piece: `out` receives the start of
    /// every token and, last, the piece's length.
    fn merge(&self, piece: &[u8], bounds: &mut Vec<(usize, u32)>) {
        bounds.clear();
        let n = piece.len();
        // bounds[i] = (start of part i, rank of part i joined with part i+1)
        for i in 0..n {
            let r = if i + 2 <= n {
                self.rank(&piece[i..i + 2])
            } else {
                None
            };
            bounds.push((i, r.unwrap_or(u32::MAX)));
        }
        bounds.push((n, u32::MAX));
        loop {
            let mut best = (u32::MAX, 0usize);
            for (i, &(_, r)) in bounds[..bounds.len() - 1].iter().enumerate() {
                if r < best.0 {
                    best = (r, i);
                }
            }
            if best.0 == u32::MAX {
                break;
            }
            let i = best.1;
            bounds.remove(i + 1);
            // Re-rank the pairs that now start at i - 1 and at i.
            let pair = |b: &Vec<(usize, u32)>, j: usize| -> u32 {
                if j + 2 < b.len() {
                    self.rank(&piece[b[j].0..b[j + 2].0]).unwrap_or(u32::MAX)
                } else {
                    u32::MAX
                }
            };
            bounds[i].1 = pair(bounds, i);
            if i > 0 {
                bounds[i - 1].1 = pair(bounds, i - 1);
            }
        }
    }

    /// Number of tokens in `text` (no special tokens).
    pub fn count(&self, text: &str) -> usize {
        let mut total = 0;
        let mut bounds = Vec::new();
        self.pieces(text, |piece| {
            if self.rank(piece).is_some() {
                total += 1;
            } else {
                self.merge(piece, &mut bounds);
                total += bounds.len() - 1;
            }
        });
        total
    }

    /// The bytes of token `rank`, if it is one.
    #[inline]
    fn token_bytes(&self, rank: u32) -> Option<&[u8]> {
        let r = rank as usize;
        if r + 1 >= self.offsets.len() / 4 {
            return None;
        }
        let start = rank_table::word(&self.offsets, r) as usize;
        let end = rank_table::word(&self.offsets, r + 1) as usize;
        (end > start).then(|| &self.arena[start..end])
    }

    /// The bytes of the tokens `ids`, concatenated; `None` if an id is not
    /// a token of this encoding. The bytes need not be UTF-8: a sequence
    /// cut inside a character ends in part of it.
    pub fn decode(&self, ids: &[u32]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id)?);
        }
        Some(out)
    }

    /// Token ids of `text` (no special tokens).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut bounds = Vec::new();
        self.pieces(text, |piece| {
            if let Some(r) = self.rank(piece) {
                out.push(r);
            } else {
                self.merge(piece, &mut bounds);
                for w in bounds.windows(2) {
                    out.push(self.rank(&piece[w[0].0..w[1].0]).unwrap_or(u32::MAX));
                }
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `regex` crate's pieces with the lookahead given back are
    /// fancy-regex's, on text made to have every kind of whitespace run.
    #[test]
    fn the_fast_split_is_the_lookahead_split() {
        use rand::{Rng, SeedableRng};
        let pattern = crate::tokenizer::O200K_PATTERN_FOR_TESTS;
        let fast = Bpe::new("", pattern).unwrap();
        assert!(fast.split.get().is_none(), "compiled on first use");
        assert!(matches!(fast.split(), Some(Split::Fast(_))));
        let slow = Bpe::with_backtrack_limit("", pattern, Some(1_000_000)).unwrap();
        assert!(matches!(slow.split(), Some(Split::Fancy(_))));
        let alphabet: Vec<char> = " \t\n\r\u{a0}\u{3000}\u{2028}aZé中Ж'sS0129.,!/-_\"$"
            .chars()
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let split = |b: &Bpe, text: &str| {
            let mut v = Vec::new();
            b.pieces(text, |p| v.push(p.to_vec()));
            v
        };
        let texts: Vec<String> = (0..20_000)
            .map(|_| {
                let n = rng.random_range(0..24);
                (0..n)
                    .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                    .collect()
            })
            .chain(
                [
                    "hello  world",
                    "a \t b",
                    "x   ",
                    "  \n\n  y",
                    "it's  OK\r\n",
                ]
                .map(String::from),
            )
            .collect();
        for t in &texts {
            assert_eq!(split(&fast, t), split(&slow, t), "{t:?}");
        }
    }

    #[test]
    fn the_hand_written_base64_is_the_crates() {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let mut out = Vec::new();
        for n in 0..64usize {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + n * 11) as u8).collect();
            let text = engine.encode(&bytes);
            out.clear();
            assert_eq!(
                rank_table::decode_base64(text.as_bytes(), &mut out),
                Some(())
            );
            assert_eq!(out, bytes);
        }
        for bad in ["A", "AB=C", "A===", "QQ=", "QR==", "Q!==", "QUJ="] {
            out.clear();
            let ours = rank_table::decode_base64(bad.as_bytes(), &mut out).is_some();
            assert_eq!(ours, engine.decode(bad).is_ok(), "{bad}");
        }
    }

    /// Where the split pattern gives up (a tiny backtracking limit forces it
    /// to on the lookahead of `\s+(?!\S)`), the rest of the text is still
    /// encoded: the tokens decode back to every byte of the input.
    #[test]
    fn the_fallback_encodes_the_rest_of_the_text() {
        let ranks = include_str!("../../assets/cl100k_base.tiktoken");
        let pattern = super::super::CL100K_PATTERN;
        let text = format!(
            "{}x and then some more words after the spaces",
            " ".repeat(400)
        );
        let full = Bpe::new(ranks, pattern).unwrap();
        let limited = Bpe::with_backtrack_limit(ranks, pattern, Some(2)).unwrap();
        // The limit really bites: the regex reports an error part-way.
        let Some(Split::Fancy(pattern)) = limited.split() else {
            panic!("a backtracking limit is fancy-regex's");
        };
        assert!(pattern.find_iter(&text).any(|m| m.is_err()));
        for bpe in [&full, &limited] {
            let ids = bpe.encode(&text);
            assert_eq!(bpe.decode(&ids).unwrap(), text.as_bytes());
            assert_eq!(bpe.count(&text), ids.len());
        }
        assert!(
            limited.count(&text) > 10,
            "the words after the cut are counted"
        );
    }
}
