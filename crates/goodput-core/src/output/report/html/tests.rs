//! Tests of the HTML report: which charts a page holds, that each chart's
//! `data-points` counts its circles, escaping, overlays, and sections that
//! appear only when there is something to say.

use super::format::*;
use super::*;
use crate::load::executor::ExecSummary;
use crate::load::schedule::{Arrival, Load};
use crate::measure::cost::{Cost, CostSpec};
use crate::measure::metrics::{Collector, RequestMetrics};
use crate::measure::slo::{parse_terms, Slo};
use crate::output::config::tests::{dataset_workload, sample_config, synthetic_workload};
use crate::output::config::RunConfig;
use crate::plan::sweep::{CurvePoint, Goodput, PointRole, SweepPoint};
use crate::plan::sweep::{KneeAt, Knees};
use crate::request::record::{ErrorKind, RequestError};
use crate::tokenizer::Tokenizer;

const HOSTILE: &str = "<script>alert(1)</script>\"'&";

/// A deterministic open-loop run of 40 requests, TTFT 100 + i ms, one token
/// every 10 ms; `fail` makes every tenth a 503 whose message is `message`.
fn run(slo: Option<&Slo>, fail: bool, message: &str) -> RunResult {
    let tok = Tokenizer::from_spec("none").unwrap();
    let mut c = Collector::default();
    const MS: u64 = 1_000_000;
    for i in 0..40u64 {
        let failure = (fail && i % 10 == 7).then(|| RequestError {
            kind: ErrorKind::HttpStatus,
            message: message.into(),
            retry_after: None,
        });
        let r = crate::output::report::console::tests::sample_record(i, i * 50 * MS, failure);
        let m = RequestMetrics::derive(&r, &tok);
        c.add(&r, &m);
    }
    let percentiles = vec![50.0, 90.0, 99.0];
    let load = Load::Open {
        rate: 20.0,
        arrival: Arrival::Poisson,
        max_concurrency: None,
    };
    RunResult {
        run_id: "00000000000000bb".into(),
        config: RunConfig {
            workload: Some(synthetic_workload("chat, input 32 / output 5 tokens", 0)),
            ..sample_config(load, percentiles.clone())
        },
        metrics: c.summarize(&percentiles, None, 0, slo),
        exec: ExecSummary::default(),
        connections: Default::default(),
        early_stop: None,
        cost: None,
        notes: Vec::new(),
        warnings: Vec::new(),
        started_at: "2026-01-01T00:00:00Z".into(),
        clock_origin_monotonic_ns: None,
        output_hashes: Vec::new(),
        server_metrics: None,
        gpu_metrics: None,
        shards: None,
    }
}

fn slo() -> Slo {
    Slo {
        terms: parse_terms(&["ttft:p99<=200ms,tpot:p99<=50ms".into()]).unwrap(),
        per_request: Vec::new(),
        attainment: None,
        max_error_rate: 0.01,
        ..Default::default()
    }
}

