//! Markdown and JSON of `bench long-context` ([`crate::long_context`]).
//! Pure: runs in, text out. Missing figures print as `–` (JSON: null).

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::long_context::{EventRun, LongContext, PromptRun};
use crate::report::{count, mib, num, table};
use crate::stats::Spread;

/// `p50 / p99 / max` with `decimals` places.
fn three(s: &Spread, decimals: usize) -> String {
    format!(
        "{} / {} / {}",
        num(s.p50, decimals),
        num(s.p99, decimals),
        num(s.max, decimals)
    )
}

/// `p50 / p99` with `decimals` places.
fn two(s: &Spread, decimals: usize) -> String {
    format!("{} / {}", num(s.p50, decimals), num(s.p99, decimals))
}

/// The tables, the notes and the exact commands.
pub fn markdown(lc: &LongContext) -> String {
    let mut out = String::new();
    if !lc.prompts.is_empty() {
        out.push_str(&prompts(&lc.prompts));
    }
    if !lc.events.is_empty() {
        out.push_str(&events(lc));
    }
    out.push_str(&notes_and_commands(lc));
    out
}

fn prompts(runs: &[PromptRun]) -> String {
    let mut out = String::from("### Long prompts out\n\n");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|p| {
            let u = &p.upload;
            vec![
                count(p.input_tokens as u64),
                (p.run.repetition + 1).to_string(),
                format!("{} / {}", u.timed, u.measured),
                num(u.first_sched_s, 2),
                three(&u.sched_to_last_byte, 1),
                format!(
                    "{} / {}",
                    num(u.first_wave.p50, 1),
                    num(u.first_wave.max, 1)
                ),
                three(&u.after_first_wave, 1),
                three(&u.send_delay, 1),
                num(u.schedule_lag.p99, 2),
                two(&u.read_lateness, 1),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "prompt tokens",
            "run",
            "timed / requests",
            "first send, s after start",
            "scheduled send → last byte at the server p50 / p99 / max, ms",
            "the same, first wave p50 / max, ms",
            "the same, after it p50 / p99 / max, ms",
            "send delay p50 / p99 / max, ms",
            "schedule lag p99, ms",
            "server read lateness p50 / p99, ms",
        ],
        &rows,
    );
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|p| {
            let (a, usage) = (&p.accuracy, &p.run.usage);
            let requests = p.upload.measured.max(1) as f64;
            vec![
                count(p.input_tokens as u64),
                (p.run.repetition + 1).to_string(),
                num(a.true_ttft.p50, 1),
                two(&a.ttft_error, 2),
                two(&a.decomposition.ttft_error_kernel, 2),
                two(&a.itl_abs_error, 3),
                format!(
                    "{} ({} + {})",
                    num(usage.cpu().as_secs_f64(), 2),
                    num(usage.user.as_secs_f64(), 2),
                    num(usage.sys.as_secs_f64(), 2)
                ),
                num(usage.cpu().as_secs_f64() * 1e3 / requests, 2),
                mib(usage.max_rss_kib),
                num(p.run.server_cpu.as_secs_f64(), 2),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "prompt tokens",
            "run",
            "server TTFT p50, ms",
            "TTFT error p50 / p99, ms",
            "TTFT error from the kernel's receive p50 / p99, ms",
            "abs ITL error p50 / p99, ms",
            "client CPU s (user + sys)",
            "client CPU per request, ms",
            "peak RSS, MiB",
            "server CPU, s",
        ],
        &rows,
    );
    out.push_str(
        "Scheduled send → last byte = the kernel's receive time of the request's last segment \
         (the server's `SO_TIMESTAMPNS`) − goodput's intended send (`sched_s`); send delay = the \
         same − goodput's `send_s` (taken right before the request's first write); schedule lag = \
         `send_s` − `sched_s`; the first wave = the first requests by `sched_s`, one per stream \
         (sent at once); server read lateness = the server's user-space read of the whole \
         request − the kernel's receive time. TTFT error = goodput's TTFT − the server's (first \
         token write − its read of the whole request); from the kernel's receive: the server's \
         read lateness taken out. First send = the earliest `sched_s`: goodput's start-up and the \
         workload built before it. Client CPU per request = the goodput process's user + system \
         CPU (start-up and the prompts' building included) / requests.\n\n",
    );
    out
}

