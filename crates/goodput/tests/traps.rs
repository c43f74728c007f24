//! Each classic trap set on purpose against the simulator produces its
//! warning (printed and saved under `warnings`); a clean run has none.

mod common;

use common::*;

fn warnings(flags: &[&str]) -> Vec<String> {
    let out = tmp("r.json");
    let mut args = vec!["run", "--quiet", "--out", out.to_str().unwrap()];
    args.extend_from_slice(flags);
    let (code, _, err) = goodput(&args);
    // 3: nothing completed (a saturated run can end so); results are written.
    assert!(matches!(code, 0 | 1 | 3), "{flags:?}: {err}");
    let v = read_json(&out);
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap().to_string())
        .collect()
}

const SMALL: [&str; 4] = ["--input-tokens", "64", "--output-tokens", "16"];

#[test]
fn a_clean_run_has_no_warning() {
    let w = warnings(&[&SMALL[..], &["--concurrency", "8", "--num-prompts", "400"]].concat());
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn each_trap_gives_its_warning() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--concurrency", "1", "--num-prompts", "40"],
            "concurrency_one",
        ),
        (
            vec!["--concurrency", "8", "--num-prompts", "40"],
            "too_few_for_percentile",
        ),
        (
            vec![
                "--concurrency",
                "8",
                "--num-prompts",
                "40",
                "--no-pin-output",
            ],
            "unpinned_output",
        ),
        (
            vec![
                "--concurrency",
                "4",
                "--num-prompts",
                "40",
                "--input-tokens",
                "1000",
                "--prefix-tokens",
                "960",
                "--prefix-groups",
                "1",
            ],
            "prefix_cache",
        ),
        (
            vec![
                "--request-rate",
                "400",
                "--max-concurrency",
                "1",
                "--num-prompts",
                "60",
            ],
            "client_limited",
        ),
        (
            vec![
                "--request-rate",
                "300",
                "--num-prompts",
                "300",
                "--input-tokens",
                "4096",
                "--output-tokens",
                "64",
                "--drain-timeout",
                "1s",
            ],
            "saturated",
        ),
    ];
    for (flags, kind) in cases {
        // The small default lengths, unless the case sets its own.
        let mut all: Vec<&str> = SMALL
            .chunks(2)
            .filter(|f| !flags.contains(&f[0]))
            .flatten()
            .copied()
            .collect();
        all.extend(flags.iter().copied());
        let w = warnings(&all);
        assert!(
            w.iter().any(|k| k == kind),
            "{flags:?}: expected {kind} in {w:?}"
        );
    }
}
