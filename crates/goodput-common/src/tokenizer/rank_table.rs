// The rank table of a tiktoken encoding: every token's bytes in one arena,
// and an open-addressing table of 12-byte slots (offset, length, rank; all
// u32, little-endian; length 0 is an empty slot). Shared, as plain
// functions with no crate dependency, by the build script (which builds
// the built-in encodings' tables at compile time, so a run never parses
// the 3.6 MB rank file: building the table was most of start-up's CPU,
// 200,000 inserts into a 6 MB table, and its pages) and by `Bpe::new`
// (any rank file at run time, and the tests).

/// Bytes of one slot.
pub const SLOT_BYTES: usize = 12;

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

/// The slot at `i` of `slots`: (offset, length, rank).
#[inline]
pub fn slot(slots: &[u8], i: usize) -> (u32, u32, u32) {
    let s = &slots[i * SLOT_BYTES..(i + 1) * SLOT_BYTES];
    let word = |k: usize| u32::from_le_bytes([s[k], s[k + 1], s[k + 2], s[k + 3]]);
    (word(0), word(4), word(8))
}

/// The arena and the slots of a `.tiktoken` rank file ("BASE64 RANK" lines).
pub fn build_table(ranks_file: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    let bytes = ranks_file.as_bytes();
    let lines = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
    let cap = (lines * 2).next_power_of_two().max(16);
    let mask = cap - 1;
    let mut arena = Vec::with_capacity(bytes.len());
    let mut slots = vec![0u8; cap * SLOT_BYTES];
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
        let offset = arena.len();
        decode_base64(&line[..space], &mut arena).ok_or_else(|| bad("invalid base64"))?;
        let token = &arena[offset..];
        let mut i = hash(token) as usize & mask;
        while slot(&slots, i).1 != 0 {
            i = (i + 1) & mask;
        }
        let at = i * SLOT_BYTES;
        slots[at..at + 4].copy_from_slice(&(offset as u32).to_le_bytes());
        slots[at + 4..at + 8].copy_from_slice(&(token.len() as u32).to_le_bytes());
        slots[at + 8..at + 12].copy_from_slice(&rank.to_le_bytes());
    }
    arena.shrink_to_fit();
    Ok((arena, slots))
}
