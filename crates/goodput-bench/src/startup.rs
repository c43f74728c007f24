//! `bench startup`: how long each client takes from its spawn to its first
//! request, and its peak RSS when it sends one request, beside each other
//! (goodput, vllm-bench, the bytes-only floor; issue 22).
//!
//! Each run is a closed-loop run of 1 stream and 1 request of a few tokens
//! against a fresh reference server, measured as every client run is
//! ([`crate::experiments::closed_loop`]: the client is spawned by the
//! measuring helper, `wait4` gives its CPU and peak RSS). Start-up =
//! arrival of the first request at the server − the spawn instant, both on
//! `CLOCK_MONOTONIC`: the spawn instant is taken by the helper right before it
//! calls `spawn` (fork and exec included in what follows); the arrival is the
//! kernel's receive time of the bytes that completed the request
//! (`SO_TIMESTAMPNS`; the server's user-space read time when the kernel gave
//! none). Two arrivals are reported: the first completion request of any
//! kind (goodput's is its probe) and the first benchmark request (the first
//! whose `x-request-id` ends in an integer). vllm-bench's other requests
//! before its first (`POST /tokenize` to check prompt lengths, `GET /metrics`
//! for speculative decoding) are answered 404 by the reference server and
//! not logged: they are inside its start-up. goodput runs with `--warmup 0`
//! (one request means one); its probe stays, part of its start-up.

use std::fmt::Write as _;

use crate::experiments::{self, BenchEnv, ClientKind, ClientRun};
use crate::report::{mib, num, table};
use crate::stats::Spread;

/// What `bench startup` measures.
#[derive(Debug, Clone, clap::Args)]
pub struct StartupArgs {
    /// Runs of each client, interleaved; medians follow.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Output tokens of the one request.
    #[arg(long, default_value_t = 16)]
    pub tokens: u64,
    /// Clients, comma-separated: bytes, goodput, vllm-bench (hyper too).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "bytes,goodput,vllm-bench"
    )]
    pub clients: Vec<crate::ClientName>,
    /// goodput counts tokens with the word-level tokenizer.json that
    /// vllm-bench is given (1,001 tokens), instead of its default o200k:
    /// the same tokenizer on both sides. o200k's compiled table is 7.7 MB
    /// of the binary, and the few hundred lookups of a prompt fault most of
    /// it in (the kernel maps 16 pages around each fault).
    #[arg(long)]
    pub same_tokenizer: bool,
}

/// Runs every client `runs` times, interleaved.
pub fn run(env: &BenchEnv, args: &StartupArgs) -> anyhow::Result<Vec<ClientRun>> {
    let kinds: Vec<ClientKind> = args.clients.iter().map(|c| c.kind()).collect();
    if kinds.contains(&ClientKind::VllmBench) {
        crate::vllm_bench::require(env.vllm_bench.as_deref())?;
    }
    // One request means one: goodput's warm-up (by default one request per
    // stream, at least 4) is turned off, as vllm-bench's is by default. Its
    // probe (a 1-token completion request before the run) stays: it is part
    // of goodput's start-up.
    let mut env = env.clone();
    env.goodput_args = vec!["--warmup".to_string(), "0".to_string()];
    if args.same_tokenizer {
        let tokenizer = crate::vllm_bench::write_tokenizer(&env.work_dir)?;
        env.goodput_args.push("--tokenizer".to_string());
        env.goodput_args
            .push(tokenizer.join("tokenizer.json").display().to_string());
    }
    let env = &env;
    let mut runs = Vec::new();
    for repetition in 0..args.runs.max(1) {
        for &kind in &kinds {
            runs.push(experiments::closed_loop(
                env,
                kind,
                1,
                1,
                args.tokens,
                repetition,
            )?);
        }
    }
    Ok(runs)
}

/// One row per run, then medians per client.
pub fn report(runs: &[ClientRun]) -> String {
    let mut out = String::from("### Start-up and a 1-request run\n\n");
    let to_completion = |r: &ClientRun| {
        r.extras
            .first_requests
            .and_then(|f| f.until_first_completion_ms())
    };
    let to_benchmark = |r: &ClientRun| {
        r.extras
            .first_requests
            .and_then(|f| f.until_first_benchmark_ms())
    };
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.client.name().to_string(),
                (r.repetition + 1).to_string(),
                crate::report::opt(to_completion(r), 2),
                crate::report::opt(to_benchmark(r), 2),
                num(r.usage.wall.as_secs_f64() * 1e3, 1),
                num(r.usage.user.as_secs_f64() * 1e3, 1),
                num(r.usage.sys.as_secs_f64() * 1e3, 1),
                mib(r.usage.max_rss_kib),
            ]
        })
        .collect();
    let header = [
        "client",
        "run",
        "spawn → first completion request (ms)",
        "spawn → first benchmark request (ms)",
        "wall (ms)",
        "CPU user (ms)",
        "CPU sys (ms)",
        "peak RSS (MiB)",
    ];
    table(&mut out, &header, &rows);
    let mut clients: Vec<ClientKind> = Vec::new();
    for r in runs {
        if !clients.contains(&r.client) {
            clients.push(r.client);
        }
    }
    let median = |client: ClientKind, figure: &dyn Fn(&ClientRun) -> Option<f64>| {
        let values: Vec<f64> = runs
            .iter()
            .filter(|r| r.client == client)
            .filter_map(figure)
            .collect();
        Spread::of(&values).p50
    };
    let rows: Vec<Vec<String>> = clients
        .iter()
        .map(|&c| {
            let n = runs.iter().filter(|r| r.client == c).count();
            vec![
                c.name().to_string(),
                n.to_string(),
                num(median(c, &to_completion), 2),
                num(median(c, &to_benchmark), 2),
                num(median(c, &|r| Some(r.usage.wall.as_secs_f64() * 1e3)), 1),
                num(median(c, &|r| Some(r.usage.cpu().as_secs_f64() * 1e3)), 1),
                num(median(c, &|r| Some(r.usage.max_rss_kib as f64 / 1024.0)), 1),
            ]
        })
        .collect();
    out.push_str("Medians:\n\n");
    table(
        &mut out,
        &[
            "client",
            "runs",
            "spawn → first completion request (ms)",
            "spawn → first benchmark request (ms)",
            "wall (ms)",
            "CPU user + sys (ms)",
            "peak RSS (MiB)",
        ],
        &rows,
    );
    let _ = writeln!(
        out,
        "Spawn = `CLOCK_MONOTONIC` right before the measuring helper's `spawn` of the client (fork and \
         exec follow); first request = the kernel's receive time of the bytes that completed it at the \
         reference server (`SO_TIMESTAMPNS`, else the server's read time). First completion request = \
         any `POST /v1/completions` (goodput's probe); first benchmark request = the first whose \
         `x-request-id` ends in an integer. Wall = spawn to exit (the request, its tokens at the \
         server's pace, and shut-down included). Peak RSS = `ru_maxrss` of the client process.\n"
    );
    out
}
