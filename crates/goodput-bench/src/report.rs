//! Markdown rendering of the experiments, ready to paste into BENCHMARKS.md.
//! Pure: runs in, text out. Missing figures print as `–`.

use std::fmt::Write as _;

use crate::experiments::{BenchEnv, ClientKind, ClientRun};
use crate::join::Accuracy;
use crate::stats::Spread;

/// A number with `decimals` places, or `–` when not a number.
pub fn num(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "–".to_string()
    }
}

pub fn opt(value: Option<f64>, decimals: usize) -> String {
    num(value.unwrap_or(f64::NAN), decimals)
}

/// Thousands separators for counts.
pub fn count(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn mib(kib: u64) -> String {
    num(kib as f64 / 1024.0, 1)
}

pub fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(header.len()));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
}

/// The machine and server settings every table was measured under.
pub fn setup(env: &BenchEnv) -> String {
    let mut out = String::new();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "Machine: {cores} cores ({cpu}), Linux {}. Client and server share the cores.\n",
        kernel.trim()
    );
    let _ = writeln!(
        out,
        "Reference server (`bench`, hand-rolled HTTP/1.1 on tokio, {} worker thread(s) so it never takes \
         more than that many cores from the client, in the bench process): \
         first token {} ms after the request is read, then one token every {} ms, each token one SSE event in \
         its own chunk and write; truth = its own log of the time right before each write. \
         Each client runs as a child process measured with `wait4` (user + system CPU and peak RSS of that \
         process alone, start-up included).\n",
        env.server.threads,
        env.server.ttft.as_millis(),
        env.server.interval.as_millis()
    );
    if let Some(version) = &env.goodput_version {
        let _ = writeln!(
            out,
            "goodput under test: `{version}` ({}).\n",
            env.goodput.display()
        );
    }
    out
}

/// CPU per token and memory, one row per client run; the ratio column
/// compares goodput and the hyper client with the bytes-only run at the
/// same streams.
pub fn cost(runs: &[ClientRun]) -> String {
    let mut out = String::from("### Client cost\n\n");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter(|r| r.open_loop.is_none() && r.client != ClientKind::GoodputStartup)
        .map(|run| cost_row(run, runs))
        .collect();
    table(
        &mut out,
        &[
            "client",
            "streams",
            "requests",
            "tokens streamed",
            "wall (s)",
            "CPU user (s)",
            "CPU sys (s)",
            "CPU per token (µs)",
            "vs bytes-only",
            "peak RSS (MiB)",
            "tokens/s absorbed",
            "server CPU (s)",
            "server slip p50 / p99 (ms)",
            "other CPU (s)",
        ],
        &rows,
    );
    if runs.iter().any(|r| r.repetition > 0) {
        out.push_str(&medians(runs));
    }
    out.push_str(&fixed_cost(runs));
    out.push_str(&cost_notes(runs));
    out
}

/// One closed-loop run's row of the cost table, its CPU per token compared
/// with the bytes-only run of the same streams and repetition in `runs`.
fn cost_row(run: &ClientRun, runs: &[ClientRun]) -> Vec<String> {
    let floor = runs
        .iter()
        .find(|b| {
            b.client == ClientKind::BytesOnly
                && b.streams == run.streams
                && b.repetition == run.repetition
                && b.open_loop.is_none()
        })
        .map(ClientRun::cpu_per_token_us);
    let ratio = match (run.client, floor) {
        (ClientKind::Goodput | ClientKind::Hyper | ClientKind::VllmBench, Some(floor)) => {
            format!("{}×", num(run.cpu_per_token_us() / floor, 2))
        }
        _ => "–".to_string(),
    };
    let wall = run.usage.wall.as_secs_f64();
    vec![
        run.client.name().to_string(),
        count(run.streams as u64),
        count(run.requests as u64),
        count(run.tokens),
        num(wall, 1),
        num(run.usage.user.as_secs_f64(), 2),
        num(run.usage.sys.as_secs_f64(), 2),
        num(run.cpu_per_token_us(), 2),
        ratio,
        mib(run.usage.max_rss_kib),
        count((run.tokens as f64 / wall) as u64),
        num(run.server_cpu.as_secs_f64(), 2),
        format!(
            "{} / {}",
            num(run.server_slip.p50, 2),
            num(run.server_slip.p99, 2)
        ),
        opt(run.other_cpu.map(|d| d.as_secs_f64()), 2),
    ]
}

