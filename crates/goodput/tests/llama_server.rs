//! goodput against a real engine: llama.cpp's `llama-server` serving a
//! tiny random-weight model (see `tests/llama/`). Closed loop at several
//! concurrencies on both endpoints, a goodput search, the server's own
//! metrics, token counts with and without the server's usage, and faults:
//! over-long prompts, more concurrency than slots, the server killed; its
//! Responses, Messages and embeddings APIs read as chat is; and a searched
//! goodput held to its claim on a slow configuration.

mod common;
mod llama;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::*;
use llama::Llama;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn records_ok(recs: &[Value]) -> impl Iterator<Item = &Value> {
    recs.iter().filter(|r| r["ok"] == true)
}

/// llama-server closes the connection after every streamed response while
/// its headers promise keep-alive: at concurrency 1, 4 and 8 (above its 4
/// slots) on both endpoints, no request may count as failed, the closes are
/// counted, and every output count is the server's own `usage`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_on_both_endpoints_fails_nothing_and_counts_as_the_server() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    let server = Llama::start(&bin, 4, 4096);
    for endpoint in ["chat", "completions"] {
        for c in [1usize, 4, 8] {
            let out = tmp("results.json");
            let records = tmp("records.jsonl");
            let n = (4 * c + 8).to_string();
            let (code, stdout, stderr) = goodput_async(argv(&[
                "run",
                "--url",
                &server.url,
                "--endpoint",
                endpoint,
                "--concurrency",
                &c.to_string(),
                "--num-prompts",
                &n,
                "--input-tokens",
                "48",
                "--output-tokens",
                "24",
                "--out",
                out.to_str().unwrap(),
                "--records",
                records.to_str().unwrap(),
            ]))
            .await;
            let what = format!("{endpoint} c={c}");
            assert_eq!(code, 0, "{what}: {stdout}\n{stderr}");
            let v = read_json(&out);
            assert_eq!(v["failed"], 0, "{what}: {}", v["errors"]);
            assert_eq!(v["completed"].to_string(), n, "{what}");
            let run = &v["run"];
            assert!(run["stale_reuse_resent"].is_u64(), "{what}: {run}");
            assert!(run["stale_connections_discarded"].is_u64(), "{what}: {run}");
            let recs = read_records(&records);
            for r in records_ok(&recs) {
                assert_eq!(r["token_source"], "server", "{what}: {r}");
                assert!(r["output_tokens"].as_u64().unwrap() <= 24, "{what}: {r}");
            }
            assert!(
                stdout.contains("Output token counts from:"),
                "{what}: {stdout}"
            );
        }
    }
}

/// What the usage-stripping proxy saw: the server's own completion_tokens
/// per request id (the `x-request-id` header).
#[derive(Clone, Default)]
struct Truth(Arc<Mutex<HashMap<String, u64>>>);

/// A proxy in front of llama-server that removes `usage` and `timings`
/// from every answer (events included) and keeps the server's counts.
async fn usage_stripping_proxy(upstream: String) -> (String, Truth) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let truth = Truth::default();
    let t = truth.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let (upstream, truth) = (upstream.clone(), t.clone());
            tokio::spawn(async move {
                let _ = proxy_one(sock, &upstream, &truth).await;
            });
        }
    });
    (format!("http://{addr}"), truth)
}

