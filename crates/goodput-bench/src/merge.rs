//! `bench merge`: the cost of `goodput merge` on a large sharded run.
//!
//! It writes N synthetic part files (1,000,000 records over 4 shards by
//! default), exactly as `goodput run --shards N --part FILE` writes them —
//! the same [`PartLine`] values through the same [`write_line`] — then runs
//! `goodput merge PART... --out FILE --quiet` as a measured child: wall
//! time, CPU and peak RSS from `wait4`. The merged result must count every
//! record as completed, or the run is an error.
//!
//! The records are those of a 2,000 req/s Poisson run of 4-token-ish
//! answers: each has a send a few tens of µs late, a first event ~100 ms
//! later, then one event every ~10 ms, short output text, the server's
//! usage, and its times on its shard's own clock (each shard's clock is
//! offset from shard 0's by whole seconds, as separate processes' are).
//! The merge re-derives every record's metrics with the parts' tokenizer,
//! so each tokenizer named is timed on its own copy of the parts.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
use goodput_core::load::{Arrival, Load};
use goodput_core::load::{ExecSummary, Warmup};
use goodput_core::output::RunConfig;
use goodput_core::plan::ShardOf;
use goodput_core::plan::{write_line, PartEnd, PartHeader, PartLine};
use goodput_core::request::Endpoint;
use goodput_core::request::{Event, RequestRecord, ServerUsage};

use crate::child::{self, ChildCommand, ChildUsage};
use crate::experiments::BenchEnv;
use crate::machine;
use crate::report::{count, mib, num, table};

/// The size of the synthetic run and what to time.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Records in all, shared out over the shards (request k on shard k mod N).
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Part files (shards).
    #[arg(long, default_value_t = 4)]
    pub shards: u32,
    /// Content events (tokens) of each record.
    #[arg(long, default_value_t = 8)]
    pub events: u32,
    /// Tokenizer specs to time, comma-separated; each gets its own parts
    /// (the part header names the tokenizer the merge rebuilds).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,tiktoken:o200k_base"
    )]
    pub tokenizers: Vec<String>,
    /// Also time each merge with `--records FILE` (every merged record written).
    #[arg(long)]
    pub with_records: bool,
    /// Keep the part files afterwards (they are large).
    #[arg(long)]
    pub keep_parts: bool,
    /// Merges of each set of parts, one after another.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
}

/// One timed merge.
#[derive(Debug, Clone)]
pub struct MergeRun {
    /// The parts' tokenizer.
    pub tokenizer: String,
    /// Whether the merged records were written too.
    pub with_records: bool,
    /// Which repetition (0 for the first).
    pub repetition: usize,
    /// Records in the parts.
    pub records: u64,
    /// Bytes of the part files.
    pub part_bytes: u64,
    /// Seconds spent writing the parts (in this process).
    pub write_s: f64,
    /// `completed` of the merged result.
    pub completed: u64,
    /// The merge's cost.
    pub usage: ChildUsage,
    /// CPU the rest of the machine used meanwhile (this bench included).
    pub other_cpu: Option<std::time::Duration>,
}

/// Writes the parts for each tokenizer and times the merges.
pub fn run(env: &BenchEnv, args: &MergeArgs) -> anyhow::Result<Vec<MergeRun>> {
    anyhow::ensure!(args.shards >= 1, "--shards must be at least 1");
    let mut runs = Vec::new();
    for tokenizer in &args.tokenizers {
        let dir = env.work_dir.join(format!(
            "merge-{}-{}",
            args.records,
            tokenizer.replace([':', '/'], "_")
        ));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let started = std::time::Instant::now();
        eprintln!(
            "bench: writing {} records in {} parts to {}",
            count(args.records),
            args.shards,
            dir.display()
        );
        let parts = write_parts(&dir, args, tokenizer)?;
        let write_s = started.elapsed().as_secs_f64();
        let part_bytes = parts
            .iter()
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .sum();
        for repetition in 0..args.repeat.max(1) {
            for with_records in [false, true] {
                if with_records && !args.with_records {
                    continue;
                }
                let mut run = merge_once(env, &dir, &parts, with_records, tokenizer)?;
                run.records = args.records;
                run.part_bytes = part_bytes;
                run.write_s = write_s;
                run.repetition = repetition;
                runs.push(run);
            }
        }
        if !args.keep_parts {
            for p in &parts {
                let _ = std::fs::remove_file(p);
            }
        }
    }
    Ok(runs)
}

