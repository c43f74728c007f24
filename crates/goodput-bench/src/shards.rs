//! `bench shards`: one open-loop load (2,000 req/s Poisson for 10 s,
//! 4-token answers by default) sent by goodput as one process, then by N
//! goodput shard processes (`--shards N`), against a fresh reference server
//! each time.
//!
//! The shards are started as a Kubernetes Indexed Job starts its pods: the
//! same command line, plus `--shards N --coordinator 127.0.0.1:PORT`, each
//! with its index only in `JOB_COMPLETION_INDEX`. Each shard is its own
//! measured child (its CPU and peak RSS from `wait4`); only shard 0 writes
//! the merged results and records, whose `shard` field says who sent each
//! request. Request ids are the whole plan's, so the merged records join
//! the server's log by `x-request-id` exactly as one process's do.
//!
//! What it measures, per configuration: the achieved rate, failures,
//! schedule lag (per shard too), client CPU per request (per shard and in
//! total), peak RSS per process, the shards' start skew and lateness and
//! their clock offsets' round trips, and the TTFT error of the merged
//! records against the server's own first-token write times. A shard's
//! records are placed on shard 0's clock with the offset goodput measured;
//! on one machine every process reads the same `CLOCK_MONOTONIC`, so a
//! shard's send delay (the kernel's receive time − its placed send time)
//! beside shard 0's shows that offset's error directly.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use goodput_core::plan::ShardsReport;

use crate::child::{self, ChildCommand, ChildUsage};
use crate::experiments::{self as exp, BenchEnv};
use crate::join::{self, Accuracy, ClientRecord, OpenLoop};
use crate::machine;
use crate::report::{count, mib, num, opt, table};
use crate::server::{ReferenceServer, RequestLog};
use crate::stats::Spread;

/// The load and the number of shards.
#[derive(Debug, Clone, Args)]
pub struct ShardsArgs {
    /// Total request rate, req/s (Poisson arrivals), over all shards.
    #[arg(long, default_value_t = 2000.0)]
    pub rate: f64,
    /// Seconds of arrivals: rate × duration requests are sent in all.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Output tokens per request.
    #[arg(long, default_value_t = 4)]
    pub tokens: u64,
    /// Shard processes of the sharded configuration (2 or more).
    #[arg(long, default_value_t = 4)]
    pub shards: u32,
    /// Runs of each configuration, interleaved (one process, then the shards).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
}

/// One configuration's run: N goodput processes (1: no shard flags).
#[derive(Debug, Clone)]
pub struct ShardedRun {
    /// Processes: 1 for one process, else the shards.
    pub processes: u32,
    /// Which repetition (0 for the first).
    pub repetition: usize,
    /// Requests the plan holds (measured).
    pub requests: usize,
    /// Completion requests the server received (probes and warm-up included).
    pub server_requests: usize,
    /// Each process's cost, by shard index.
    pub usages: Vec<ChildUsage>,
    /// CPU of this process (the server) during the run.
    pub server_cpu: Duration,
    /// CPU of everything else on the machine during the run.
    pub other_cpu: Option<Duration>,
    /// Share of the cores busy just before the run (0..1).
    pub busy_before: Option<f64>,
    /// The server's lateness against its own token schedule, ms.
    pub server_slip: Spread,
    /// Arrival figures of all the records.
    pub open_loop: OpenLoop,
    /// TTFT error of all the records against the server's log.
    pub accuracy: Accuracy,
    /// goodput's `achieved_request_rate`.
    pub achieved_rate: Option<f64>,
    /// goodput's `shards` object (sharded runs).
    pub report: Option<ShardsReport>,
    /// Figures of each shard from the merged records, by shard.
    pub per_shard: BTreeMap<u32, ShardJoin>,
    /// Anything odd, for the notes under the tables.
    pub notes: Vec<String>,
}

/// One shard's records joined with the server's log.
#[derive(Debug, Clone)]
pub struct ShardJoin {
    /// Records it sent (warm-up included).
    pub records: usize,
    /// Its arrival figures (schedule lag of its measured records).
    pub open_loop: OpenLoop,
    /// Its TTFT error and send delay.
    pub accuracy: Accuracy,
}

impl ShardedRun {
    fn label(&self) -> String {
        let base = match self.processes {
            1 => "one process".to_string(),
            n => format!("{n} shards"),
        };
        format!("{base}, run {}", self.repetition + 1)
    }

    fn cpu(&self) -> Duration {
        self.usages.iter().map(ChildUsage::cpu).sum()
    }
}

