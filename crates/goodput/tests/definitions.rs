//! Every figure goodput prints is defined in `docs/metrics.md`, and nothing
//! in the repository points outside it for a definition.
//!
//! The figures are read from what goodput really writes, or from the code
//! that writes them: the console summary's labels and the CSV header's
//! columns (the report's insta snapshots), every metric the registry names,
//! every fixed label the console code prints, the sweep table's columns and
//! notes, every number the results schemas allow, and every series of the
//! live exposition. Each failure says what to add where.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/goodput is two levels below the workspace")
        .to_path_buf()
}

fn doc() -> String {
    std::fs::read_to_string(workspace().join("docs/metrics.md")).expect("docs/metrics.md")
}

/// The files under `dir` (of the workspace) whose name ends in `.{ext}`,
/// each with its text.
fn files(dir: &str, ext: &str) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![workspace().join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                let text = std::fs::read_to_string(&p).expect("readable");
                found.push((p, text));
            }
        }
    }
    found
}

/// The body of every snapshot of the report whose file name contains `part`.
fn snapshots(part: &str) -> Vec<String> {
    let found: Vec<String> = files("crates/goodput-core/src/output/report", "snap")
        .into_iter()
        .filter(|(p, _)| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(part))
        })
        // insta's header sits between the first two `---` lines.
        .map(|(_, text)| text.splitn(3, "---\n").nth(2).unwrap_or("").to_string())
        .collect();
    assert!(!found.is_empty(), "no snapshot named like {part}");
    found
}

/// `Median TPOT (ms)` → `TPOT (ms)`: the statistic rows of one metric share
/// one definition.
fn without_statistic(label: &str) -> &str {
    for p in ["Mean ", "Median ", "Std ", "Min ", "Max "] {
        if let Some(rest) = label.strip_prefix(p) {
            return rest;
        }
    }
    if let Some(rest) = label.strip_prefix('P') {
        let digits = rest.find(' ').unwrap_or(0);
        if digits > 0
            && rest[..digits]
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.')
        {
            return &rest[digits + 1..];
        }
    }
    label
}

#[test]
fn every_console_label_is_defined() {
    let doc = doc();
    let mut missing = Vec::new();
    for body in snapshots("console") {
        for line in body.lines() {
            // `Label:` then at least two spaces and the value.
            let Some((label, rest)) = line.split_once(':') else {
                continue;
            };
            if !rest.starts_with("  ") || !label.starts_with(|c: char| c.is_ascii_uppercase()) {
                continue;
            }
            let figure = without_statistic(label.trim());
            if !doc.contains(figure) {
                missing.push(figure.to_string());
            }
        }
    }
    missing.dedup();
    assert!(
        missing.is_empty(),
        "console labels not in docs/metrics.md: {missing:#?}"
    );
}

/// `p99_ttft_ci_lo_ms` → `ttft`; `error_rate_share` stays whole.
fn csv_figure(column: &str) -> String {
    let mut c = column;
    for unit in ["_req_per_s", "_tok_per_s", "_ms", "_share", "_usd", "_s"] {
        if let Some(x) = c.strip_suffix(unit) {
            c = x;
            break;
        }
    }
    for tail in ["_ci_lo", "_ci_hi", "_count"] {
        if let Some(x) = c.strip_suffix(tail) {
            c = x;
        }
    }
    for stat in ["mean_", "std_", "min_", "max_"] {
        if let Some(x) = c.strip_prefix(stat) {
            return x.to_string();
        }
    }
    if let Some((p, x)) = c.split_once('_') {
        if p.len() > 1 && p.starts_with('p') && p[1..].chars().all(|d| d.is_ascii_digit()) {
            return x.to_string();
        }
    }
    c.to_string()
}