async fn proxy_one(mut sock: TcpStream, upstream: &str, truth: &Truth) -> std::io::Result<()> {
    loop {
        let Some((head, body)) = read_message(&mut sock).await? else {
            return Ok(());
        };
        let id = header(&head, "x-request-id").unwrap_or_default();
        let mut first = head.lines().next().unwrap_or("").to_string();
        first.push_str("\r\n");
        let mut out = first;
        for l in head.lines().skip(1) {
            let lower = l.to_ascii_lowercase();
            if !lower.starts_with("connection:") && !l.is_empty() {
                out.push_str(l);
                out.push_str("\r\n");
            }
        }
        out.push_str("connection: close\r\n\r\n");
        let mut up = TcpStream::connect(upstream).await?;
        up.write_all(out.as_bytes()).await?;
        up.write_all(&body).await?;
        let mut raw = Vec::new();
        up.read_to_end(&mut raw).await?;
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (rhead, rbody) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let body = if rhead
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(rbody)
        } else {
            rbody.to_string()
        };
        let (stripped, tokens) = strip_usage(&body);
        if let Some(n) = tokens {
            truth.0.lock().unwrap().insert(id.clone(), n);
        }
        let status = rhead.lines().next().unwrap_or("HTTP/1.1 502 Bad Gateway");
        let ctype = header(rhead, "content-type").unwrap_or_else(|| "application/json".into());
        let reply = format!(
            "{status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n\r\n{stripped}",
            stripped.len()
        );
        sock.write_all(reply.as_bytes()).await?;
    }
}

