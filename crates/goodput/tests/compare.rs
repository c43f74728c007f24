//! `goodput compare` on results the binary itself produced against the
//! built-in simulator: identical inputs pass, a planted regression fails its
//! gate with the figure and the change named, two runs that differ only by
//! seed are within noise, and bad input exits 2.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::*;
use serde_json::Value;

/// A light load: well under the simulator's capacity, so TTFT is set by the
/// engine's step schedule rather than by queueing.
fn run_args_with<'a>(
    seed: &'a str,
    input: &'a str,
    out: &'a str,
    records: &'a str,
) -> Vec<&'a str> {
    vec![
        "run",
        "--request-rate",
        "20",
        "--num-prompts",
        "60",
        "--input-tokens",
        input,
        "--output-tokens",
        "16",
        "--seed",
        seed,
        "--out",
        out,
        "--records",
        records,
    ]
}

/// Run once with this seed: (results, records).
fn run(seed: &str) -> (PathBuf, PathBuf) {
    run_with(seed, "64")
}

/// Run once with this seed and input length spec: (results, records).
fn run_with(seed: &str, input: &str) -> (PathBuf, PathBuf) {
    let out = tmp(&format!("run-{seed}.json"));
    let records = out.with_extension("jsonl");
    let (code, stdout, stderr) = goodput(&run_args_with(
        seed,
        input,
        out.to_str().unwrap(),
        records.to_str().unwrap(),
    ));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    (out, records)
}

/// One run shared by the tests that only need some result.
fn fixture() -> &'static (PathBuf, PathBuf) {
    static RUN: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    RUN.get_or_init(|| run("1"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn figure<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no figure {name} in {doc}"))
}

/// The kinds of a comparison's warnings, in order.
fn warning_kinds(doc: &Value) -> Vec<&str> {
    doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["kind"].as_str())
        .collect()
}

/// Every number in `v` plus `d`, but a count's or a spread's.
fn shift_numbers(v: &mut Value, d: f64) {
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                *v = serde_json::json!(x + d);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| shift_numbers(x, d)),
        Value::Object(o) => o
            .iter_mut()
            .filter(|(key, _)| *key != "count" && !key.starts_with("std"))
            .for_each(|(_, x)| shift_numbers(x, d)),
        _ => {}
    }
}

/// The results with every TTFT figure `d` ms later: the flat keys (not
/// the spread), the distribution (not its count) and its intervals.
fn shift_ttft_results(doc: &mut Value, d: f64) {
    for (key, v) in doc.as_object_mut().unwrap() {
        if key.ends_with("_ttft_ms") && !key.starts_with("std") {
            shift_numbers(v, d);
        }
    }
    shift_numbers(&mut doc["ttft"], d);
    shift_numbers(&mut doc["ci"]["ttft"], d);
}

/// The records' TTFTs, in order.
fn record_ttfts(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).unwrap()["ttft_ms"].as_f64())
        .collect()
}