/// `goodput merge` of `parts` as a measured child; its merged `completed`.
fn merge_once(
    env: &BenchEnv,
    dir: &Path,
    parts: &[PathBuf],
    with_records: bool,
    tokenizer: &str,
) -> anyhow::Result<MergeRun> {
    anyhow::ensure!(
        env.goodput.is_file(),
        "the goodput binary is not at {}: build it first, or pass --goodput PATH",
        env.goodput.display()
    );
    let out = dir.join("merged.json");
    let records = dir.join("merged.records.jsonl");
    for p in [&out, &records] {
        let _ = std::fs::remove_file(p);
    }
    let mut args = vec!["merge".to_string()];
    args.extend(parts.iter().map(|p| p.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    if with_records {
        args.extend(["--records".to_string(), records.display().to_string()]);
    }
    args.push("--quiet".into());
    let command = ChildCommand {
        program: env.goodput.clone(),
        args,
        env: Vec::new(),
    };
    machine::wait_for_idle(env.idle_wait, crate::experiments::IDLE_THRESHOLD);
    eprintln!("bench: running {}", command.display());
    let machine_before = machine::machine_cpu();
    let label = format!(
        "merge-{}{}",
        tokenizer.replace([':', '/'], "_"),
        if with_records { "-records" } else { "" }
    );
    let usage = child::run_measured(
        &env.bench_exe,
        &command,
        &env.work_dir,
        &label,
        env.time_limit,
    )?;
    let other_cpu = machine_before
        .zip(machine::machine_cpu())
        .map(|(before, after)| after.saturating_sub(before).saturating_sub(usage.cpu()));
    anyhow::ensure!(
        usage.exit_code == Some(0),
        "goodput merge exited with {:?}: {}\n{}",
        usage.exit_code,
        usage.command,
        child::tail(&usage.stderr, 20)
    );
    let text = std::fs::read_to_string(&out)
        .with_context(|| format!("reading the merged result {}", out.display()))?;
    let merged: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", out.display()))?;
    let completed = merged
        .get("completed")
        .and_then(serde_json::Value::as_u64)
        .context("the merged result has no `completed`")?;
    eprintln!(
        "bench: merged {completed} records in {:.2} s, CPU {:.2} s, peak RSS {:.1} MiB",
        usage.wall.as_secs_f64(),
        usage.cpu().as_secs_f64(),
        usage.max_rss_kib as f64 / 1024.0
    );
    if with_records {
        let _ = std::fs::remove_file(&records);
    }
    Ok(MergeRun {
        tokenizer: tokenizer.to_string(),
        with_records,
        repetition: 0,
        records: 0,
        part_bytes: 0,
        write_s: 0.0,
        completed,
        usage,
        other_cpu,
    })
}

/// A small deterministic generator (SplitMix64): the same parts every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Exponential with this mean.
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.unit().ln()
    }
}

/// The synthetic run's rate, req/s.
const RATE: f64 = 2000.0;
/// Shard i's clock reads shard 0's plus this many ns times i (processes
/// started apart), plus a base so that every time is positive.
const SHARD_CLOCK_STEP_NS: u64 = 1_234_567_891;
const CLOCK_BASE_NS: u64 = 5_000_000_000;
/// Words of the output text: each one token in o200k_base.
const WORDS: [&str; 8] = [
    " the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog",
];

/// Writes `args.shards` part files into `dir`; returns their paths.
fn write_parts(dir: &Path, args: &MergeArgs, tokenizer: &str) -> anyhow::Result<Vec<PathBuf>> {
    // The whole plan's intended send times, ns after the common start.
    let mut rng = Rng(0x5EED);
    let mut t = 0.0f64;
    let sched: Vec<u64> = (0..args.records)
        .map(|_| {
            let at = t;
            t += rng.exp(1e9 / RATE);
            at as u64
        })
        .collect();
    let mut paths = Vec::new();
    for shard in 0..args.shards {
        let path = dir.join(format!("part-{shard}.jsonl"));
        write_part(&path, args, tokenizer, shard, &sched)?;
        paths.push(path);
    }
    Ok(paths)
}