/// Runs both configurations `args.repeat` times, interleaved.
pub fn run(env: &BenchEnv, args: &ShardsArgs) -> anyhow::Result<Vec<ShardedRun>> {
    anyhow::ensure!(args.shards >= 2, "--shards must be at least 2");
    let mut runs = Vec::new();
    for repetition in 0..args.repeat.max(1) {
        for processes in [1, args.shards] {
            runs.push(configuration(env, args, processes, repetition)?);
        }
    }
    Ok(runs)
}

/// One run of `processes` goodput processes against a fresh server.
fn configuration(
    env: &BenchEnv,
    args: &ShardsArgs,
    processes: u32,
    repetition: usize,
) -> anyhow::Result<ShardedRun> {
    let requests = (args.rate * args.duration).round().max(1.0) as usize;
    let label = format!("shards-{processes}-{}-r{repetition}", args.rate);
    let server = ReferenceServer::start(env.server.clone(), 0)?;
    let mut load = vec![
        "--request-rate".to_string(),
        args.rate.to_string(),
        "--arrival".into(),
        "poisson".into(),
        "--num-prompts".into(),
        requests.to_string(),
        "--input-tokens".into(),
        "32".into(),
        "--output-tokens".into(),
        args.tokens.to_string(),
    ];
    if processes > 1 {
        load.extend([
            "--shards".to_string(),
            processes.to_string(),
            "--coordinator".into(),
            format!("127.0.0.1:{}", free_port()?),
        ]);
    }
    let load: Vec<&str> = load.iter().map(String::as_str).collect();
    // Each shard its own files (`{shard}` in the paths): shard 0's hold the
    // merged result and records, another shard's its own part and requests.
    let (file_label, merged_label) = if processes > 1 {
        for i in 0..processes {
            for path in [
                exp::records_path(env, &format!("{label}-{i}")),
                exp::results_path(env, &format!("{label}-{i}")),
            ] {
                let _ = std::fs::remove_file(path);
            }
        }
        (format!("{label}-{{shard}}"), format!("{label}-0"))
    } else {
        (label.clone(), label.clone())
    };
    let base = exp::goodput_command(
        env,
        &file_label,
        &format!("http://{}", server.addr()),
        &load,
    )?;
    let commands: Vec<ChildCommand> = (0..processes)
        .map(|i| ChildCommand {
            env: if processes > 1 {
                vec![("JOB_COMPLETION_INDEX".to_string(), i.to_string())]
            } else {
                Vec::new()
            },
            ..base.clone()
        })
        .collect();
    let measured = measure_all(env, server, &commands, &label)?;
    for usage in &measured.usages {
        exp::check_goodput_exit(usage)?;
    }
    let records = join::read_records(&exp::records_path(env, &merged_label))?;
    let results = exp::read_results(&exp::results_path(env, &merged_label));
    let report = results
        .as_ref()
        .and_then(|r| r.get("shards"))
        .filter(|s| !s.is_null())
        .map(|s| serde_json::from_value::<ShardsReport>(s.clone()))
        .transpose()
        .context("reading the merged result's `shards` object")?;
    let origin = results.as_ref().and_then(join::clock_origin);
    let mut run = ShardedRun {
        processes,
        repetition,
        requests,
        server_requests: measured.log.len(),
        usages: measured.usages,
        server_cpu: measured.server_cpu,
        other_cpu: measured.other_cpu,
        busy_before: measured.busy_before,
        server_slip: exp::server_slip(&measured.log, &env.server),
        open_loop: join::open_loop(&records, &measured.log),
        accuracy: join::accuracy(&records, &measured.log, origin),
        achieved_rate: results
            .as_ref()
            .and_then(|r| join::result_number(r, &["achieved_request_rate"])),
        report,
        per_shard: per_shard(&records, &measured.log, origin),
        notes: measured.notes,
    };
    check_records(&mut run, &records, &label);
    Ok(run)
}

/// A port free a moment ago on loopback, for shard 0 to listen on: every
/// shard is told it before any starts, as a pod spec is.
fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The figures of each shard's records, by the records' `shard`.
fn per_shard(
    records: &[ClientRecord],
    log: &[RequestLog],
    origin: Option<u64>,
) -> BTreeMap<u32, ShardJoin> {
    let mut by_shard: BTreeMap<u32, Vec<ClientRecord>> = BTreeMap::new();
    for r in records {
        if let Some(shard) = r.shard {
            by_shard.entry(shard).or_default().push(r.clone());
        }
    }
    by_shard
        .into_iter()
        .map(|(shard, recs)| {
            let join = ShardJoin {
                records: recs.len(),
                open_loop: join::open_loop(&recs, log),
                accuracy: join::accuracy(&recs, log, origin),
            };
            (shard, join)
        })
        .collect()
}

