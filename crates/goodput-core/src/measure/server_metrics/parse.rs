//! A tolerant reader of the Prometheus text exposition format (0.0.4), which
//! also accepts the OpenMetrics text that some servers send instead.
//!
//! A benchmark scrapes servers it does not control, across versions it has
//! never seen, so one odd line must never cost the rest of the scrape: a line
//! that does not parse is counted in [`Parsed::malformed_lines`] and skipped,
//! and no input makes [`parse`] panic.
//!
//! Every sample line becomes a [`Sample`]. Comment lines (`# HELP`, `# TYPE`,
//! `# UNIT`, `# EOF`) are skipped: the engine layer knows from the metric
//! names what each series is, and the two formats disagree on `TYPE` lines
//! anyway (OpenMetrics names a counter family without its `_total`).
//! Timestamps and OpenMetrics exemplars (`... 3 # {trace_id="a"} 0.5`) are
//! read past and dropped; `_created` series are ordinary samples that nothing
//! downstream asks for. UTF-8 metric names quoted inside the braces
//! (Prometheus 3) are not supported: no inference server emits them, and
//! such lines count as malformed.

/// One sample line: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// In the order of the line, unescaped.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Everything one scrape held.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    pub samples: Vec<Sample>,
    /// Non-blank, non-comment lines that were not valid samples.
    pub malformed_lines: usize,
}

/// Reads a whole `/metrics` body. Lines may end in `\n` or `\r\n`.
pub fn parse(text: &str) -> Parsed {
    let mut out = Parsed::default();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = line.trim_start_matches([' ', '\t']);
        if line.trim_end_matches([' ', '\t', '\r']).is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Some(sample) => out.samples.push(sample),
            None => out.malformed_lines += 1,
        }
    }
    out
}

/// A byte cursor over one line. It only ever stops on ASCII bytes, which are
/// always UTF-8 boundaries, and slices with `get`, so it cannot panic.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn skip_blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// The longest run of bytes satisfying `keep`. `keep` must either accept
    /// only ASCII or reject only ASCII, so the run ends on a char boundary.
    fn take_while(&mut self, keep: impl Fn(u8) -> bool) -> Option<&'a str> {
        let start = self.pos;
        while self.peek().is_some_and(&keep) {
            self.pos += 1;
        }
        self.s.get(start..self.pos)
    }

    /// A token up to the next blank.
    fn token(&mut self) -> Option<&'a str> {
        self.take_while(|b| b != b' ' && b != b'\t')
    }

    fn at_end_or_exemplar(&self) -> bool {
        matches!(self.peek(), None | Some(b'#'))
    }
}

