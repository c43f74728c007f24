// The rank table of a tiktoken encoding, in three parts:
// - the arena: every token's bytes, in rank order;
// - the offsets: one u32 per rank and one more, so rank r's bytes are
//   `arena[offsets[r]..offsets[r + 1]]` (empty for a rank with no token),
//   for decoding;
// - the slots: an open-addressing table (linear probing) of 8-byte slots,
//   1.25 per token rounded up to a power of two. A slot is two u32 words:
//   the key (the rank + 1 in its low bits, 0 for an empty slot, and above
//   it a tag of the hash's high bits) and where the token is (its offset
//   in the arena << 8 | its length). A lookup passes over a slot whose tag
//   differs without reading the arena.
// All little-endian. o200k's slots and arena are 2.1 + 1.4 MB, which is
// what a run makes resident; they were 6.3 + 1.4 MB as 12-byte slots at a
// load of 0.38, which a prompt's few hundred lookups made resident nearly
// whole (the kernel maps 16 pages around each page a lookup touches).
// Counting English words or a repeated word costs the same as then; text
// that is mostly byte-pair merges (digits, accents, CJK) 30 % more, for
// the longer probes of a fuller table (BENCHMARKS.md, `count_rate`).
//
// Shared, as plain functions with no crate dependency, by the build script
// (which builds the built-in encodings' tables at compile time, so a run
// never parses the 3.6 MB rank file: building the table was most of
// start-up's CPU) and by `Bpe::new` (any rank file at run time, the tests).

/// Slots per token: 1 + 1/SPARE, rounded up to a power of two.
pub const SPARE: usize = 4;

/// The three parts of a table: arena, offsets, slots.
pub type Parts = (Vec<u8>, Vec<u8>, Vec<u8>);

/// The table's hash: FxHash-style mixing, 8 bytes at a time.
#[inline]
pub fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

