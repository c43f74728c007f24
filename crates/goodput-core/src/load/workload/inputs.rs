//! What a request carries beyond one prompt: a batch of inputs for the
//! pooling endpoints, images for chat. Both wrap the run's own source
//! (synthetic prompts or a dataset's rows), so every prompt is built,
//! salted and counted as it is for chat and completions.
//!
//! - [`PoolingSource`]: each request takes `batch` prompts from the inner
//!   source as its inputs (embeddings), or one prompt as the query and
//!   `batch` more as the documents (rerank, score). The request's client
//!   prompt tokens are the sum over the texts sent, the query once.
//! - [`ImageSource`]: each chat request gets `count` synthetic PNGs of the
//!   asked size, seeded by the run's nonce and the request's id (distinct
//!   in every request and every run, so no server cache dedups them), sent
//!   as data URLs after the text of its last user message.

use std::sync::Arc;

use super::dataset::images::LocalImage;
use super::source::{FollowUps, Planned, RequestSource};
use crate::request::protocol::images::with_images;
use crate::request::protocol::pooling::pooling_body;
use crate::request::protocol::{Endpoint, PreparedRequest, RequestParams};
use goodput_common::image::{data_url, synthetic, ImageSpec};

/// The params the inner source builds its bodies with: a pooling run's
/// prompts are made as completions (their text is taken from `prompt`).
pub fn inner_params(params: &RequestParams) -> RequestParams {
    let mut p = params.clone();
    if p.endpoint.is_pooling() {
        p.endpoint = Endpoint::Completions;
        p.stream = false;
    }
    p
}

/// `inner` wrapped for a pooling endpoint's batches or a chat run's images,
/// as `params`, `batch` and `images` ask; as it is otherwise.
pub fn wrap(
    inner: Box<dyn RequestSource>,
    params: &RequestParams,
    batch: Option<u32>,
    images: Option<ImageSpec>,
    nonce: u64,
) -> Box<dyn RequestSource> {
    if params.endpoint.is_pooling() {
        return Box::new(PoolingSource {
            inner,
            endpoint: params.endpoint,
            model: params.model.clone(),
            batch: batch.unwrap_or(1).max(1),
            next_id: 0,
        });
    }
    match images {
        Some(spec) if params.endpoint == Endpoint::Chat => {
            Box::new(ImageSource { inner, spec, nonce })
        }
        _ => inner,
    }
}

/// A dataset row's chat `body` with the row's image files attached, and
/// their count and bytes; as it is when the row has none or the request is
/// no chat request (the images of a row are sent with chat only).
pub fn with_row_images(
    params: &RequestParams,
    body: bytes::Bytes,
    images: &[Arc<LocalImage>],
) -> (bytes::Bytes, Option<(u32, u64)>) {
    if images.is_empty() || params.endpoint != Endpoint::Chat {
        return (body, None);
    }
    let urls: Vec<String> = images.iter().map(|i| i.data_url.clone()).collect();
    match with_images(&body, &urls) {
        Ok(b) => (
            b,
            Some((images.len() as u32, images.iter().map(|i| i.bytes).sum())),
        ),
        Err(_) => (body, None),
    }
}

/// Batches of the inner source's prompts as pooling requests.
pub struct PoolingSource {
    inner: Box<dyn RequestSource>,
    endpoint: Endpoint,
    model: String,
    batch: u32,
    next_id: u64,
}

/// The text a completions body sends (its `prompt`).
fn prompt_text(r: &PreparedRequest) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
    v.get("prompt")?.as_str().map(str::to_string)
}

impl RequestSource for PoolingSource {
    fn next(&mut self) -> Option<Planned> {
        let with_query = self.endpoint != Endpoint::Embeddings;
        let wanted = self.batch as usize + usize::from(with_query);
        let mut texts = Vec::with_capacity(wanted);
        let mut tokens = Some(0u32);
        let mut cacheable = 0;
        while texts.len() < wanted {
            // A dataset that runs out mid-batch sends what it has.
            let Some(p) = self.inner.next() else { break };
            let Some(text) = prompt_text(&p.request) else {
                continue;
            };
            tokens = tokens.zip(p.request.prompt_tokens).map(|(a, b)| a + b);
            cacheable += p.request.cacheable_tokens;
            texts.push(text);
        }
        let query = if with_query && texts.len() >= 2 {
            texts.remove(0)
        } else {
            String::new()
        };
        if texts.is_empty() || (with_query && query.is_empty()) {
            return None;
        }
        let id = self.next_id;
        self.next_id += 1;
        let request = PreparedRequest {
            id,
            body: pooling_body(self.endpoint, &self.model, &query, &texts),
            prompt_tokens: tokens,
            cacheable_tokens: cacheable,
            inputs: Some(texts.len() as u32),
            ..Default::default()
        };
        Some(Planned { request, at: None })
    }

    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        None
    }
}