/// One shard's part: header, measured start, records in the order they
/// finished, end.
fn write_part(
    path: &Path,
    args: &MergeArgs,
    tokenizer: &str,
    shard: u32,
    sched: &[u64],
) -> anyhow::Result<()> {
    let start_ns = CLOCK_BASE_NS + shard as u64 * SHARD_CLOCK_STEP_NS;
    let mut rng = Rng(0xC0FFEE ^ shard as u64);
    let mut records: Vec<RequestRecord> = (shard as u64..args.records)
        .step_by(args.shards as usize)
        .map(|k| {
            record(
                k,
                shard,
                start_ns + sched[k as usize],
                args.events,
                &mut rng,
            )
        })
        .collect();
    records.sort_by_key(|r| r.t_done);
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut buf = Vec::with_capacity(4096);
    let mut put = |line: PartLine, out: &mut std::io::BufWriter<std::fs::File>| {
        buf.clear();
        write_line(&mut buf, &line);
        out.write_all(&buf)
    };
    put(
        PartLine::Part(Box::new(header(args, tokenizer, shard))),
        &mut out,
    )?;
    if let Some(first) = records.iter().map(|r| r.t_sched).min() {
        put(PartLine::MeasureStart(first), &mut out)?;
    }
    let sent = records.len() as u64;
    let last = records.last().map_or(start_ns, |r| r.t_done);
    for r in records {
        put(PartLine::Record(Box::new(r)), &mut out)?;
    }
    let end = PartEnd {
        exec: ExecSummary {
            sent_measured: sent,
            ..ExecSummary::default()
        },
        start_ns,
        cpu_s: Some(0.1 * (last - start_ns) as f64 / 1e9),
        wall_s: (last - start_ns) as f64 / 1e9,
    };
    put(PartLine::End(Box::new(end)), &mut out)?;
    out.flush()
        .with_context(|| format!("writing {}", path.display()))
}

/// Request `k` of the plan, sent by `shard` at `t_sched` (its clock),
/// answered with `tokens` events.
fn record(k: u64, shard: u32, t_sched: u64, tokens: u32, rng: &mut Rng) -> RequestRecord {
    let t_send = t_sched + 20_000 + rng.exp(40_000.0) as u64;
    let first = t_send + 100_000_000 + rng.exp(1_500_000.0) as u64;
    let mut text = String::new();
    let events: Vec<Event> = (0..tokens)
        .map(|i| {
            text.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
            Event {
                at_ns: first + i as u64 * 10_000_000 + rng.exp(200_000.0) as u64,
                text_end: text.len() as u32,
                usage_completion_tokens: None,
                reasoning: false,
            }
        })
        .collect();
    let t_done = events.last().map_or(first, |e| e.at_ns) + 150_000;
    RequestRecord {
        request_id: k,
        shard,
        t_sched,
        t_send: Some(t_send),
        t_head: Some(t_send + 900_000),
        t_done,
        events,
        output_text: text,
        usage: Some(ServerUsage {
            prompt_tokens: Some(32),
            completion_tokens: Some(tokens),
            reasoning_tokens: None,
            cached_tokens: None,
        }),
        finish_reason: Some("length".into()),
        http_status: Some(200),
        prompt_tokens_client: Some(32),
        max_tokens: Some(tokens),
        streamed: true,
        ..RequestRecord::default()
    }
}

/// The part header of `shard`: the run's configuration as `goodput run
/// --request-rate 2000 --num-prompts N --warmup 0` against a server at
/// 127.0.0.1 would record it.
fn header(args: &MergeArgs, tokenizer: &str, shard: u32) -> PartHeader {
    let load = Load::Open {
        rate: RATE,
        arrival: Arrival::Poisson,
        max_concurrency: None,
    };
    let percentiles = vec![50.0, 90.0, 95.0, 99.0];
    let config = RunConfig {
        url: "http://127.0.0.1:8000".into(),
        endpoint: Endpoint::Completions,
        model: "ref".into(),
        headers: Vec::new(),
        timeout_s: 600.0,
        idle_timeout_s: 60.0,
        load,
        num_prompts: Some(args.records),
        duration_s: None,
        warmup: Warmup::None,
        drain_timeout_s: 30.0,
        seed: 0,
        workload: None,
        stream: true,
        temperature: None,
        min_tokens_sent: true,
        ignore_eos_sent: true,
        tokenizer: tokenizer.to_string(),
        percentiles: percentiles.clone(),
        slo: None,
        cache_bust: true,
        mix: None,
        target: Some(goodput_core::output::Target::Server),
    };
    // What `RunPlan::for_shard` makes of an open loop without warm-up.
    let of = ShardOf {
        shards: args.shards,
        shard,
        senders: args.shards,
        warmup_requests: Some(0),
    };
    PartHeader {
        shard: of,
        run_id: "00000000005eed1e".into(),
        clock_offset_ns: shard as i64 * SHARD_CLOCK_STEP_NS as i64,
        clock_rtt_ns: 60_000,
        load,
        config,
        model: "ref".into(),
        tokenizer: tokenizer.to_string(),
        percentiles,
        started_at: "2026-11-26T00:00:00Z".into(),
    }
}