fn parse_line(line: &str) -> Option<Sample> {
    let mut c = Cursor { s: line, pos: 0 };
    let name = c.take_while(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')?;
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    c.skip_blank();
    let mut labels = Vec::new();
    if c.eat(b'{') {
        loop {
            c.skip_blank();
            if c.eat(b'}') {
                break;
            }
            let key = c.take_while(|b| b.is_ascii_alphanumeric() || b == b'_')?;
            if key.is_empty() {
                return None;
            }
            c.skip_blank();
            if !c.eat(b'=') {
                return None;
            }
            c.skip_blank();
            if !c.eat(b'"') {
                return None;
            }
            let value = quoted(&mut c)?;
            labels.push((key.to_owned(), value));
            c.skip_blank();
            // A trailing comma before `}` is legal: the next round eats the `}`.
            if !c.eat(b',') {
                c.skip_blank();
                if !c.eat(b'}') {
                    return None;
                }
                break;
            }
        }
        c.skip_blank();
    }
    let value = number(c.token()?)?;
    c.skip_blank();
    if !c.at_end_or_exemplar() {
        // An optional timestamp (integer milliseconds, or float seconds in
        // OpenMetrics). Dropped, but it must be a number: anything else means
        // the line is not what it looks like.
        number(c.token()?)?;
        c.skip_blank();
        if !c.at_end_or_exemplar() {
            return None;
        }
    }
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// The rest of a label value after its opening quote, unescaped. The format
/// defines `\\`, `\"` and `\n`; any other escape is kept verbatim, as a
/// tolerant reader should rather than failing the whole line.
fn quoted(c: &mut Cursor<'_>) -> Option<String> {
    let mut out = String::new();
    loop {
        out.push_str(c.take_while(|b| b != b'"' && b != b'\\')?);
        match c.peek()? {
            b'"' => {
                c.pos += 1;
                return Some(out);
            }
            _ => {
                // A backslash.
                c.pos += 1;
                match c.peek()? {
                    b'n' => out.push('\n'),
                    b'\\' => out.push('\\'),
                    b'"' => out.push('"'),
                    _ => {
                        out.push('\\');
                        continue;
                    }
                }
                c.pos += 1;
            }
        }
    }
}

/// A sample value or timestamp. Rust's float grammar already covers the
/// format's `+Inf`, `-Inf`, `NaN` (case-insensitively) and scientific
/// notation; it rejects blanks, `_` separators and hex, as Prometheus does.
fn number(token: &str) -> Option<f64> {
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Sample {
        let p = parse(line);
        assert_eq!(p.malformed_lines, 0, "{line:?}");
        assert_eq!(p.samples.len(), 1, "{line:?}");
        p.samples.into_iter().next().unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn plain_sample_without_labels() {
        let s = one("foo 3");
        assert_eq!((s.name.as_str(), s.value), ("foo", 3.0));
        assert!(s.labels.is_empty());
    }

    #[test]
    fn colon_names_and_labels() {
        let s = one(r#"vllm:num_requests_running{engine="0",model_name="m/x"} 8.0"#);
        assert_eq!(s.name, "vllm:num_requests_running");
        assert_eq!(s.labels, labels(&[("engine", "0"), ("model_name", "m/x")]));
        assert_eq!(s.label("model_name"), Some("m/x"));
        assert_eq!(s.label("nope"), None);
    }

    #[test]
    fn escapes_in_label_values() {
        let s = one(r#"a{p="C:\\dir",q="say \"hi\"",r="l1\nl2",u="\x"} 1"#);
        assert_eq!(s.label("p"), Some(r"C:\dir"));
        assert_eq!(s.label("q"), Some(r#"say "hi""#));
        assert_eq!(s.label("r"), Some("l1\nl2"));
        assert_eq!(s.label("u"), Some(r"\x"), "unknown escape kept verbatim");
    }

    #[test]
    fn unicode_and_braces_inside_values() {
        let s = one(r#"a{m="Llama-3 ✓ {x=1}, ok"} 2"#);
        assert_eq!(s.label("m"), Some("Llama-3 ✓ {x=1}, ok"));
    }

    #[test]
    fn special_values_and_scientific_notation() {
        let v = |l: &str| one(l).value;
        assert_eq!(v("a +Inf"), f64::INFINITY);
        assert_eq!(v("a -Inf"), f64::NEG_INFINITY);
        assert!(v("a NaN").is_nan());
        assert_eq!(v("a 8.128902e+06"), 8_128_902.0);
        assert_eq!(v("a 1E-3"), 0.001);
        assert_eq!(v("a -2.5"), -2.5);
        assert_eq!(v("a .5"), 0.5);
    }

    #[test]
    fn le_label_infinity_is_a_string() {
        let s = one(r#"h_bucket{le="+Inf"} 7"#);
        assert_eq!(s.label("le"), Some("+Inf"));
    }

    #[test]
    fn trailing_comma_blanks_and_empty_braces() {
        assert_eq!(one(r#"a{b="c",} 1"#).labels, labels(&[("b", "c")]));
        assert_eq!(one(r#"a { b = "c" , d="e" } 1"#).labels.len(), 2);
        assert!(one("a{} 1").labels.is_empty());
        assert_eq!(one(r#"a{b="c"}1"#).value, 1.0);
        assert_eq!(one("  \ta 1  ").value, 1.0);
    }

    #[test]
    fn timestamps_and_exemplars_are_dropped() {
        assert_eq!(one("a 1 1700000000000").value, 1.0);
        assert_eq!(one("a 1 1700000000.123").value, 1.0);
        let s = one(r#"h_bucket{le="0.5"} 3 # {trace_id="ab"} 0.25 1700000000.1"#);
        assert_eq!((s.value, s.labels.len()), (3.0, 1));
        assert_eq!(one(r#"c_total 4 1700000000 # {a="b"} 1"#).value, 4.0);
    }

    #[test]
    fn comments_blank_lines_crlf_and_eof() {
        let text = "# HELP a The a.\r\n# TYPE a counter\r\n\r\na_total 1\r\n   \r\n\
                    a_created 1.7e9\r\n# EOF\r\n";
        let p = parse(text);
        assert_eq!(p.malformed_lines, 0);
        let names: Vec<_> = p.samples.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a_total", "a_created"]);
        assert_eq!(p.samples[0].value, 1.0, "no stray \\r in the value");
    }

    #[test]
    fn malformed_lines_are_counted_and_skipped() {
        let bad = [
            "a",                   // no value
            "a b",                 // value not a number
            "a 1 2 3",             // junk after the timestamp
            "a 1 x",               // timestamp not a number
            r#"a{b="c} 1"#,        // unterminated quote
            r#"a{b=c} 1"#,         // unquoted value
            r#"a{b="c" d="e"} 1"#, // missing comma
            r#"a{="c"} 1"#,        // empty label name
            r#"a{b="c""#,          // no closing brace, no value
            "3a 1",                // name starts with a digit
            "a-b 1",               // stray character
            r#"{"utf8.name"} 1"#,  // quoted names are not supported
            "a 1_000",             // separators are not numbers
        ];
        let text = format!("ok 1\n{}\nok 2\n", bad.join("\n"));
        let p = parse(&text);
        assert_eq!(p.malformed_lines, bad.len());
        assert_eq!(p.samples.len(), 2);
    }

    /// xorshift64*: a tiny deterministic generator, so the fuzz test needs no
    /// new crate and fails the same way every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn never_panics_on_garbage() {
        // Mostly the format's own characters, so the garbage reaches deep
        // into the label and value paths, plus multi-byte UTF-8 and raw bytes.
        const ALPHABET: &[u8] = b"ab_:{}=\",\\ \t\r\n#+-.eE019InfNa\xc3\xa9\xe2\x9c\x93\xff";
        let seed = r#"vllm:x_bucket{le="+Inf",m="a\"b"} 1.5e3 17 # {t="x"} 1"#;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..20_000 {
            let bytes: Vec<u8> = if round % 2 == 0 {
                (0..rng.below(80))
                    .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                    .collect()
            } else {
                // A valid line with a few bytes overwritten or cut short.
                let mut b = seed.as_bytes().to_vec();
                for _ in 0..1 + rng.below(4) {
                    let i = rng.below(b.len());
                    b[i] = ALPHABET[rng.below(ALPHABET.len())];
                }
                b.truncate(rng.below(b.len() + 1));
                b
            };
            let text = String::from_utf8_lossy(&bytes);
            let p = parse(&text);
            assert!(p.samples.len() + p.malformed_lines <= text.split('\n').count());
        }
    }
}
