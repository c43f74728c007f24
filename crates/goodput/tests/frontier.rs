//! `goodput sweep --frontier` against the built-in simulator: MLPerf
//! Endpoints' point plan, each point's `tps_per_user` recomputed from its
//! own records, and the Pareto step function non-increasing.

mod common;

use common::*;

/// A simulator four times faster than the default deployment, batching at
/// most 8 sequences: its throughput is flat past concurrency 8, so the plan
/// ends within a few doublings.
const SIM: &str = "llama-3.1-8b,h100-sxm,time-scale=0.25,max-num-seqs=8";

/// numpy's linear percentile, as goodput's.
fn percentile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let h = (values.len() - 1) as f64 * q / 100.0;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    values[lo] + (h - lo as f64) * (values[hi] - values[lo])
}

#[test]
fn the_frontier_plans_mlperfs_points_and_steps_down_as_interactivity_rises() {
    let (out, records, csv) = (
        tmp("frontier.json"),
        tmp("frontier.jsonl"),
        tmp("frontier.csv"),
    );
    let (code, stdout, err) = goodput(&[
        "sweep",
        "--sim",
        SIM,
        "--frontier",
        "--point-time",
        "2s",
        "--input-tokens",
        "256",
        "--output-tokens",
        "32",
        "--percentiles",
        "99",
        "--out",
        out.to_str().unwrap(),
        "--records",
        records.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("Frontier (MLPerf Endpoints)"), "{stdout}");
    assert!(stdout.contains("MLPerf point rules:"), "{stdout}");
    let doc = read_json(&out);
    let points = doc["points"].as_array().unwrap();
    let concurrencies: Vec<u64> = points
        .iter()
        .map(|p| {
            let load = &p["result"]["config"]["load"];
            (load["mode"] == "closed").then(|| load["concurrency"].as_u64())?
        })
        .collect::<Option<_>>()
        .expect("every frontier point is closed loop");
    // MLPerf's plan: 7 to 32 points, one at concurrency 1 to 32.
    assert!((7..=32).contains(&concurrencies.len()), "{concurrencies:?}");
    assert!(concurrencies.iter().any(|&c| c <= 32), "{concurrencies:?}");
    assert_eq!(concurrencies[0], 1);
    let frontier = &doc["frontier"];
    assert_eq!(frontier["x"], "tps_per_user");
    let fpoints = frontier["points"].as_array().unwrap();
    assert_eq!(fpoints.len(), points.len());

    // Each point's tps_per_user is 1000 / the p90 TPOT of its own measured
    // requests, recomputed from the records (--percentiles 99 did not ask
    // for the p90: the frontier does).
    let records = read_records(&records);
    for fp in fpoints {
        let p = &points[fp["point"].as_u64().unwrap() as usize];
        let run_id = p["result"]["run"]["run_id"].as_str().unwrap();
        let mut tpots: Vec<f64> = records
            .iter()
            .filter(|r| r["run_id"] == run_id && r["phase"] == "measure")
            .filter_map(|r| r["tpot_ms"].as_f64())
            .collect();
        assert!(tpots.len() >= 10, "{run_id}: {} TPOTs", tpots.len());
        let want = 1000.0 / percentile(&mut tpots, 90.0);
        let got = fp["tps_per_user"].as_f64().unwrap();
        assert!(
            (got / want - 1.0).abs() < 1e-3,
            "c={}: tps_per_user {got}, 1000 / p90 TPOT of its records {want}",
            fp["concurrency"]
        );
        let tput = p["result"]["output_throughput"].as_f64().unwrap();
        assert_eq!(fp["system_tps"].as_f64().unwrap(), tput);
    }

    // The frontier: corners by x rising with throughput falling, and every
    // other point dominated by a corner at least as interactive.
    let xy = |i: u64| {
        let p = &fpoints[i as usize];
        (
            p["tps_per_user"].as_f64().unwrap(),
            p["system_tps"].as_f64().unwrap(),
        )
    };
    let steps: Vec<(f64, f64)> = frontier["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| xy(i.as_u64().unwrap()))
        .collect();
    assert!(!steps.is_empty());
    for w in steps.windows(2) {
        assert!(w[1].0 >= w[0].0 && w[1].1 < w[0].1, "{steps:?}");
    }
    for (i, fp) in fpoints.iter().enumerate() {
        let (x, y) = xy(i as u64);
        let covered = steps.iter().any(|&(sx, sy)| sx >= x && sy >= y);
        assert!(covered, "point {i} ({x}, {y}) above the frontier {steps:?}");
        assert_eq!(
            fp["on_frontier"].as_bool().unwrap(),
            steps.contains(&(x, y))
        );
    }
    // MLPerf's regions over concurrencies 1 to the highest.
    let regions = &frontier["regions"];
    assert_eq!(regions["c_min"], 1);
    assert_eq!(
        regions["c_max"].as_u64(),
        concurrencies.iter().max().copied()
    );

    // `goodput predict --frontier` forecasts the same frontier in virtual
    // time, in seconds: its output throughput within 15 % of the measured
    // one at every concurrency both ran up to the batch's 8 sequences
    // (past it, the measured points of a second or two read their queue's
    // wander: 3,725 tok/s at 23 once, 3,390 another time).
    let forecast = tmp("frontier-forecast.json");
    let (code, _, err) = goodput(&[
        "predict",
        "--frontier",
        "--sim",
        SIM,
        "--input-tokens",
        "256",
        "--output-tokens",
        "32",
        "--slo",
        "ttft:p99:2s",
        "--out",
        forecast.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let forecast = read_json(&forecast);
    assert!(forecast["elapsed_s"].as_f64().unwrap() < 10.0);
    let predicted = forecast["frontier"]["points"].as_array().unwrap();
    assert!(predicted.len() >= 7, "{predicted:?}");
    let mut compared = 0;
    for p in predicted {
        let Some(m) = fpoints
            .iter()
            .find(|m| m["concurrency"] == p["concurrency"])
        else {
            continue;
        };
        let (a, b) = (
            p["system_tps"].as_f64().unwrap(),
            m["system_tps"].as_f64().unwrap(),
        );
        assert!(
            (a / b - 1.0).abs() < 0.15,
            "c={}: predicted {a} tok/s, measured {b}",
            p["concurrency"]
        );
        compared += 1;
    }
    assert!(compared >= 4, "{compared} concurrencies in common");

    // The sweep document validates, and the CSV carries the frontier.
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/sweep.schema.json")).unwrap();
    let errors: Vec<String> = jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "frontier_tps_per_user_tok_per_s")
        .expect("a frontier column");
    assert_eq!(text.lines().count(), points.len() + 1);
    for line in text.lines().skip(1) {
        let cell = line.rsplit(',').nth(header.len() - 1 - col).unwrap();
        assert!(cell.parse::<f64>().is_ok(), "{line}");
    }
}

#[test]
fn given_concurrencies_are_the_frontiers_points_and_its_shortfalls_are_said() {
    let out = tmp("frontier-given.json");
    let (code, stdout, err) = goodput(&[
        "sweep",
        "--sim",
        SIM,
        "--frontier",
        "--concurrencies",
        "2,4",
        "--point-time",
        "1s",
        "--input-tokens",
        "128",
        "--output-tokens",
        "16",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let doc = read_json(&out);
    assert_eq!(doc["points"].as_array().unwrap().len(), 2);
    let unmet: Vec<String> = doc["frontier"]["mlperf_unmet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert!(
        unmet.iter().any(|s| s.contains("fewer than the 7")),
        "{unmet:?}"
    );
    assert!(stdout.contains("fewer than the 7"), "{stdout}");
    // A frontier is not a search.
    let (code, _, err) = goodput(&["sweep", "--frontier", "--search", "goodput"]);
    assert_eq!(code, 2, "{err}");
}
