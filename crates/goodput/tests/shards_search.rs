//! A goodput search across four shard processes against one process's:
//! on its own (a test binary of its own runs alone), because a search
//! measures capacity in real time and must not share the machine with the
//! other sharded tests.

mod common;

use common::shards::*;
use common::*;
use serde_json::Value;

/// `sweep --search goodput` across four shards: the coordinator runs the
/// search once, on the merged points (its concurrency-1 floor on shard 0
/// alone, the others sitting it out), and every shard runs each point it
/// is ordered to; the goodput it finds is one process's, within the
/// search's precision (a search this short rarely has the points near the
/// edge for an interval; where both have one, they overlap).
#[test]
fn a_goodput_search_across_four_shards_finds_one_processs_goodput() {
    let (_sim, url) = simulator(1.0);
    let args = [
        "sweep",
        "--url",
        &url,
        "--search",
        "goodput",
        "--slo",
        "ttft:p90<=500ms",
        "--precision",
        "10%",
        "--probe-time",
        "2s",
        "--point-time",
        "3s",
        "--search-time",
        "60s",
        "--measure-time",
        "8s",
        "--input-tokens",
        "1024",
        "--output-tokens",
        "64",
        "--quiet",
    ];
    let one = tmp("one.json");
    let mut one_args = args.to_vec();
    one_args.extend(["--out", one.to_str().unwrap()]);
    let (code, stdout, stderr) = goodput(&one_args);
    assert!(code == 0, "{stdout}\n{stderr}");
    let one = read_json(&one);
    let dir = tmp("x").parent().unwrap().to_path_buf();
    let ends = run_shards(&sharded(&args, 4, free_port(), &dir), 4, &dir);
    for (i, (code, log)) in ends.iter().enumerate() {
        assert_eq!(*code, 0, "shard {i}:\n{log}");
    }
    let four = read_json(&dir.join("result-0.json"));
    let (g1, g4) = (&one["goodput"], &four["goodput"]);
    let rate = |g: &Value| g["rate"].as_f64().unwrap();
    let (r1, r4) = (rate(g1), rate(g4));
    assert!(
        (r4 / r1 - 1.0).abs() <= 0.2,
        "one process {g1}\nfour shards {g4}"
    );
    if let (Some(a), Some(b)) = (g1["interval"].as_array(), g4["interval"].as_array()) {
        let f = |v: &Value| v.as_f64().unwrap();
        assert!(f(&a[0]) <= f(&b[1]) && f(&b[0]) <= f(&a[1]), "{g1}\n{g4}");
    }
    // Every point merged all four shards' parts: each shard ran every point.
    for p in four["points"].as_array().unwrap() {
        let s = &p["result"]["shards"];
        assert_eq!(s["parts"].as_array().unwrap().len(), 4, "{s}");
        assert!(s["lost"].as_array().unwrap().is_empty(), "{s}");
    }
}