/// The records with every `ttft_ms` `d` ms later.
fn shift_ttft_records(text: &str, d: f64) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if let Some(x) = v["ttft_ms"].as_f64() {
            v["ttft_ms"] = serde_json::json!(x + d);
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// A planted regression as large as a run's own spread can never hide:
/// ten times the width of the values it is judged on. A batch mean, or a
/// repeat's value, lies within that width, so the test's standard error is
/// at most about half of it and the shift stands ≥ 14 errors clear, on an
/// idle machine or a busy one. A multiplied TTFT (the earlier plant, 20 %
/// slower) scales the noise with it and was missed on a busy CI machine;
/// how small a change compare finds is the coverage study's power, in
/// virtual time. At least `floor`, so that the gate's threshold is passed.
fn planted_shift(values: &[f64], floor: f64) -> f64 {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    (10.0 * (hi - lo)).max(floor)
}

#[test]
fn identical_inputs_pass() {
    let (out, records) = fixture();
    let (code, stdout, stderr) = goodput(&[
        "compare",
        s(out),
        s(out),
        "--base-records",
        s(records),
        "--new-records",
        s(records),
        "--fail-on",
        "p99_ttft_ms>+10%",
        "--fail-on",
        "output_throughput<-5%",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["verdict"], "pass");
    assert_eq!(doc["warnings"], serde_json::json!([]), "{doc}");
    let p99 = figure(&doc, "p99_ttft_ms");
    assert_eq!(p99["change"], 0.0);
    assert_ne!(p99["significant"], true);
    // The same requests on both sides: batch means find nothing.
    let mean = figure(&doc, "mean_ttft_ms");
    assert_eq!(mean["method"], "batch_means");
    assert_eq!(mean["significant"], false);
    assert_eq!(mean["p_value"], 1.0);
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn a_planted_p99_ttft_regression_fails_its_gate() {
    let (out, records) = fixture();
    let base = read_json(out);
    let text = std::fs::read_to_string(records).unwrap();
    let mean = base["mean_ttft_ms"].as_f64().unwrap();
    let shift = planted_shift(&record_ttfts(&text), mean);
    let mut doc = base.clone();
    shift_ttft_results(&mut doc, shift);
    let new = tmp("new.json");
    std::fs::write(&new, doc.to_string()).unwrap();
    let new_records = new.with_extension("jsonl");
    std::fs::write(&new_records, shift_ttft_records(&text, shift)).unwrap();
    let args = |format: &'static str| {
        vec![
            "compare".to_string(),
            s(out).into(),
            s(&new).into(),
            "--base-records".into(),
            s(records).into(),
            "--new-records".into(),
            s(&new_records).into(),
            "--fail-on".into(),
            "mean_ttft_ms>+10%".into(),
            "--fail-on".into(),
            "p99_tpot_ms>+10%".into(),
            "--format".into(),
            format.into(),
        ]
    };
    let argv = args("text");
    let (code, stdout, stderr) = goodput(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    // The message names the expression, the figure and the change, and
    // whether it is significant (every TTFT later by ten times the run's
    // own TTFT range: clearly, and still after the correction over every
    // figure). How clearly depends on this run's spread, so the corrected
    // value is checked against the 5 % level, not printed digits.
    let change = format!("mean_ttft_ms: {:+.1}% > +10%", shift / mean * 100.0);
    let said =
        format!("--fail-on 'mean_ttft_ms>+10%' failed: {change} (significant: batch means, p ");
    assert!(stderr.contains(&said), "{stderr}");
    let corrected = stderr
        .split(" over ")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .unwrap_or_default()
        .trim();
    let corrected = corrected.trim_start_matches("< ").parse::<f64>();
    assert!(
        matches!(corrected, Ok(p) if p < 0.05),
        "{corrected:?} in {stderr}"
    );
    assert!(!stderr.contains("p99_tpot_ms"), "{stderr}");
    assert!(
        stdout.contains("result: FAIL (1 of 2 gates failed)"),
        "{stdout}"
    );
    let argv = args("markdown");
    let (code, stdout, _) = goodput(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with(&format!(
            "### goodput compare: FAIL — `mean_ttft_ms>+10%` ({change})"
        )),
        "{stdout}"
    );
    let argv = args("json");
    let (code, stdout, _) = goodput(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["verdict"], "fail");
    let p99 = figure(&doc, "p99_ttft_ms");
    assert!(
        (p99["relative_change"].as_f64().unwrap() - shift / base["p99_ttft_ms"].as_f64().unwrap())
            .abs()
            < 1e-6,
        "{p99}"
    );
    assert_eq!(figure(&doc, "mean_ttft_ms")["significant"], true);
    // Untouched figures did not move.
    let tpot = figure(&doc, "p99_tpot_ms");
    assert_eq!(tpot["change"].as_f64(), Some(0.0));
    assert_ne!(tpot["significant"], true, "{tpot}");
}

/// Two runs of the same command with different seeds, run side by side so
/// the machine's load is the same for both: the median TTFT differs by
/// noise, and no figure of the comparison is called significant, with or
/// without the records (the family is corrected, and every interval is a
/// batch-means one). Prompts of 16 to 384 tokens make the TTFT vary by
/// tens of ms with the prompt.
///
/// A comparison controlled at 5 % calls up to 1 pair in 20 significant
/// when nothing differs, so a second, independent pair is run when the
/// first is called significant: under no difference both are in 1 case of
/// 400, under a real bias nearly always.
#[test]
fn runs_that_differ_by_seed_are_within_noise() {
    let mut called = Vec::new();
    for seeds in [("11", "12"), ("21", "22")] {
        match seed_pair_significance(seeds) {
            None => return,
            Some(why) => called.push(why),
        }
    }
    panic!("two independent pairs of seeds both called significant: {called:?}");
}

/// Run two seeds side by side and compare them; what was called
/// significant, if anything.
fn seed_pair_significance((x, y): (&str, &str)) -> Option<String> {
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| run_with(x, "uniform:16,384"));
        let b = scope.spawn(|| run_with(y, "uniform:16,384"));
        (a.join().unwrap(), b.join().unwrap())
    });
    let compare = |records: bool| {
        let mut argv = vec!["compare", s(&a.0), s(&b.0), "--format", "json"];
        if records {
            argv.extend(["--base-records", s(&a.1), "--new-records", s(&b.1)]);
        }
        let (code, stdout, stderr) = goodput(&argv);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        serde_json::from_str::<Value>(&stdout).unwrap()
    };
    // A run whose crowding index happened to read above its limit (a 3 s
    // run's index is noisy) bounds its latencies from below only: its
    // per-request values judge nothing, and compare says why.
    let crowded = [&a.0, &b.0]
        .iter()
        .any(|p| read_json(p)["crowding"]["long_memory"] == true);
    let by_intervals = compare(false);
    let median = figure(&by_intervals, "median_ttft_ms").clone();
    let by_records = compare(true);
    let mean = figure(&by_records, "mean_ttft_ms").clone();
    let warnings = warning_kinds(&by_records);
    if crowded {
        // Judged, if at all, on the crowded run's lower end only.
        assert_ne!(mean["method"], "batch_means", "{mean}");
        assert_eq!(warnings, ["crowding"], "{by_records}");
    } else {
        assert_eq!(median["method"], "intervals", "{median}");
        assert_eq!(mean["method"], "batch_means", "{mean}");
        // Same command: nothing to warn about (the seed is not a difference).
        assert!(warnings.is_empty(), "{by_records}");
    }
    let called: Vec<String> = [&by_intervals, &by_records]
        .iter()
        .flat_map(|doc| doc["figures"].as_array().unwrap().iter())
        .filter(|f| f["significant"] == true)
        .map(|f| f.to_string())
        .collect();
    (!called.is_empty()).then(|| called.join(" / "))
}

