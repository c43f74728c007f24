//! Images in chat requests: the `--images N:WIDTHxHEIGHT` grammar, the
//! synthetic PNGs goodput sends, data URLs, and reading an image's size
//! from its header — the one place the client and the simulator share.
//!
//! **Why a hand-written PNG.** A synthetic image needs no compression: its
//! pixels are noise (so no two requests send the same image and no server
//! cache can dedup them), which deflate would not shrink anyway. A PNG
//! whose IDAT is *stored* deflate blocks is a valid PNG every decoder
//! reads, written in a few lines with a CRC-32 and an Adler-32, without a
//! dependency. Its size is what a photo of that size weighs uncompressed:
//! 3 bytes a pixel plus one filter byte a row.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;

/// Largest side of a synthetic image, pixels.
pub const MAX_SIDE: u32 = 8192;
/// Most images per request.
pub const MAX_IMAGES: u32 = 64;

/// `--images N:WIDTHxHEIGHT`: N synthetic images of that size per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSpec {
    pub count: u32,
    pub width: u32,
    pub height: u32,
}

impl fmt::Display for ImageSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}x{}", self.count, self.width, self.height)
    }
}

impl FromStr for ImageSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "invalid image spec '{s}': expected N:WIDTHxHEIGHT, e.g. 1:448x448 (1 <= N <= {MAX_IMAGES}, sides 1 to {MAX_SIDE} px)"
            )
        };
        let (n, size) = s.trim().split_once(':').ok_or_else(bad)?;
        let (w, h) = size.split_once(['x', 'X']).ok_or_else(bad)?;
        let parse = |t: &str| t.trim().parse::<u32>().map_err(|_| bad());
        let (count, width, height) = (parse(n)?, parse(w)?, parse(h)?);
        if !(1..=MAX_IMAGES).contains(&count)
            || !(1..=MAX_SIDE).contains(&width)
            || !(1..=MAX_SIDE).contains(&height)
        {
            return Err(bad());
        }
        Ok(ImageSpec {
            count,
            width,
            height,
        })
    }
}

impl serde::Serialize for ImageSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ImageSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

