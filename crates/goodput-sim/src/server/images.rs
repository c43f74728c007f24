//! Images in chat requests: how many prompt tokens an `image_url` part
//! costs, from its size alone.
//!
//! The size is read from the image's header (PNG IHDR, JPEG SOF, GIF, WebP)
//! without decoding it ([`goodput_common::image::data_url_size`]). The cost
//! follows Qwen2-VL: the image is cut into patches of `p` pixels (14 by
//! default, `image_patch_px`) and 2×2 patches merge into one token, so a
//! W×H image costs ⌈W/2p⌉·⌈H/2p⌉ tokens, plus 2 for its vision start and
//! end tokens (448×448 at 14 px: 16·16 + 2 = 258). Those tokens are
//! prefilled with the prompt's text and counted in `usage.prompt_tokens`.

use goodput_common::image::data_url_size;

/// Prompt tokens of the image at `url` (a base64 `data:` URL) with
/// patches of `patch_px` pixels; `Err` says why it could not be read.
pub(super) fn image_tokens(url: &str, patch_px: u32) -> Result<usize, String> {
    let (w, h) = data_url_size(url).map_err(|e| format!("image_url: {e}"))?;
    let side = 2 * patch_px.max(1);
    Ok((w.div_ceil(side) as usize) * (h.div_ceil(side) as usize) + 2)
}

/// `n` token ids standing for the image at `url`: derived from its bytes,
/// so the same image hits the prefix cache and another one does not.
pub(super) fn image_token_ids(url: &str, n: usize) -> impl Iterator<Item = u32> {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in url.as_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    // Above any vocabulary's ids, so no image token equals a text token.
    (0..n as u64).map(move |i| {
        0x8000_0000 | ((h.wrapping_add(i.wrapping_mul(0x9e37_79b9))) as u32 & 0x7fff_ffff)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_common::image::{data_url, synthetic_png};

    #[test]
    fn an_image_costs_its_merged_patches_plus_two() {
        let url = data_url("image/png", &synthetic_png(448, 448, 1));
        assert_eq!(image_tokens(&url, 14), Ok(258));
        let url = data_url("image/png", &synthetic_png(100, 30, 1));
        // ceil(100/28) = 4, ceil(30/28) = 2.
        assert_eq!(image_tokens(&url, 14), Ok(10));
        // ceil(100/32) = 4, ceil(30/32) = 1.
        assert_eq!(image_tokens(&url, 16), Ok(6));
        assert!(image_tokens("https://example.com/cat.png", 14)
            .unwrap_err()
            .contains("not a base64 data: URL"));
        let other = data_url("image/png", &synthetic_png(100, 30, 2));
        let a: Vec<u32> = image_token_ids(&url, 3).collect();
        assert_eq!(a.len(), 3);
        assert_ne!(a, image_token_ids(&other, 3).collect::<Vec<_>>());
    }
}