/// Standard base64 (with `=` padding) into `out`; `None` if it is not.
pub fn decode_base64(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    fn value(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    if !text.len().is_multiple_of(4) {
        return None;
    }
    let quads = text.len() / 4;
    for (q, quad) in text.chunks_exact(4).enumerate() {
        let pad = if q + 1 == quads {
            quad.iter().rev().take_while(|&&c| c == b'=').count()
        } else {
            0
        };
        if pad > 2 {
            return None;
        }
        let mut v = 0u32;
        for &c in &quad[..4 - pad] {
            v = v << 6 | value(c)?;
        }
        v <<= 6 * pad as u32;
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        // Bits a shortened quad leaves over must be zero (canonical base64).
        if pad > 0 && bytes[3 - pad] != 0 {
            return None;
        }
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(())
}

/// The u32 at index `i` of `words` (little-endian bytes).
#[inline]
pub fn word(words: &[u8], i: usize) -> u32 {
    let w = &words[i * 4..i * 4 + 4];
    u32::from_le_bytes([w[0], w[1], w[2], w[3]])
}

/// Bits of a key that hold the rank + 1, for a table whose offsets hold
/// `offsets_len` words (ranks `0..offsets_len - 1`).
#[inline]
pub fn rank_bits(offsets_len: usize) -> u32 {
    usize::BITS - offsets_len.saturating_sub(1).leading_zeros()
}

/// How a table's keys are laid out: the rank + 1 in the low bits, the tag
/// above.
#[derive(Clone, Copy, Debug)]
pub struct KeyLayout {
    rank_bits: u32,
}

impl KeyLayout {
    /// The layout for a table whose offsets hold `offsets_len` words.
    pub fn new(offsets_len: usize) -> KeyLayout {
        KeyLayout {
            rank_bits: rank_bits(offsets_len),
        }
    }

    /// The tag bits of a key whose hash is `h` (all else zero; none when
    /// the ranks take all 32 bits).
    #[inline]
    pub fn tag(self, h: u64) -> u32 {
        ((h >> 32) as u32).checked_shl(self.rank_bits).unwrap_or(0)
    }

    /// A key's tag bits.
    #[inline]
    pub fn tag_of(self, key: u32) -> u32 {
        key & u32::MAX.checked_shl(self.rank_bits).unwrap_or(0)
    }

    /// A (non-empty) key's rank.
    #[inline]
    pub fn rank(self, key: u32) -> u32 {
        (key & !u32::MAX.checked_shl(self.rank_bits).unwrap_or(0)) - 1
    }
}

/// The arena, offsets and slots of a `.tiktoken` rank file ("BASE64 RANK"
/// lines). Ranks must be unique and about as many as the tokens (tiktoken's
/// are `0..n`, with at most a few gaps).
pub fn build_table(ranks_file: &str) -> Result<Parts, String> {
    let bytes = ranks_file.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    // (rank, offset in `decoded`, length)
    let mut tokens: Vec<(u32, u32, u32)> = Vec::new();
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let bad = |what: &str| format!("line {}: {what}", n + 1);
        let space = line
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| bad("expected 'TOKEN RANK'"))?;
        let digits = &line[space + 1..];
        if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad("the rank is not a number"));
        }
        let rank = digits
            .iter()
            .fold(0u32, |r, &d| r * 10 + u32::from(d - b'0'));
        let offset = decoded.len();
        decode_base64(&line[..space], &mut decoded).ok_or_else(|| bad("invalid base64"))?;
        if decoded.len() == offset {
            return Err(bad("an empty token"));
        }
        tokens.push((rank, offset as u32, (decoded.len() - offset) as u32));
    }
    tokens.sort_unstable_by_key(|t| t.0);
    let ranks = tokens.last().map_or(0, |t| t.0 as usize + 1);
    if ranks > 2 * tokens.len() + 1024 {
        return Err(format!(
            "{} tokens with ranks up to {}: too sparse for a rank-indexed table",
            tokens.len(),
            ranks - 1
        ));
    }
    if let Some(w) = tokens.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!("rank {} is given to two tokens", w[0].0));
    }
    // The arena in rank order, and each rank's start.
    let mut arena = Vec::with_capacity(decoded.len());
    let mut offsets = Vec::with_capacity((ranks + 1) * 4);
    let mut next = tokens.iter().peekable();
    for r in 0..ranks as u32 {
        offsets.extend_from_slice(&(arena.len() as u32).to_le_bytes());
        if let Some(&(_, at, len)) = next.next_if(|t| t.0 == r) {
            arena.extend_from_slice(&decoded[at as usize..(at + len) as usize]);
        }
    }
    offsets.extend_from_slice(&(arena.len() as u32).to_le_bytes());
    if arena.len() >= 1 << 24 {
        return Err(format!(
            "{} bytes of tokens: more than a slot can address",
            arena.len()
        ));
    }
    let layout = KeyLayout::new(ranks + 1);
    let cap = (tokens.len() + tokens.len() / SPARE)
        .next_power_of_two()
        .max(16);
    let mask = cap - 1;
    let mut table = vec![(0u32, 0u32); cap];
    for &(rank, _, _) in &tokens {
        let (start, end) = (
            word(&offsets, rank as usize),
            word(&offsets, rank as usize + 1),
        );
        let len = end - start;
        if len > 255 {
            return Err(format!(
                "rank {rank}: a token of {len} bytes, more than a slot holds"
            ));
        }
        let h = hash(&arena[start as usize..end as usize]);
        let mut i = h as usize & mask;
        while table[i].0 != 0 {
            i = (i + 1) & mask;
        }
        table[i] = (layout.tag(h) | (rank + 1), start << 8 | len);
    }
    let mut slots = Vec::with_capacity(cap * 8);
    for (key, at) in table {
        slots.extend_from_slice(&key.to_le_bytes());
        slots.extend_from_slice(&at.to_le_bytes());
    }
    Ok((arena, offsets, slots))
}
