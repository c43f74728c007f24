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
