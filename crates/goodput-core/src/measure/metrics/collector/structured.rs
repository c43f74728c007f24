//! Tool calls and structured output over the run: how many completed
//! answers were checked against the schema they were asked to keep to,
//! how many kept to it, and the first few reasons the others did not.
//! A violation is no failure of the request (it completed and is in every
//! latency figure); it is counted here, as quality is.

use serde::{Deserialize, Serialize};

use crate::measure::metrics::RequestMetrics;
use crate::request::record::RequestRecord;

/// How many violations are quoted.
const QUOTED: usize = 5;

/// One answer that broke its schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaViolation {
    pub request_id: u64,
    pub reason: String,
}

/// The run's tool calls and schema checks (`structured_output` in the results).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StructuredOutput {
    /// Completed requests whose answer was checked.
    pub checked: u64,
    pub valid: u64,
    pub invalid: u64,
    /// `invalid / checked`; null when none was checked.
    pub invalid_share: Option<f64>,
    /// Completed requests whose answer held at least one tool call.
    pub requests_with_tool_calls: u64,
    /// Tool calls over all completed requests.
    pub tool_calls: u64,
    /// The first few violations, in the order they finished.
    pub first_violations: Vec<SchemaViolation>,
}

#[derive(Debug, Default)]
pub(super) struct Structured {
    /// Some once a completed request carried a spec to check.
    summary: Option<StructuredOutput>,
}

impl Structured {
    /// A completed request.
    pub(super) fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics) {
        if rec.output_check.is_none() {
            return;
        }
        let s = self.summary.get_or_insert_with(StructuredOutput::default);
        let calls = m.tool_calls.unwrap_or(0);
        s.tool_calls += u64::from(calls);
        s.requests_with_tool_calls += u64::from(calls > 0);
        match m.schema_valid {
            Some(true) => {
                s.checked += 1;
                s.valid += 1;
            }
            Some(false) => {
                s.checked += 1;
                s.invalid += 1;
                if s.first_violations.len() < QUOTED {
                    s.first_violations.push(SchemaViolation {
                        request_id: rec.request_id,
                        reason: m.schema_error.clone().unwrap_or_default(),
                    });
                }
            }
            None => {}
        }
    }

    pub(super) fn finish(&self) -> Option<StructuredOutput> {
        let mut s = self.summary.clone()?;
        s.invalid_share = (s.checked > 0).then(|| s.invalid as f64 / s.checked as f64);
        Some(s)
    }
}
