//! `goodput tune`: a server command run over a grid of its configurations
//! (`--serve 'vllm serve M --max-num-seqs {64,128,256} --port {port}'`),
//! each measured by a `goodput sweep` against it, then ranked.
//!
//! For each configuration, in order: a free loopback port for `{port}`;
//! the server started in a process group of its own, its output in
//! `DIR/NAME.log`; a wait until it answers (`/health` where it has one,
//! then `/v1/models`); `goodput sweep FLAGS --url http://127.0.0.1:PORT
//! --out DIR/NAME.json` run as a child of this process (every sweep flag
//! as `goodput sweep` takes it); the server's group stopped (SIGTERM, then
//! SIGKILL after `--grace`). A configuration whose server exits or does not
//! answer is recorded as failed with its log's tail, and the grid goes on.
//! `DIR/tune.json` is written after every configuration; `--resume` skips
//! those it records as measured. A signal stops the sweep running, then
//! the server, and ends with 130: no process outlives the command.

mod grid;
mod server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use goodput_core::output::{Exporter, Html, Saved};
use goodput_core::plan::SweepResult;

pub use grid::{expand, with_port, Config};

/// `goodput tune`'s flags.
#[derive(Args, Debug, Clone)]
pub struct TuneArgs {
    /// The server command, run with `sh -c`: `{a,b,c}` is an axis of the grid, `{port}` the port goodput picks.
    #[arg(long, value_name = "COMMAND")]
    pub serve: String,
    /// Where each configuration's sweep (NAME.json), server log (NAME.log), tune.json and tune.html go.
    #[arg(long, default_value = "goodput-tune")]
    pub dir: PathBuf,
    /// Skip the configurations tune.json in --dir records as measured.
    #[arg(long)]
    pub resume: bool,
    /// How long a server may take to answer /v1/models.
    #[arg(long, default_value = "300s", value_parser = goodput_core::units::parse_positive_duration)]
    pub ready_timeout: Duration,
    /// Between SIGTERM and SIGKILL when a server is stopped.
    #[arg(long, default_value = "10s", value_parser = goodput_core::units::parse_positive_duration)]
    pub grace: Duration,
    /// `goodput sweep`'s flags for every configuration (no --url): --search goodput with --slo, or --frontier (the default without --search, --rates or --concurrencies).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "SWEEP FLAGS"
    )]
    pub sweep: Vec<String>,
}

/// What became of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// `max-num-seqs=64`: the grid's values.
    pub name: String,
    /// The command run, `{port}` filled in.
    pub command: String,
    /// `measured`, `failed` or `interrupted`.
    pub status: String,
    /// Why it failed, with the server log's last lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The sweep's results file.
    pub sweep_file: Option<PathBuf>,
    /// The server's log.
    pub log_file: PathBuf,
    /// The sweep's goodput (its unit's rate; None without one or when
    /// inconclusive).
    pub goodput: Option<f64>,
    /// `goodput` / the GPUs (`--gpus`).
    pub goodput_per_gpu: Option<f64>,
    /// `goodput` per unit of `--cost-per-hour`: rate a currency unit an hour buys.
    pub goodput_per_cost_per_hour: Option<f64>,
    /// The most output tokens/s a point gave (meeting the SLO, where there is one).
    pub best_output_throughput: Option<f64>,
}

/// The whole tune: every configuration's outcome, ranked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Tune {
    pub kind: String,
    pub serve: String,
    pub sweep_flags: Vec<String>,
    /// By goodput (else by best output throughput), the failed last.
    pub configurations: Vec<Outcome>,
    /// The signal that stopped it, if one did.
    #[serde(default)]
    pub interrupted: bool,
}

/// The last signal received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

fn signalled() -> bool {
    SIGNAL.load(Ordering::SeqCst) != 0
}