#[test]
fn bad_input_exits_2() {
    let (out, records) = fixture();
    let (code, _, stderr) = goodput(&["compare", s(out), s(out), "--fail-on", "p99_ttft_ms>10%"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("'p99_ttft_ms>10%'"), "{stderr}");
    assert!(stderr.contains("needs a sign"), "{stderr}");
    assert!(stderr.contains("FIGURE>+N%"), "{stderr}");
    let (code, _, stderr) = goodput(&["compare", s(out), s(out), "--fail-on", "p99_tfft_ms>+10%"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("unknown figure 'p99_tfft_ms'; valid: request_throughput"),
        "{stderr}"
    );
    // A figure these results do not have.
    let (code, _, stderr) =
        goodput(&["compare", s(out), s(out), "--fail-on", "p99.9_ttft_ms>+10%"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("'p99.9_ttft_ms' is not a figure of these results; they have: "),
        "{stderr}"
    );
    // Unreadable files, and a records file given as results.
    let missing = tmp("missing.json");
    let (code, _, stderr) = goodput(&["compare", s(out), s(&missing)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("reading {}", missing.display())),
        "{stderr}"
    );
    let (code, _, stderr) = goodput(&["compare", s(records), s(out)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not JSON"), "{stderr}");
    // Results given as records.
    let (code, _, stderr) = goodput(&[
        "compare",
        s(out),
        s(out),
        "--base-records",
        s(out),
        "--new-records",
        s(records),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("line 1: not a records line"), "{stderr}");
}

/// Two runs too short to read their crowding (3 s of sending against
/// requests that spend a third of a second in flight): each bounds its
/// latencies from below only and says so, and compare judges none of their
/// latency changes, naming why, while it still judges the throughputs.
#[test]
fn runs_too_short_for_their_crowding_are_not_judged_on_latency() {
    let run = |seed: &str| {
        let out = tmp(&format!("short-{seed}.json"));
        let (code, stdout, stderr) = goodput(&[
            "run",
            "--request-rate",
            "20",
            "--num-prompts",
            "60",
            "--input-tokens",
            "256",
            "--output-tokens",
            "32",
            "--seed",
            seed,
            "--out",
            s(&out),
        ]);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        assert!(
            stdout.contains("crowding: the run was too short"),
            "{stdout}"
        );
        let doc = read_json(&out);
        assert_eq!(doc["crowding"]["long_memory"], true, "{}", doc["crowding"]);
        assert!(doc["crowding"]["index"].is_null());
        assert!(doc["ci"]["ttft"]["mean"][1].is_null(), "{}", doc["ci"]);
        assert!(doc["ci"]["ttft"]["mean"][0].is_number(), "{}", doc["ci"]);
        out
    };
    let (a, b) = (run("5"), run("6"));
    let (code, stdout, stderr) = goodput(&["compare", s(&a), s(&b), "--format", "json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let kinds = warning_kinds(&doc);
    assert_eq!(kinds, ["crowding"], "{}", doc["warnings"]);
    for name in ["mean_ttft_ms", "p99_e2el_ms", "median_tpot_ms"] {
        assert_eq!(figure(&doc, name)["significant"], Value::Null, "{name}");
    }
}

/// Two `--repeat` results are compared across their repeats: each figure
/// the mean over a side's repeats, judged by Welch's test on the repeats'
/// values. A result against itself passes; a copy whose every TTFT is
/// later by ten times the repeats' range (and at least their mean) fails
/// its gate, judged by the repeats; a repeat result against
/// a single run is refused, saying what to compare.
#[test]
fn two_repeat_results_are_compared_across_their_repeats() {
    let base = tmp("repeat-base.json");
    let mut args = run_args_with("3", "64", s(&base), "unused");
    args.truncate(args.len() - 2);
    args.extend(["--repeat", "3"]);
    let (code, stdout, stderr) = goodput(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");

    let (code, stdout, stderr) = goodput(&["compare", s(&base), s(&base), "--format", "json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["base"]["kind"], "repeat");
    assert_eq!(doc["base"]["points"], 3);
    let mean = figure(&doc, "mean_ttft_ms");
    assert_eq!(mean["method"], "repeats", "{mean}");
    assert_eq!(mean["significant"], false, "{mean}");
    assert_eq!(mean["p_value"], 1.0, "{mean}");
    assert_eq!(figure(&doc, "error_rate")["method"], "two_proportions");
    // The side's value is the mean over its repeats.
    let saved = read_json(&base);
    let repeats: Vec<f64> = saved["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["mean_ttft_ms"].as_f64().unwrap())
        .collect();
    let avg = repeats.iter().sum::<f64>() / 3.0;
    assert!(
        (mean["base"].as_f64().unwrap() - avg).abs() < 1e-9,
        "{mean}"
    );
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("mean over 3 BASE and 3 NEW repeats of one schedule (seed 3)"),
        "{notes}"
    );
    assert!(notes.contains("Welch's t-test"), "{notes}");

    let shift = planted_shift(&repeats, avg);
    let mut slower = saved.clone();
    for run in slower["runs"].as_array_mut().unwrap() {
        shift_ttft_results(run, shift);
    }
    let new = tmp("repeat-new.json");
    std::fs::write(&new, slower.to_string()).unwrap();
    let (code, stdout, stderr) = goodput(&[
        "compare",
        s(&base),
        s(&new),
        "--fail-on",
        "mean_ttft_ms>+50%",
    ]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "mean_ttft_ms: {:+.1}% > +50% (significant: repeats, p",
            shift / avg * 100.0
        )),
        "{stderr}"
    );
    assert!(stdout.contains("3 repeats"), "{stdout}");
    assert!(
        stdout.contains("repeats: Welch's t-test on the repeats' values"),
        "{stdout}"
    );

    // Another seed: another schedule, whose difference the repeats'
    // spread does not hold. Nothing is judged, and compare says why.
    let mut other = saved.clone();
    for run in other["runs"].as_array_mut().unwrap() {
        run["config"]["seed"] = serde_json::json!(4);
    }
    let other_path = tmp("repeat-other-seed.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    let (code, stdout, stderr) =
        goodput(&["compare", s(&base), s(&other_path), "--format", "json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert!(warning_kinds(&doc).contains(&"seeds"), "{doc}");
    assert!(figure(&doc, "mean_ttft_ms")["significant"].is_null());

    let (out, _) = fixture();
    let (code, _, stderr) = goodput(&["compare", s(&base), s(out)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("BASE is a repeat and NEW is a run: compare a run with a run, a sweep with a sweep, or a --repeat result with another"),
        "{stderr}"
    );
}
