//! vLLM's `random-mm` dataset as goodput's `--images`: the count of items
//! a request carries (`--random-mm-base-items-per-request` spread by
//! `--random-mm-num-mm-items-range-ratio`, capped by
//! `--random-mm-limit-mm-per-prompt`) and the sizes they are drawn from
//! (`--random-mm-bucket-config`), with vLLM's checks and messages. Images
//! are JPEG at PIL's default quality, as vLLM sends them; video buckets with
//! a weight are refused by name.

use std::collections::BTreeMap;

use crate::cli::VllmServeArgs;

use super::refused::refuse;

/// A bucket: its `(H, W, T)` and its probability.
type Bucket = ((i64, i64, i64), f64);

/// vLLM's default buckets, `(H, W, T)`: 256×256 and 720×1280 images at
/// half each, and a 16-frame video of weight 0.
const DEFAULT_BUCKETS: [Bucket; 3] = [
    ((256, 256, 1), 0.5),
    ((720, 1280, 1), 0.5),
    ((720, 1280, 16), 0.0),
];

/// A bucket key's modality, as vLLM's `map_config_to_modality`.
fn modality(t: i64) -> Result<&'static str, String> {
    match t {
        1 => Ok("image"),
        t if t > 1 => Ok("video"),
        _ => Err("Invalid multimodal item configuration (T must be at least 1)".into()),
    }
}

/// `--random-mm-bucket-config`: a Python dict literal of `(H, W, T)` tuple
/// keys (or their quoted strings) to probabilities, e.g.
/// `{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}`.
fn buckets(s: &str) -> Result<Vec<Bucket>, String> {
    let not_dict = || "Bucket config must parse to a dict.".to_string();
    let body = s
        .trim()
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(not_dict)?;
    let mut out = Vec::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let r = rest.trim_start_matches(['\'', '"']).trim_start();
        let (key, after) = r
            .strip_prefix('(')
            .and_then(|r| r.split_once(')'))
            .ok_or_else(|| format!("Invalid bucket key {rest:?}. Expected tuple (H, W, T)."))?;
        let nums: Vec<i64> = key
            .split(',')
            .map(|t| t.trim().parse::<i64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("Invalid bucket key ({key}). Expected tuple (H, W, T)."))?;
        let [h, w, t] = nums[..] else {
            return Err(format!(
                "Invalid bucket key ({key}). Expected tuple (H, W, T)."
            ));
        };
        let after = after.trim_start_matches(['\'', '"']).trim_start();
        let after = after.strip_prefix(':').ok_or_else(not_dict)?;
        let (value, next) = after.split_once(',').unwrap_or((after, ""));
        let p: f64 = value
            .trim()
            .parse()
            .map_err(|_| format!("bucket ({key}): {value:?} is not a probability"))?;
        // A key given twice keeps its last value, as Python's dict does.
        match out.iter_mut().find(|(k, _)| *k == (h, w, t)) {
            Some(kept) => kept.1 = p,
            None => out.push(((h, w, t), p)),
        }
        rest = next.trim();
    }
    Ok(out)
}

/// `--random-mm-limit-mm-per-prompt`: a JSON object of modality to count.
fn limits(s: Option<&str>) -> Result<BTreeMap<String, i64>, String> {
    let Some(s) = s else {
        return Ok(BTreeMap::from([("image".into(), 255), ("video".into(), 1)]));
    };
    let v: serde_json::Value =
        serde_json::from_str(s).map_err(|e| format!("--random-mm-limit-mm-per-prompt {s}: {e}"))?;
    let o = v
        .as_object()
        .ok_or_else(|| format!("--random-mm-limit-mm-per-prompt {s}: expected a JSON object"))?;
    o.iter()
        .map(|(k, v)| {
            v.as_i64().map(|n| (k.clone(), n)).ok_or_else(|| {
                format!("--random-mm-limit-mm-per-prompt: {k} must be a whole number")
            })
        })
        .collect()
}