/// goodput's fixed cost: one line per start-up run (start-up, probe, one
/// request of one token, exit).
fn fixed_cost(runs: &[ClientRun]) -> String {
    let mut out = String::new();
    for startup in runs
        .iter()
        .filter(|r| r.client == ClientKind::GoodputStartup)
    {
        let _ = writeln!(
            out,
            "goodput's fixed cost (start-up, probe, 1 request of 1 token, exit): {} s CPU \
             ({} user + {} system), {} s wall, {} MiB peak RSS.\n",
            num(startup.usage.cpu().as_secs_f64(), 3),
            num(startup.usage.user.as_secs_f64(), 3),
            num(startup.usage.sys.as_secs_f64(), 3),
            num(startup.usage.wall.as_secs_f64(), 2),
            mib(startup.usage.max_rss_kib)
        );
    }
    out
}

/// What the cost table's columns mean, and the floor of the RSS measure.
fn cost_notes(runs: &[ClientRun]) -> String {
    let mut out = String::new();
    out.push_str(
        "CPU per token = the client process's user + system CPU time (start-up included) / content \
         token events the server wrote during the run (probe and every request included; every client \
         reads every response to its end). hyper = the bytes-only client's connections and requests \
         through hyper's HTTP/1.1 client connection (`bench hyper-client`: its connection task decodes \
         the body, the request task reads it frame by frame, one clock read per frame, events counted \
         as the bytes-only client counts them): what a general-purpose client costs for the same \
         reading. Tokens/s absorbed = tokens / client wall time. Server slip = \
         how late the server wrote each token against its schedule (it shares the cores; its log stays \
         the truth either way). Other CPU = CPU the rest of the machine used during the run (from \
         `/proc/stat`, less client and server): well above 0 means the figures were disturbed. \
         Target: goodput ≤ 1.5× bytes-only, and below hyper.\n\n",
    );
    let floor = runs
        .iter()
        .map(|r| r.usage.rss_floor_kib)
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "Peak RSS = `ru_maxrss` of the client process. Clients are started by a freshly exec'd helper \
         (`bench measure-child`) so the bench's own memory is not charged to them (Linux starts a \
         program's `ru_maxrss` at the peak RSS of the image it was exec'd from); that helper's {} MiB \
         is the floor of the measurement.\n",
        mib(floor)
    );
    out
}

/// Medians over repetitions, one row per stream count and client: CPU per
/// token, its ratio to the bytes-only median at the same streams, and peak
/// RSS.
fn medians(runs: &[ClientRun]) -> String {
    let mut out = String::new();
    let measured = |r: &&ClientRun| r.open_loop.is_none() && r.client != ClientKind::GoodputStartup;
    let mut loads: Vec<(usize, ClientKind)> = Vec::new();
    for run in runs.iter().filter(measured) {
        if !loads.contains(&(run.streams, run.client)) {
            loads.push((run.streams, run.client));
        }
    }
    let median = |client: ClientKind, at: usize, figure: fn(&ClientRun) -> f64| {
        let values: Vec<f64> = runs
            .iter()
            .filter(|r| r.client == client && r.streams == at && r.open_loop.is_none())
            .map(figure)
            .collect();
        (values.len(), crate::stats::Spread::of(&values).p50)
    };
    let rows: Vec<Vec<String>> = loads
        .iter()
        .map(|&(at, client)| {
            let (n, cpu) = median(client, at, ClientRun::cpu_per_token_us);
            let (floor_runs, floor) =
                median(ClientKind::BytesOnly, at, ClientRun::cpu_per_token_us);
            let (_, rss) = median(client, at, |r| r.usage.max_rss_kib as f64 / 1024.0);
            let ratio = match client {
                ClientKind::BytesOnly => "–".to_string(),
                _ if floor_runs == 0 => "–".to_string(),
                _ => format!("{}×", num(cpu / floor, 2)),
            };
            vec![
                count(at as u64),
                client.name().to_string(),
                n.to_string(),
                num(cpu, 2),
                ratio,
                num(rss, 1),
            ]
        })
        .collect();
    out.push_str("Medians over the repetitions:\n\n");
    table(
        &mut out,
        &[
            "streams",
            "client",
            "runs",
            "CPU per token (µs)",
            "vs bytes-only",
            "peak RSS (MiB)",
        ],
        &rows,
    );
    out
}