#[test]
fn every_csv_column_is_defined() {
    let doc = doc();
    let mut missing = Vec::new();
    for body in snapshots("csv_header") {
        for column in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if doc.contains(&format!("`{column}`")) {
                continue;
            }
            let figure = csv_figure(column);
            if !doc.contains(&format!("`{figure}`")) {
                missing.push(format!("{column} (as `{figure}`)"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "CSV columns not in docs/metrics.md: {missing:#?}"
    );
}

#[test]
fn every_registry_metric_is_defined() {
    let doc = doc();
    let missing: Vec<_> = goodput_core::measure::Metric::ALL
        .iter()
        .map(|m| m.key())
        .filter(|k| !doc.contains(&format!("### `{k}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "metrics without a heading in docs/metrics.md: {missing:?}"
    );
}

#[test]
fn nothing_points_outside_the_repository_for_a_definition() {
    let root = workspace();
    let mut found = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable").flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    stack.push(p);
                }
                continue;
            }
            let text_file = [".rs", ".md", ".toml", ".sh", ".json", ".html"]
                .iter()
                .any(|x| name.ends_with(x));
            if !text_file || p.ends_with("crates/goodput/tests/definitions.rs") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            for (i, line) in text.lines().enumerate() {
                if line.contains("../shared/")
                    || line.contains("`spec/")
                    || line.contains("shared/spec")
                {
                    found.push(format!(
                        "{}:{}: {}",
                        p.strip_prefix(&root).unwrap().display(),
                        i + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "pointers outside the repository: {found:#?}"
    );
}

/// The sweep table's column headers, as `sweep_summary` writes them.
const SWEEP_COLUMNS: &[&str] = &[
    "#",
    "role",
    "load",
    "sent/s",
    "req/s",
    "out tok/s",
    "p99 TTFT",
    "p99 TPOT",
    "p99 E2EL",
    "err%",
    "SLO",
    "notes",
];

/// The lines under the sweep table and the notes in its last column: as
/// docs/metrics.md names them, and the fixed text the code prints them from.
const SWEEP_LINES: &[(&str, &str)] = &[
    (
        "(latencies in ms; open-loop TTFT and E2EL from the scheduled arrival)",
        "(latencies in ms; open-loop TTFT and E2EL from the scheduled arrival)",
    ),
    (
        "Capacity (closed-loop probe, req/s):",
        "\"Capacity (closed-loop probe, req/s):\"",
    ),
    (
        "Knee, throughput stops following load:",
        "\"Knee, throughput stops following load:\"",
    ),
    (
        "none found (throughput still follows load)",
        "\"none found (throughput still follows load)\"",
    ),
    (
        "Knee, p99 TTFT > floor + 20%:",
        "\"Knee, p99 TTFT > floor + 20%:\"",
    ),
    ("Stopped:", "\"Stopped:\""),
    ("Load time (s):", "\"Load time (s):\""),
    ("note:", "\"note: {n}\""),
    ("goodput:", "\"goodput: {rate} ({verdict}"),
    ("no settled rate", "\"no settled rate\""),
    (
        "INCONCLUSIVE, no point settled the edge",
        "\"INCONCLUSIVE, no point settled the edge; \"",
    ),
    ("saturated", "\"saturated\".to_string()"),
    ("behind schedule", "\"behind schedule\".to_string()"),
    ("ttft:p99 adj. 189.7", "\"{} adj. {:.1}\""),
    ("started idle", "\"started idle\""),
    ("started idle after S s", "\"started idle after {:.1} s\""),
    (
        "STARTED OVER A QUEUE of N (waited S s)",
        "\"STARTED OVER A QUEUE of {:.0} (waited {:.0} s)\"",
    ),
    (
        "nothing abandoned before it",
        "\"nothing abandoned before it\"",
    ),
    (
        "waited S s for N abandoned requests",
        "\"waited {:.1} s for {} abandoned requests\"",
    ),
    (", redone", "\", redone\""),
    (
        "p99 was asked of N requests",
        "\"p{} was asked of {n} requests: ",
    ),
    ("ended early (settled pass)", "\"settled pass\""),
    ("ended early (settled fail)", "\"settled fail\""),
];

#[test]
fn the_sweep_table_is_defined() {
    let doc = doc();
    let core = files("crates/goodput-core/src", "rs");
    let (file, table) = core
        .iter()
        .find(|(_, text)| text.contains("fn sweep_summary("))
        .expect("the source of `sweep_summary`");
    let mut wrong = Vec::new();
    for h in SWEEP_COLUMNS {
        // A header is a string literal of its own, or ends the format string.
        if !table.contains(&format!("{h}\"")) {
            let file = file.strip_prefix(workspace()).unwrap_or(file).display();
            wrong.push(format!(
                "header `{h}` is not in {file}: update SWEEP_COLUMNS"
            ));
        }
        if !doc.contains(&format!("| `{h}` |")) {
            wrong.push(format!(
                "header `{h}`: add a row to \"The sweep table\" in docs/metrics.md"
            ));
        }
    }
    for (named, printed) in SWEEP_LINES {
        if !core.iter().any(|(_, text)| text.contains(printed)) {
            wrong.push(format!(
                "{printed} is printed nowhere in crates/goodput-core/src: update SWEEP_LINES"
            ));
        }
        if !doc.contains(&format!("`{named}`")) {
            wrong.push(format!(
                "`{named}`: define it under \"The sweep table\" in docs/metrics.md"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// `^(mean|std)_ms$` → `mean_ms`, `std_ms`; a percentile's
/// `p[0-9]+(\.[0-9]+)?` reads `p<P>`, as docs/metrics.md writes it.
fn pattern_names(pattern: &str) -> Vec<String> {
    let p = pattern
        .trim_start_matches('^')
        .trim_end_matches('$')
        .replace(r"p[0-9]+(\.[0-9]+)?", "p<P>");
    match (p.find('('), p.find(')')) {
        (Some(a), Some(b)) => p[a + 1..b]
            .split('|')
            .flat_map(|alt| pattern_names(&format!("{}{alt}{}", &p[..a], &p[b + 1..])))
            .collect(),
        _ => vec![p],
    }
}

/// Every number the schema allows, as (path, the key that names it): the
/// leaves typed `number` or `integer`. An array's or a map's numbers are
/// named by the array's or the map's key.
fn numeric_leaves(
    node: &serde_json::Value,
    schema: &serde_json::Value,
    path: &str,
    key: &str,
    out: &mut Vec<(String, String)>,
) {
    if !node.is_object() {
        return;
    }
    if let Some(r) = node["$ref"].as_str() {
        let target = schema
            .pointer(r.trim_start_matches('#'))
            .expect("a local $ref");
        return numeric_leaves(target, schema, path, key, out);
    }
    let types = match &node["type"] {
        serde_json::Value::Array(t) => t.iter().filter_map(|t| t.as_str()).collect(),
        t => t.as_str().into_iter().collect::<Vec<_>>(),
    };
    if types.iter().any(|t| *t == "number" || *t == "integer") {
        out.push((path.to_string(), key.to_string()));
    }
    for (k, v) in node["properties"].as_object().into_iter().flatten() {
        numeric_leaves(v, schema, &format!("{path}.{k}"), k, out);
    }
    for (pattern, v) in node["patternProperties"].as_object().into_iter().flatten() {
        for k in pattern_names(pattern) {
            numeric_leaves(v, schema, &format!("{path}.{k}"), &k, out);
        }
    }
    for v in [&node["items"], &node["additionalProperties"]] {
        numeric_leaves(v, schema, path, key, out);
    }
    for v in ["oneOf", "anyOf", "allOf"]
        .iter()
        .flat_map(|k| node[k].as_array().into_iter().flatten())
    {
        numeric_leaves(v, schema, path, key, out);
    }
}

/// Configuration echoed in the results, not measured: the command line as
/// given (`config`), the tool, and the workload as asked (all of
/// `workload` but `workload.measured`, which is what was actually sent).
fn is_configuration(path: &str) -> bool {
    path.starts_with(".config.")
        || path.starts_with(".tool.")
        || (path.starts_with(".workload.") && !path.starts_with(".workload.measured."))
}

/// Every figure of the results documents (`--out` of `run` and `sweep`) is
/// named in backticks in docs/metrics.md: by its own key, or, for the
/// statistics of a distribution object (`mean_ms`, `p<P>_ms`, ...) and the
/// vLLM flat keys (`p<P>_ttft_ms`), by the pattern's spelling.
#[test]
fn every_number_in_the_results_json_is_defined() {
    let doc = doc();
    let mut missing = Vec::new();
    for file in ["schema/run.schema.json", "schema/sweep.schema.json"] {
        let text = std::fs::read_to_string(workspace().join(file)).expect(file);
        let schema: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let mut leaves = Vec::new();
        numeric_leaves(&schema, &schema, "", "", &mut leaves);
        assert!(!leaves.is_empty(), "no number found in {file}");
        for (path, key) in leaves {
            if !is_configuration(&path) && !doc.contains(&format!("`{key}`")) {
                missing.push(format!(
                    "{file} {path}: name `{key}` where docs/metrics.md defines it"
                ));
            }
        }
    }
    missing.dedup();
    assert!(missing.is_empty(), "{missing:#?}");
}

/// The series `--metrics-listen` serves, after one completed request (a
/// family appears with its first sample): every `# TYPE` line's name, a
/// counter's with the `_total` its samples carry.
fn live_series() -> Vec<String> {
    use goodput_core::request::{Event, RequestRecord};
    let live = goodput_core::measure::LiveMetrics::new();
    let load = goodput_core::load::Load::Closed { concurrency: 1 };
    live.begin_run(&load, Default::default());
    let ms = 1_000_000;
    let mut r = RequestRecord {
        t_send: Some(ms),
        prompt_tokens_client: Some(8),
        ..Default::default()
    };
    for k in 0..3 {
        r.output_text.push_str(" a");
        r.events.push(Event {
            at_ns: (10 + k) * ms,
            text_end: r.output_text.len() as u32,
            usage_completion_tokens: None,
            reasoning: false,
        });
    }
    r.t_done = 12 * ms;
    let none = goodput_core::tokenizer::Tokenizer::from_spec("none").expect("a tokenizer");
    live.observe(
        &r,
        &goodput_core::measure::RequestMetrics::derive(&r, &none),
    );
    live.render()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| match l.split_once(' ') {
            Some((name, "counter")) => format!("{name}_total"),
            _ => l.split(' ').next().unwrap_or(l).to_string(),
        })
        .collect()
}

/// The `goodput_...` names the exposition's sources mention (their docs and
/// tests), a histogram's `_bucket`, `_count` and `_sum` samples as the
/// histogram.
fn live_names_in_source() -> Vec<String> {
    let mut names = Vec::new();
    for file in [
        "crates/goodput-core/src/measure/live.rs",
        "crates/goodput-core/src/measure/exposition.rs",
    ] {
        let text = std::fs::read_to_string(workspace().join(file)).expect(file);
        for (i, _) in text.match_indices("goodput_") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let name = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|x| name.strip_suffix(x))
                .unwrap_or(&name);
            if name != "goodput_" && name != "goodput_core" {
                names.push(name.to_string());
            }
        }
    }
    names
}

#[test]
fn every_live_series_is_defined() {
    let doc = doc();
    let mut series = live_series();
    assert!(!series.is_empty(), "the exposition served nothing");
    series.extend(live_names_in_source());
    series.sort();
    series.dedup();
    let missing: Vec<_> = series
        .iter()
        .filter(|s| !doc.contains(&format!("`{s}`")) && !doc.contains(&format!("`{s}{{")))
        .collect();
    assert!(
        missing.is_empty(),
        "live series without a row under \"Live figures\" in docs/metrics.md: {missing:?}"
    );
}

/// Beyond the summary the snapshot shows (sections a sample run does not
/// reach: cost, quality, sessions, the server's figures, the sweep), every
/// fixed label the console code prints: a string literal starting with a
/// capital and ending with `:`.
#[test]
fn every_label_the_console_code_prints_is_defined() {
    let doc = doc();
    let (mut seen, mut missing) = (0, Vec::new());
    for (path, text) in files("crates/goodput-core/src/output/report", "rs") {
        if !path.to_string_lossy().contains("console") {
            continue;
        }
        let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
        for (end, _) in code.match_indices(":\"") {
            let Some(start) = code[..end].rfind('"') else {
                continue;
            };
            let label = &code[start + 1..=end];
            let fixed = !label.contains(['{', '}', '\n']);
            if fixed && label.starts_with(|c: char| c.is_ascii_uppercase()) {
                seen += 1;
                if !doc.contains(&format!("`{label}`")) {
                    missing.push(label.to_string());
                }
            }
        }
    }
    assert!(
        seen > 50,
        "found only {seen} labels: has the console moved?"
    );
    missing.dedup();
    assert!(
        missing.is_empty(),
        "console labels to define, in backticks, in docs/metrics.md: {missing:#?}"
    );
}
