//! The console's lines for what requests carried beyond one prompt: the
//! inputs of pooling requests (embeddings, rerank, score) and the images
//! of chat requests. Absent when the run had neither.

use super::layout::{line, num, rule};
use crate::output::result::RunResult;

/// The Inputs section: inputs and their rate, images, their bytes and the
/// prompt tokens the server charged beyond the client's text.
pub(super) fn inputs_section(out: &mut String, r: &RunResult) {
    let m = &r.metrics;
    if m.inputs.is_none() && m.images.is_none() {
        return;
    }
    rule(out, "Inputs", '-');
    if let Some(i) = &m.inputs {
        line(out, "Total inputs:", i.inputs_total);
        line(out, "Inputs per request:", num(i.inputs_per_request_mean));
        line(
            out,
            "Input throughput (inputs/s):",
            num(i.inputs_throughput),
        );
    }
    if let Some(i) = &m.images {
        line(
            out,
            "Images (requests with images):",
            format!("{} ({})", i.images_total, i.image_requests),
        );
        line(
            out,
            "Image bytes (mean per image):",
            format!(
                "{} ({})",
                i.image_bytes_total,
                num(i.image_bytes_per_image_mean)
            ),
        );
        if let Some(x) = i.image_extra_prompt_tokens_mean {
            line(
                out,
                "Server prompt tokens beyond text:",
                format!("{x:+.1} tokens/request"),
            );
        }
    }
}
