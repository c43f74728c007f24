//! A hand-written reader for the common streamed chunk, tried before serde.
//!
//! Measured (callgrind, 64 streams of 200 completions tokens from the bench's
//! reference server, vLLM's chunk shape): serde_json's derived `Chunk` cost
//! about 5,400 instructions an event, three times what a bytes-only client
//! spends on the whole event, kernel aside: a string parse and a UTF-8 check
//! for every key and skipped value, and a visitor per level. This reader goes
//! over the bytes once, skips what goodput does not read with a byte scan,
//! and builds the same [`Chunk`].
//!
//! It is exact or it gives up: whenever the input is anything but a
//! well-formed chunk of the usual shape (a key or a kept string with a
//! `\u` escape, a tool call, an error object, a duplicate field, a number
//! that is not a plain `u32`, a type serde would refuse, trailing bytes,
//! nesting deeper than [`MAX_DEPTH`]), it returns `None` and serde reads the
//! event, so every error message and every unusual case stays serde's. A
//! test holds the two to the same result over mutated chunks.

use std::borrow::Cow;

use super::chunk::{
    Choice, Chunk, CompletionDetails, FirstChoice, Message, PromptDetails, UsageJson,
};

/// Deeper nesting is left to serde (whose own limit is 128).
const MAX_DEPTH: u32 = 64;

impl<'a> Chunk<'a> {
    /// As [`Chunk::parse`], on an event already checked as UTF-8: the
    /// reader below when it can, serde otherwise.
    pub fn parse_str(data: &'a str) -> Result<Chunk<'a>, serde_json::Error> {
        let mut c = Chunk::default();
        if parse(data, &mut c) {
            return Ok(c);
        }
        serde_json::from_str(data)
    }
}

/// Reads the chunk `data` holds into `out` (a default [`Chunk`]); false
/// when serde must read it (`out` is then left in any state).
pub fn parse<'a>(data: &'a str, out: &mut Chunk<'a>) -> bool {
    let mut r = Reader {
        s: data,
        b: data.as_bytes(),
        i: 0,
    };
    r.chunk(out).is_some() && {
        r.ws();
        r.i == data.len()
    }
}

struct Reader<'a> {
    /// The event, already checked as UTF-8: strings are sliced from it at
    /// their quotes (always character boundaries) without another check.
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

