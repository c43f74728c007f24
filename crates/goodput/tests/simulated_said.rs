//! Nothing simulated passes for real: a run answered by goodput's simulated
//! engine says so in its JSON (with the preset and every setting), its
//! console summary, its CSV and its HTML, and `compare` warns when one side
//! was simulated and the other not. A `goodput sim` behind `--url` is
//! recognised by its `/v1/models`.

mod common;

use common::{goodput, read_json, tmp};

/// A short run of the in-process simulator, ten times faster than the
/// modelled hardware.
const QUICK: [&str; 8] = [
    "--sim",
    "llama-3.1-8b,h100-sxm,time-scale=0.1",
    "--num-prompts",
    "20",
    "--input-tokens",
    "128",
    "--output-tokens",
    "16",
];

#[test]
fn a_run_without_url_says_it_was_simulated_in_every_output() {
    let (out, csv, html) = (tmp("sim.json"), tmp("sim.csv"), tmp("sim.html"));
    let mut args = vec!["run", "--no-server-metrics", "--percentiles", "50,90"];
    args.extend_from_slice(&QUICK);
    let paths = [
        ("--out", out.to_str().unwrap()),
        ("--csv", csv.to_str().unwrap()),
        ("--html", html.to_str().unwrap()),
    ];
    for (flag, path) in &paths {
        args.extend_from_slice(&[flag, path]);
    }
    let (code, stdout, stderr) = goodput(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");

    // The console, at the top and in vLLM's result block.
    let target_lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("Target:"))
        .collect();
    assert_eq!(target_lines.len(), 2, "{stdout}");
    assert!(
        target_lines[0].contains("simulated (llama-3.1-8b,h100-sxm,time-scale=0.1)")
            && target_lines[0].contains("not a real server"),
        "{}",
        target_lines[0]
    );

    // The JSON: the kind, the preset, and every setting.
    let doc = read_json(&out);
    common::validate_run_document(&doc);
    let target = &doc["config"]["target"];
    assert_eq!(target["kind"], "simulated", "{target}");
    assert_eq!(target["preset"], "llama-3.1-8b,h100-sxm,time-scale=0.1");
    let settings = &target["settings"];
    assert_eq!(settings["time_scale"], 0.1, "{settings}");
    for key in ["model", "hardware", "max_num_seqs", "faults", "seed"] {
        assert!(
            settings.get(key).is_some(),
            "settings lack {key}: {settings}"
        );
    }

    // The CSV: a `target` column.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = header
        .iter()
        .position(|h| h == "target")
        .expect("a target column");
    let row = reader.records().next().unwrap().unwrap();
    assert_eq!(
        &row[column],
        "simulated (llama-3.1-8b,h100-sxm,time-scale=0.1)"
    );

    // The HTML: a banner at the top and the file's line.
    let page = std::fs::read_to_string(&html).unwrap();
    let header_end = page.find("</header>").expect("a header");
    assert!(
        page[..header_end].contains("class=\"simulated banner\"")
            && page[..header_end].contains("not a real server"),
        "the header does not say simulated"
    );

    // compare: a server's result against it warns, in words and in JSON.
    let mut server = doc.clone();
    server["config"]["target"] = serde_json::json!({"kind": "server"});
    let base = tmp("server.json");
    std::fs::write(&base, serde_json::to_vec(&server).unwrap()).unwrap();
    let (code, stdout, stderr) = goodput(&[
        "compare",
        base.to_str().unwrap(),
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let cmp: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let kinds: Vec<&str> = cmp["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"target"), "{stdout}");
    // Two simulated results of the same preset: no such warning.
    let (_, stdout, _) = goodput(&[
        "compare",
        out.to_str().unwrap(),
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(!stdout.contains("\"target\""), "{stdout}");
}

#[test]
fn a_goodput_sim_behind_url_is_recognised_by_its_model_list() {
    let config = goodput_sim::SimConfig {
        time_scale: 0.1,
        ..Default::default()
    };
    let sim = goodput_sim::SimServer::spawn(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let url = format!("http://{}", sim.local_addr());
    let run = |extra: &[&str]| {
        let out = tmp("behind-url.json");
        let mut args = vec![
            "run",
            "--url",
            &url,
            "--no-server-metrics",
            "--percentiles",
            "50",
            "--num-prompts",
            "8",
            "--input-tokens",
            "64",
            "--output-tokens",
            "8",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = goodput(&args);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        read_json(&out)["config"]["target"].clone()
    };
    let found = run(&[]);
    assert_eq!(found["kind"], "simulated", "{found}");
    assert!(found["preset"].is_null(), "{found}");
    // With --model the list is not read: the target is taken for a server.
    let named = run(&["--model", "meta-llama/Llama-3.1-8B-Instruct"]);
    assert_eq!(named["kind"], "server", "{named}");
}