async fn read_message(sock: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let len: usize = header(&head, "content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = sock.read(&mut b).await?;
                if n == 0 {
                    return Ok(None);
                }
                buf.extend_from_slice(&b[..n]);
            }
            return Ok(Some((head, buf[end + 4..end + 4 + len].to_vec())));
        }
        let n = sock.read(&mut b).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&b[..n]);
    }
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// The body without `usage`/`timings`; the completion tokens they held.
fn strip_usage(body: &str) -> (String, Option<u64>) {
    let mut tokens = None;
    let mut strip = |v: &mut Value| {
        if let Some(o) = v.as_object_mut() {
            if let Some(n) = o
                .remove("usage")
                .and_then(|u| u["completion_tokens"].as_u64())
            {
                tokens = Some(n);
            }
            o.remove("timings");
        }
    };
    if !body.contains("data:") {
        return match serde_json::from_str::<Value>(body) {
            Ok(mut v) => {
                strip(&mut v);
                (v.to_string(), tokens)
            }
            Err(_) => (body.to_string(), None),
        };
    }
    let mut out = String::new();
    for line in body.split('\n') {
        match line
            .strip_prefix("data: ")
            .map(serde_json::from_str::<Value>)
        {
            Some(Ok(mut v)) => {
                strip(&mut v);
                // An event that carried only usage is dropped whole.
                if v["choices"].as_array().is_some_and(|c| c.is_empty()) {
                    continue;
                }
                out.push_str("data: ");
                out.push_str(&v.to_string());
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    (out, tokens)
}

/// Without the server's usage, the stream's events count the tokens: the
/// totals agree with what llama.cpp generated within 1 %, no request is
/// above max_tokens — also when a slot's context runs out and llama.cpp
/// says `length` after far fewer tokens than were asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_usage_tokens_are_counted_by_evidence() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    // 4 slots of 256 tokens: prompts of 96 and answers of up to 200 run
    // out of context.
    let server = Llama::start(&bin, 4, 1024);
    let (url, truth) = usage_stripping_proxy(server.authority()).await;
    let (_, tokenizer) = llama::model();
    for (input, output) in [("64", "48"), ("96", "200")] {
        let (v, counted) = count_without_usage(&url, &truth, tokenizer, input, output).await;
        assert!(counted.within(0.01), "{input}/{output}: {counted:?}");
        if output == "200" {
            let short = v["tokens"]["length_short_of_max_tokens"].as_u64().unwrap();
            assert!(
                counted.server < 24 * 200 && short == 0 || short > 0,
                "{}",
                v["tokens"]
            );
        }
    }
}

/// A vocabulary like a real one's (byte-level BPE over all 256 bytes,
/// trained on text in several scripts) has tokens that are pieces of a
/// character: llama.cpp streams no text for them until the character is
/// whole, so the events fall short of the tokens (57 events for 64 tokens
/// in one answer). Without the server's usage the counts still agree with
/// llama.cpp's own: a `length` finish of a request that fits in the slot's
/// context (`/props`) is `max_tokens`. When the context runs out first, the
/// count is not raised to `max_tokens`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_usage_counts_hold_on_a_vocabulary_whose_tokens_hide_in_characters() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    let (gguf, tokenizer) = llama::varied_model();
    let server = Llama::start_model(&bin, gguf, 4, 1024, &[]);
    let (url, truth) = usage_stripping_proxy(server.authority()).await;
    let (_, fixed) = count_without_usage(&url, &truth, tokenizer, "64", "64").await;
    assert!(
        fixed.events < fixed.server,
        "no token hid in a character: {fixed:?}"
    );
    // The slot's context (256 tokens on /props) holds 64 + 64: every
    // `length` finish is max_tokens, however many tokens hid (one answer
    // hid 17 of 64, more than the quarter a server that did not say its
    // context is allowed).
    assert_eq!(fixed.ours, fixed.server, "{fixed:?}");
    // Where the context runs out too, nothing in the stream says how many
    // tokens hid: the count is at least the events and never max_tokens.
    let (_, short) = count_without_usage(&url, &truth, tokenizer, "96", "200").await;
    assert!(
        short.server < 24 * 200,
        "the context did not run out: {short:?}"
    );
    assert!(
        short.events <= short.ours && short.ours < 24 * 200,
        "{short:?}"
    );
    eprintln!("without usage, a vocabulary whose tokens hide: {fixed:?}, context out {short:?}");
}

/// Totals of one run without usage: goodput's count, the server's, and the
/// stream's content events.
#[derive(Debug)]
struct Counted {
    ours: u64,
    server: u64,
    events: u64,
}

/// 24 requests at concurrency 4 through the usage-stripping proxy; every
/// count at most max_tokens and not the server's.
async fn count_without_usage(
    url: &str,
    truth: &Truth,
    tokenizer: &std::path::Path,
    input: &str,
    output: &str,
) -> (Value, Counted) {
    truth.0.lock().unwrap().clear();
    let out = tmp("results.json");
    let records = tmp("records.jsonl");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        url,
        "--concurrency",
        "4",
        "--num-prompts",
        "24",
        "--input-tokens",
        input,
        "--output-tokens",
        output,
        "--tokenizer",
        tokenizer.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--records",
        records.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let recs = read_records(&records);
    let truth = truth.0.lock().unwrap().clone();
    let max: u64 = output.parse().unwrap();
    let mut c = Counted {
        ours: 0,
        server: 0,
        events: 0,
    };
    for r in records_ok(&recs) {
        let n = r["output_tokens"].as_u64().unwrap();
        assert!(n <= max, "above max_tokens: {r}");
        assert_ne!(r["token_source"], "server", "{r}");
        let id = r["request_id"].to_string();
        let key = truth
            .keys()
            .find(|k| k.rsplit('-').next() == Some(id.as_str()))
            .unwrap_or_else(|| panic!("no server count for {id}: {truth:?}"));
        c.ours += n;
        c.server += truth[key];
        c.events += r["events"].as_u64().unwrap_or(0);
    }
    (read_json(&out), c)
}

impl Counted {
    /// goodput's total within `share` of the server's.
    fn within(&self, share: f64) -> bool {
        (self.ours as f64 - self.server as f64).abs() <= share * self.server as f64
    }
}

/// A goodput search against llama-server: a non-zero answer, and every
/// point after the first started with the server idle by its own gauges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goodput_search_starts_every_point_idle() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    let server = Llama::start(&bin, 4, 4096);
    let out = tmp("sweep.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "sweep",
        "--url",
        &server.url,
        "--search",
        "goodput",
        "--slo",
        "ttft:p90<=400ms",
        "--input-tokens",
        "48",
        "--output-tokens",
        "24",
        "--point-time",
        "4s",
        "--probe-time",
        "3s",
        "--measure-time",
        "6s",
        "--search-time",
        "60s",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert!(code == 0 || code == 1, "{stdout}\n{stderr}");
    let v = read_json(&out);
    let g = &v["goodput"];
    assert!(g["rate"].as_f64().unwrap() > 0.0, "{g}\n{stdout}");
    let points = v["points"].as_array().unwrap();
    assert!(points.len() >= 3, "{stdout}");
    for (i, p) in points.iter().enumerate().skip(1) {
        let start = &p["start"];
        assert_eq!(start["by"], "gauges", "point {i}: {start}");
        assert_eq!(start["idle"], true, "point {i}: {start}\n{stdout}");
    }
    assert!(stdout.contains("started idle"), "{stdout}");
}

/// The search's claim, held against a slow real engine (issue 34): 3 slots
/// sharing one CPU thread, 256-token prompts and 64-token answers, about
/// 2.5 requests/s at concurrency 1 and barely more at 3, so every point's
/// size matters. With the budget sized to the answer (the default), the
/// search says what settling takes and takes about that; then 200
/// requests (or 240 s of them) at its interval's lower end meet the SLO,
/// and as many at 1.5 × its upper end miss it (without an interval, the ends of the bracket that
/// measuring points drew); a check decided on its estimate alone, its own
/// interval reaching the threshold, does not count against the claim. Measuring points of 60 s: at 40 s, on a CI
/// machine where this server served 2 req/s at concurrency 1, they held
/// 46 to 100 requests, and one at half the capacity read as saturated.
///
/// Why 1.5 × and not the 1.2 × of issue 34's benchmark: this server shares
/// one thread of a CI machine, whose speed drifts. CI runs served it 2.06
/// to 3.29 req/s at concurrency 1, and in one of them 200 requests at
/// 2.13 req/s met the SLO (p90 TTFT 252 ms) minutes after the search's
/// 120-request measuring point at 2.00 failed it (p90 TTFT 724 ms,
/// adjusted). The lower end is the promise a user plans with, and is held
/// as it is; the upper check says the interval is not far below what the
/// server sustains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_searched_goodput_holds_when_sustained_on_a_slow_server() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    let server = Llama::start(&bin, 3, 4096);
    let slo = "ttft:p90<=600ms,tpot:p90<=15ms";
    let work = ["--input-tokens", "256", "--output-tokens", "64"];
    let out = tmp("sweep.json");
    let mut args = vec![
        "sweep",
        "--url",
        &server.url,
        "--search",
        "goodput",
        "--slo",
        slo,
    ];
    args.extend(work);
    args.extend(["--measure-time", "60s", "--out", out.to_str().unwrap()]);
    let (code, stdout, stderr) = goodput_async(argv(&args)).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&out);
    let g = &v["goodput"];
    if g["inconclusive"] == true {
        // No settled rate, said as such: what issue 34 allows of a server
        // this noisy ("a settled goodput ... or no rate at all"; one CI
        // run's search passed once at p90 TTFT 573 ms against 600, its fit
        // putting the edge below that point, and 200 requests there then
        // read 1,300 ms). Nothing is claimed, so nothing is held.
        assert!(stdout.contains("INCONCLUSIVE"), "{stdout}");
        eprintln!("the search settled no rate:\n{stdout}");
        return;
    }
    // The claim: the interval, or without one (a fit whose slope the
    // points could not bound) the bracket of measuring points that passed
    // and failed.
    let (lo, hi) = match (g["interval"][0].as_f64(), g["interval"][1].as_f64()) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ => {
            let measured: Vec<f64> = v["curve"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| v["points"][c["point"].as_u64().unwrap() as usize]["role"] == "measure")
                .map(|c| c["offered"].as_f64().unwrap())
                .collect();
            let end = |x: &Value| {
                x.as_f64()
                    .filter(|r| measured.iter().any(|m| (m - r).abs() < 1e-9))
                    .unwrap_or_else(|| panic!("no interval, no measured bracket: {g}\n{stdout}"))
            };
            (end(&g["bracket"][0]), end(&g["bracket"][1]))
        }
    };
    // Said before the measuring points ran, and kept (the floor run aside).
    assert!(
        stderr.contains("goodput: search: ") && stderr.contains("a settled answer takes up to"),
        "{stderr}"
    );
    // Two more measuring points than planned when the four fell on one
    // side of the edge (the announcement names them).
    let sizing = &v["search_sizing"];
    let measured = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["role"] == "measure")
        .count();
    let extra = measured.saturating_sub(sizing["points"].as_u64().unwrap() as usize);
    let point_s = sizing["point_s"].as_f64().unwrap();
    let said = sizing["planned_s"].as_f64().unwrap() + extra as f64 * point_s;
    // "Up to" four points: the interval may end the search after three
    // (a CI run with the other core busy took 211 s against 295 said, its
    // interval within the precision after three points).
    let fewest = sizing["explored_s"].as_f64().unwrap() + 3.0 * point_s;
    let floor = v["points"][0]["wall_s"].as_f64().unwrap();
    let load = v["load_time_s"].as_f64().unwrap() - floor;
    assert!(
        load <= 1.2 * said && load >= 0.8 * fewest.min(said),
        "{load} s of load, {said} s said (three points: {fewest} s)\n{stdout}"
    );
    // The lower end is checked at no less than half the answer: latency
    // only falls with the load, so an SLO met there is met below it, and a
    // fit that barely bounds its slope can put the lower end near zero
    // (0.016 req/s once, where 60 requests would have taken an hour).
    let answer = g["rate"].as_f64().unwrap();
    for (rate, meets) in [(lo.max(0.5 * answer), true), (1.5 * hi, false)] {
        let out = tmp("results.json");
        // 200 requests, or as many as 240 s of arrivals hold (at least 60,
        // which bound a p90): a wide interval's lower end once sat at 0.19
        // req/s, where 200 requests took 18 minutes of the suite.
        let prompts = ((rate * 240.0).round() as u64).clamp(60, 200).to_string();
        let rate = format!("{rate:.3}");
        let mut args = vec![
            "run",
            "--url",
            &server.url,
            "--request-rate",
            &rate,
            "--num-prompts",
            &prompts,
        ];
        args.extend(work);
        args.extend(["--slo", slo, "--out", out.to_str().unwrap()]);
        let (code, run_out, run_err) = goodput_async(argv(&args)).await;
        // A check of a few hundred requests refutes the claim only with a
        // settled verdict against it: one whose own interval clears the
        // threshold. Decided on its estimate alone, it is as noisy as the
        // search's points (a CI run: p90 TTFT 650 ms [473, -] against 600
        // at the interval's lower end, 108 % of the threshold, unsettled).
        let terms: Vec<&str> = (run_out.lines())
            .filter(|l| l.starts_with('p') && l.contains(" <= "))
            .filter(|l| l.contains("pass") || l.contains("FAIL"))
            .collect();
        let settled = |l: &&str| !l.contains("on its estimate");
        let refuted = if meets {
            terms.iter().any(|l| l.contains("FAIL") && settled(l))
        } else {
            !terms.is_empty() && terms.iter().all(|l| l.contains("pass") && settled(l))
        };
        assert!(
            code == if meets { 0 } else { 1 } || !refuted,
            "{prompts} requests at {rate} req/s (interval {lo:.3}-{hi:.3}):\n{run_out}\n{run_err}\nthe search:\n{stdout}"
        );
        if code != if meets { 0 } else { 1 } {
            eprintln!("{prompts} requests at {rate} req/s: not settled either way\n{run_out}");
        }
    }
    // What the search did, for the log of a run that passed.
    eprintln!("{stdout}");
}

