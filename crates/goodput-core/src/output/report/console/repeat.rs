//! A `--repeat` set in the console: the last repeat's summary, then each
//! headline figure across the repeats.

use std::fmt::Write;

use super::layout::{num, rule};
use super::run::summary;

/// A `--repeat` result: the last repeat's summary (every repeat is in the
/// results file), then each headline figure across the repeats.
pub fn repeat_summary(r: &crate::plan::repeat::RepeatResult) -> String {
    let mut out = String::new();
    if let Some(last) = r.runs.last() {
        let _ = writeln!(out, "Repeat {} of {}:", r.runs.len(), r.summary.repeats);
        out.push_str(&summary(last));
    }
    let s = &r.summary;
    rule(&mut out, &format!(" Across {} ", s.repeats_words()), '=');
    let _ = writeln!(
        out,
        "{:<32} {:>30} {:>7}  each repeat",
        "figure", "mean [95% CI, Student t]", "CV"
    );
    for f in &s.figures {
        let mean = match (f.lo, f.hi) {
            (Some(lo), Some(hi)) => format!("{} [{}, {}]", num(f.mean), num(lo), num(hi)),
            _ => num(f.mean),
        };
        let values: Vec<String> = f.values.iter().map(|v| v.map_or("-".into(), num)).collect();
        let _ = writeln!(
            out,
            "{:<32} {:>30} {:>7}  {}",
            format!("{} ({})", f.name, f.unit),
            mean,
            f.cv.map_or("-".into(), |c| format!("{:.1}%", c * 100.0)),
            values.join(", ")
        );
    }
    match (&s.identical_outputs, &s.identical_outputs_note) {
        (Some(i), _) => {
            let _ = writeln!(
                out,
                "identical outputs in every repeat: {} of {} prompts{} ({})",
                i.identical,
                i.prompts_compared,
                i.share
                    .map_or(String::new(), |x| format!(", {:.1}%", x * 100.0)),
                match i.temperature {
                    Some(t) => format!("temperature {t}"),
                    None =>
                        "the server's default temperature: pass --temperature 0 for greedy decoding"
                            .into(),
                }
            );
        }
        (None, Some(note)) => {
            let _ = writeln!(out, "outputs not compared: {note}");
        }
        _ => {}
    }
    out
}
