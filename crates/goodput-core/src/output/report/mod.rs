//! Report: pure exporters. Results in, bytes out (hyperfine's exporters
//! are the model): every format renders the same list of labelled results
//! — runs, sweeps and `--repeat` sets, mixed as they come — so a sweep or
//! a comparison is never a special case.
//!
//! The formats are the [`Exporter`]s [`Console`], [`Json`], [`Csv`] and
//! [`Html`]; each renders `&[(label, Saved)]`, where the label is what the
//! reader knows a result by (its file name). `compare` has its own
//! renderings of a comparison ([`compare::render`]).
pub mod compare;
pub mod console;
pub mod csv;
pub mod html;
pub mod json;
pub mod saved;
pub mod vllm;

use std::io::{self, Write};

use saved::Saved;

/// Renders labelled results (any mix of runs, sweeps and repeats) in one
/// format.
pub trait Exporter {
    /// Write the rendering of `items` to `out`.
    fn render(&self, items: &[(String, Saved)], out: &mut dyn Write) -> io::Result<()>;

    /// The rendering of `items` as bytes.
    fn to_bytes(&self, items: &[(String, Saved)]) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.render(items, &mut out);
        out
    }
}

/// The console summary: a run's table, a sweep's points and knees, a
/// repeat set's figures across repeats; each headed by `# label` when
/// there are several.
pub struct Console;

impl Exporter for Console {
    fn render(&self, items: &[(String, Saved)], out: &mut dyn Write) -> io::Result<()> {
        out.write_all(console::render(items).as_bytes())
    }
}

/// The results JSON, pretty-printed, with a trailing newline: one result's
/// document (a run's, a sweep's or a repeat set's), or `{"runs": [...]}`
/// for several.
pub struct Json;

impl Exporter for Json {
    fn render(&self, items: &[(String, Saved)], out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &json::document(items))?;
        out.write_all(b"\n")
    }
}

/// The CSV summary: one row per run, sweep point or repeat.
pub struct Csv;

impl Exporter for Csv {
    fn render(&self, items: &[(String, Saved)], out: &mut dyn Write) -> io::Result<()> {
        out.write_all(csv::render(items).as_bytes())
    }
}

/// The self-contained HTML page.
pub struct Html;

impl Exporter for Html {
    fn render(&self, items: &[(String, Saved)], out: &mut dyn Write) -> io::Result<()> {
        out.write_all(html::render(items).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::console::tests::sample_result;
    use crate::plan::repeat::RepeatResult;
    use crate::plan::sweep::{PointRole, SweepPoint, SweepResult};

    /// A run, a sweep of one point and a repeat set of two runs.
    fn mixed() -> Vec<(String, Saved)> {
        let r = sample_result();
        let sweep = SweepResult {
            points: vec![SweepPoint {
                role: PointRole::Grid,
                meets: None,
                wall_s: 1.0,
                result: r.clone(),
                start: None,
            }],
            ..Default::default()
        };
        let runs = vec![r.clone(), r.clone()];
        let repeat = RepeatResult {
            summary: crate::plan::repeat::summarize(&runs, None, Ok(())),
            runs,
        };
        vec![
            ("run.json".into(), Saved::Run(Box::new(r))),
            ("sweep.json".into(), Saved::Sweep(Box::new(sweep))),
            ("repeat.json".into(), Saved::Repeat(Box::new(repeat))),
        ]
    }

    /// One result's JSON is its own document; several are listed under
    /// `runs`, each by what it is.
    #[test]
    fn json_is_each_results_document() {
        let items = mixed();
        for item in &items {
            let one: serde_json::Value =
                serde_json::from_slice(&Json.to_bytes(std::slice::from_ref(item))).unwrap();
            assert_eq!(one, json::saved_document(&item.1));
        }
        assert_eq!(Json.to_bytes(&items[..1]).last(), Some(&b'\n'));
        let all: serde_json::Value = serde_json::from_slice(&Json.to_bytes(&items)).unwrap();
        let kinds: Vec<&serde_json::Value> = all["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| &d["kind"])
            .collect();
        assert_eq!(
            kinds,
            [&serde_json::Value::Null, &"sweep".into(), &"repeat".into()]
        );
    }

    /// The console shows one result as its summary alone, several each
    /// under its label.
    #[test]
    fn console_labels_several_results() {
        let items = mixed();
        let one = String::from_utf8(Console.to_bytes(&items[..1])).unwrap();
        assert_eq!(one, console::summary(&sample_result()));
        let all = String::from_utf8(Console.to_bytes(&items)).unwrap();
        assert!(all.starts_with("# run.json\n"), "{all}");
        assert!(all.contains("\n# sweep.json\n"));
        assert!(all.contains("\n# repeat.json\nRepeat 2 of "));
    }

    /// CSV and HTML take the same list.
    #[test]
    fn csv_and_html_take_the_same_list() {
        let items = mixed();
        let csv = String::from_utf8(Csv.to_bytes(&items)).unwrap();
        assert_eq!(csv.lines().count(), 1 + 1 + 1 + 2);
        let html = String::from_utf8(Html.to_bytes(&items)).unwrap();
        assert!(html.contains("repeat.json · repeat 2"));
    }
}