/// Notes on what the records say: failures, ids that do not join, ids
/// sent twice, shards missing from the merged result.
fn check_records(run: &mut ShardedRun, records: &[ClientRecord], label: &str) {
    let a = &run.accuracy;
    if a.failed > 0 {
        run.notes.push(format!(
            "{label}: {} of {} requests failed ({})",
            a.failed,
            a.measured,
            exp::kinds(&a.error_kinds)
        ));
    }
    if a.unmatched > 0 {
        run.notes.push(format!(
            "{label}: {} successful records had no server log entry",
            a.unmatched
        ));
    }
    let mut seen = HashSet::new();
    let repeated = records
        .iter()
        .filter(|r| !seen.insert(r.request_id))
        .count();
    if repeated > 0 {
        run.notes.push(format!(
            "{label}: {repeated} records repeat a request id already seen (ids must be unique across shards)"
        ));
    }
    if let Some(report) = &run.report {
        if !report.lost.is_empty() || report.unaccounted_requests.unwrap_or(0) > 0 {
            run.notes.push(format!(
                "{label}: shards lost {:?}, {:?} requests unaccounted for",
                report.lost.iter().map(|l| l.shard).collect::<Vec<_>>(),
                report.unaccounted_requests
            ));
        }
    }
    if run.open_loop.measured < run.requests {
        run.notes.push(format!(
            "{label}: {} measured records of the {} planned",
            run.open_loop.measured, run.requests
        ));
    }
}

/// What [`measure_all`] found.
struct Measured {
    usages: Vec<ChildUsage>,
    server_cpu: Duration,
    other_cpu: Option<Duration>,
    busy_before: Option<f64>,
    log: Vec<RequestLog>,
    notes: Vec<String>,
}

/// Waits for a quiet machine, runs every command at once (each its own
/// measured child, named `label-I`), stops the server once all have
/// ended and returns their costs with the server's log.
fn measure_all(
    env: &BenchEnv,
    server: ReferenceServer,
    commands: &[ChildCommand],
    label: &str,
) -> anyhow::Result<Measured> {
    let busy_before = machine::wait_for_idle(env.idle_wait, exp::IDLE_THRESHOLD);
    if let Some(busy) = busy_before.filter(|&b| b > exp::IDLE_THRESHOLD) {
        eprintln!(
            "bench: the machine is still {:.0}% busy after waiting {:?}; running {label} anyway",
            busy * 100.0,
            env.idle_wait
        );
    }
    for c in commands {
        eprintln!("bench: running {label}: {}", c.display());
    }
    let machine_before = machine::machine_cpu();
    let cpu_before = machine::own_cpu();
    let results: Vec<anyhow::Result<ChildUsage>> = std::thread::scope(|scope| {
        let handles: Vec<_> = commands
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let name = format!("{label}-{i}");
                scope.spawn(move || {
                    child::run_measured(&env.bench_exe, c, &env.work_dir, &name, env.time_limit)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a measuring thread panicked")))
            })
            .collect()
    });
    let usages = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    let server_cpu = machine::own_cpu().saturating_sub(cpu_before);
    let clients: Duration = usages.iter().map(ChildUsage::cpu).sum();
    let other_cpu = machine_before
        .zip(machine::machine_cpu())
        .map(|(before, after)| {
            after
                .saturating_sub(before)
                .saturating_sub(server_cpu + clients)
        });
    // Let the last writes land in the log (see experiments::measure).
    std::thread::sleep(Duration::from_millis(50));
    let log = server.log().take();
    drop(server);
    if let Err(e) =
        crate::server::write_log(&env.work_dir.join(format!("{label}.server.jsonl")), &log)
    {
        eprintln!("bench: could not keep the server log: {e:#}");
    }
    let wall = usages.iter().map(|u| u.wall).max().unwrap_or_default();
    eprintln!(
        "bench: {label} done in {:.1} s, client CPU {:.2} s in {} processes",
        wall.as_secs_f64(),
        clients.as_secs_f64(),
        usages.len()
    );
    let mut notes = Vec::new();
    let cores = machine::cores() as f64;
    if let Some(other) = other_cpu.filter(|o| o.as_secs_f64() > 0.05 * cores * wall.as_secs_f64()) {
        notes.push(format!(
            "{label}: other processes used {:.2} s of CPU during the run ({:.0}% of the cores): \
             its figures were disturbed",
            other.as_secs_f64(),
            100.0 * other.as_secs_f64() / (cores * wall.as_secs_f64())
        ));
    }
    Ok(Measured {
        usages,
        server_cpu,
        other_cpu,
        busy_before,
        log,
        notes,
    })
}