/// Bytes that end a run of plain string bytes: a quote, a backslash or a
/// control character.
#[inline]
fn special(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The offset of the first [`special`] byte of `b` (its length if none),
/// eight bytes at a time.
#[inline]
fn plain_run(b: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut i = 0;
    while let Some(word) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // A byte below 0x20 (whatever its neighbours), equal to '"' or to
        // '\\': the lowest flagged byte is exact (a borrow only flags bytes
        // above a true one).
        let m = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .position(|&c| special(c))
        .unwrap_or(b.len() - i)
}

/// Marks a field seen; `None` (serde's "duplicate field") when it was.
fn first(seen: &mut bool) -> Option<()> {
    (!std::mem::replace(seen, true)).then_some(())
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Skips whitespace, then consumes `c` or fails.
    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// `null` (consumed: true) or anything else (untouched: false).
    fn null(&mut self) -> Option<bool> {
        self.ws();
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            return Some(true);
        }
        self.peek().map(|_| false)
    }

    /// The members of an object, each key handed to `member`, which must
    /// consume the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let (start, end) = self.raw_string()?;
            let key = &self.b[start..end];
            if key.contains(&b'\\') {
                return None;
            }
            self.eat(b':')?;
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The bytes between the quotes of a string (escapes left as they are),
    /// checked as serde checks a string it skips: no control characters,
    /// only JSON's escapes. Returns where they start and end.
    fn raw_string(&mut self) -> Option<(usize, usize)> {
        if self.peek()? != b'"' {
            return None;
        }
        self.i += 1;
        let start = self.i;
        loop {
            self.i += plain_run(&self.b[self.i..]);
            let c = self.peek()?;
            self.i += 1;
            match c {
                b'"' => return Some((start, self.i - 1)),
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            let hex = self.b.get(self.i..self.i + 4)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.i += 4;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// A string goodput keeps: borrowed when it has no escape, unescaped
    /// when its escapes are the one-letter ones; `None` for `\\u` (serde
    /// handles surrogates).
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.ws();
        let (start, end) = self.raw_string()?;
        let raw = &self.s[start..end];
        if !raw.contains('\\') {
            return Some(Cow::Borrowed(raw));
        }
        let mut out = String::with_capacity(raw.len());
        let mut it = raw.chars();
        while let Some(c) = it.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            out.push(match it.next()? {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                _ => return None,
            });
        }
        Some(Cow::Owned(out))
    }

    /// `null` or a string.
    fn opt_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.null()? {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// `null` or a plain non-negative integer that fits a `u32`.
    fn opt_u32(&mut self) -> Option<Option<u32>> {
        if self.null()? {
            return Some(None);
        }
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        let digits = &self.b[start..self.i];
        if digits.is_empty()
            || (digits.len() > 1 && digits[0] == b'0')
            || matches!(self.peek(), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        self.s[start..self.i].parse().ok().map(Some)
    }

    /// Skips any JSON value, checking it as serde checks what it ignores.
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match self.peek()? {
            b'"' => self.raw_string().map(drop),
            b'{' => self.object(|r, key| r.unknown(key, depth + 1)),
            b'[' => self.array(|r, _| r.skip(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// A number as JSON's grammar has it.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }

    /// The elements of an array, each handed to `element` with its index.
    fn array(&mut self, mut element: impl FnMut(&mut Self, usize) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        let mut n = 0;
        loop {
            element(self, n)?;
            n += 1;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Fills `c` in place: a chunk is some hundreds of bytes, and moving it
    /// up through the levels showed as memcpy in the profile.
    fn chunk(&mut self, c: &mut Chunk<'a>) -> Option<()> {
        let mut seen = [false; 5];
        self.object(|r, key| match key {
            b"choices" => {
                first(&mut seen[0])?;
                r.choices(&mut c.choices)
            }
            b"usage" => {
                first(&mut seen[1])?;
                c.usage = r.usage()?;
                Some(())
            }
            // An error object is rare and read by serde (its message can be
            // any shape); `"error": null` is no error.
            b"error" => {
                first(&mut seen[2])?;
                r.null()?.then_some(())
            }
            b"object" => {
                first(&mut seen[3])?;
                c.object = r.opt_string()?;
                Some(())
            }
            b"message" => {
                first(&mut seen[4])?;
                c.message = r.opt_string()?;
                Some(())
            }
            other => r.unknown(other, 1),
        })
    }

    /// A member goodput does not read: its value is skipped (its key is
    /// UTF-8, as serde requires, since the whole event is).
    fn unknown(&mut self, _key: &[u8], depth: u32) -> Option<()> {
        self.skip(depth)
    }

    fn choices(&mut self, out: &mut Option<FirstChoice<'a>>) -> Option<()> {
        if self.null()? {
            *out = None;
            return Some(());
        }
        let first_choice = &mut out.insert(FirstChoice(None)).0;
        self.array(|r, n| {
            if n == 0 {
                r.choice(first_choice.insert(Choice::default()))
            } else {
                r.skip(2)
            }
        })
    }

    fn choice(&mut self, c: &mut Choice<'a>) -> Option<()> {
        let mut seen = [false; 4];
        self.object(|r, key| match key {
            b"delta" => {
                first(&mut seen[0])?;
                r.message(&mut c.delta)
            }
            b"message" => {
                first(&mut seen[1])?;
                r.message(&mut c.message)
            }
            b"text" => {
                first(&mut seen[2])?;
                c.text = r.opt_string()?;
                Some(())
            }
            b"finish_reason" => {
                first(&mut seen[3])?;
                c.finish_reason = r.opt_string()?;
                Some(())
            }
            other => r.unknown(other, 3),
        })
    }

    /// A delta or message; one with tool calls is left to serde.
    fn message(&mut self, out: &mut Option<Message<'a>>) -> Option<()> {
        if self.null()? {
            *out = None;
            return Some(());
        }
        let m = out.insert(Message::default());
        let mut seen = [false; 3];
        self.object(|r, key| match key {
            b"content" => {
                first(&mut seen[0])?;
                m.content = r.opt_string()?;
                Some(())
            }
            b"reasoning_content" => {
                first(&mut seen[1])?;
                m.reasoning_content = r.opt_string()?;
                Some(())
            }
            b"reasoning" => {
                first(&mut seen[2])?;
                m.reasoning = r.opt_string()?;
                Some(())
            }
            b"tool_calls" => None,
            other => r.unknown(other, 4),
        })
    }

    fn usage(&mut self) -> Option<Option<UsageJson>> {
        if self.null()? {
            return Some(None);
        }
        let mut u = UsageJson::default();
        let mut seen = [false; 4];
        self.object(|r, key| match key {
            b"prompt_tokens" => {
                first(&mut seen[0])?;
                u.prompt_tokens = r.opt_u32()?;
                Some(())
            }
            b"completion_tokens" => {
                first(&mut seen[1])?;
                u.completion_tokens = r.opt_u32()?;
                Some(())
            }
            b"prompt_tokens_details" => {
                first(&mut seen[2])?;
                u.prompt_tokens_details = r
                    .details(b"cached_tokens")?
                    .map(|n| PromptDetails { cached_tokens: n });
                Some(())
            }
            b"completion_tokens_details" => {
                first(&mut seen[3])?;
                u.completion_tokens_details =
                    r.details(b"reasoning_tokens")?.map(|n| CompletionDetails {
                        reasoning_tokens: n,
                    });
                Some(())
            }
            other => r.unknown(other, 3),
        })?;
        Some(Some(u))
    }

    /// `null`, or an object whose one read field is `field`.
    fn details(&mut self, field: &[u8]) -> Option<Option<Option<u32>>> {
        if self.null()? {
            return Some(None);
        }
        let mut n = None;
        let mut seen = false;
        self.object(|r, key| {
            if key == field {
                first(&mut seen)?;
                n = r.opt_u32()?;
                Some(())
            } else {
                r.unknown(key, 4)
            }
        })?;
        Some(Some(n))
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// The fast reader's chunk, as `Chunk::parse` calls it (on UTF-8 only).
    fn fast(b: &[u8]) -> Option<Chunk<'_>> {
        let s = std::str::from_utf8(b).ok()?;
        let mut c = Chunk::default();
        parse(s, &mut c).then_some(c)
    }

    /// Everything goodput reads from a chunk, as text.
    fn view(c: &Chunk) -> String {
        let u = c.usage.map(|u| {
            (
                u.prompt_tokens,
                u.completion_tokens,
                u.prompt_tokens_details.map(|d| d.cached_tokens),
                u.completion_tokens_details.map(|d| d.reasoning_tokens),
            )
        });
        let choice = c.choices.as_ref().map(|f| {
            f.0.as_ref().map(|ch| {
                let m = |m: &Option<Message>| {
                    m.as_ref().map(|m| {
                        format!(
                            "{:?}|{:?}|{:?}|{}",
                            m.content,
                            m.reasoning_content,
                            m.reasoning,
                            m.tool_calls.is_some()
                        )
                    })
                };
                format!(
                    "{:?}|{:?}|{:?}|{:?}",
                    m(&ch.delta),
                    m(&ch.message),
                    ch.text,
                    ch.finish_reason
                )
            })
        });
        format!(
            "{choice:?}|{u:?}|{:?}|{:?}|{:?}",
            c.error, c.object, c.message
        )
    }

    const SAMPLES: &[&str] = &[
        r#"{"id":"cmpl-7","object":"text_completion","created":1732600000,"model":"ref","choices":[{"index":0,"text":" token","logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" a\"b\\c\n"},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":null}"#,
        r#"{"choices":[{"delta":{"reasoning_content":"think","content":null}}]}"#,
        r#"{"choices":[{"delta":{"reasoning":"hm"},"finish_reason":null}],"system_fingerprint":"x"}"#,
        r#"{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":2}}}"#,
        r#" {"choices":[{"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-0.5e-3],"top_logprobs":[{"a":-1.25E+2}]}},{"text":"b"}]} "#,
        r#"{"choices":[{"index":0,"delta":{"content":"\u00e9t\u00e9"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
        r#"{"error":{"message":"boom","code":500}}"#,
        r#"{"object":"error","message":"bad","error":null}"#,
        r#"{"index":0,"token":{"id":1,"text":"x","logprob":-0.1,"special":false},"generated_text":null,"details":null,"choices":[{"text":"x","finish_reason":null}]}"#,
        r#"{"choices":null,"usage":{"prompt_tokens":null,"completion_tokens":4294967295}}"#,
        r#"{"choices":[{"message":{"content":"whole","role":"assistant"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
    ];

    #[test]
    fn the_word_scan_finds_the_first_special_byte() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let n = rng.random_range(0..40);
            let b: Vec<u8> = (0..n)
                .map(|_| match rng.random_range(0..10) {
                    0 => b'"',
                    1 => b'\\',
                    2 => rng.random_range(0..0x20),
                    _ => rng.random_range(0x20..=0xff),
                })
                .collect();
            let naive = b.iter().position(|&c| special(c)).unwrap_or(b.len());
            assert_eq!(plain_run(&b), naive, "{b:?}");
        }
    }

    #[test]
    fn the_usual_chunks_are_read_without_serde_and_alike() {
        for (i, s) in SAMPLES.iter().enumerate() {
            let fast = fast(s.as_bytes());
            let serde: Chunk = serde_json::from_slice(s.as_bytes()).unwrap();
            // \u escapes, tool calls and error objects are serde's.
            let expect_fast = ![7, 8, 9].contains(&i);
            assert_eq!(fast.is_some(), expect_fast, "sample {i}: {s}");
            if let Some(f) = fast {
                assert_eq!(view(&f), view(&serde), "sample {i}: {s}");
            }
        }
    }

    /// Mutants of the samples (bytes deleted, inserted, replaced; JSON's
    /// own characters favoured): whenever the fast reader returns a chunk,
    /// serde reads the same one; it never accepts what serde refuses.
    #[test]
    fn on_mutated_chunks_it_agrees_with_serde_or_gives_up() {
        const ALPHABET: &[u8] = b"{}[]:,\"\\ -.0123456789eEtrufalsn\x01\t\n\x7f\xc3\xa9\xff";
        let mut rng = StdRng::seed_from_u64(22);
        let (mut fast_read, mut total) = (0, 0);
        for _ in 0..40_000 {
            let mut b = SAMPLES[rng.random_range(0..SAMPLES.len())]
                .as_bytes()
                .to_vec();
            for _ in 0..rng.random_range(1..4) {
                let at = rng.random_range(0..=b.len());
                let c = ALPHABET[rng.random_range(0..ALPHABET.len())];
                match rng.random_range(0..3) {
                    0 if at < b.len() => {
                        b.remove(at);
                    }
                    1 if at < b.len() => b[at] = c,
                    _ => b.insert(at, c),
                }
            }
            total += 1;
            let serde = serde_json::from_slice::<Chunk>(&b);
            if let Some(f) = fast(&b) {
                fast_read += 1;
                let s = serde.unwrap_or_else(|e| {
                    panic!(
                        "serde refuses what the fast reader took ({e}): {}",
                        String::from_utf8_lossy(&b)
                    )
                });
                assert_eq!(view(&f), view(&s), "{}", String::from_utf8_lossy(&b));
            }
        }
        // The comparison means something only if many mutants were read.
        assert!(fast_read > total / 10, "{fast_read} of {total}");
    }
}