/// A sweep of four rates over copies of one run, costed, with knees and goodput.
fn sweep(scale: f64) -> SweepResult {
    let mut base = run(Some(&slo()), false, "");
    base.cost = Some(Cost::of(
        CostSpec {
            per_hour: Some(4.0),
            power_watts: None,
            gpus: 2,
            energy_price_per_kwh: None,
        },
        &base.metrics,
        None,
        None,
    ));
    let rates = [2.0, 6.0, 12.0, 20.0];
    let curve: Vec<CurvePoint> = rates
        .iter()
        .enumerate()
        .map(|(i, &r)| CurvePoint {
            point: i,
            offered: r,
            request_throughput: r.min(14.0),
            output_throughput: r.min(14.0) * 64.0,
            ttft_p50_ms: Some(30.0 * scale * (1.0 + i as f64)),
            ttft_p99_ms: Some(80.0 * scale * (1.0 + i as f64).powi(2)),
            tpot_p50_ms: Some(8.0 + i as f64),
            tpot_p99_ms: Some(10.0 + 2.0 * i as f64),
            e2el_p50_ms: Some(500.0 + 100.0 * i as f64),
            // The last point finished nothing.
            e2el_p99_ms: (i < 3).then_some(600.0 + 150.0 * i as f64),
            saturated: i == 3,
            meets: Some(i < 2),
            cost_per_million_good_output_tokens: (i < 2).then_some(9.0 / (1.0 + i as f64)),
            output_tokens_per_joule: (i < 3).then_some(0.5 + i as f64),
            mean_power_w: (i < 3).then_some(400.0),
        })
        .collect();
    SweepResult {
        mode: Some(crate::plan::sweep::SweepMode::Rates(rates.to_vec())),
        points: rates
            .iter()
            .map(|_| SweepPoint {
                role: PointRole::Grid,
                meets: Some(true),
                wall_s: 4.0,
                result: base.clone(),
                start: None,
            })
            .collect(),
        curve,
        knees: Knees {
            throughput: Some(KneeAt {
                curve_index: 2,
                offered: 12.0,
            }),
            degradation: Some(KneeAt {
                curve_index: 1,
                offered: 6.0,
            }),
            degradation_factor: 0.2,
            floor_ttft_p99_ms: Some(80.0),
        },
        capacity: None,
        goodput: Some(Goodput {
            rate: 6.0,
            bracket: (6.0, Some(12.0)),
            slo: "p99 TTFT <= 200 ms".into(),
            workload: "chat".into(),
            notes: Vec::new(),
            confirmed: false,
            interval: None,
            method: None,
            inconclusive: false,
            unit: None,
        }),
        search_sizing: None,
        frontier: None,
        stopped: None,
        load_time_s: 16.0,
        workload: "chat, input 32 / output 5 tokens".into(),
        seconds_per_point: 4.0,
    }
}

/// Each chart: (id, data-points, circles in its SVG, the figure's HTML).
fn figures(html: &str) -> Vec<(String, usize, usize, String)> {
    html.split("<figure ")
        .skip(1)
        .map(|rest| {
            let fig = &rest[..rest.find("</figure>").expect("figure closes")];
            let attr = |name: &str| -> String {
                let at = fig.find(&format!("{name}=\"")).expect(name) + name.len() + 2;
                fig[at..at + fig[at..].find('"').unwrap()].to_string()
            };
            let svg = &fig[fig.find("<svg").expect("svg")..fig.find("</svg>").expect("svg closes")];
            (
                attr("data-chart"),
                attr("data-points").parse().unwrap(),
                svg.matches("<circle").count(),
                fig.to_string(),
            )
        })
        .collect()
}

fn ids(html: &str) -> Vec<String> {
    figures(html).into_iter().map(|f| f.0).collect()
}

fn assert_points_are_circles(html: &str) {
    for (id, points, circles, _) in figures(html) {
        assert_eq!(points, circles, "chart {id}");
        assert!(points > 0, "chart {id} is empty");
    }
}

fn one(label: &str, saved: Saved) -> Vec<(String, Saved)> {
    vec![(label.to_string(), saved)]
}

#[test]
fn a_run_has_its_charts_and_each_point_is_one_circle() {
    let r = run(Some(&slo()), true, "HTTP 503: overloaded");
    let html = render(&one("run.json", Saved::Run(Box::new(r.clone()))));
    assert_eq!(
        ids(&html),
        [
            "cdf-ttft",
            "cdf-tpot",
            "cdf-itl",
            "cdf-e2el",
            "ts-throughput",
            "ts-requests",
            "ts-in-flight",
            "ts-failures"
        ]
    );
    assert_points_are_circles(&html);
    // TTFT: the 101 quantiles, and again from the scheduled arrival (open loop).
    let ttft = figures(&html)
        .into_iter()
        .find(|f| f.0 == "cdf-ttft")
        .unwrap();
    assert_eq!(ttft.1, 2 * crate::measure::stats::QUANTILE_COUNT);
    // Its SLO threshold is named in the legend.
    assert!(ttft.3.contains("SLO: p99 TTFT ≤ 200 ms"), "{}", ttft.3);
    for section in ["slo", "errors", "workload", "config"] {
        assert!(
            html.contains(&format!("data-section=\"{section}\"")),
            "no {section} section"
        );
    }
    assert!(html.contains("HTTP 503: overloaded"));
    assert!(!html.to_ascii_lowercase().contains("<script"));
}