/// The inner source's chat requests with synthetic images attached.
pub struct ImageSource {
    inner: Box<dyn RequestSource>,
    spec: ImageSpec,
    nonce: u64,
}

impl RequestSource for ImageSource {
    fn next(&mut self) -> Option<Planned> {
        let mut p = self.inner.next()?;
        let r = &mut p.request;
        let mut bytes = 0u64;
        let sizes = self
            .spec
            .draw(super::synthetic::mix_seed(self.nonce ^ r.id));
        let urls: Vec<String> = sizes
            .iter()
            .zip(0u64..)
            .map(|(&(w, h), k)| {
                let seed = super::synthetic::mix_seed(
                    self.nonce ^ super::synthetic::mix_seed(r.id ^ (k << 48)),
                );
                let image = synthetic(self.spec.format, w, h, seed);
                bytes += image.len() as u64;
                data_url(self.spec.format.media_type(), &image)
            })
            .collect();
        // A chat body always has its user message; were it missing, the
        // request goes out without images and its record says none. A
        // request drawn no images (a count range from 0) goes out as text.
        if urls.is_empty() {
            return Some(p);
        }
        if let Ok(body) = with_images(&r.body, &urls) {
            r.body = body;
            r.images = Some((urls.len() as u32, bytes));
        }
        Some(p)
    }

    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        self.inner.follow_ups()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::workload::{LengthSpec, SyntheticSource, SyntheticSpec};
    use crate::request::protocol::tests::params;
    use goodput_common::tokenizer::Tokenizer;

    fn source(endpoint: Endpoint, batch: u32, images: Option<ImageSpec>) -> Box<dyn RequestSource> {
        let p = params(endpoint);
        let tok = Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
        let spec = SyntheticSpec::new(LengthSpec::Fixed(20), LengthSpec::Fixed(4), 3);
        let inner = Box::new(SyntheticSource::new(spec, inner_params(&p), tok, 1));
        wrap(inner, &p, Some(batch), images, 1)
    }

    #[test]
    fn pooling_requests_carry_their_batch() {
        let mut s = source(Endpoint::Embeddings, 4, None);
        let r = s.next().unwrap().request;
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["input"].as_array().unwrap().len(), 4);
        assert_eq!(
            (r.inputs, r.prompt_tokens, r.stream),
            (Some(4), Some(80), false)
        );
        assert_eq!(s.next().unwrap().request.id, 1);
        let r = source(Endpoint::Rerank, 3, None).next().unwrap().request;
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["documents"].as_array().unwrap().len(), 3);
        // The query and three documents, 20 tokens each.
        assert_eq!((r.inputs, r.prompt_tokens), (Some(3), Some(80)));
        assert!(v["query"].as_str().is_some_and(|q| !q.is_empty()));
    }

    #[test]
    fn chat_requests_carry_distinct_images() {
        let spec: ImageSpec = "2:32x16".parse().unwrap();
        let mut s = source(Endpoint::Chat, 1, Some(spec));
        let (a, b) = (s.next().unwrap().request, s.next().unwrap().request);
        let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        let parts = v["messages"][0]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 3);
        let url = parts[1]["image_url"]["url"].as_str().unwrap();
        assert_eq!(goodput_common::image::data_url_size(url), Ok((32, 16)));
        let png = goodput_common::image::synthetic_png(32, 16, 0).len() as u64;
        assert_eq!(a.images, Some((2, 2 * png)));
        assert_ne!(a.body, b.body);
        let w: serde_json::Value = serde_json::from_slice(&b.body).unwrap();
        assert_ne!(parts[1], w["messages"][0]["content"][1]);
    }
}
