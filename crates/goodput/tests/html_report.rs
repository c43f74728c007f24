//! The HTML report in headless Chromium: it opens offline with no console
//! errors and no network requests, every chart has one mark per data
//! point, text from results cannot run as script, and screenshots are
//! saved (target/report-screenshots/) for a person to look at.

mod browser;
mod common;

use browser::{chromium, Browser};
use common::*;

/// The harness itself sees errors, requests and dialogs, and counts marks.
#[test]
fn the_browser_harness_sees_errors_requests_dialogs_and_marks() {
    let Some(exe) = chromium() else { return };
    let page = tmp("probe.html");
    std::fs::write(
        &page,
        r#"<!doctype html><html><body>
<figure class="chart" data-chart="c" data-points="2"><svg width="10" height="10"><circle r="1"/><circle r="1"/></svg></figure>
<img src="http://127.0.0.1:9/x.png"><script>console.error("boom"); alert("ran");</script>
</body></html>"#,
    )
    .unwrap();
    let mut b = Browser::launch(&exe);
    let mut log = b.open(&page, 800);
    assert!(log.errors.iter().any(|e| e.contains("boom")), "{log:?}");
    assert!(log.requests.iter().any(|r| r.contains("x.png")), "{log:?}");
    assert_eq!(log.dialogs.len(), 1, "{log:?}");
    let marks = b.eval(
        "JSON.stringify([...document.querySelectorAll('figure.chart')].map(f => [f.dataset.points, f.querySelectorAll('svg circle').length]))",
        &mut log,
    );
    assert_eq!(marks, serde_json::json!("[[\"2\",2]]"));
}

/// Where screenshots go (for a person to look at after the tests).
fn shots() -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Open a report; no console errors, no requests, no dialogs; every chart
/// one circle per data point; a screenshot. Returns the chart ids.
fn check_page(b: &mut Browser, page: &std::path::Path, shot: &str) -> Vec<String> {
    let mut log = b.open(page, 1280);
    let marks = b.eval(
        "JSON.stringify([...document.querySelectorAll('figure.chart')].map(f => [f.dataset.chart, +f.dataset.points, f.querySelectorAll('svg circle').length]))",
        &mut log,
    );
    let marks: Vec<(String, u64, u64)> = serde_json::from_str(marks.as_str().unwrap()).unwrap();
    let scripts = b.eval("document.querySelectorAll('script').length", &mut log);
    b.screenshot(&shots().join(shot), &mut log);
    assert!(
        log.errors.is_empty(),
        "{shot}: console errors {:?}",
        log.errors
    );
    assert!(
        log.requests.is_empty(),
        "{shot}: network requests {:?}",
        log.requests
    );
    assert!(
        log.dialogs.is_empty(),
        "{shot}: a script ran: {:?}",
        log.dialogs
    );
    assert_eq!(
        scripts,
        serde_json::json!(0),
        "{shot}: the report has no script"
    );
    for (id, points, circles) in &marks {
        assert!(*points > 0, "{shot}: {id} is empty");
        assert_eq!(
            points, circles,
            "{shot}: chart {id} has {circles} marks for {points} points"
        );
    }
    marks.into_iter().map(|m| m.0).collect()
}