/// Faults: prompts longer than a slot's context are refused (400) and
/// counted as sent; more concurrency than slots queues without failures;
/// the server killed mid-run loses no record and the run ends by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_of_a_real_engine_are_reported_as_they_happened() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    // Over-long prompts: 2 slots of 256 tokens, prompts of 600.
    let server = Llama::start(&bin, 2, 512);
    let out = tmp("results.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url,
        "--concurrency",
        "2",
        "--num-prompts",
        "6",
        "--input-tokens",
        "600",
        "--output-tokens",
        "8",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&out);
    assert_eq!(v["failed"], 6, "{}", v["errors"]);
    assert!(
        v["errors"]["by_kind"]["http_400"].as_u64().unwrap_or(0) == 6
            || v["errors"].to_string().contains("400"),
        "{}",
        v["errors"]
    );
    assert!(
        stdout.contains("Input tokens (sent):") && !stdout.contains("Input tokens (sent):      -"),
        "{stdout}"
    );
    drop(server);

    // Killed mid-run: every sent request has a record, the run ends.
    let mut server = Llama::start(&bin, 2, 2048);
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let mut child = goodput_command()
        .args(pinned(&[
            "run",
            "--url",
            &server.url,
            "--concurrency",
            "2",
            "--num-prompts",
            "400",
            "--input-tokens",
            "32",
            "--output-tokens",
            "64",
            "--records",
            records.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]))
        .spawn()
        .unwrap();
    wait_until(
        "requests completed",
        std::time::Duration::from_secs(60),
        || line_count(&records) >= 5,
    )
    .await;
    server.kill();
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_ne!(status.code(), Some(0));
    let v = read_json(&out);
    let recs = read_records(&records);
    // Every scheduled request has its record: those sent before the kill
    // and those that found no server after it.
    assert_eq!(
        recs.len() as u64,
        v["run"]["sent_measured"].as_u64().unwrap(),
        "{}",
        v["run"]
    );
    assert!(v["completed"].as_u64().unwrap() >= 5);
    assert!(v["failed"].as_u64().unwrap() >= 1, "{}", v["errors"]);
}