/// goodput's `--images` for vLLM's random-mm flags, or `None` where every
/// request's count is 0 (text only, as vLLM then sends).
pub(super) fn images(a: &VllmServeArgs) -> Result<Option<String>, String> {
    let ratio = a.random_mm_num_mm_items_range_ratio;
    if !(0.0..=1.0).contains(&ratio) {
        return Err("num_mm_items_range_ratio must be in [0, 1].".into());
    }
    let all = match &a.random_mm_bucket_config {
        Some(s) => buckets(s)?,
        None => DEFAULT_BUCKETS.to_vec(),
    };
    let limits = limits(a.random_mm_limit_mm_per_prompt.as_deref())?;
    for &((_, _, t), _) in &all {
        let m = modality(t)?;
        if !limits.contains_key(m) {
            let keys: Vec<String> = limits.keys().map(|k| format!("'{k}'")).collect();
            return Err(format!(
                "Modality {m} is not in limit_mm_per_prompt: dict_keys([{}])",
                keys.join(", ")
            ));
        }
    }
    if all.iter().any(|(_, p)| *p < 0.0) {
        return Err("Bucket config values must be non-negative.".into());
    }
    let kept: Vec<_> = all.into_iter().filter(|(_, p)| *p > 0.0).collect();
    if kept.is_empty() {
        return Err("Got invalid bucket config. Bucket config values must be non-zero.".into());
    }
    if kept.iter().any(|((_, _, t), _)| *t > 1) {
        return Err(refuse(
            "--random-mm-bucket-config with a video bucket (T > 1) of non-zero weight",
            "goodput sends images only; give video buckets weight 0",
        ));
    }
    let limit = limits["image"];
    let base = a.random_mm_base_items_per_request as f64;
    let most = limit.min((base * (1.0 + ratio)).ceil() as i64);
    let fewest = ((base * (1.0 - ratio)).floor() as i64).max(0);
    if fewest > most {
        return Err(format!(
            "Min num mm items is greater than max mm items: {fewest} > {most}"
        ));
    }
    if most <= 0 {
        return Ok(None);
    }
    let cap = i64::from(goodput_core::load::MAX_IMAGES);
    if most > cap {
        return Err(refuse(
            &format!("random-mm with up to {most} images a request"),
            &format!("goodput sends at most {cap} images a request"),
        ));
    }
    let mut sides = Vec::new();
    for ((h, w, _), p) in &kept {
        let side = i64::from(goodput_core::load::MAX_SIDE);
        if !(1..=side).contains(h) || !(1..=side).contains(w) {
            return Err(refuse(
                &format!("--random-mm-bucket-config ({h}, {w}, 1)"),
                &format!("image sides are 1 to {side} pixels here"),
            ));
        }
        sides.push(format!("{w}x{h}@{p}"));
    }
    let count = if fewest == most {
        most.to_string()
    } else {
        format!("{fewest}-{most}")
    };
    Ok(Some(format!("{count}:{}:jpeg", sides.join(","))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(extra: &[&str]) -> VllmServeArgs {
        let mut argv = vec!["--dataset-name", "random-mm"];
        argv.extend_from_slice(extra);
        crate::translate::tests::args(&argv)
    }

    #[test]
    fn the_defaults_are_vllm_s_two_image_sizes_one_a_request() {
        let spec = images(&parsed(&[])).unwrap().unwrap();
        assert_eq!(spec, "1:256x256@0.5,1280x720@0.5:jpeg");
        let s: goodput_core::load::ImageSpec = spec.parse().unwrap();
        assert_eq!(s.to_string(), "1:256x256@0.5,1280x720@0.5:jpeg");
    }

    #[test]
    fn counts_spread_and_cap_as_vllm_s() {
        let a = parsed(&[
            "--random-mm-base-items-per-request",
            "3",
            "--random-mm-num-mm-items-range-ratio",
            "0.5",
            "--random-mm-limit-mm-per-prompt",
            r#"{"image": 4, "video": 0}"#,
            "--random-mm-bucket-config",
            "{(64, 32, 1): 5, '(8, 8, 1)': 3.0, (720, 1280, 16): 0.0, (64, 32, 1): 1}",
        ]);
        // floor(1.5) = 1 to min(4, ceil(4.5)) = 4; (H, W) become WxH.
        assert_eq!(images(&a).unwrap().unwrap(), "1-4:32x64@1,8x8@3:jpeg");
    }

    #[test]
    fn vllm_s_errors_and_video_are_named() {
        let e = |extra: &[&str]| images(&parsed(extra)).unwrap_err();
        assert!(e(&["--random-mm-limit-mm-per-prompt", r#"{"image": 3}"#])
            .contains("Modality video is not in limit_mm_per_prompt"));
        assert!(e(&["--random-mm-bucket-config", "{(1, 1, 1): 0}"]).contains("must be non-zero"));
        assert!(e(&["--random-mm-bucket-config", "{(1, 1, 1): -1}"]).contains("non-negative"));
        assert!(e(&["--random-mm-bucket-config", "[1]"]).contains("must parse to a dict"));
        assert!(e(&["--random-mm-bucket-config", "{(1, 1): 1}"]).contains("(H, W, T)"));
        assert!(e(&["--random-mm-bucket-config", "{(8, 8, 4): 1}"])
            .contains("goodput sends images only"));
        assert!(e(&["--random-mm-num-mm-items-range-ratio", "1.5"]).contains("[0, 1]"));
        let none = parsed(&["--random-mm-base-items-per-request", "0"]);
        assert_eq!(images(&none).unwrap(), None);
    }
}
