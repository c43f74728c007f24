//! What became of each measured request — completed, failed (by kind) or
//! still running at the drain timeout — counted, with one example message
//! per kind: the run's error summary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::request::record::{ErrorKey, RequestRecord};

/// What became of one measured request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Completed,
    /// Failed, under its key in the error counts (`connect`, `http_503`).
    Failed(ErrorKey),
    /// Still running when the drain timeout ended the run: neither
    /// completed nor failed, and not part of the duration.
    Incomplete,
}

impl Outcome {
    pub(super) fn of(rec: &RequestRecord) -> Outcome {
        if rec.incomplete() {
            return Outcome::Incomplete;
        }
        match ErrorKey::of(rec) {
            Some(key) => Outcome::Failed(key),
            None => Outcome::Completed,
        }
    }
}

/// Failures by kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// failed / (completed + failed).
    pub error_rate: f64,
    /// Failed requests by kind, written as `{"connect": 2, "http_503": 5}`.
    pub by_kind: BTreeMap<ErrorKey, u64>,
    /// One message per kind.
    pub examples: BTreeMap<ErrorKey, String>,
}

/// Counts of the measured requests by outcome.
#[derive(Debug, Default)]
pub(super) struct OutcomeCounts {
    completed: u64,
    failed: u64,
    incomplete: u64,
    by_kind: BTreeMap<ErrorKey, u64>,
    /// The first message seen of each kind.
    examples: BTreeMap<ErrorKey, String>,
}

impl OutcomeCounts {
    pub(super) fn add(&mut self, rec: &RequestRecord, outcome: &Outcome) {
        match outcome {
            Outcome::Completed => self.completed += 1,
            Outcome::Incomplete => self.incomplete += 1,
            Outcome::Failed(key) => {
                self.failed += 1;
                *self.by_kind.entry(*key).or_default() += 1;
                if let Some(e) = &rec.error {
                    self.examples
                        .entry(*key)
                        .or_insert_with(|| e.message.clone());
                }
            }
        }
    }

    pub(super) fn completed(&self) -> u64 {
        self.completed
    }

    pub(super) fn failed(&self) -> u64 {
        self.failed
    }

    pub(super) fn incomplete(&self) -> u64 {
        self.incomplete
    }

    /// Requests that ended, completed or failed: what the error rate and
    /// the attainment are shares of.
    pub(super) fn done(&self) -> u64 {
        self.completed + self.failed
    }

    /// failed / (completed + failed); 0 when none ended.
    pub(super) fn error_rate(&self) -> f64 {
        let done = self.done();
        if done > 0 {
            self.failed as f64 / done as f64
        } else {
            0.0
        }
    }

    pub(super) fn finish(&self) -> ErrorSummary {
        ErrorSummary {
            error_rate: self.error_rate(),
            by_kind: self.by_kind.clone(),
            examples: self.examples.clone(),
        }
    }
}
