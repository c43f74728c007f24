//! vLLM's question files, read from a local path as vLLM reads them:
//! `spec_bench` (Spec-Bench's `question.jsonl`: each row's first `turns`
//! entry, rows of one `category` with `--spec-bench-category`) and
//! `speed_bench` (a directory holding `<subset>.jsonl`: each row's first
//! `messages` entry's `content`, rows of one `category` with
//! `--speed-bench-category`).
//!
//! `--num-prompts -1` takes every row read; a count above that repeats
//! rows drawn at random unless `--no-oversample`; the rows are shuffled
//! (goodput's shuffle, seeded by `--seed`: vLLM's draws from Python's
//! generator seeded 0) unless `--disable-shuffle`. The prompts are sent in
//! that order as a JSONL dataset, each answer `--*-output-len` tokens.

use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::cli::VllmServeArgs;

/// A question file's rows, as the dataset names them.
struct File {
    name: &'static str,
    path: PathBuf,
    category: Option<String>,
    /// The prompt of a row, or why the row has none.
    prompt: fn(&Value) -> Option<String>,
    field: &'static str,
}

fn spec_bench_prompt(row: &Value) -> Option<String> {
    row["turns"][0].as_str().map(str::to_string)
}

fn speed_bench_prompt(row: &Value) -> Option<String> {
    row["messages"][0]["content"].as_str().map(str::to_string)
}

/// Which file, for the dataset asked.
fn file(a: &VllmServeArgs) -> Result<File, String> {
    let given = a.dataset_path.as_deref().ok_or_else(|| {
        format!(
            "--dataset-name {} needs --dataset-path (a local copy; goodput downloads nothing)",
            a.dataset_name
        )
    })?;
    Ok(match a.dataset_name.as_str() {
        "spec_bench" => File {
            name: "spec_bench",
            path: PathBuf::from(given),
            category: a.spec_bench_category.clone(),
            prompt: spec_bench_prompt,
            field: "turns",
        },
        _ => {
            if !Path::new(given).is_dir() {
                return Err(format!(
                    "--dataset-path {given}: speed_bench reads a directory holding {}.jsonl (as vLLM does: NVIDIA NeMo Skills' speed-bench prepare.py writes it); goodput downloads nothing",
                    a.speed_bench_dataset_subset
                ));
            }
            File {
                name: "speed_bench",
                path: Path::new(given).join(format!("{}.jsonl", a.speed_bench_dataset_subset)),
                category: a.speed_bench_category.clone(),
                prompt: speed_bench_prompt,
                field: "messages",
            }
        }
    })
}

/// The prompts to send, in order: `--num-prompts` of them (every row for
/// -1, fewer where `--no-oversample` keeps a short file short).
pub fn prompts(a: &VllmServeArgs) -> Result<Vec<String>, String> {
    let f = file(a)?;
    let shown = f.path.display();
    let text = std::fs::read_to_string(&f.path)
        .map_err(|e| format!("--dataset-path {shown}: {e} (goodput downloads nothing)"))?;
    let mut rows = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row: Value = serde_json::from_str(line)
            .map_err(|e| format!("{shown}, line {}: not JSON: {e}", i + 1))?;
        let prompt = (f.prompt)(&row).ok_or_else(|| {
            format!(
                "{shown}, line {}: {} rows need a '{}' field (as vLLM reads them)",
                i + 1,
                f.name,
                f.field
            )
        })?;
        if f.category.as_deref().is_none_or(|c| row["category"] == c) {
            rows.push(prompt);
        }
    }
    if rows.is_empty() {
        return Err(match &f.category {
            Some(c) => format!("{shown}: no row of category '{c}'"),
            None => format!("{shown}: no rows"),
        });
    }
    let mut rng = StdRng::seed_from_u64(a.seed.max(0) as u64);
    if !a.disable_shuffle {
        rows.shuffle(&mut rng);
    }
    let want = match a.num_prompts {
        n if n <= 0 => rows.len(),
        n => n as usize,
    };
    rows.truncate(want);
    if !a.no_oversample {
        oversample(&mut rows, want, &mut rng);
    }
    Ok(rows)
}

/// vLLM's oversampling: rows drawn at random from those read, repeated
/// until there are `want` (a set of at least `want` is left as it is).
pub(super) fn oversample<T: Clone>(rows: &mut Vec<T>, want: usize, rng: &mut StdRng) {
    let n = rows.len();
    if n == 0 {
        return;
    }
    let extra: Vec<T> = (n..want)
        .map(|_| rows[rng.random_range(0..n)].clone())
        .collect();
    rows.extend(extra);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::tests::args;

    /// Every row for -1, one category's with the filter, a short file
    /// repeated up to the count unless `--no-oversample`, the file's order
    /// with `--disable-shuffle`.
    #[test]
    fn spec_bench_rows_are_read_as_vllm_reads_them() {
        let dir = std::env::temp_dir().join(format!("goodput-questions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("question.jsonl");
        let rows: String = (0..6)
            .map(|i| {
                let category = if i % 2 == 0 { "math" } else { "coding" };
                format!(
                    "{{\"question_id\": {i}, \"category\": \"{category}\", \"turns\": [\"q{i}\", \"follow-up\"]}}\n"
                )
            })
            .collect();
        std::fs::write(&path, rows).unwrap();
        let p = path.to_str().unwrap();
        let base = ["--dataset-name", "spec_bench", "--dataset-path", p];
        let read = |extra: &[&str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            prompts(&args(&v)).unwrap()
        };
        let all = read(&["--num-prompts", "-1", "--disable-shuffle"]);
        assert_eq!(all, ["q0", "q1", "q2", "q3", "q4", "q5"]);
        let math = read(&["--num-prompts", "-1", "--spec-bench-category", "math"]);
        let mut sorted = math.clone();
        sorted.sort();
        assert_eq!(sorted, ["q0", "q2", "q4"]);
        assert_eq!(read(&["--num-prompts", "10"]).len(), 10);
        assert_eq!(read(&["--num-prompts", "10", "--no-oversample"]).len(), 6);
        let e = prompts(&args(
            &[&base[..], &["--spec-bench-category", "art"]].concat(),
        ));
        assert!(e.unwrap_err().contains("no row of category 'art'"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
