//! What pooling requests and image-bearing chat requests carried, over the
//! measured phase's completed requests: inputs (embeddings, rerank
//! documents, score texts) and their rate; images, their encoded bytes and
//! the prompt tokens the server charged beyond the client's text count.

use serde::{Deserialize, Serialize};

use super::outcomes::Outcome;
use crate::measure::metrics::RequestMetrics;
use crate::request::record::RequestRecord;

/// Inputs of the completed pooling requests (`inputs` in the results).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputsSummary {
    /// Inputs in completed requests.
    pub inputs_total: u64,
    /// Inputs per completed request, on average.
    pub inputs_per_request_mean: f64,
    /// Inputs of completed requests per second of the run's duration.
    pub inputs_throughput: f64,
}

/// Images of the completed chat requests that carried any (`images` in the
/// results).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImagesSummary {
    /// Completed requests that carried images.
    pub image_requests: u64,
    pub images_total: u64,
    /// Encoded bytes of those images (the files', before base64).
    pub image_bytes_total: u64,
    pub images_per_request_mean: f64,
    pub image_bytes_per_image_mean: f64,
    /// Mean of (server-reported − client-counted) prompt tokens over the
    /// image requests whose server reported its prompt tokens: the tokens
    /// it charged for the images (and its chat template).
    pub image_extra_prompt_tokens_mean: Option<f64>,
}

#[derive(Debug, Default)]
pub(super) struct InputCounts {
    pooling_requests: u64,
    inputs: u64,
    image_requests: u64,
    images: u64,
    image_bytes: u64,
    extra_tokens: i64,
    extra_compared: u64,
}

impl InputCounts {
    pub(super) fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics, outcome: &Outcome) {
        if *outcome != Outcome::Completed {
            return;
        }
        if let Some(n) = rec.inputs {
            self.pooling_requests += 1;
            self.inputs += u64::from(n);
        }
        if let Some(n) = rec.images.filter(|n| *n > 0) {
            self.image_requests += 1;
            self.images += u64::from(n);
            self.image_bytes += rec.image_bytes.unwrap_or(0);
            if let (Some(server), Some(client)) = (
                rec.usage.and_then(|u| u.prompt_tokens),
                m.client_input_tokens,
            ) {
                self.extra_compared += 1;
                self.extra_tokens += i64::from(server) - i64::from(client);
            }
        }
    }

    /// `None` when no completed request was a pooling one.
    pub(super) fn inputs(&self, duration_s: f64) -> Option<InputsSummary> {
        (self.pooling_requests > 0).then(|| InputsSummary {
            inputs_total: self.inputs,
            inputs_per_request_mean: self.inputs as f64 / self.pooling_requests as f64,
            inputs_throughput: if duration_s > 0.0 {
                self.inputs as f64 / duration_s
            } else {
                0.0
            },
        })
    }

    /// `None` when no completed request carried an image.
    pub(super) fn images(&self) -> Option<ImagesSummary> {
        (self.image_requests > 0).then(|| ImagesSummary {
            image_requests: self.image_requests,
            images_total: self.images,
            image_bytes_total: self.image_bytes,
            images_per_request_mean: self.images as f64 / self.image_requests as f64,
            image_bytes_per_image_mean: self.image_bytes as f64 / self.images.max(1) as f64,
            image_extra_prompt_tokens_mean: (self.extra_compared > 0)
                .then(|| self.extra_tokens as f64 / self.extra_compared as f64),
        })
    }
}
