//! What the completed requests answered: their quality against the
//! workload's references, where it has them, and a hash of each output
//! when kept (`--repeat` compares outputs across repeats).

use std::hash::{Hash, Hasher};

use crate::measure::quality::{Quality, QualityAcc};
use crate::request::record::RequestRecord;

#[derive(Debug, Default)]
pub(super) struct Outputs {
    quality: QualityAcc,
    /// (request id, hash of the output text), when kept.
    hashes: Option<Vec<(u64, u64)>>,
}

impl Outputs {
    /// Keep a hash of each completed request's output.
    pub(super) fn keep_hashes(&mut self, keep: bool) {
        self.hashes = keep.then(Vec::new);
    }

    /// The kept hashes, by request id (empty unless kept).
    pub(super) fn take_hashes(&mut self) -> Vec<(u64, u64)> {
        self.hashes.take().unwrap_or_default()
    }

    /// A completed request's output.
    pub(super) fn add(&mut self, rec: &RequestRecord) {
        if let Some(hashes) = self.hashes.as_mut() {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            rec.output_text.hash(&mut h);
            hashes.push((rec.request_id, h.finish()));
        }
        if let Some(reference) = &rec.reference {
            self.quality.add(reference, &rec.output_text);
        }
    }

    /// Outputs against their references; `None` when the workload has none.
    pub(super) fn quality(&self) -> Option<Quality> {
        self.quality.summary()
    }
}