fn events(lc: &LongContext) -> String {
    let mut out = String::from("### Large events in\n\n");
    let startup = lc
        .startup
        .as_ref()
        .map(|s| s.usage.cpu())
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = lc
        .events
        .iter()
        .map(|e| {
            let r = &e.run;
            let a = r.accuracy.as_ref();
            let spread = |f: fn(&crate::join::Accuracy) -> &Spread, d| {
                a.map_or("–".to_string(), |a| two(f(a), d))
            };
            let is_goodput = r.client == crate::experiments::ClientKind::Goodput;
            // The start-up run used goodput's default tokenizer.
            let default_goodput = is_goodput && e.tokenizer.is_none();
            vec![
                count(e.event_bytes),
                client_name(e),
                (r.repetition + 1).to_string(),
                num(e.interval.as_secs_f64() * 1e3, 0),
                count(r.tokens),
                num(e.text_mb(), 1),
                num(r.usage.cpu().as_secs_f64(), 2),
                num(e.cpu_per_mb_ms(std::time::Duration::ZERO), 2),
                if default_goodput {
                    num(e.cpu_per_mb_ms(startup), 2)
                } else {
                    "–".to_string()
                },
                num(r.cpu_per_token_us(), 1),
                spread(|a| &a.ttft_error, 2),
                if is_goodput {
                    spread(|a| &a.itl_abs_error, 3)
                } else {
                    "–".to_string()
                },
                if is_goodput {
                    spread(|a| &a.decomposition.event_delay, 2)
                } else {
                    "–".to_string()
                },
                mib(r.usage.max_rss_kib),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "event bytes",
            "client",
            "run",
            "interval, ms",
            "events",
            "event text, MB",
            "client CPU, s",
            "CPU per MB, ms",
            "start-up taken off",
            "CPU per event, µs",
            "TTFT error p50 / p99, ms",
            "abs ITL error p50 / p99, ms",
            "event delay p50 / p99, ms",
            "peak RSS, MiB",
        ],
        &rows,
    );
    let _ = writeln!(
        out,
        "Each token event carries the event bytes of text (\" the the …\"); events = token events \
         the server wrote (warm-up included), CPU per MB = the client's user + system CPU / MB \
         (10^6 bytes) of event text; start-up taken off: less goodput's CPU for 1 request of 1 \
         token ({} s). Event delay = goodput's arrival time of event i − the server's write of \
         it, pooled: it holds the event's transfer over loopback. The bytes-only floor reads \
         64 KB at a time and parses nothing; its TTFT is taken at the end of the first event. \
         goodput with `--tokenizer none` reads and parses every event as it always does but \
         does not count the answer's tokens with o200k on its aggregator thread.\n",
        num(startup.as_secs_f64(), 3)
    );
    out
}

/// The client, with goodput's `--tokenizer` when not its default.
fn client_name(e: &EventRun) -> String {
    match e.tokenizer {
        Some(t) => format!("{}, --tokenizer {t}", e.run.client.name()),
        None => e.run.client.name().to_string(),
    }
}

fn notes_and_commands(lc: &LongContext) -> String {
    let runs = lc
        .prompts
        .iter()
        .map(|p| &p.run)
        .chain(lc.startup.iter())
        .chain(lc.events.iter().map(|e| &e.run));
    let mut notes = Vec::new();
    let mut commands = Vec::new();
    for r in runs {
        notes.extend(r.notes.iter().cloned());
        if let Some(busy) = r.busy_before.filter(|&b| b > 0.10) {
            notes.push(format!(
                "{} run {}: the machine was {:.0}% busy just before it (other processes)",
                r.client.name(),
                r.repetition + 1,
                busy * 100.0
            ));
        }
        commands.push(r.usage.command.clone());
    }
    let mut out = String::new();
    if !notes.is_empty() {
        out.push_str("Notes:\n\n");
        for note in notes {
            let _ = writeln!(out, "- {note}");
        }
        out.push('\n');
    }
    out.push_str("Commands run (the server's port was picked by binding 127.0.0.1:0):\n\n```sh\n");
    for c in commands {
        let _ = writeln!(out, "{c}");
    }
    out.push_str("```\n");
    out
}

fn spread_json(s: &Spread) -> Value {
    let n = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    json!({"n": s.n, "p50": n(s.p50), "p99": n(s.p99), "max": n(s.max)})
}

/// The figures as JSON: `prompts` (one object per long-prompt run) and
/// `events` (one per large-event run), times in ms, CPU in s.
pub fn json(lc: &LongContext) -> Value {
    let prompts: Vec<Value> = lc
        .prompts
        .iter()
        .map(|p| {
            let (u, a, usage) = (&p.upload, &p.accuracy, &p.run.usage);
            json!({
                "input_tokens": p.input_tokens,
                "run": p.run.repetition + 1,
                "requests": u.measured,
                "failed": a.failed,
                "timed": u.timed,
                "first_sched_s": if u.first_sched_s.is_finite() { json!(u.first_sched_s) } else { Value::Null },
                "sched_to_last_byte_ms": spread_json(&u.sched_to_last_byte),
                "first_wave_sched_to_last_byte_ms": spread_json(&u.first_wave),
                "after_first_wave_sched_to_last_byte_ms": spread_json(&u.after_first_wave),
                "send_delay_ms": spread_json(&u.send_delay),
                "schedule_lag_ms": spread_json(&u.schedule_lag),
                "server_read_lateness_ms": spread_json(&u.read_lateness),
                "ttft_error_ms": spread_json(&a.ttft_error),
                "ttft_error_from_kernel_rx_ms": spread_json(&a.decomposition.ttft_error_kernel),
                "itl_abs_error_ms": spread_json(&a.itl_abs_error),
                "client_cpu_s": usage.cpu().as_secs_f64(),
                "client_cpu_per_request_ms": usage.cpu().as_secs_f64() * 1e3 / u.measured.max(1) as f64,
                "peak_rss_kib": usage.max_rss_kib,
                "server_cpu_s": p.run.server_cpu.as_secs_f64(),
            })
        })
        .collect();
    let events: Vec<Value> = lc.events.iter().map(event_json).collect();
    json!({"prompts": prompts, "events": events})
}

fn event_json(e: &EventRun) -> Value {
    let r = &e.run;
    let a = r.accuracy.as_ref();
    json!({
        "event_bytes": e.event_bytes,
        "client": r.client.name(),
        "tokenizer": e.tokenizer,
        "run": r.repetition + 1,
        "interval_ms": e.interval.as_secs_f64() * 1e3,
        "events": r.tokens,
        "text_mb": e.text_mb(),
        "client_cpu_s": r.usage.cpu().as_secs_f64(),
        "cpu_per_mb_ms": e.cpu_per_mb_ms(std::time::Duration::ZERO),
        "failed": a.map(|a| a.failed),
        "ttft_error_ms": a.map(|a| spread_json(&a.ttft_error)),
        "itl_abs_error_ms": a.map(|a| spread_json(&a.itl_abs_error)),
        "event_delay_ms": a.map(|a| spread_json(&a.decomposition.event_delay)),
        "peak_rss_kib": r.usage.max_rss_kib,
    })
}