/// Run the grid, each sweep by this program (`goodput sweep`). Returns the
/// exit code: 0 when a configuration was measured, 3 when none was, 130 on
/// a signal, 2 for a bad --serve or --dir.
pub fn main(args: TuneArgs) -> i32 {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("goodput"));
    let goodput = exe.as_path();
    let configs = match expand(&args.serve) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    if !args.serve.contains("{port}") {
        eprintln!("error: --serve must put the server on {{port}}, the port goodput picks (e.g. --port {{port}})");
        return 2;
    }
    if let Err(e) = std::fs::create_dir_all(&args.dir) {
        eprintln!("error: creating {}: {e}", args.dir.display());
        return 2;
    }
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let index = args.dir.join("tune.json");
    let before: Vec<Outcome> = args
        .resume
        .then(|| std::fs::read(&index).ok())
        .flatten()
        .and_then(|b| serde_json::from_slice::<Tune>(&b).ok())
        .map(|t| t.configurations)
        .unwrap_or_default();
    let mut tune = Tune {
        kind: "tune".into(),
        serve: args.serve.clone(),
        sweep_flags: args.sweep.clone(),
        ..Tune::default()
    };
    for (i, config) in configs.iter().enumerate() {
        let name = config.name();
        if let Some(done) = before
            .iter()
            .find(|o| o.name == name && o.status == "measured")
        {
            eprintln!("goodput: tune: {name}: measured before (--resume), skipped");
            tune.configurations.push(done.clone());
            continue;
        }
        if signalled() {
            break;
        }
        eprintln!(
            "goodput: tune: configuration {} of {}: {name}",
            i + 1,
            configs.len()
        );
        let outcome = measure(&args, config, &slug(i, config), goodput);
        if let Some(e) = &outcome.error {
            eprintln!("goodput: tune: {name}: {e}");
        }
        tune.configurations.push(outcome);
        write(&args.dir, &mut tune);
    }
    tune.interrupted = signalled();
    write(&args.dir, &mut tune);
    print!("{}", ranking(&tune));
    if tune.interrupted {
        return 130;
    }
    if tune.configurations.iter().any(|o| o.status == "measured") {
        0
    } else {
        3
    }
}

/// A file-name stem for configuration `i`: `03-max-num-seqs-64`.
fn slug(i: usize, c: &Config) -> String {
    let mut s = format!("{:02}", i + 1);
    for (k, v) in &c.values {
        s.push('-');
        s.push_str(&format!("{k}-{v}"));
    }
    s.chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '-' || ch == '.' {
                ch
            } else {
                '_'
            }
        })
        .take(80)
        .collect()
}

/// The sweep's flags: the user's, a mode when none is given, the server's URL
/// and the results file.
fn sweep_argv(flags: &[String], url: &str, out: &Path) -> Vec<String> {
    let mut v = vec!["sweep".to_string()];
    v.extend(flags.iter().cloned());
    let has = |f: &str| {
        flags
            .iter()
            .any(|a| a == f || a.starts_with(&format!("{f}=")))
    };
    if !has("--search") && !has("--rates") && !has("--concurrencies") && !has("--frontier") {
        v.push("--frontier".into());
    }
    v.extend(["--url".into(), url.into(), "--out".into()]);
    v.push(out.display().to_string());
    v
}

/// Start one configuration's server, sweep it, stop it.
fn measure(args: &TuneArgs, config: &Config, slug: &str, goodput: &Path) -> Outcome {
    let log = args.dir.join(format!("{slug}.log"));
    let out = args.dir.join(format!("{slug}.json"));
    let mut outcome = Outcome {
        name: config.name(),
        command: config.command.clone(),
        status: "failed".into(),
        error: None,
        sweep_file: None,
        log_file: log.clone(),
        goodput: None,
        goodput_per_gpu: None,
        goodput_per_cost_per_hour: None,
        best_output_throughput: None,
    };
    let port = match server::free_port() {
        Ok(p) => p,
        Err(e) => {
            outcome.error = Some(format!("no free port: {e}"));
            return outcome;
        }
    };
    let command = with_port(&config.command, port);
    outcome.command = command.clone();
    let mut srv = match server::Server::start(&command, &log) {
        Ok(s) => s,
        Err(e) => {
            outcome.error = Some(format!("could not start `sh -c`: {e}"));
            return outcome;
        }
    };
    if let Err(e) = srv.wait_ready(port, args.ready_timeout, &signalled) {
        srv.stop(args.grace);
        outcome.status = if signalled() { "interrupted" } else { "failed" }.into();
        outcome.error = Some(format!("{e}; its log ends:\n{}", server::tail(&log, 8)));
        return outcome;
    }
    let url = format!("http://127.0.0.1:{port}");
    let code = run_sweep(goodput, &sweep_argv(&args.sweep, &url, &out), &mut srv);
    let alive = srv.running();
    srv.stop(args.grace);
    if let Ok(Saved::Sweep(s)) = Saved::read(&out) {
        outcome.sweep_file = Some(out);
        fill(&mut outcome, &s);
    }
    outcome.status = match code {
        _ if signalled() => "interrupted",
        Some(0 | 1) if outcome.sweep_file.is_some() => "measured",
        _ => "failed",
    }
    .into();
    if outcome.status == "failed" {
        let why = if alive {
            format!("the sweep ended with {code:?}")
        } else {
            "the server died during the sweep".to_string()
        };
        outcome.error = Some(format!("{why}; its log ends:\n{}", server::tail(&log, 8)));
    }
    outcome
}