/// llama.cpp's own metrics, scraped over the run: its engine named and its
/// figures shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_metrics_of_llama_cpp_are_read() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    let server = Llama::start(&bin, 4, 4096);
    let out = tmp("results.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url,
        "--concurrency",
        "4",
        "--num-prompts",
        "24",
        "--input-tokens",
        "48",
        "--output-tokens",
        "24",
        "--server-metrics",
        &format!("{}/metrics", server.url),
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&out);
    let sm = &v["server_metrics"];
    assert!(sm["engine"].to_string().contains("llama"), "{sm}");
    assert!(sm["scrapes"].as_u64().unwrap() >= 2, "{sm}");
    let generated = server.metric("llamacpp:tokens_predicted_total").unwrap();
    assert!(generated >= 24.0 * 24.0 * 0.9, "{generated}");
    assert!(stdout.contains("llama"), "{stdout}");
}

/// The other APIs of a real engine: llama-server serves OpenAI's Responses
/// API and Anthropic's Messages API beside chat, from the same slots. Each
/// stream's events are read by its own parser, so the same load must give
/// the same figures: every request completes, one content event per token
/// as the server's own usage counts them, and TTFT and TPOT alike across
/// the three (measured here: median TTFT 24.7 / 25.3 / 26.2 ms, TPOT 1.0 /
/// 1.2 / 1.0 ms). Its embeddings endpoint (`--embeddings`) answers a batch
/// of inputs per request, counted as inputs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_messages_and_embeddings_of_llama_cpp_are_read_as_chat_is() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    let server = Llama::start(&bin, 4, 4096);
    let mut medians = Vec::new();
    for endpoint in ["chat", "responses", "messages"] {
        let (out, records) = (tmp("results.json"), tmp("records.jsonl"));
        let (code, stdout, stderr) = goodput_async(argv(&[
            "run",
            "--url",
            &server.url,
            "--endpoint",
            endpoint,
            "--concurrency",
            "1",
            "--num-prompts",
            "16",
            "--input-tokens",
            "48",
            "--output-tokens",
            "24",
            "--out",
            out.to_str().unwrap(),
            "--records",
            records.to_str().unwrap(),
        ]))
        .await;
        assert_eq!(code, 0, "{endpoint}: {stdout}\n{stderr}");
        let v = read_json(&out);
        assert_eq!(
            (v["completed"].as_u64(), v["failed"].as_u64()),
            (Some(16), Some(0)),
            "{endpoint}: {}",
            v["errors"]
        );
        let (mut all_events, mut all_tokens) = (0, 0);
        for r in records_ok(&read_records(&records)) {
            assert_eq!(r["token_source"], "server", "{endpoint}: {r}");
            // One event per token, but for a token with no text of its own
            // (a random model's partial UTF-8, held back and sent with the
            // next; an end-of-sequence token): never more events than the
            // server's tokens, and a few fewer at most.
            let (events, tokens) = (
                r["events"].as_u64().unwrap(),
                r["server_completion_tokens"].as_u64().unwrap(),
            );
            assert!(events <= tokens && tokens - events <= 3, "{endpoint}: {r}");
            assert!(r["input_tokens"].as_u64().unwrap() > 0, "{endpoint}: {r}");
            (all_events, all_tokens) = (all_events + events, all_tokens + tokens);
        }
        // Across the run, the events are the tokens to within 5 %.
        assert!(
            all_events as f64 >= 0.95 * all_tokens as f64,
            "{endpoint}: {all_events} events for {all_tokens} tokens"
        );
        let median = |m: &str| v[m]["median_ms"].as_f64().unwrap();
        medians.push((endpoint, median("ttft"), median("tpot")));
    }
    let (_, chat_ttft, chat_tpot) = medians[0];
    for &(endpoint, ttft, tpot) in &medians[1..] {
        // Generous: one thread serves four slots on a busy test machine.
        assert!(
            (ttft - chat_ttft).abs() < 0.5 * chat_ttft + 20.0
                && (tpot - chat_tpot).abs() < 0.5 * chat_tpot + 3.0,
            "{endpoint} against chat: {medians:?}"
        );
    }
    drop(server);
    let server = Llama::start_with(
        &bin,
        4,
        4096,
        &[
            "--embeddings",
            "--pooling",
            "mean",
            "-ub",
            "2048",
            "-b",
            "2048",
        ],
    );
    let out = tmp("embeddings.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url,
        "--endpoint",
        "embeddings",
        "--batch-size",
        "4",
        "--concurrency",
        "2",
        "--num-prompts",
        "16",
        "--input-tokens",
        "48",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "embeddings: {stdout}\n{stderr}");
    let v = read_json(&out);
    assert_eq!(
        (v["completed"].as_u64(), v["failed"].as_u64()),
        (Some(16), Some(0)),
        "{}",
        v["errors"]
    );
    assert_eq!(v["inputs"]["inputs_total"], 64, "{}", v["inputs"]);
    assert!(v["ttft"].is_null() && v["e2el"]["count"] == 16, "{v}");
    assert!(v["total_input_tokens"].as_u64().unwrap() >= 64, "{v}");
}

