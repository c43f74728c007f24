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
/// Quality of the synthetic JPEGs: PIL's default, which vLLM's random-mm
/// images are saved at.
pub const JPEG_QUALITY: u8 = 75;

/// How a synthetic image is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageFormat {
    /// Stored (uncompressed) PNG: the weight of the raw pixels.
    #[default]
    Png,
    /// Baseline JPEG at [`JPEG_QUALITY`], as vLLM's random-mm sends.
    Jpeg,
}

impl ImageFormat {
    /// The MIME type of its data URLs: `image/png` or `image/jpeg`.
    pub fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

/// One size an image may take, and its weight among the spec's sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageSize {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Weight of this size among the spec's (its share is the weight over
    /// their sum), as given: printed back as given, so a spec reads back
    /// equal.
    pub weight: f64,
}

/// `--images COUNT:SIZES[:FORMAT]`: synthetic images in every chat
/// request. COUNT is `N`, or `LO-HI` for a count drawn uniformly per
/// request (LO may be 0); SIZES is `WIDTHxHEIGHT`, or several
/// `WIDTHxHEIGHT@WEIGHT` joined by commas, each image's size drawn by
/// weight; FORMAT is `png` (the default) or `jpeg`.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSpec {
    /// Fewest and most images a request carries.
    pub count: (u32, u32),
    /// `SIZES`: what each image's size is drawn from, by weight; never empty.
    pub sizes: Vec<ImageSize>,
    /// `FORMAT`: how every image is encoded (PNG unless given).
    pub format: ImageFormat,
}

impl ImageSpec {
    /// N images of one size, as PNG.
    pub fn fixed(count: u32, width: u32, height: u32) -> ImageSpec {
        ImageSpec {
            count: (count, count),
            sizes: vec![ImageSize {
                width,
                height,
                weight: 1.0,
            }],
            format: ImageFormat::Png,
        }
    }

    /// The sizes of one request's images, drawn from `seed`: a count in
    /// the range, then each image's size by weight.
    pub fn draw(&self, seed: u64) -> Vec<(u32, u32)> {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let (lo, hi) = self.count;
        let n = lo + (next() % u64::from(hi - lo + 1)) as u32;
        let total: f64 = self.sizes.iter().map(|s| s.weight).sum();
        (0..n)
            .map(|_| {
                let u = total * (next() >> 11) as f64 / (1u64 << 53) as f64;
                let mut acc = 0.0;
                let pick = self
                    .sizes
                    .iter()
                    .find(|s| {
                        acc += s.weight;
                        u < acc
                    })
                    .unwrap_or(&self.sizes[self.sizes.len() - 1]);
                (pick.width, pick.height)
            })
            .collect()
    }
}

impl fmt::Display for ImageSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.count {
            (lo, hi) if lo == hi => write!(f, "{lo}:")?,
            (lo, hi) => write!(f, "{lo}-{hi}:")?,
        }
        for (i, s) in self.sizes.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}x{}", s.width, s.height)?;
            if self.sizes.len() > 1 {
                write!(f, "@{}", s.weight)?;
            }
        }
        if self.format == ImageFormat::Jpeg {
            write!(f, ":jpeg")?;
        }
        Ok(())
    }
}