fn crc32(chunks: &[&[u8]]) -> u32 {
    let mut table = [0u32; 256];
    for (i, slot) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *slot = c;
    }
    let mut crc = !0u32;
    for b in chunks.iter().flat_map(|c| c.iter()) {
        crc = table[((crc ^ u32::from(*b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(&[kind, data]).to_be_bytes());
}

/// A `width`×`height` RGB PNG of seeded noise: the same seed gives the same
/// bytes, another seed another image.
pub fn synthetic_png(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let row = 1 + 3 * width as usize;
    let mut raw = Vec::with_capacity(row * height as usize);
    let mut x = seed ^ 0x9e37_79b9_7f4a_7c15;
    for _ in 0..height {
        raw.extend_from_slice(&[0]); // filter: none
        for _ in 0..width {
            // splitmix64, three bytes a pixel.
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            raw.extend_from_slice(&z.to_le_bytes()[..3]);
        }
    }
    // zlib: header, stored deflate blocks of at most 65535 bytes, Adler-32.
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, b) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        let len = b.len() as u16;
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(b);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for byte in &raw {
        a = (a + u32::from(*byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit RGB, deflate, no interlace
    png_chunk(&mut out, b"IHDR", &ihdr);
    png_chunk(&mut out, b"IDAT", &z);
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// The media type of an image file by its extension (png, jpeg/jpg, webp,
/// gif); `None` for any other.
pub fn media_type(path: &std::path::Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        _ => return None,
    })
}

/// `data:{media_type};base64,...`
pub fn data_url(media_type: &str, bytes: &[u8]) -> String {
    let mut s = format!("data:{media_type};base64,");
    base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut s);
    s
}

/// Width and height from an image's header, without decoding it: a PNG's
/// IHDR, a JPEG's first SOF marker, a GIF's screen descriptor, a WebP's
/// VP8X/VP8/VP8L header.
pub fn image_size(b: &[u8]) -> Option<(u32, u32)> {
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let le16 = |i: usize| {
        Some(u32::from(u16::from_le_bytes(
            b.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16) == Some(b"IHDR") {
        return Some((be32(16)?, be32(20)?));
    }
    if b.starts_with(b"GIF8") {
        return Some((le16(6)?, le16(8)?));
    }
    if b.starts_with(b"\xff\xd8") {
        return jpeg_size(b);
    }
    if b.starts_with(b"RIFF") && b.get(8..12) == Some(b"WEBP") {
        let le24 = |i: usize| -> Option<u32> {
            let s = b.get(i..i + 3)?;
            Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
        };
        return match b.get(12..16)? {
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            b"VP8 " => Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff)),
            b"VP8L" => {
                let v = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                Some(((v & 0x3fff) + 1, ((v >> 14) & 0x3fff) + 1))
            }
            _ => None,
        };
    }
    None
}

fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    while i + 9 < b.len() {
        if b[i] != 0xff {
            return None;
        }
        let marker = b[i + 1];
        let len = usize::from(u16::from_be_bytes([b[i + 2], b[i + 3]]));
        // SOF0..SOF15 but DHT (c4), JPG (c8) and DAC (cc).
        if (0xc0..=0xcf).contains(&marker) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            let h = u32::from(u16::from_be_bytes([b[i + 5], b[i + 6]]));
            let w = u32::from(u16::from_be_bytes([b[i + 7], b[i + 8]]));
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

/// The size of the image in a `data:` URL, from the first bytes of its
/// base64 payload (a header is enough; a JPEG's SOF may need more). `Err`
/// says why it could not be read.
pub fn data_url_size(url: &str) -> Result<(u32, u32), String> {
    let payload = url
        .strip_prefix("data:")
        .and_then(|r| r.split_once(";base64,"))
        .map(|(_, p)| p)
        .ok_or("an image_url that is not a base64 data: URL")?;
    // A PNG's or GIF's size is in its first 32 bytes; a JPEG's SOF may
    // follow large tables: decode more until it is found.
    for chars in [64usize, 4096, 1 << 20, usize::MAX] {
        let end = chars.min(payload.len()) / 4 * 4;
        let head = base64::engine::general_purpose::STANDARD
            .decode(&payload[..end])
            .map_err(|e| format!("the image's base64 is invalid: {e}"))?;
        if let Some(size) = image_size(&head) {
            return Ok(size);
        }
        if end == payload.len() / 4 * 4 {
            break;
        }
    }
    Err("the image is no PNG, JPEG, GIF or WebP whose size its header gives".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_what_is_valid() {
        let s: ImageSpec = "2:448x336".parse().unwrap();
        assert_eq!((s.count, s.width, s.height), (2, 448, 336));
        assert_eq!(s.to_string(), "2:448x336");
        for bad in ["448x448", "0:1x1", "1:0x5", "1:10", "a:1x1", "1:9000x1"] {
            let e = bad.parse::<ImageSpec>().unwrap_err();
            assert!(e.contains("N:WIDTHxHEIGHT"), "{e}");
        }
    }

    #[test]
    fn synthetic_pngs_are_valid_sized_and_distinct() {
        let a = synthetic_png(300, 200, 1);
        assert_eq!(image_size(&a), Some((300, 200)));
        // Signature, IHDR, IDAT (zlib 2 + stored headers + raw + adler), IEND.
        let raw: usize = 200 * (1 + 3 * 300);
        let blocks = raw.div_ceil(65_535);
        assert_eq!(a.len(), 8 + 25 + 12 + 2 + 5 * blocks + raw + 4 + 12);
        assert_eq!(synthetic_png(300, 200, 1), a);
        assert_ne!(synthetic_png(300, 200, 2), a);
        // The IHDR's CRC is the one every decoder checks (known value for
        // a 1x1 8-bit RGB header).
        let one = synthetic_png(1, 1, 0);
        assert_eq!(&one[29..33], &[0x90, 0x77, 0x53, 0xde]);
        let url = data_url("image/png", &a);
        assert!(url.starts_with("data:image/png;base64,iVBORw0KGgo"));
        assert_eq!(data_url_size(&url), Ok((300, 200)));
    }

    #[test]
    fn sizes_come_from_jpeg_and_gif_headers() {
        // SOI, an APP0 of 16 bytes, SOF0 with height 0x0100 and width 0x0200.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
        jpeg.extend_from_slice(&[0; 14]);
        jpeg.extend_from_slice(&[0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x00, 0x02, 0x00, 0x03]);
        assert_eq!(image_size(&jpeg), Some((512, 256)));
        let gif = b"GIF89a\x40\x01\xf0\x00";
        assert_eq!(image_size(gif), Some((320, 240)));
        assert_eq!(image_size(b"not an image"), None);
        assert!(data_url_size("https://example.com/x.png").is_err());
        assert_eq!(
            media_type(std::path::Path::new("a/b.JPG")),
            Some("image/jpeg")
        );
        assert_eq!(media_type(std::path::Path::new("a.bmp")), None);
    }
}