/// TTFT and ITL error against the server's log, one row per closed-loop run
/// (the bytes-only and hyper clients have TTFT only), then the TTFT error
/// decomposed.
pub fn accuracy(runs: &[ClientRun]) -> String {
    let mut out = String::from("### Accuracy against the server's log\n\n");
    let with_accuracy: Vec<(&ClientRun, &Accuracy)> = runs
        .iter()
        .filter_map(|run| Some((run, run.accuracy.as_ref()?)))
        .collect();
    out.push_str(&error_table(&with_accuracy));
    out.push_str(&ttft_error_sources(&with_accuracy));
    out
}

/// The TTFT and ITL error table, one row per run, with what its columns
/// mean.
fn error_table(with_accuracy: &[(&ClientRun, &Accuracy)]) -> String {
    let mut out = String::new();
    let pair = |s: &Spread| format!("{} / {}", num(s.p50, 2), num(s.p99, 2));
    let rows: Vec<Vec<String>> = with_accuracy
        .iter()
        .map(|(run, a)| {
            vec![
                run.client.name().to_string(),
                count(run.streams as u64),
                format!(
                    "{} of {}",
                    count(a.matched as u64),
                    count(a.measured as u64)
                ),
                pair(&a.true_ttft),
                pair(&a.reported_ttft),
                pair(&a.ttft_error),
                count(a.itl_abs_error.n as u64),
                pair(&a.true_itl),
                pair(&a.reported_itl),
                pair(&a.itl_abs_error),
                num(a.itl_abs_error.max, 2),
                num(a.itl_error_p50_signed, 3),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "client",
            "streams",
            "requests joined",
            "true TTFT p50 / p99 (ms)",
            "reported TTFT p50 / p99 (ms)",
            "TTFT error p50 / p99 (ms)",
            "ITL gaps",
            "true ITL p50 / p99 (ms)",
            "reported ITL p50 / p99 (ms)",
            "\\|ITL error\\| p50 / p99 (ms)",
            "\\|ITL error\\| max (ms)",
            "ITL error p50, signed (ms)",
        ],
        &rows,
    );
    out.push_str(
        "Joined on `x-request-id` = `<run-tag>-<request_id>`; measured phase only. TTFT error = the client's \
         TTFT − server TTFT (first token write − moment the whole request had been read), per request, \
         signed. ITL error = goodput's gap between events k−1 and k (from `event_times_ms`) − the server's \
         gap between the writes of tokens k−1 and k, per gap; the table gives percentiles of its absolute \
         value. The bytes-only client keeps no per-event times (TTFT only): its TTFT is from right before \
         its request `write` to right after the `read` that brought the end of the first event. \
         The hyper client's (TTFT only too) is from right before `send_request` to the frame that \
         brought the end of the first event. \
         Percentiles interpolate linearly between ranks (numpy's default).\n\n",
    );
    out
}

/// The TTFT error decomposed on the one monotonic clock: send delay, the
/// server's read lateness, first-event and per-event delay.
fn ttft_error_sources(with_accuracy: &[(&ClientRun, &Accuracy)]) -> String {
    let mut out = String::new();
    let triple = |s: &Spread| format!("{} / {} / {}", num(s.p50, 2), num(s.p99, 2), num(s.max, 2));
    out.push_str("#### Where the TTFT error comes from\n\n");
    let rows: Vec<Vec<String>> = with_accuracy
        .iter()
        .map(|(run, a)| {
            let d = &a.decomposition;
            vec![
                run.client.name().to_string(),
                count(run.streams as u64),
                count(d.with_kernel_rx as u64),
                triple(&d.send_delay),
                triple(&d.read_lateness),
                triple(&d.first_event_delay),
                triple(&d.event_delay),
                triple(&a.ttft_error),
                triple(&d.ttft_error_kernel),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "client",
            "streams",
            "requests with kernel rx time",
            "send delay p50 / p99 / max (ms)",
            "server read lateness p50 / p99 / max (ms)",
            "first-event delay p50 / p99 / max (ms)",
            "per-event delay p50 / p99 / max (ms)",
            "TTFT error vs server t_recv p50 / p99 / max (ms)",
            "TTFT error, server read lateness removed p50 / p99 / max (ms)",
        ],
        &rows,
    );
    out.push_str(
        "All on the one system-wide `CLOCK_MONOTONIC`: client times are the client's clock origin \
         (goodput's `run.clock_origin_monotonic_ns`) + `send_s` (+ `ttft_ms`, + `event_times_ms[i]`); the \
         server logs absolute monotonic times, and with `SO_TIMESTAMPNS` on its sockets, the kernel's \
         receive time of the segment that completed each request (`recvmsg` control message, \
         `CLOCK_REALTIME` converted with an offset sampled every second). Per request: \
         **send delay** = kernel receive time − client send time (the client's write path from its \
         send timestamp, and loopback); **server read lateness** = the server's user-space `t_recv` \
         (right after the read that completed the request) − kernel receive time: how long the request \
         sat in the socket before the reference server (1 thread, sharing the cores) got to it; \
         **first-event delay** = client first-event time − server first token write (loopback, plus the \
         client's delay in reading and timestamping it); **per-event delay** = client time of event i − \
         server write i, pooled over all events of requests whose event count matches (goodput only). \
         TTFT error vs server t_recv (as in the table above) = send delay + server read lateness + \
         first-event delay. **TTFT error, server read lateness removed** = client TTFT − (server first \
         write − kernel receive time) = send delay + first-event delay: the client's own share. The \
         bytes-only row is the floor on this machine: what a client that only writes and reads \
         achieves at the same load.\n\n",
    );
    out
}

/// The reference server's CPU (the bench process's own during the run) per
/// completion request it received, µs.
fn server_cpu_per_request_us(run: &ClientRun) -> f64 {
    if run.server_requests == 0 {
        return f64::NAN;
    }
    run.server_cpu.as_secs_f64() * 1e6 / run.server_requests as f64
}

/// Achieved rate and schedule lag of open-loop runs.
pub fn open_loop(runs: &[ClientRun]) -> String {
    let mut out = String::from("### Open loop\n\n");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|run| Some((run, run.open_loop.as_ref()?)))
        .map(|(run, o)| {
            let lag = &o.joined.lag;
            vec![
                run.client.name().to_string(),
                num(o.target_rate, 0),
                count(o.joined.measured as u64),
                count(o.joined.failed as u64),
                opt(o.reported_achieved_rate, 1),
                opt(o.reported_throughput, 1),
                opt(o.reported_lag_p99, 3),
                num(o.joined.sched_rate, 1),
                num(o.joined.send_rate, 1),
                num(o.joined.server_arrival_rate, 1),
                format!(
                    "{} / {} / {}",
                    num(lag.p50, 3),
                    num(lag.p99, 3),
                    num(lag.max, 3)
                ),
                num(run.cpu_per_request_us(), 1),
                num(server_cpu_per_request_us(run), 1),
                num(
                    (run.usage.cpu() + run.server_cpu).as_secs_f64() / run.usage.wall.as_secs_f64(),
                    2,
                ),
                mib(run.usage.max_rss_kib),
                num(run.server_slip.p99, 2),
                opt(run.other_cpu.map(|d| d.as_secs_f64()), 2),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "client",
            "target (req/s)",
            "requests",
            "failed",
            "goodput `achieved_request_rate`",
            "goodput `request_throughput`",
            "goodput `schedule_lag` p99 (ms)",
            "intended rate from records",
            "send rate from records",
            "arrival rate at server",
            "schedule lag p50 / p99 / max (ms)",
            "client CPU per request (µs)",
            "server CPU per request (µs)",
            "cores busy (client + server)",
            "peak RSS (MiB)",
            "server slip p99 (ms)",
            "other CPU (s)",
        ],
        &rows,
    );
    out.push_str(
        "Poisson arrivals. Intended (send) rate = (n − 1) / (last − first `sched_s` (`send_s`)) over measured records; \
         arrival rate = the same over the server's arrival times of those requests. Schedule lag = \
         `schedule_lag_ms` of the records (actual send − intended send). Client CPU per request = the \
         client process's user + system CPU (start-up included) / completion requests the server received; \
         server CPU per request the same of the bench process, which is the reference server during \
         the run (on loopback a write's CPU includes the receiving side's TCP work). Cores busy = \
         (client + server CPU) / the client's wall time, of the machine's 2: past about 1.6 the \
         threads of both wait for a core and the lag grows, whichever client sends.\n\n",
    );
    out
}

/// Notes about odd runs and the exact commands that ran.
pub fn commands(runs: &[ClientRun]) -> String {
    let mut out = String::new();
    let busy = runs.iter().filter_map(|r| {
        let busy = r.busy_before.filter(|&b| b > 0.10)?;
        Some(format!(
            "{} at {} streams: the machine was {:.0}% busy just before the run (other processes)",
            r.client.name(),
            r.streams,
            busy * 100.0
        ))
    });
    let notes: Vec<String> = runs
        .iter()
        .flat_map(|r| r.notes.iter().cloned())
        .chain(busy)
        .collect();
    if !notes.is_empty() {
        out.push_str("Notes:\n\n");
        for note in notes {
            let _ = writeln!(out, "- {note}");
        }
        out.push('\n');
    }
    out.push_str("Commands run (the server's port was picked by binding 127.0.0.1:0):\n\n```sh\n");
    for run in runs {
        let _ = writeln!(out, "{}", run.usage.command);
    }
    out.push_str("```\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_counts_and_missing_numbers() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1024), "1,024");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(num(f64::NAN, 2), "–");
        assert_eq!(num(1.005, 1), "1.0");
    }

    fn fake_run(client: ClientKind, streams: usize, cpu_ms: u64) -> ClientRun {
        use std::time::Duration;
        ClientRun {
            client,
            streams,
            requests: streams * 3,
            server_requests: streams * 3,
            repetition: 0,
            tokens: 1_000_000,
            usage: crate::child::ChildUsage {
                command: format!("{} --streams {streams}", client.name()),
                wall: Duration::from_secs(2),
                user: Duration::from_millis(cpu_ms / 2),
                sys: Duration::from_millis(cpu_ms / 2),
                max_rss_kib: 2048,
                rss_floor_kib: 1024,
                exit_code: Some(0),
                spawn_monotonic_ns: None,
                stdout: String::new(),
                stderr: String::new(),
            },
            server_cpu: Duration::from_secs(1),
            other_cpu: None,
            busy_before: Some(0.5),
            server_slip: crate::stats::Spread::of(&[0.5, 1.5]),
            notes: vec!["a note".to_string()],
            accuracy: None,
            open_loop: None,
            extras: Default::default(),
        }
    }

    /// Every row of each table has as many cells as its header.
    fn assert_rectangular(markdown: &str) {
        let mut tables: Vec<Vec<usize>> = vec![Vec::new()];
        for line in markdown.lines() {
            if line.starts_with('|') {
                let cells = line.replace("\\|", "").matches('|').count();
                tables.last_mut().unwrap().push(cells);
            } else if !tables.last().unwrap().is_empty() {
                tables.push(Vec::new());
            }
        }
        let tables: Vec<Vec<usize>> = tables.into_iter().filter(|t| !t.is_empty()).collect();
        assert!(!tables.is_empty(), "{markdown}");
        for rows in tables {
            assert!(rows.len() >= 3, "{markdown}");
            assert!(rows.iter().all(|&n| n == rows[0]), "{markdown}");
        }
    }

    #[test]
    fn cost_table_compares_goodput_with_the_floor_at_the_same_streams() {
        let runs = vec![
            fake_run(ClientKind::BytesOnly, 256, 5_000),
            fake_run(ClientKind::Goodput, 256, 7_500),
            fake_run(ClientKind::Goodput, 1024, 7_500),
            fake_run(ClientKind::Hyper, 256, 10_000),
        ];
        let markdown = cost(&runs);
        assert_rectangular(&markdown);
        // The hyper client is compared with the same floor: 10 µs, 2×.
        let hyper = markdown.lines().find(|l| l.starts_with("| hyper")).unwrap();
        assert!(hyper.contains("| 10.00 | 2.00× |"), "{hyper}");
        let lines: Vec<&str> = markdown
            .lines()
            .filter(|l| l.starts_with("| goodput"))
            .collect();
        // 5 µs per token for the floor, 7.5 for goodput: 1.5×.
        assert!(lines[0].contains("| 7.50 | 1.50× |"), "{}", lines[0]);
        // No floor measured at 1,024 streams: no ratio.
        assert!(lines[1].contains("| 7.50 | – |"), "{}", lines[1]);
        let commands = commands(&runs);
        assert!(commands.contains("- a note"));
        assert!(commands.contains("50% busy"));
        assert!(commands.contains("goodput --streams 1024\n"));
    }

    #[test]
    fn repetitions_get_a_table_of_medians() {
        let mut runs = Vec::new();
        for (repetition, floor_ms, goodput_ms) in
            [(0, 5_000, 6_000), (1, 6_000, 9_000), (2, 7_000, 9_000)]
        {
            let mut floor = fake_run(ClientKind::BytesOnly, 256, floor_ms);
            floor.repetition = repetition;
            let mut goodput = fake_run(ClientKind::Goodput, 256, goodput_ms);
            goodput.repetition = repetition;
            runs.extend([floor, goodput]);
        }
        let markdown = cost(&runs);
        assert_rectangular(&markdown);
        // Each goodput row is compared with the floor of its own repetition.
        assert!(markdown.contains("| 9.00 | 1.50× |"), "{markdown}");
        assert!(markdown.contains("| 6.00 | 1.20× |"), "{markdown}");
        // Medians: 6 µs floor, 9 µs goodput.
        assert!(
            markdown.contains("| 256 | bytes-only | 3 | 6.00 | – | 2.0 |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("| 256 | goodput | 3 | 9.00 | 1.50× | 2.0 |"),
            "{markdown}"
        );
    }

    #[test]
    fn accuracy_and_open_loop_tables_are_rectangular() {
        let mut closed = fake_run(ClientKind::Goodput, 256, 1);
        closed.accuracy = Some(crate::join::accuracy(&[], &[], None));
        let mut open = fake_run(ClientKind::Goodput, 0, 1);
        open.open_loop = Some(crate::experiments::OpenLoopFigures {
            target_rate: 2000.0,
            joined: crate::join::open_loop(&[], &[]),
            reported_achieved_rate: Some(1999.5),
            reported_throughput: None,
            reported_lag_p99: Some(0.25),
        });
        let runs = vec![closed, open];
        let accuracy_md = accuracy(&runs);
        assert_rectangular(&accuracy_md);
        assert!(
            accuracy_md.contains("| goodput | 256 | 0 of 0 | – / – |"),
            "{accuracy_md}"
        );
        let open_md = open_loop(&runs);
        assert_rectangular(&open_md);
        assert!(
            open_md.contains("| 2000 | 0 | 0 | 1999.5 | – | 0.250 |"),
            "{open_md}"
        );
    }

    #[test]
    fn table_has_a_separator_row() {
        let mut out = String::new();
        table(&mut out, &["a", "b"], &[vec!["1".into(), "2".into()]]);
        assert_eq!(out, "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n");
    }
}