/// Run the sweep as a child; a signal to this process is passed on to it,
/// once. The child has a process group of its own, so that a Ctrl-C at the
/// terminal reaches it only through this process (a second signal would
/// stop a sweep before it wrote what it measured).
fn run_sweep(goodput: &Path, argv: &[String], srv: &mut server::Server) -> Option<i32> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(goodput)
        .args(argv)
        .process_group(0)
        .spawn()
        .ok()?;
    let mut passed = false;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code().or(Some(130));
        }
        let sig = SIGNAL.load(Ordering::SeqCst);
        if sig != 0 && !passed {
            // SAFETY: a signal to the child this function started.
            unsafe { libc::kill(child.id() as libc::pid_t, sig) };
            passed = true;
        }
        // A server that died ends the sweep's usefulness, not the sweep:
        // its requests fail and it ends on its own.
        let _ = srv.running();
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ranking figures of one sweep.
fn fill(o: &mut Outcome, s: &SweepResult) {
    let cost = s.points.first().and_then(|p| p.result.cost.as_ref());
    let gpus = f64::from(cost.map_or(1, |c| c.spec.gpus.max(1)));
    o.goodput = s
        .goodput
        .as_ref()
        .filter(|g| !g.inconclusive)
        .map(|g| g.rate);
    o.goodput_per_gpu = o.goodput.map(|g| g / gpus);
    o.goodput_per_cost_per_hour = o
        .goodput
        .zip(cost.and_then(|c| c.spec.per_hour))
        .map(|(g, c)| g / c);
    o.best_output_throughput = s
        .points
        .iter()
        .filter(|p| p.meets != Some(false))
        .map(|p| p.result.metrics.throughput.output.value)
        .reduce(f64::max);
}

/// Rank (by goodput, else by best throughput; failures last), write
/// tune.json and tune.html (every sweep overlaid).
fn write(dir: &Path, tune: &mut Tune) {
    let key = |o: &Outcome| -> f64 {
        if o.status != "measured" {
            return f64::NEG_INFINITY;
        }
        o.goodput.or(o.best_output_throughput).unwrap_or(-1.0)
    };
    tune.configurations
        .sort_by(|a, b| key(b).total_cmp(&key(a)));
    if let Ok(bytes) = serde_json::to_vec_pretty(tune) {
        let _ = std::fs::write(dir.join("tune.json"), bytes);
    }
    let items: Vec<(String, Saved)> = tune
        .configurations
        .iter()
        .filter_map(|o| Some((o.name.clone(), Saved::read(o.sweep_file.as_ref()?).ok()?)))
        .collect();
    if !items.is_empty() {
        let _ = std::fs::write(dir.join("tune.html"), Html.to_bytes(&items));
    }
}

/// The ranking table.
fn ranking(tune: &Tune) -> String {
    let by_goodput = tune.configurations.iter().any(|o| o.goodput.is_some());
    let opt = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2}"));
    let mut out = format!(
        "tune: {} configurations of `{}`, ranked by {}\n{:>4}  {:<28} {:<11} {:>10} {:>10} {:>12} {:>14}  sweep\n",
        tune.configurations.len(),
        tune.serve,
        if by_goodput {
            "goodput"
        } else {
            "best output tokens/s"
        },
        "rank",
        "configuration",
        "status",
        "goodput",
        "per GPU",
        "per cost/h",
        "best tok/s",
    );
    for (i, o) in tune.configurations.iter().enumerate() {
        let rank = if o.status == "measured" {
            (i + 1).to_string()
        } else {
            "-".into()
        };
        out.push_str(&format!(
            "{rank:>4}  {:<28} {:<11} {:>10} {:>10} {:>12} {:>14}  {}\n",
            o.name,
            o.status,
            opt(o.goodput),
            opt(o.goodput_per_gpu),
            opt(o.goodput_per_cost_per_hour),
            opt(o.best_output_throughput),
            o.sweep_file.as_ref().map_or_else(
                || o.log_file.display().to_string(),
                |p| p.display().to_string()
            ),
        ));
    }
    if tune.interrupted {
        out.push_str("tune: interrupted; --resume carries on from what is measured\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_gets_a_mode_the_url_and_the_file() {
        let out = Path::new("d/01.json");
        let v = sweep_argv(&["--slo".into(), "ttft:p99<=1s".into()], "http://x", out);
        assert_eq!(
            v,
            [
                "sweep",
                "--slo",
                "ttft:p99<=1s",
                "--frontier",
                "--url",
                "http://x",
                "--out",
                "d/01.json"
            ]
        );
        let v = sweep_argv(&["--search".into(), "goodput".into()], "u", out);
        assert!(!v.contains(&"--frontier".to_string()));
        let c = expand("s --max-num-seqs {8,32} --port {port}").unwrap();
        assert_eq!(slug(1, &c[1]), "02-max-num-seqs-32");
    }
}
