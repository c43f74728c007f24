//! vLLM's `random-rerank` dataset: one query shared by every request and
//! `--num-prompts` documents, `--random-batch-size` of them a request, as
//! vLLM's `RandomDatasetForReranking` builds them. The query holds
//! `--random-input-len / 2 − 1` tokens (the range ratio drawn once), each
//! document `--random-input-len` − the query − 1, so a query and a document
//! together fill the input length as a cross-encoder reads them.
//!
//! The texts are built to exact counts under the run's tokenizer (or the
//! server's, [`super::server_tokens`]) and written in order, the query
//! before each batch's documents: goodput's rerank requests take one query
//! and `--batch-size` documents from the dataset in turn, the last request
//! the documents left.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use goodput_core::load::TextBuilder;
use goodput_core::tokenizer::Tokenizer;

/// The dataset's shape, as vLLM's flags give it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub documents: usize,
    pub batch: usize,
    pub input_len: u32,
    pub range_ratio: f64,
    pub seed: u64,
}

impl Shape {
    /// Requests the documents make.
    pub fn requests(&self) -> usize {
        self.documents.div_ceil(self.batch.max(1))
    }

    /// The query's and a document's token counts.
    fn lengths(&self, rng: &mut StdRng) -> Result<(u32, u32), String> {
        let target = (self.input_len / 2).saturating_sub(1);
        let lo = ((target as f64) * (1.0 - self.range_ratio))
            .floor()
            .max(1.0) as u32;
        let hi = ((target as f64) * (1.0 + self.range_ratio))
            .ceil()
            .max(lo as f64) as u32;
        let query = rng.random_range(lo..=hi);
        let document = self.input_len.saturating_sub(query + 1);
        if target == 0 || document == 0 {
            return Err(format!(
                "--random-input-len {} leaves no room for a query and a document (random-rerank splits it in two)",
                self.input_len
            ));
        }
        Ok((query, document))
    }

    /// The dataset's rows in order: the query, then a batch of documents,
    /// for every request.
    pub fn rows(&self, tokenizer: &Tokenizer) -> Result<Vec<String>, String> {
        let builder = TextBuilder::new(tokenizer.clone());
        builder.check().map_err(|e| e.to_string())?;
        let mut rng = StdRng::seed_from_u64(self.seed);
        let (query_len, document_len) = self.lengths(&mut rng)?;
        let text = |rng: &mut StdRng, n: u32| {
            builder
                .body(rng, "", 0, n)
                .map(|(t, _)| t)
                .map_err(|e| e.to_string())
        };
        let query = text(&mut rng, query_len)?;
        let mut rows = Vec::with_capacity(self.documents + self.requests());
        for i in 0..self.documents {
            if i % self.batch.max(1) == 0 {
                rows.push(query.clone());
            }
            rows.push(text(&mut rng, document_len)?);
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 documents in batches of 4: three requests, the query before
    /// each batch, the last batch of 2; query and document fill the input.
    #[test]
    fn a_shared_query_before_each_batch_of_documents() {
        let tokenizer = Tokenizer::from_spec(goodput_core::tokenizer::DEFAULT_TOKENIZER).unwrap();
        let shape = Shape {
            documents: 10,
            batch: 4,
            input_len: 64,
            range_ratio: 0.0,
            seed: 1,
        };
        assert_eq!(shape.requests(), 3);
        let rows = shape.rows(&tokenizer).unwrap();
        assert_eq!(rows.len(), 13);
        for i in [0, 5, 10] {
            assert_eq!(rows[i], rows[0], "the query at {i}");
        }
        assert_eq!(tokenizer.count(&rows[0]), Some(31));
        assert_eq!(tokenizer.count(&rows[1]), Some(32));
        assert_ne!(rows[1], rows[2], "documents differ");
    }
}