/// `goodput tune` over llama.cpp's slots: `--parallel {2,4}`, each swept
/// (the frontier), ranked, and no server left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tune_measures_llama_cpp_over_its_slots_and_stops_every_server() {
    let Some(bin) = llama::binary() else { return };
    let _one = llama::one_at_a_time().await;
    let dir = tmp("tune-llama");
    let token = format!("tune-llama-{}", std::process::id());
    let serve = format!(
        "{} -m {} --host 127.0.0.1 --port {{port}} --parallel {{2,4}} -c 2048 --threads 1 --threads-batch 1 --no-webui --alias {token}",
        bin.display(),
        llama::model().0.display()
    );
    let (code, stdout, err) = goodput_async(argv(&[
        "tune",
        "--dir",
        dir.to_str().unwrap(),
        "--serve",
        &serve,
        "--grace",
        "5s",
        "--frontier",
        "--frontier-max",
        "8",
        "--point-time",
        "1s",
        "--input-tokens",
        "32",
        "--output-tokens",
        "16",
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{err}");
    let t = read_json(&dir.join("tune.json"));
    let configs = t["configurations"].as_array().unwrap();
    let names: Vec<&str> = configs
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"parallel=2") && names.contains(&"parallel=4"));
    for c in configs {
        assert_eq!(c["status"], "measured", "{c}");
        assert!(c["best_output_throughput"].as_f64().unwrap() > 0.0);
    }
    // Ranked by the most output tokens a second.
    let best: Vec<f64> = configs
        .iter()
        .map(|c| c["best_output_throughput"].as_f64().unwrap())
        .collect();
    assert!(best[0] >= best[1], "{best:?}");
    // No llama-server of this tune is left.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&token))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
