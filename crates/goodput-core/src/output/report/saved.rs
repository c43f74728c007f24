//! Saved results read back: a run's document or a sweep's, as `--out`
//! wrote them, for `report` and `compare`.

use std::path::Path;

use serde_json::Value;

use crate::output::result::RunResult;
use crate::plan::sweep::SweepResult;

/// One results file: a run, a sweep, or a run's repeats.
#[derive(Debug, Clone, PartialEq)]
pub enum Saved {
    /// One run's results.
    Run(Box<RunResult>),
    /// A sweep: its points' runs and its curve (`"kind": "sweep"`).
    Sweep(Box<SweepResult>),
    /// A run repeated (`--repeat`): each run and the figures across them
    /// (`"kind": "repeat"`).
    Repeat(Box<crate::plan::repeat::RepeatResult>),
}

impl Saved {
    /// Read a results document (`"kind": "sweep"` marks a sweep).
    pub fn from_document(doc: &Value) -> Result<Saved, String> {
        if doc.get("kind").and_then(Value::as_str) == Some("repeat") {
            let runs = doc["runs"]
                .as_array()
                .ok_or("a repeat result without 'runs'")?
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    RunResult::from_document(d).map_err(|e| format!("repeat {}: {e}", i + 1))
                })
                .collect::<Result<Vec<_>, _>>()?;
            if runs.is_empty() {
                return Err("a repeat result with no runs".into());
            }
            let summary = serde_json::from_value(doc["across_repeats"].clone())
                .map_err(|e| format!("'across_repeats': {e}"))?;
            Ok(Saved::Repeat(Box::new(crate::plan::repeat::RepeatResult {
                runs,
                summary,
            })))
        } else if doc.get("kind").and_then(Value::as_str) == Some("sweep") {
            serde_json::from_value(doc.clone())
                .map(|s| Saved::Sweep(Box::new(s)))
                .map_err(|e| format!("not a sweep result: {e}"))
        } else {
            RunResult::from_document(doc).map(|r| Saved::Run(Box::new(r)))
        }
    }

    /// Read a results file, with the path in any error.
    pub fn read(path: &Path) -> Result<Saved, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let doc: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        Saved::from_document(&doc).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// What answered the saved runs (the first run's target; a sweep's or
    /// a repeat's runs share it). None for results written before it was
    /// saved.
    pub fn target(&self) -> Option<&crate::output::config::Target> {
        self.runs().first()?.config.target.as_ref()
    }

    /// Every run it holds: the run, each point of the sweep, or each repeat.
    pub fn runs(&self) -> Vec<&RunResult> {
        match self {
            Saved::Run(r) => vec![r.as_ref()],
            Saved::Sweep(s) => s.points.iter().map(|p| &p.result).collect(),
            Saved::Repeat(r) => r.runs.iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_sweeps_read_back() {
        let r = crate::output::report::console::tests::sample_result();
        let back = Saved::from_document(&r.to_document()).unwrap();
        assert_eq!(back, Saved::Run(Box::new(r.clone())));
        let sweep = SweepResult {
            points: vec![crate::plan::sweep::SweepPoint {
                role: crate::plan::sweep::PointRole::Grid,
                meets: Some(true),
                wall_s: 1.0,
                result: r,
                start: None,
            }],
            ..Default::default()
        };
        let doc = super::super::json::sweep_document(&sweep);
        let back = Saved::from_document(&doc).unwrap();
        assert_eq!(back.runs().len(), 1);
        assert!(matches!(back, Saved::Sweep(_)));
    }
}