impl FromStr for ImageSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "invalid image spec '{s}': {why}; expected N:WIDTHxHEIGHT, e.g. 1:448x448, or LO-HI:WxH@P,WxH@P[:jpeg], e.g. 1:256x256@0.5,1280x720@0.5:jpeg (N 1 to {MAX_IMAGES}, sides 1 to {MAX_SIDE} px)"
            )
        };
        let mut parts = s.trim().split(':');
        let (n, sizes) = match (parts.next(), parts.next()) {
            (Some(n), Some(sizes)) => (n, sizes),
            _ => return Err(bad("no count")),
        };
        let format = match parts.next().map(str::trim) {
            None | Some("png") => ImageFormat::Png,
            Some("jpeg" | "jpg") => ImageFormat::Jpeg,
            Some(_) => return Err(bad("the format is png or jpeg")),
        };
        if parts.next().is_some() {
            return Err(bad("too many ':'"));
        }
        let int = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| bad("not a whole number"))
        };
        let count = match n.split_once('-') {
            Some((lo, hi)) => (int(lo)?, int(hi)?),
            None => (int(n)?, int(n)?),
        };
        // A range may start at 0 (some requests carry none); N may not.
        let lowest = u32::from(!n.contains('-'));
        if count.0 > count.1 || count.0 < lowest || !(1..=MAX_IMAGES).contains(&count.1) {
            return Err(bad("the count is out of range"));
        }
        let mut list = Vec::new();
        for item in sizes.split(',') {
            let (size, weight) = match item.split_once('@') {
                Some((size, w)) => {
                    let w: f64 = w.trim().parse().map_err(|_| bad("a weight is no number"))?;
                    (size, w)
                }
                None => (item, 1.0),
            };
            let (w, h) = size
                .split_once(['x', 'X'])
                .ok_or_else(|| bad("a size is no WIDTHxHEIGHT"))?;
            let (width, height) = (int(w)?, int(h)?);
            if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
                return Err(bad("a side out of range"));
            }
            if !(weight.is_finite() && weight >= 0.0) {
                return Err(bad("a weight is negative"));
            }
            if weight > 0.0 {
                list.push(ImageSize {
                    width,
                    height,
                    weight,
                });
            }
        }
        let total: f64 = list.iter().map(|s| s.weight).sum();
        if list.is_empty() || !total.is_finite() {
            return Err(bad("no size has a weight above 0"));
        }
        Ok(ImageSpec {
            count,
            sizes: list,
            format,
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

/// `width`×`height` RGB pixels of seeded noise, row by row, each row
/// after `lead` zero bytes (a PNG row's filter byte).
fn noise(width: u32, height: u32, seed: u64, lead: usize) -> Vec<u8> {
    let row = lead + 3 * width as usize;
    let mut raw = Vec::with_capacity(row * height as usize);
    let mut x = seed ^ 0x9e37_79b9_7f4a_7c15;
    for _ in 0..height {
        raw.extend(std::iter::repeat_n(0u8, lead));
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
    raw
}

/// A `width`×`height` baseline JPEG of seeded noise at [`JPEG_QUALITY`]
/// (4:2:0, libjpeg's tables and chroma average), as PIL saves vLLM's
/// random-mm images: the same seed gives the
/// same bytes, another seed another image.
pub fn synthetic_jpeg(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let pixels = noise(width, height, seed, 0);
    let mut out = Vec::with_capacity(pixels.len() / 2);
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, JPEG_QUALITY);
    // libjpeg's box average for 4:2:0, as PIL: the nearest pixel keeps
    // noise's full chroma and weighs about 12 % more.
    encoder.set_chroma_subsampling_method(jpeg_encoder::ChromaSubsamplingMethod::Average);
    // Sides are at most MAX_SIDE, within a JPEG's u16; encoding into a Vec
    // of pixels of the stated size cannot fail.
    encoder
        .encode(
            &pixels,
            width as u16,
            height as u16,
            jpeg_encoder::ColorType::Rgb,
        )
        .expect("a JPEG of noise within MAX_SIDE");
    out
}

/// A synthetic image in `format`: its bytes.
pub fn synthetic(format: ImageFormat, width: u32, height: u32, seed: u64) -> Vec<u8> {
    match format {
        ImageFormat::Png => synthetic_png(width, height, seed),
        ImageFormat::Jpeg => synthetic_jpeg(width, height, seed),
    }
}

/// A `width`×`height` RGB PNG of seeded noise: the same seed gives the same
/// bytes, another seed another image.
pub fn synthetic_png(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let raw = noise(width, height, seed, 1);
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
        assert_eq!(s, ImageSpec::fixed(2, 448, 336));
        assert_eq!(s.to_string(), "2:448x336");
        for bad in [
            "448x448",
            "0:1x1",
            "1:0x5",
            "1:10",
            "a:1x1",
            "1:9000x1",
            "3-2:1x1",
            "0-0:1x1",
            "1:1x1@-1",
            "1:1x1@0",
            "1:1x1:gif",
            "1:1x1:png:png",
            "0-65:1x1",
        ] {
            let e = bad.parse::<ImageSpec>().unwrap_err();
            assert!(e.contains("N:WIDTHxHEIGHT"), "{bad}: {e}");
        }
        // vLLM's random-mm default: two sizes at half each, as JPEG; a
        // zero weight drops its size, the others are normalised.
        let mix: ImageSpec = "0-2:256x256@1,1280x720@1,64x64@0:jpeg".parse().unwrap();
        assert_eq!(mix.count, (0, 2));
        assert_eq!(mix.format, ImageFormat::Jpeg);
        assert_eq!(mix.sizes.len(), 2);
        assert_eq!(mix.to_string(), "0-2:256x256@1,1280x720@1:jpeg");
        assert_eq!(mix.to_string().parse::<ImageSpec>(), Ok(mix));
        let odd: ImageSpec = "1:1x1@2,2x2@3,3x3@5,4x4@7,5x5@0.0000001".parse().unwrap();
        assert_eq!(odd.to_string().parse::<ImageSpec>(), Ok(odd));
    }

    #[test]
    fn draws_follow_the_count_range_and_the_weights() {
        let spec: ImageSpec = "0-2:10x10@0.25,20x20@0.75".parse().unwrap();
        let mut counts = [0u32; 3];
        let mut big = 0u32;
        let mut all = 0u32;
        for seed in 0..4000 {
            let d = spec.draw(seed);
            counts[d.len()] += 1;
            all += d.len() as u32;
            big += d.iter().filter(|s| **s == (20, 20)).count() as u32;
            assert!(d.iter().all(|s| *s == (10, 10) || *s == (20, 20)));
        }
        // Uniform over 0, 1, 2 (about 1,333 each); sizes 3 : 1.
        assert!(
            counts.iter().all(|c| (1200..1470).contains(c)),
            "{counts:?}"
        );
        let share = f64::from(big) / f64::from(all);
        assert!((0.72..0.78).contains(&share), "{share}");
        assert_eq!(spec.draw(7), spec.draw(7));
    }

    #[test]
    fn synthetic_jpegs_are_valid_sized_and_distinct() {
        let a = synthetic_jpeg(64, 48, 1);
        assert!(a.starts_with(&[0xff, 0xd8]) && a.ends_with(&[0xff, 0xd9]));
        assert_eq!(image_size(&a), Some((64, 48)));
        assert_eq!(synthetic_jpeg(64, 48, 1), a);
        assert_ne!(synthetic_jpeg(64, 48, 2), a);
        let url = data_url(ImageFormat::Jpeg.media_type(), &a);
        assert_eq!(data_url_size(&url), Ok((64, 48)));
        // Noise barely compresses at quality 75: PIL's JPEG of it weighs
        // 0.20 of the raw pixels (256×256 and 1280×720, numpy noise).
        let big = synthetic_jpeg(256, 256, 3);
        let raw = 256.0 * 256.0 * 3.0;
        assert!(
            (0.18..0.23).contains(&(big.len() as f64 / raw)),
            "{}",
            big.len()
        );
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