/// The markdown table of the merges and the commands.
pub fn report(runs: &[MergeRun]) -> String {
    let mut out = String::from("### Merging parts offline\n\n");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let wall = r.usage.wall.as_secs_f64();
            vec![
                format!("`{}`", r.tokenizer),
                (r.repetition + 1).to_string(),
                if r.with_records { "yes" } else { "no" }.to_string(),
                count(r.records),
                num(r.part_bytes as f64 / (1 << 20) as f64, 0),
                count(r.completed),
                num(wall, 2),
                num(r.usage.cpu().as_secs_f64(), 2),
                count((r.records as f64 / wall) as u64),
                mib(r.usage.max_rss_kib),
                num(
                    r.usage.max_rss_kib as f64 * 1024.0 / r.records.max(1) as f64,
                    0,
                ),
                num(r.write_s, 1),
                num(r.other_cpu.map_or(f64::NAN, |d| d.as_secs_f64()), 2),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "tokenizer",
            "run",
            "`--records`",
            "records",
            "parts (MiB)",
            "merged `completed`",
            "wall (s)",
            "CPU (s)",
            "records/s",
            "peak RSS (MiB)",
            "peak RSS per record (bytes)",
            "writing the parts (s, bench)",
            "other CPU (s)",
        ],
        &rows,
    );
    out.push_str(
        "Wall time from spawn to exit, CPU (user + system) and peak RSS of the `goodput merge` process \
         from `wait4`; records/s = records / wall time. The parts are synthetic but written by goodput's \
         own part writer: each record has 8 events, output text, the server's usage, times on its \
         shard's own clock.\n\nCommands run:\n\n```sh\n",
    );
    for r in runs {
        out.push_str(&r.usage.command);
        out.push('\n');
    }
    out.push_str("```\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::plan::Part;

    #[test]
    fn synthetic_parts_read_back_as_whole_parts_of_their_shard() {
        let dir = std::env::temp_dir().join(format!("goodput-bench-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let args = MergeArgs {
            records: 10,
            shards: 3,
            events: 4,
            tokenizers: Vec::new(),
            with_records: false,
            keep_parts: false,
            repeat: 1,
        };
        let paths = write_parts(&dir, &args, "none").unwrap();
        assert_eq!(paths.len(), 3);
        let mut ids = Vec::new();
        for (shard, path) in paths.iter().enumerate() {
            let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
            let part = Part::read(file, "part").unwrap();
            let header = part.header.as_ref().unwrap();
            assert_eq!(header.shard.shard, shard as u32);
            assert_eq!(header.tokenizer, "none");
            let end = part.end.as_ref().expect("an end line");
            assert_eq!(end.exec.sent_measured, part.records.len() as u64);
            // Requests 0..10 round-robin: 4, 3, 3; in the order they finished.
            assert_eq!(part.records.len(), [4, 3, 3][shard]);
            assert!(part.records.windows(2).all(|w| w[0].t_done <= w[1].t_done));
            for r in &part.records {
                assert_eq!(r.request_id % 3, shard as u64);
                assert_eq!(r.events.len(), 4);
                assert_eq!(r.output_text.len(), r.events[3].text_end as usize);
                assert!(r.t_sched >= end.start_ns && r.t_send > Some(r.t_sched));
                ids.push(r.request_id);
            }
        }
        ids.sort();
        assert_eq!(ids, (0..10).collect::<Vec<u64>>());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