/// The markdown: one row per configuration run, one per shard of each
/// sharded run, the notes and the exact commands.
pub fn report(runs: &[ShardedRun]) -> String {
    let mut out = String::from("### One process beside shards\n\n");
    out.push_str(&configurations(runs));
    out.push_str(&shards_table(runs));
    let mut notes: Vec<String> = runs.iter().flat_map(|r| r.notes.clone()).collect();
    notes.extend(runs.iter().filter_map(|r| {
        let busy = r.busy_before.filter(|&b| b > exp::IDLE_THRESHOLD)?;
        Some(format!(
            "{}: the machine was {:.0}% busy just before the run",
            r.label(),
            busy * 100.0
        ))
    }));
    if !notes.is_empty() {
        out.push_str("Notes:\n\n");
        for note in notes {
            let _ = writeln!(out, "- {note}");
        }
        out.push('\n');
    }
    out.push_str(
        "Commands run (the server's port was picked by binding 127.0.0.1:0, the coordinator's likewise):\n\n```sh\n",
    );
    for run in runs {
        for usage in &run.usages {
            let _ = writeln!(out, "{}", usage.command);
        }
    }
    out.push_str("```\n");
    out
}

/// `p50 / p99 / max`.
fn spread(s: &Spread, decimals: usize) -> String {
    format!(
        "{} / {} / {}",
        num(s.p50, decimals),
        num(s.p99, decimals),
        num(s.max, decimals)
    )
}

fn configurations(runs: &[ShardedRun]) -> String {
    let mut out = String::new();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|run| {
            let o = &run.open_loop;
            let a = &run.accuracy;
            let rss: Vec<String> = run.usages.iter().map(|u| mib(u.max_rss_kib)).collect();
            vec![
                run.label(),
                count(o.measured as u64),
                count(o.failed as u64),
                opt(run.achieved_rate, 1),
                num(o.server_arrival_rate, 1),
                spread(&o.lag, 3),
                num(run.cpu().as_secs_f64(), 2),
                num(
                    run.cpu().as_secs_f64() * 1e6 / run.server_requests.max(1) as f64,
                    1,
                ),
                rss.join(", "),
                opt(run.report.as_ref().and_then(|r| r.start_skew_ms), 3),
                format!(
                    "{} / {}",
                    num(a.ttft_error.p50, 2),
                    num(a.ttft_error.p99, 2)
                ),
                num(a.decomposition.ttft_error_kernel.p99, 2),
                num(run.server_slip.p99, 2),
                num(run.server_cpu.as_secs_f64(), 2),
                opt(run.other_cpu.map(|d| d.as_secs_f64()), 2),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "configuration",
            "requests",
            "failed",
            "goodput `achieved_request_rate`",
            "arrival rate at server",
            "schedule lag p50 / p99 / max (ms)",
            "client CPU (s, all processes)",
            "client CPU per request (µs)",
            "peak RSS per process (MiB)",
            "`start_skew_ms`",
            "TTFT error p50 / p99 (ms)",
            "TTFT error p99 without server read lateness (ms)",
            "server slip p99 (ms)",
            "server CPU (s)",
            "other CPU (s)",
        ],
        &rows,
    );
    out.push_str(
        "Requests, failed and schedule lag from the (merged) records' measured requests; arrival rate = \
         (n − 1) / span of the server's arrival times of those requests. Client CPU = user + system CPU \
         of every goodput process from `wait4` (start-up included); per request = that / completion \
         requests the server received (probes and warm-up included). TTFT error = the record's `ttft_ms` − \
         (the server's first-token write − its read of the request), joined by `x-request-id`; without \
         the server's read lateness = counted from the kernel's receive time instead of the server's read.\n\n",
    );
    out
}

