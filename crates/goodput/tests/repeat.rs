//! `--repeat K`: the same plan K times against the simulator, each headline
//! figure's interval and CV across the repeats, and whether greedy decoding
//! gave the same outputs every time.

mod common;

use common::*;

fn repeat(extra: &[&str]) -> (i32, String, String, serde_json::Value) {
    let out = tmp("repeat.json");
    let mut args = vec![
        "run",
        "--repeat",
        "3",
        "--concurrency",
        "4",
        "--num-prompts",
        "12",
        "--input-tokens",
        "64",
        "--output-tokens",
        "uniform:8,24",
        "--no-pin-output",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = goodput(&args);
    let doc = read_json(&out);
    (code, stdout, stderr, doc)
}

#[test]
fn three_repeats_at_temperature_zero_report_intervals_and_identical_outputs() {
    let (code, stdout, stderr, doc) = repeat(&["--temperature", "0", "--no-cache-bust"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["kind"], "repeat");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let ids: std::collections::HashSet<_> =
        runs.iter().map(|r| r["run"]["run_id"].clone()).collect();
    assert_eq!(ids.len(), 3, "each repeat is a run of its own");
    for r in runs {
        assert_eq!(r["completed"], 12);
        assert_eq!(r["config"]["temperature"], 0.0, "{}", r["config"]);
    }
    let across = &doc["across_repeats"];
    assert_eq!(across["repeats"], 3);
    let fig = |name: &str| {
        across["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {across}"))
            .clone()
    };
    for name in [
        "request_throughput",
        "output_throughput",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "median_e2el_ms",
    ] {
        let f = fig(name);
        let values: Vec<f64> = f["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(values.len(), 3);
        let mean = values.iter().sum::<f64>() / 3.0;
        assert!((f["mean"].as_f64().unwrap() - mean).abs() < 1e-9 * mean.abs().max(1.0));
        let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        // Student t with 2 degrees of freedom: 4.303.
        let half = 4.303 * sd / 3f64.sqrt();
        assert!(
            (f["lo"].as_f64().unwrap() - (mean - half)).abs() < 1e-9 * mean.abs().max(1.0),
            "{f}"
        );
        assert!(
            (f["hi"].as_f64().unwrap() - (mean + half)).abs() < 1e-9 * mean.abs().max(1.0),
            "{f}"
        );
        assert!((f["cv"].as_f64().unwrap() - sd / mean).abs() < 1e-9, "{f}");
    }
    // Greedy decoding: the same prompts got the same answers every time.
    let same = &across["identical_outputs"];
    assert_eq!(same["prompts_compared"], 12, "{same}");
    assert_eq!(same["identical"], 12, "{same}");
    assert_eq!(same["share"], 1.0);
    assert!(stdout.contains("Across 3 repeats"), "{stdout}");
    assert!(
        stdout.contains("identical outputs in every repeat: 12 of 12 prompts, 100.0%"),
        "{stdout}"
    );
    assert!(stdout.contains("request_throughput (req/s)"), "{stdout}");
}

#[test]
fn sampled_outputs_differ_and_salted_prompts_are_not_compared() {
    // The simulator samples a new answer per request unless temperature is 0.
    let (code, _, stderr, doc) = repeat(&["--no-cache-bust"]);
    assert_eq!(code, 0, "{stderr}");
    let same = &doc["across_repeats"]["identical_outputs"];
    assert_eq!(same["prompts_compared"], 12);
    assert!(same["share"].as_f64().unwrap() < 0.5, "{same}");
    assert_eq!(same["temperature"], serde_json::Value::Null);

    // Salted prompts (the default) differ per repeat: outputs are not compared, and it says why.
    let (code, stdout, _, doc) = repeat(&["--temperature", "0"]);
    assert_eq!(code, 0);
    assert!(doc["across_repeats"]["identical_outputs"].is_null());
    let note = doc["across_repeats"]["identical_outputs_note"]
        .as_str()
        .unwrap();
    assert!(note.contains("--no-cache-bust"), "{note}");
    assert!(stdout.contains("outputs not compared"), "{stdout}");

    // The saved document reads back: report prints it and draws it.
    let file = tmp("r.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let html = tmp("r.html");
    let csv = tmp("r.csv");
    let (code, stdout, stderr) = goodput(&[
        "report",
        file.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Across 3 repeats"), "{stdout}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("across 3 repeats"), "no repeat section");
    assert!(page.contains("r.json · repeat 3"));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 4, "{rows}");
}
