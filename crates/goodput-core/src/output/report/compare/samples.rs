//! Per-request values read back from a records file (`--records`), for
//! judging the means by batch means: TTFT, TPOT and E2EL of every measured request that completed,
//! grouped by the run that sent it (a sweep's records hold every point).
//!
//! The same requests as the run's own distributions: warm-up lines and
//! failures are left out, as [`crate::measure::metrics::Collector`] leaves them out.
//! Pure: the file's text in, values out.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::measure::metrics::Metric;

/// The metrics the records carry one value per request of.
pub const METRICS: [Metric; 3] = [Metric::Ttft, Metric::Tpot, Metric::E2el];

/// One run's per-request values (ms).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    values: BTreeMap<Metric, Vec<f64>>,
    requests: usize,
}

impl Samples {
    /// The values of `metric` (empty for a metric the records do not carry).
    pub fn get(&self, metric: Metric) -> &[f64] {
        self.values.get(&metric).map_or(&[], Vec::as_slice)
    }

    /// Measured requests that completed.
    pub fn requests(&self) -> usize {
        self.requests
    }

    /// Values built by hand (tests, or callers holding records in memory).
    pub fn from_values(values: BTreeMap<Metric, Vec<f64>>) -> Samples {
        let requests = values.values().map(Vec::len).max().unwrap_or(0);
        Samples { values, requests }
    }
}

/// A records file's values, by run id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordSamples {
    by_run: BTreeMap<String, Samples>,
}

/// A line of a records file that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct RecordsError {
    pub line: usize,
    pub message: String,
}

#[derive(Deserialize)]
struct Line {
    run_id: String,
    phase: String,
    ok: bool,
    ttft_ms: Option<f64>,
    tpot_ms: Option<f64>,
    e2el_ms: Option<f64>,
}

impl RecordSamples {
    /// Read a records file's text: one JSON object per line (blank lines
    /// skipped), keeping `phase == "measure"` lines with `ok`.
    pub fn parse(text: &str) -> Result<RecordSamples, RecordsError> {
        let mut by_run: BTreeMap<String, Samples> = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let line: Line = serde_json::from_str(raw).map_err(|e| RecordsError {
                line: i + 1,
                message: format!("not a records line: {e}"),
            })?;
            if line.phase != "measure" || !line.ok {
                continue;
            }
            let s = by_run.entry(line.run_id).or_default();
            s.requests += 1;
            for (metric, v) in METRICS
                .into_iter()
                .zip([line.ttft_ms, line.tpot_ms, line.e2el_ms])
            {
                if let Some(v) = v.filter(|v| v.is_finite()) {
                    s.values.entry(metric).or_default().push(v);
                }
            }
        }
        Ok(RecordSamples { by_run })
    }

    /// The values of one run, if the file has any measured request of it.
    pub fn run(&self, run_id: &str) -> Option<&Samples> {
        self.by_run.get(run_id)
    }

    /// Records built by hand.
    pub fn from_runs(runs: impl IntoIterator<Item = (String, Samples)>) -> RecordSamples {
        RecordSamples {
            by_run: runs.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_measured_successes_of_each_run() {
        let text = r#"{"run_id":"a","phase":"warmup","ok":true,"ttft_ms":99.0,"tpot_ms":9.0,"e2el_ms":999.0}
{"run_id":"a","phase":"measure","ok":true,"ttft_ms":10.0,"tpot_ms":1.0,"e2el_ms":100.0,"extra":1}

{"run_id":"a","phase":"measure","ok":false,"ttft_ms":null,"tpot_ms":null,"e2el_ms":null}
{"run_id":"a","phase":"measure","ok":true,"ttft_ms":12.0,"tpot_ms":null,"e2el_ms":120.0}
{"run_id":"b","phase":"measure","ok":true,"ttft_ms":20.0,"tpot_ms":2.0,"e2el_ms":200.0}
"#;
        let r = RecordSamples::parse(text).unwrap();
        let a = r.run("a").unwrap();
        assert_eq!(a.requests(), 2);
        assert_eq!(a.get(Metric::Ttft), &[10.0, 12.0]);
        assert_eq!(a.get(Metric::Tpot), &[1.0]);
        assert_eq!(a.get(Metric::Itl), &[] as &[f64]);
        assert_eq!(r.run("b").unwrap().get(Metric::E2el), &[200.0]);
        assert!(r.run("c").is_none());
    }

    #[test]
    fn a_bad_line_is_named() {
        let text = "{\"run_id\":\"a\",\"phase\":\"measure\",\"ok\":true}\nnot json\n";
        let e = RecordSamples::parse(text).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.to_string().starts_with("line 2: not a records line"),
            "{e}"
        );
        let e = RecordSamples::parse("{\"phase\":\"measure\"}").unwrap_err();
        assert!(e.message.contains("run_id"), "{e}");
    }
}