#[test]
fn run_and_sweep_reports_open_offline_with_one_mark_per_point() {
    let Some(exe) = chromium() else { return };
    let (run_json, run_html) = (tmp("run.json"), tmp("run.html"));
    let (code, _, err) = goodput(&[
        "run",
        "--request-rate",
        "20",
        "--num-prompts",
        "80",
        "--input-tokens",
        "128",
        "--output-tokens",
        "32",
        "--slo",
        "ttft:p99<=300ms",
        "--quiet",
        "--out",
        run_json.to_str().unwrap(),
        "--html",
        run_html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (sweep_json, sweep_html) = (tmp("sweep.json"), tmp("sweep.html"));
    let (code, _, err) = goodput(&[
        "sweep",
        "--rates",
        "4,8,16",
        "--point-time",
        "2s",
        "--input-tokens",
        "128",
        "--output-tokens",
        "32",
        "--slo",
        "ttft:p99<=300ms",
        "--cost-per-hour",
        "3",
        "--quiet",
        "--out",
        sweep_json.to_str().unwrap(),
        "--html",
        sweep_html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let both = tmp("both.html");
    let (code, _, err) = goodput(&[
        "report",
        "--quiet",
        run_json.to_str().unwrap(),
        sweep_json.to_str().unwrap(),
        sweep_json.to_str().unwrap(),
        "--html",
        both.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut b = Browser::launch(&exe);
    let run = check_page(&mut b, &run_html, "run.png");
    for id in [
        "cdf-ttft",
        "cdf-tpot",
        "cdf-itl",
        "cdf-e2el",
        "ts-throughput",
        "ts-in-flight",
        "gpu-power",
        "gpu-util",
    ] {
        assert!(
            run.iter().any(|c| c == id),
            "run report lacks {id}: {run:?}"
        );
    }
    let sweep = check_page(&mut b, &sweep_html, "sweep.png");
    for id in [
        "sweep-ttft",
        "sweep-tpot",
        "sweep-e2el",
        "sweep-throughput",
        "sweep-cost",
        "sweep-energy",
        "sweep-frontier",
    ] {
        assert!(
            sweep.iter().any(|c| c == id),
            "sweep report lacks {id}: {sweep:?}"
        );
    }
    check_page(&mut b, &both, "run-and-two-sweeps.png");
}

/// Text from a dataset file name, a model name and a server's error body
/// is shown as text, never run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_from_results_cannot_run_as_script() {
    let Some(exe) = chromium() else { return };
    let server = start(Script {
        behavior: std::sync::Arc::new(|id| {
            if id % 2 == 0 {
                Behavior::Ok
            } else {
                Behavior::Status(500)
            }
        }),
        ..Script::quick()
    })
    .await;
    let data = tmp("<img src=x onerror=alert(1)>.jsonl");
    std::fs::write(&data, "{\"prompt\": \"<script>alert(2)</script>\"}\n").unwrap();
    let html = tmp("evil.html");
    let (code, _, err) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--model",
        "<script>alert(3)</script>",
        "--dataset",
        data.to_str().unwrap(),
        "--dataset-exhausted",
        "cycle",
        "--num-prompts",
        "6",
        "--quiet",
        "--html",
        html.to_str().unwrap(),
    ]))
    .await;
    assert!(code == 1 || code == 0, "{err}");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(!text.contains("<script"), "raw script in the report");
    assert!(
        text.contains("&lt;script&gt;alert(3)"),
        "the model name is shown, escaped"
    );
    assert!(
        text.contains("onerror=alert(1)&gt;") || text.contains("&lt;img"),
        "the file name is shown, escaped"
    );
    let mut b = Browser::launch(&exe);
    check_page(&mut b, &html, "escaped.png");
}

/// A frontier sweep's chart, as Chromium lays it out: the frontier is one
/// line whose every segment is horizontal or vertical (a step function,
/// MLPerf Endpoints' representation), stepping down as interactivity rises.
#[test]
fn the_frontier_is_drawn_as_a_step_function() {
    let Some(exe) = chromium() else { return };
    let html = tmp("frontier.html");
    let (code, _, err) = goodput(&[
        "sweep",
        "--sim",
        "llama-3.1-8b,h100-sxm,time-scale=0.25,max-num-seqs=8",
        "--frontier",
        "--point-time",
        "1s",
        "--input-tokens",
        "128",
        "--output-tokens",
        "32",
        "--quiet",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut b = Browser::launch(&exe);
    let charts = check_page(&mut b, &html, "frontier.png");
    assert!(charts.iter().any(|c| c == "sweep-frontier"), "{charts:?}");
    let mut log = b.open(&html, 1280);
    let lines = b.eval(
        "JSON.stringify([...document.querySelectorAll('figure[data-chart=sweep-frontier] svg polyline[stroke-width=\"2\"]')].map(p => [...p.points].map(q => [q.x, q.y])))",
        &mut log,
    );
    let lines: Vec<Vec<(f64, f64)>> = serde_json::from_str(lines.as_str().unwrap()).unwrap();
    assert_eq!(lines.len(), 1, "one frontier line: {lines:?}");
    let path = &lines[0];
    assert!(path.len() >= 3, "{path:?}");
    let (mut across, mut down) = (0, 0);
    for w in path.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        assert!(x0 == x1 || y0 == y1, "a sloped segment: {path:?}");
        // SVG y grows downwards: throughput falls as y grows.
        assert!(
            x1 >= x0 && y1 >= y0,
            "the frontier rises somewhere: {path:?}"
        );
        across += usize::from(y0 == y1 && x1 > x0);
        down += usize::from(x0 == x1 && y1 > y0);
    }
    assert!(across > 0 && down > 0, "{path:?}");
}
