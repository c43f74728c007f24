//! Sharded runs in tests: shard processes started the way a Kubernetes
//! Indexed Job starts its pods (the same command line, the index in
//! `JOB_COMPLETION_INDEX`, the coordinator's address).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{argv, goodput_command, read_records};

/// A port free a moment ago on loopback, for shard 0 to listen on (every
/// shard must be told it before any starts, as a pod spec is).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One shard process: its child and where its stderr goes.
pub struct Shard {
    pub child: Child,
    pub log: PathBuf,
}

/// Start shard `index` of `args` (the same for every shard) the way a pod
/// is started: its index only in the environment.
pub fn start_shard(args: &[String], index: u32, dir: &Path) -> Shard {
    let log = dir.join(format!("shard-{index}.log"));
    let out = dir.join(format!("shard-{index}.stdout"));
    let child = goodput_command()
        .args(args)
        .env("JOB_COMPLETION_INDEX", index.to_string())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn a shard");
    Shard { child, log }
}

/// Wait for a shard to exit (at most `within`), returning its exit code
/// and its stderr.
pub fn wait(shard: &mut Shard, within: Duration) -> (i32, String) {
    let start = Instant::now();
    loop {
        if let Some(s) = shard.child.try_wait().unwrap() {
            let log = std::fs::read_to_string(&shard.log).unwrap_or_default();
            return (s.code().unwrap_or(-1), log);
        }
        if start.elapsed() > within {
            let _ = shard.child.kill();
            let log = std::fs::read_to_string(&shard.log).unwrap_or_default();
            panic!("a shard did not end within {within:?}:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The sharded command line: `args` plus the shard flags, parts and outputs in `dir`.
pub fn sharded(args: &[&str], shards: u32, port: u16, dir: &Path) -> Vec<String> {
    let mut v = argv(args);
    v.extend(argv(&[
        "--shards",
        &shards.to_string(),
        "--coordinator",
        &format!("127.0.0.1:{port}"),
        "--part",
        dir.join("part-{shard}.jsonl").to_str().unwrap(),
        "--out",
        dir.join("result-{shard}.json").to_str().unwrap(),
        "--records",
        dir.join("records-{shard}.jsonl").to_str().unwrap(),
        "--html",
        dir.join("report-{shard}.html").to_str().unwrap(),
    ]));
    v
}

/// Run all `shards` of `args` to their end (shard 0 last to start: the
/// others must wait for it); returns each shard's exit code and stderr.
pub fn run_shards(args: &[String], shards: u32, dir: &Path) -> Vec<(i32, String)> {
    let mut procs: Vec<Shard> = (1..shards).map(|i| start_shard(args, i, dir)).collect();
    std::thread::sleep(Duration::from_millis(300));
    procs.insert(0, start_shard(args, 0, dir));
    procs
        .iter_mut()
        .map(|p| wait(p, Duration::from_secs(240)))
        .collect()
}

/// A shard's part file read as raw JSON lines.
pub fn part_lines(path: &Path) -> Vec<Value> {
    read_records(path)
}

/// The raw records of every part, with their shard, and each one's
/// scheduled time placed on shard 0's clock (`sched_ns`).
pub fn placed_records(dir: &Path, shards: u32) -> Vec<(u32, Value)> {
    let mut all = Vec::new();
    for i in 0..shards {
        let lines = part_lines(&dir.join(format!("part-{i}.jsonl")));
        let header = &lines[0]["part"];
        assert_eq!(header["shard"]["shard"], i);
        let offset = header["clock_offset_ns"].as_i64().unwrap();
        assert!(
            lines.last().unwrap().get("end").is_some(),
            "shard {i}'s part has its end"
        );
        for l in &lines {
            if let Some(r) = l.get("record") {
                let mut r = r.clone();
                r["sched_ns"] = Value::from(r["t_sched"].as_i64().unwrap() - offset);
                all.push((i, r));
            }
        }
    }
    all
}

/// `run_shards`, every shard ending with exit 0 (else a panic with its log).
pub fn run_shards_ok(args: &[String], shards: u32, dir: &Path) {
    for (i, (code, log)) in run_shards(args, shards, dir).iter().enumerate() {
        assert_eq!(*code, 0, "shard {i}:\n{log}");
    }
}

/// The built-in simulator on a loopback port, `time_scale` times real
/// time, and its URL: the one server every shard of a test loads.
pub fn simulator(time_scale: f64) -> (goodput_sim::SimServer, String) {
    let sim = goodput_sim::SimServer::spawn(
        goodput_sim::SimConfig {
            time_scale,
            ..Default::default()
        },
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .unwrap();
    let url = format!("http://{}", sim.local_addr());
    (sim, url)
}
