//! Output a script can trust: `--out -` puts the results JSON alone on
//! stdout (the human summary on stderr), a path that cannot be rewritten
//! (`/dev/stdout`, a pipe) gets the document once, and an output that
//! cannot be written after the load exits 7 — never 0, never 2 — with every
//! other output still written. And an SLO spelling a shell leaves alone.

mod common;

use common::{goodput, tmp};

/// A short run of the in-process simulator, ten times faster than the
/// modelled hardware, with `extra` flags.
fn quick(extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "run",
        "--sim",
        "llama-3.1-8b,h100-sxm,time-scale=0.1",
        "--no-server-metrics",
        "--percentiles",
        "50",
        "--num-prompts",
        "12",
        "--input-tokens",
        "64",
        "--output-tokens",
        "8",
    ];
    args.extend_from_slice(extra);
    goodput(&args)
}

#[test]
fn out_dash_writes_the_json_alone_on_stdout() {
    let (code, stdout, stderr) = quick(&["--out", "-"]);
    assert_eq!(code, 0, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {stdout}"));
    common::validate_run_document(&doc);
    assert_eq!(doc["completed"], 12);
    // The summary a person reads went to stderr.
    assert!(stderr.contains("Serving Benchmark Result"), "{stderr}");
    // -q: nothing but the document on stdout either.
    let (code, stdout, _) = quick(&["--out", "-", "-q"]);
    assert_eq!(code, 0);
    serde_json::from_str::<serde_json::Value>(&stdout).expect("one document");
    // Two outputs cannot share stdout: refused before any request.
    let (code, _, stderr) = quick(&["--out", "-", "--csv", "-"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn a_path_that_cannot_be_rewritten_gets_the_document_once() {
    let (code, stdout, stderr) = quick(&["--out", "/dev/stdout", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str::<serde_json::Value>(&stdout).expect("one document on /dev/stdout");
}

#[test]
fn an_output_that_fails_after_the_load_exits_7_and_keeps_the_others() {
    let csv = tmp("kept.csv");
    let (code, _, stderr) = quick(&["--out", "/dev/full", "--csv", csv.to_str().unwrap(), "-q"]);
    assert_eq!(code, 7, "{stderr}");
    assert!(stderr.contains("/dev/full"), "{stderr}");
    let kept = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(kept.lines().count(), 2, "the CSV was still written: {kept}");
}

/// `--slo ttft:p99:200ms,tpot:p99:50ms`, unquoted in a shell, is the same
/// SLO as the quoted `<=` spelling: the same terms saved, the same verdicts.
#[test]
fn the_shell_safe_slo_is_the_same_slo() {
    let (code, safe, stderr) =
        quick(&["--out", "-", "-q", "--slo", "ttft:p99:200ms,tpot:p99:50ms"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, full, stderr) = quick(&[
        "--out",
        "-",
        "-q",
        "--slo",
        "ttft:p99<=200ms,tpot:p99<=50ms",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let doc = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
    let (safe, full) = (doc(&safe), doc(&full));
    assert_eq!(safe["config"]["slo"], full["config"]["slo"]);
    // Each term as parsed, and whether its point estimate passes.
    let verdicts = |d: &serde_json::Value| -> Vec<(serde_json::Value, serde_json::Value)> {
        d["slo"]["terms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["term"].clone(), t["passes"].clone()))
            .collect()
    };
    assert_eq!(verdicts(&safe), verdicts(&full));
    assert_eq!(verdicts(&safe).len(), 2);
    // And through a real shell, unquoted.
    let bin = env!("CARGO_BIN_EXE_goodput");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{bin} run --sim time-scale=0.1 --no-server-metrics --percentiles 50 --num-prompts 4 --input-tokens 32 --output-tokens 4 -q --out - --slo ttft:p99:200ms,tpot:p99:50ms"
        ))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let d = doc(&stdout);
    assert_eq!(
        verdicts(&d).len(),
        2,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `goodput completions SHELL` prints a script its shell accepts, and
/// `goodput man` a page `man` renders, naming the subcommands.
#[test]
fn completions_and_the_manual_page() {
    let (code, script, stderr) = goodput(&["completions", "bash"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(script.contains("goodput"), "{script}");
    let path = tmp("goodput.bash");
    std::fs::write(&path, &script).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    for shell in ["zsh", "fish"] {
        let (code, script, _) = goodput(&["completions", shell]);
        assert_eq!(code, 0);
        assert!(script.contains("--slo"), "{shell}");
    }

    let (code, page, stderr) = goodput(&["man"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(page.starts_with(".ie") || page.contains(".TH"), "{page}");
    for sub in ["GOODPUT RUN", "GOODPUT SWEEP", "GOODPUT COMPARE"] {
        assert!(page.contains(sub), "{sub}");
    }
    // Rendered by man itself where the machine has it.
    if std::process::Command::new("man")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let file = tmp("goodput.1");
        std::fs::write(&file, &page).unwrap();
        let out = std::process::Command::new("man")
            .arg("-l")
            .arg(&file)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("--request-rate"), "{text}");
    }
}