fn shards_table(runs: &[ShardedRun]) -> String {
    let mut out = String::new();
    let mut rows = Vec::new();
    for run in runs.iter().filter(|r| r.processes > 1) {
        for (shard, join) in &run.per_shard {
            let usage = run.usages.get(*shard as usize);
            let part = run
                .report
                .as_ref()
                .and_then(|r| r.parts.iter().find(|p| p.shard == *shard));
            let cpu = usage.map(|u| u.cpu().as_secs_f64());
            rows.push(vec![
                run.label(),
                shard.to_string(),
                count(join.records as u64),
                spread(&join.open_loop.lag, 3),
                format!(
                    "{} / {}",
                    opt(part.and_then(|p| p.schedule_lag_p50_ms), 3),
                    opt(part.and_then(|p| p.schedule_lag_p99_ms), 3)
                ),
                opt(part.and_then(|p| p.start_late_ms), 3),
                opt(part.and_then(|p| p.start_ms), 3),
                opt(part.map(|p| p.clock_offset_ns as f64 / 1e6), 3),
                opt(part.map(|p| p.clock_rtt_ns as f64 / 1e3), 1),
                num(join.accuracy.decomposition.send_delay.p50 * 1e3, 1),
                opt(cpu, 2),
                opt(cpu.map(|c| c * 1e6 / join.records.max(1) as f64), 1),
                opt(part.and_then(|p| p.cpu_cores), 2),
                opt(usage.map(|u| u.max_rss_kib as f64 / 1024.0), 1),
                format!(
                    "{} / {}",
                    num(join.accuracy.ttft_error.p50, 2),
                    num(join.accuracy.ttft_error.p99, 2)
                ),
            ]);
        }
    }
    if rows.is_empty() {
        return out;
    }
    table(
        &mut out,
        &[
            "run",
            "shard",
            "records",
            "schedule lag p50 / p99 / max (ms)",
            "goodput's `schedule_lag_p50_ms` / `p99_ms`",
            "`start_late_ms`",
            "`start_ms`",
            "`clock_offset_ns` (ms)",
            "`clock_rtt_ns` (µs)",
            "send delay p50 (µs)",
            "CPU (s)",
            "CPU per record (µs)",
            "`cpu_cores`",
            "peak RSS (MiB)",
            "TTFT error p50 / p99 (ms)",
        ],
        &rows,
    );
    out.push_str(
        "Per shard, from the merged records' `shard` and the result's `shards.parts`. CPU and peak RSS \
         of each shard's process from `wait4`; CPU per record = that / the records it sent (each shard \
         also builds the whole plan's requests and drops the others'). Send delay = the kernel's receive \
         time of the request at the server − the record's send time placed on shard 0's clock: every \
         process here reads one `CLOCK_MONOTONIC`, so a shard's send delay minus shard 0's is the error \
         of its measured clock offset (at most half its round trip, if the offset is right).\n\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Endpoint;

    fn entry(id: u64, recv_ms: u64) -> RequestLog {
        let ms = 1_000_000;
        RequestLog {
            request_id: Some(format!("run-{id}")),
            endpoint: Endpoint::Completions,
            streamed: true,
            recv_ns: recv_ms * ms,
            kernel_rx_ns: None,
            token_ns: vec![(recv_ms + 100) * ms, (recv_ms + 110) * ms],
            complete: true,
        }
    }

    #[test]
    fn records_are_grouped_by_their_shard_and_joined_by_request_id() {
        // Request k sent by shard k mod 2; shard 1's TTFTs are 1 ms long.
        let log: Vec<RequestLog> = (0..6).map(|k| entry(k, 10 * k)).collect();
        let records: Vec<ClientRecord> = (0..6)
            .map(|k| {
                let line = format!(
                    r#"{{"request_id":{k},"shard":{},"ok":true,"phase":"measure","schedule_lag_ms":{},"ttft_ms":{}}}"#,
                    k % 2,
                    k as f64 / 10.0,
                    100.0 + (k % 2) as f64
                );
                serde_json::from_str(&line).unwrap()
            })
            .collect();
        let shards = per_shard(&records, &log, None);
        assert_eq!(shards.keys().copied().collect::<Vec<_>>(), vec![0, 1]);
        let (zero, one) = (&shards[&0], &shards[&1]);
        assert_eq!((zero.records, one.records), (3, 3));
        assert_eq!(zero.accuracy.matched, 3);
        assert!((zero.accuracy.ttft_error.max - 0.0).abs() < 1e-9);
        assert!((one.accuracy.ttft_error.p50 - 1.0).abs() < 1e-9);
        // Shard 1 sent requests 1, 3, 5: lags 0.1, 0.3, 0.5 ms.
        assert!((one.open_loop.lag.max - 0.5).abs() < 1e-9);
        assert!((one.open_loop.lag.p50 - 0.3).abs() < 1e-9);
        // One process's records carry no shard: no per-shard figures.
        let mut alone = records.clone();
        alone.iter_mut().for_each(|r| r.shard = None);
        assert!(per_shard(&alone, &log, None).is_empty());
    }
}
