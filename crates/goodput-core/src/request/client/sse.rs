//! Incremental Server-Sent Events parser for streamed completions.
//!
//! Fed the body bytes exactly as they were read, it yields each complete
//! event's `data` payload. It handles events split across reads (including a
//! UTF-8 character split in two: it works on bytes and only whole events are
//! handed on), several events in one read, `\n`, `\r\n` and `\r` line endings,
//! comments and keep-alives (`: ping`), and multi-line `data` fields (joined
//! with `\n` as the SSE standard says). Fields other than `data` are ignored.
//! It allocates only when a line straddles two reads.

/// The longest line or event (bytes) the parser holds: a server that sends
/// an endless line without a newline ends its request as malformed instead
/// of growing memory. Real chunks are a few hundred bytes; a large tool
/// call's arguments, some kilobytes.
pub const MAX_EVENT: usize = 8 << 20;

/// Streaming SSE parser. One per response.
#[derive(Debug, Default)]
pub struct SseParser {
    /// A line or an event grew past [`MAX_EVENT`]; nothing more is parsed.
    overflow: bool,
    /// Bytes of a line not yet terminated by a newline.
    partial: Vec<u8>,
    /// `data` of the event being assembled.
    data: Vec<u8>,
    has_data: bool,
    /// The previous chunk ended with `\r`: a `\n` starting the next one belongs to it.
    last_was_cr: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one read's bytes; calls `on_event` with each complete event's data.
    pub fn feed(&mut self, mut chunk: &[u8], mut on_event: impl FnMut(&[u8])) {
        if self.overflow {
            return;
        }
        if self.last_was_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.last_was_cr = false;
        while !chunk.is_empty() {
            match memchr::memchr2(b'\n', b'\r', chunk) {
                Some(i) => {
                    let line_end = i;
                    let mut next = i + 1;
                    if chunk[i] == b'\r' {
                        if next < chunk.len() {
                            if chunk[next] == b'\n' {
                                next += 1;
                            }
                        } else {
                            self.last_was_cr = true;
                        }
                    }
                    if self.partial.is_empty() {
                        self.line(&chunk[..line_end], &mut on_event);
                    } else {
                        let mut line = std::mem::take(&mut self.partial);
                        line.extend_from_slice(&chunk[..line_end]);
                        self.line(&line, &mut on_event);
                        line.clear();
                        self.partial = line;
                    }
                    if self.overflow {
                        return;
                    }
                    chunk = &chunk[next..];
                }
                None => {
                    if self.partial.len() + chunk.len() > MAX_EVENT {
                        self.overflowed_now();
                        return;
                    }
                    self.partial.extend_from_slice(chunk);
                    break;
                }
            }
        }
    }

    /// Whether a line or an event outgrew [`MAX_EVENT`] (the response is
    /// then malformed; the parser holds nothing more).
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    fn overflowed_now(&mut self) {
        self.overflow = true;
        self.partial = Vec::new();
        self.data = Vec::new();
    }

    /// End of body: an event left without its closing blank line is
    /// dispatched (some servers end with `data: [DONE]` and no blank line).
    pub fn finish(&mut self, mut on_event: impl FnMut(&[u8])) {
        if self.overflow {
            return;
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, &mut on_event);
        }
        self.dispatch(&mut on_event);
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(&[u8])) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return; // comment / keep-alive
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            if self.data.len() + value.len() + 1 > MAX_EVENT {
                self.overflowed_now();
                return;
            }
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(&[u8])) {
        if self.has_data {
            on_event(&self.data);
            self.data.clear();
            self.has_data = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_line_or_event_overflows_instead_of_growing() {
        let mut p = SseParser::new();
        let block = vec![b'x'; 1 << 20];
        p.feed(b"data: ", |_| panic!());
        for _ in 0..9 {
            p.feed(&block, |_| panic!("no event"));
        }
        assert!(p.overflowed());
        assert!(p.partial.capacity() == 0 && p.data.capacity() == 0);
        let mut q = SseParser::new();
        let line = [b"data: ".as_slice(), &vec![b'y'; 1 << 20], b"\n"].concat();
        for _ in 0..9 {
            q.feed(&line, |_| panic!("no blank line, no event"));
        }
        assert!(q.overflowed());
        q.finish(|_| panic!("nothing after an overflow"));
    }

    fn events_of(chunks: &[&[u8]]) -> Vec<String> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, |e| out.push(String::from_utf8(e.to_vec()).unwrap()));
        }
        p.finish(|e| out.push(String::from_utf8(e.to_vec()).unwrap()));
        out
    }

    #[test]
    fn one_event_per_read() {
        assert_eq!(
            events_of(&[b"data: {\"a\":1}\n\n", b"data: [DONE]\n\n"]),
            vec!["{\"a\":1}", "[DONE]"]
        );
    }

    #[test]
    fn several_events_in_one_read() {
        assert_eq!(
            events_of(&[b"data: 1\n\ndata: 2\n\ndata: 3\n\n"]),
            vec!["1", "2", "3"]
        );
    }

    #[test]
    fn event_split_across_reads_at_every_byte() {
        let stream = b"data: {\"x\":\"hello\"}\n\ndata: [DONE]\n\n";
        for cut in 1..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(
                events_of(&[a, b]),
                vec!["{\"x\":\"hello\"}", "[DONE]"],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn crlf_and_cr_line_endings_even_when_split() {
        let stream = b"data: a\r\n\r\ndata: b\r\rdata: c\n\n";
        for cut in 0..=stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(events_of(&[a, b]), vec!["a", "b", "c"], "cut at {cut}");
        }
    }

    #[test]
    fn comments_keepalives_and_other_fields_are_ignored() {
        assert_eq!(
            events_of(&[b": ping\n\nevent: message\nid: 7\nretry: 10\ndata: x\n\n:\n\n"]),
            vec!["x"]
        );
    }

    #[test]
    fn multi_line_data_is_joined_with_newline() {
        assert_eq!(events_of(&[b"data: a\ndata: b\ndata\n\n"]), vec!["a\nb\n"]);
    }

    #[test]
    fn utf8_character_split_across_reads() {
        let s = "data: {\"t\":\"caf\u{e9} \u{1F600}\"}\n\n".as_bytes();
        let pos = s.iter().position(|&b| b == 0xF0).unwrap() + 2; // inside the emoji
        let (a, b) = s.split_at(pos);
        assert_eq!(events_of(&[a, b]), vec!["{\"t\":\"caf\u{e9} \u{1F600}\"}"]);
    }

    #[test]
    fn last_event_without_blank_line_is_dispatched_at_end() {
        assert_eq!(
            events_of(&[b"data: 1\n\ndata: [DONE]"]),
            vec!["1", "[DONE]"]
        );
    }

    #[test]
    fn data_without_space_after_colon() {
        assert_eq!(events_of(&[b"data:x\n\n"]), vec!["x"]);
    }
}