#[test]
fn a_sweep_has_its_charts_with_knees_and_goodput_marked() {
    let s = sweep(1.0);
    let html = render(&one("sweep.json", Saved::Sweep(Box::new(s))));
    assert_eq!(
        ids(&html),
        [
            "sweep-ttft",
            "sweep-tpot",
            "sweep-e2el",
            "sweep-throughput",
            "sweep-cost",
            "sweep-energy",
            "sweep-frontier"
        ]
    );
    assert_points_are_circles(&html);
    let figs = figures(&html);
    let points = |id: &str| figs.iter().find(|f| f.0 == id).unwrap().1;
    // p50 and p99 at each of 4 points; E2EL has no p99 at the last.
    assert_eq!(points("sweep-ttft"), 8);
    assert_eq!(points("sweep-e2el"), 7);
    assert_eq!(points("sweep-cost"), 2);
    assert_eq!(points("sweep-energy"), 3);
    let ttft = &figs[0].3;
    // Knees and the goodput point: one polygon each, named in the legend.
    assert_eq!(ttft.matches("<polygon").count(), 3);
    assert!(ttft.contains("goodput point") && ttft.contains("throughput knee"));
    assert!(ttft.contains("SLO: p99 TTFT ≤ 200 ms"));
    // Interactivity per GPU: 14 req/s * 64 tokens / 2 GPUs = 448 at the top.
    assert!(html.contains("output tokens/s per GPU"));
}

#[test]
fn a_point_that_ended_before_any_answer_is_not_drawn_at_zero_throughput() {
    let mut s = sweep(1.0);
    let html = render(&one("sweep.json", Saved::Sweep(Box::new(s.clone()))));
    let throughput = |html: &str| {
        figures(html)
            .into_iter()
            .find(|f| f.0 == "sweep-throughput")
            .unwrap()
    };
    assert_eq!(throughput(&html).1, 4);
    assert!(!throughput(&html).3.contains("Not drawn"));
    // The last point ended (past capacity) before any request completed
    // or failed: its throughput is unmeasured.
    let last = &mut s.points[3].result.metrics;
    (last.completed, last.failed) = (0, 0);
    s.curve[3].request_throughput = 0.0;
    let html = render(&one("sweep.json", Saved::Sweep(Box::new(s))));
    let (_, points, circles, fig) = throughput(&html);
    assert_eq!((points, circles), (3, 3));
    assert!(
        fig.contains("Not drawn: 1 point(s) that ended before any request completed or failed"),
        "{fig}"
    );
}

#[test]
fn two_sweeps_overlay_as_two_series() {
    let items = vec![
        ("h100.json".to_string(), Saved::Sweep(Box::new(sweep(1.0)))),
        ("a100.json".to_string(), Saved::Sweep(Box::new(sweep(2.5)))),
    ];
    let html = render(&items);
    // Still one chart of each kind, now with both files in it.
    assert_eq!(
        ids(&html).iter().filter(|id| *id == "sweep-ttft").count(),
        1
    );
    assert_points_are_circles(&html);
    let figs = figures(&html);
    let ttft = figs.iter().find(|f| f.0 == "sweep-ttft").unwrap();
    assert_eq!(ttft.1, 16);
    for label in [
        "h100.json · p50",
        "h100.json · p99",
        "a100.json · p50",
        "a100.json · p99",
    ] {
        assert!(ttft.3.contains(label), "legend lacks {label}");
    }
    // One colour per file.
    let colour = |i: usize| {
        let (r, g, b) = format::PALETTE[i];
        format!("fill=\"#{r:02X}{g:02X}{b:02X}\"")
    };
    let svg = &ttft.3;
    assert_eq!(svg.matches(&colour(0)).count(), 4 + 3, "{svg}");
    assert_eq!(svg.matches(&colour(1)).count(), 4 + 3);
}

#[test]
fn text_from_results_is_escaped_and_the_page_has_no_script() {
    let mut r = run(Some(&slo()), true, HOSTILE);
    r.config.workload = Some(dataset_workload(HOSTILE));
    r.config.url = HOSTILE.into();
    r.config.headers = vec![HOSTILE.into()];
    r.config.model = HOSTILE.into();
    r.notes.push(HOSTILE.into());
    let mut s = sweep(1.0);
    s.workload = HOSTILE.into();
    if let Some(g) = s.goodput.as_mut() {
        g.notes.push(HOSTILE.into());
        g.slo = HOSTILE.into();
    }
    s.stopped = Some(crate::plan::sweep::StopReason::Other(HOSTILE.into()));
    let items = vec![
        (HOSTILE.to_string(), Saved::Run(Box::new(r))),
        ("sweep.json".to_string(), Saved::Sweep(Box::new(s))),
    ];
    let html = render(&items);
    assert!(
        !html.to_ascii_lowercase().contains("<script"),
        "raw script tag in the page"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"));
    // The pretty-printed config escapes the JSON string's own quotes too.
    assert!(html.contains("&quot;url&quot;: &quot;&lt;script&gt;"));
    // No raw quote breaks out of an attribute: every `="` opens a value that
    // closes before the next tag.
    assert!(!html.contains("\"'&"));
}

#[test]
fn a_run_without_slo_or_errors_has_neither_section() {
    let r = run(None, false, "");
    let html = render(&one("run.json", Saved::Run(Box::new(r))));
    assert!(!html.contains("data-section=\"slo\""));
    assert!(!html.contains("data-section=\"errors\""));
    assert!(!ids(&html).contains(&"ts-failures".to_string()));
    assert!(!html.contains("SLO:"));
    assert!(html.contains("data-section=\"workload\""));
    assert_points_are_circles(&html);
}

#[test]
fn schema_checks_show_only_when_answers_were_checked() {
    let r = run(None, false, "");
    let html = render(&one("run.json", Saved::Run(Box::new(r.clone()))));
    assert!(!html.contains("Schema checks"));
    let mut r = r;
    r.metrics.structured_output = Some(crate::measure::metrics::StructuredOutput {
        checked: 40,
        valid: 30,
        invalid: 10,
        invalid_share: Some(0.25),
        requests_with_tool_calls: 40,
        tool_calls: 40,
        first_violations: vec![crate::measure::metrics::SchemaViolation {
            request_id: 3,
            reason: HOSTILE.into(),
        }],
    });
    let html = render(&one("run.json", Saved::Run(Box::new(r))));
    assert!(
        html.contains("Schema checks") && html.contains("30 valid of 40 checked"),
        "{html}"
    );
    assert!(!html.contains(HOSTILE), "a violation's reason is escaped");
}

#[test]
fn older_files_draw_a_coarse_cdf_from_their_percentiles() {
    let mut r = run(None, false, "");
    for d in r.metrics.distributions.values_mut() {
        d.quantiles.clear();
    }
    let html = render(&one("old.json", Saved::Run(Box::new(r))));
    let tpot = figures(&html)
        .into_iter()
        .find(|f| f.0 == "cdf-tpot")
        .unwrap();
    // min, p50, p90, p99, max.
    assert_eq!(tpot.1, 5);
    assert!(tpot.3.contains("coarse outline"));
}

#[test]
fn nothing_in_gives_a_page_that_says_so() {
    let html = render(&[]);
    assert!(html.contains("No results were given"));
    assert!(figures(&html).is_empty());
}

#[test]
fn the_exporter_writes_the_page_for_its_labelled_results() {
    use crate::output::report::{Exporter, Html};
    let items = one("run-label.json", Saved::Run(Box::new(run(None, false, ""))));
    let html = String::from_utf8(Html.to_bytes(&items)).unwrap();
    assert!(html.contains("run-label.json"));
    assert_eq!(html, render(&items));
}

#[test]
fn numbers_read_well() {
    assert_eq!(num(1465.26), "1,465");
    assert_eq!(num(20.789), "20.8");
    assert_eq!(num(8.068), "8.07");
    assert_eq!(num(0.005874), "0.00587");
    assert_eq!(num(-0.0), "0");
    assert_eq!(ms(3761.6), "3.76 s");
    assert_eq!(ms(35.72), "35.7 ms");
    assert_eq!(
        escape("<a href=\"x\">'&'</a>"),
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
    );
}

/// For a look in a browser: pages from the sample results in /tmp/samples
/// (when present) and from this module's fixtures.
#[test]
#[ignore = "writes /tmp/report-*.html for a manual browser check; needs /tmp/samples"]
fn write_sample_reports() {
    let read = |name: &str| -> (String, Saved) {
        let path = std::path::Path::new("/tmp/samples").join(name);
        (name.to_string(), Saved::read(&path).unwrap())
    };
    let pages: [(&str, Vec<(String, Saved)>); 7] = [
        ("run", vec![read("run.json")]),
        ("run-a100", vec![read("run-a100.json")]),
        ("sweep", vec![read("sweep.json")]),
        ("runs", vec![read("run.json"), read("run-a100.json")]),
        ("overlay", vec![read("sweep.json"), read("sweep-a100.json")]),
        (
            "fixture-run",
            vec![(
                "fixture-run.json".into(),
                Saved::Run(Box::new(run(Some(&slo()), true, HOSTILE))),
            )],
        ),
        (
            "fixture",
            vec![
                (
                    "fixture-run.json".into(),
                    Saved::Run(Box::new(run(Some(&slo()), true, HOSTILE))),
                ),
                (
                    "fixture-sweep.json".into(),
                    Saved::Sweep(Box::new(sweep(1.0))),
                ),
            ],
        ),
    ];
    for (name, items) in pages {
        std::fs::write(format!("/tmp/report-{name}.html"), render(&items)).unwrap();
    }
}

/// A closed loop has no schedule: its TTFT and E2EL distributions are drawn
/// once, with no "from scheduled arrival" series in the chart or its legend;
/// the same run in open loop has both.
#[test]
fn a_closed_loop_has_no_from_schedule_series() {
    let open = run(None, false, "");
    let mut closed = open.clone();
    closed.config.load = Load::Closed { concurrency: 4 };
    for (r, series) in [(&open, 2), (&closed, 1)] {
        let html = render(&one("run.json", Saved::Run(Box::new(r.clone()))));
        for id in ["cdf-ttft", "cdf-e2el"] {
            let fig = figures(&html).into_iter().find(|f| f.0 == id).unwrap();
            assert_eq!(
                fig.1,
                series * crate::measure::stats::QUANTILE_COUNT,
                "{id}"
            );
            assert_eq!(
                fig.3.contains("from scheduled arrival"),
                series == 2,
                "{id}: {}",
                fig.3
            );
        }
    }
}

/// A search's short exploring points are dots apart from the line, which
/// joins the other points by offered load: it never folds back.
#[test]
fn a_searchs_exploring_points_are_not_joined_into_its_curves() {
    let mut s = sweep(1.0);
    s.points[1].role = PointRole::Search;
    s.points[2].role = PointRole::Search;
    let html = render(&one("sweep.json", Saved::Sweep(Box::new(s))));
    let figs = figures(&html);
    for id in ["sweep-throughput", "sweep-ttft"] {
        let fig = &figs.iter().find(|f| f.0 == id).unwrap().3;
        assert!(fig.contains("exploring points (short, not joined)"), "{id}");
        // Every joined line runs through the two other points, left to right.
        let lines: Vec<Vec<f64>> = fig
            .split("<polyline ")
            .skip(1)
            .filter(|p| p.contains("stroke-width=\"2\""))
            .map(|p| {
                let at = p.find("points=\"").unwrap() + 8;
                p[at..at + p[at..].find('"').unwrap()]
                    .split_whitespace()
                    .map(|xy| xy.split(',').next().unwrap().parse().unwrap())
                    .collect()
            })
            .collect();
        assert!(!lines.is_empty(), "{id}");
        for xs in lines.iter().filter(|xs| xs.len() > 1) {
            assert_eq!(xs.len(), 2, "{id}: {xs:?}");
            assert!(xs[1] > xs[0], "{id}: {xs:?}");
        }
    }
    assert_points_are_circles(&html);
}
