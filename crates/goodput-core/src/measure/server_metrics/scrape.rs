//! The scraper: its own client on the server's `/metrics`, a task that
//! reads it every interval during a run (the baseline as the measured phase
//! starts, the last scrape after it ends), and the running state that turns
//! those scrapes into the run's [`ServerMetrics`].

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::engines::{self, Engine, Snapshot};
use super::parse;
use super::results::{summarise, ServerMetrics, ServerSample};
use crate::load::executor::Progress;
use crate::request::client::{Client, ClientError, ClientOptions};
use crate::request::clock::RunClock;

/// Where the server's metrics are, and how often to look.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeOptions {
    /// The full URL (`http://host:8000/metrics`).
    pub url: String,
    /// Time between scrapes during a run (`--server-metrics-interval`).
    pub interval: Duration,
}

/// A prepared scraper: its own client, the path, the model to filter by.
#[derive(Clone)]
pub struct Scraper {
    client: Client,
    url: String,
    path: String,
    interval: Duration,
    model: Option<String>,
    engine: Option<Engine>,
}

/// Why the server's metrics could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("{0}")]
    Url(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} holds no Prometheus metrics")]
    Empty { url: String },
    #[error("{url} holds no DCGM GPU series (DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, ...)")]
    NoGpus { url: String },
}

/// Split `http://host:port/path` into the base (`http://host:port`) and the path.
fn split_url(url: &str) -> Result<(String, String), ScrapeError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| ScrapeError::Url(format!("invalid metrics URL '{url}': {e}")))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(ScrapeError::Url(format!(
            "invalid metrics URL '{url}': it needs a scheme and a host, for example http://localhost:8000/metrics"
        )));
    };
    let path = match uri.path_and_query().map(|p| p.as_str()) {
        None | Some("") | Some("/") => "/metrics".to_string(),
        Some(p) => p.to_string(),
    };
    Ok((format!("{scheme}://{authority}"), path))
}

/// Check a `--server-metrics` URL (a scheme and a host), for the flag's parser.
pub fn check_url(url: &str) -> Result<(), String> {
    split_url(url).map(|_| ()).map_err(|e| e.to_string())
}

/// The target's own `/metrics`: its scheme and authority, at the root.
pub fn default_url(target_url: &str) -> Option<String> {
    split_url(target_url)
        .ok()
        .map(|(base, _)| format!("{base}/metrics"))
}

/// A client of its own for the metrics at `url`, and the path to read
/// there. The target's credentials go with it only when it is on the
/// target's host and port.
pub(crate) async fn client_for(
    url: &str,
    interval: Duration,
    target: &ClientOptions,
    clock: RunClock,
) -> Result<(Client, String), ScrapeError> {
    let (base, path) = split_url(url)?;
    let same_host = split_url(&target.url).is_ok_and(|(b, _)| b == base);
    let client_opts = ClientOptions {
        url: base,
        api_key: target.api_key.clone().filter(|_| same_host),
        headers: if same_host {
            target.headers.clone()
        } else {
            Vec::new()
        },
        timeout: interval.max(Duration::from_secs(2)),
        ..target.clone()
    };
    Ok((Client::new(client_opts, clock).await?, path))
}

impl Scraper {
    /// Build a client for `opts.url` and read it once: an answer that is
    /// not Prometheus text is an error. The target's credentials go with it
    /// only when it is on the target's host and port.
    pub async fn connect(
        opts: &ScrapeOptions,
        target: &ClientOptions,
        clock: RunClock,
    ) -> Result<Scraper, ScrapeError> {
        let (client, path) = client_for(&opts.url, opts.interval, target, clock).await?;
        let mut scraper = Scraper {
            client,
            url: opts.url.clone(),
            path,
            interval: opts.interval,
            model: None,
            engine: None,
        };
        let first = scraper.scrape().await?;
        scraper.engine = first.engine;
        Ok(scraper)
    }

    /// Keep only the series of this model (where the engine labels by model).
    pub fn set_model(&mut self, model: String) {
        self.model = Some(model);
    }

    /// Requests the server holds right now (running + waiting), from one
    /// scrape; None when it exposes neither gauge or the scrape failed.
    pub async fn queue_now(&self) -> Option<f64> {
        let s = self.scrape().await.ok()?;
        match (s.running, s.waiting) {
            (None, None) => None,
            (r, w) => Some(r.unwrap_or(0.0) + w.unwrap_or(0.0)),
        }
    }

    async fn scrape(&self) -> Result<Snapshot, ScrapeError> {
        let (status, body) = self.client.get_path(&self.path, "metrics").await?;
        if status != 200 {
            return Err(ScrapeError::Status {
                url: self.url.clone(),
                status,
            });
        }
        let text = String::from_utf8_lossy(&body);
        let parsed = parse::parse(&text);
        if parsed.samples.is_empty() {
            return Err(ScrapeError::Empty {
                url: self.url.clone(),
            });
        }
        Ok(engines::snapshot(&parsed.samples, self.model.as_deref()))
    }

    /// Scrape until `stop` fires, then once more; the baseline is taken when
    /// the measured phase starts (`progress.sent_measured` > 0, or at once
    /// with no warm-up).
    pub fn spawn(
        &self,
        progress: Arc<Progress>,
        warmup: bool,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> tokio::task::JoinHandle<ServerMetrics> {
        let scraper = self.clone();
        tokio::spawn(async move { scraper.run(progress, warmup, stop).await })
    }

    async fn run(
        self,
        progress: Arc<Progress>,
        warmup: bool,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> ServerMetrics {
        let mut acc = Acc::new(&self, Instant::now());
        let last = over_the_window(&mut acc, self.interval, &progress, warmup, stop, || {
            self.scrape()
        })
        .await;
        acc.finish(last, Instant::now())
    }
}

/// What a scrape over a run's measured window keeps: a baseline as the
/// measured phase starts, then a sample every interval.
pub(crate) trait Window {
    type Scrape;
    fn has_baseline(&self) -> bool;
    fn baseline(&mut self, s: Self::Scrape, at: Instant);
    fn sample(&mut self, s: Self::Scrape, at: Instant);
}

/// Scrape every `interval` until `stop` fires, the baseline taken when the
/// measured phase starts (`progress.sent_measured` > 0, or at once with no
/// warm-up); returns one last scrape, taken after `stop`.
pub(crate) async fn over_the_window<W: Window, F, Fut>(
    acc: &mut W,
    interval: Duration,
    progress: &Progress,
    warmup: bool,
    mut stop: tokio::sync::oneshot::Receiver<()>,
    scrape: F,
) -> W::Scrape
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = W::Scrape>,
{
    if !warmup {
        acc.baseline(scrape().await, Instant::now());
    }
    let mut next_tick = Instant::now() + interval;
    loop {
        // Poll for the measured phase's start every 10 ms until it has a
        // baseline (atomics only), else sleep to the next tick.
        let wake = if acc.has_baseline() {
            next_tick
        } else {
            (Instant::now() + Duration::from_millis(10)).min(next_tick)
        };
        tokio::select! {
            biased;
            _ = &mut stop => break,
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
        if !acc.has_baseline() && progress.sent_measured.load(Relaxed) > 0 {
            acc.baseline(scrape().await, Instant::now());
            continue;
        }
        if Instant::now() >= next_tick {
            next_tick += interval;
            if next_tick < Instant::now() {
                next_tick = Instant::now() + interval;
            }
            let s = scrape().await;
            acc.sample(s, Instant::now());
        }
    }
    scrape().await
}

impl Window for Acc {
    type Scrape = Result<Snapshot, ScrapeError>;

    fn has_baseline(&self) -> bool {
        self.base.is_some()
    }

    fn baseline(&mut self, s: Self::Scrape, at: Instant) {
        if let Some(s) = self.take(s) {
            self.base = Some((s.clone(), at));
            self.push(&s, at);
        }
    }

    fn sample(&mut self, s: Self::Scrape, at: Instant) {
        if let Some(s) = self.take(s) {
            self.push(&s, at);
        }
    }
}

/// The scraper's running state.
struct Acc {
    out: ServerMetrics,
    /// Samples' times are kept from here until the window's start is known.
    started: Instant,
    base: Option<(Snapshot, Instant)>,
    prev: Option<(Snapshot, Instant)>,
}

impl Acc {
    fn new(s: &Scraper, started: Instant) -> Acc {
        Acc {
            started,
            out: ServerMetrics {
                url: s.url.clone(),
                engine: s.engine,
                interval_s: s.interval.as_secs_f64(),
                scrapes: 0,
                failed_scrapes: 0,
                last_error: None,
                summary: None,
                notes: Vec::new(),
                series: Vec::new(),
            },
            base: None,
            prev: None,
        }
    }

    fn take(&mut self, s: Result<Snapshot, ScrapeError>) -> Option<Snapshot> {
        match s {
            Ok(s) => {
                self.out.scrapes += 1;
                self.out.engine = self.out.engine.or(s.engine);
                self.note(&s.notes);
                Some(s)
            }
            Err(e) => {
                self.out.failed_scrapes += 1;
                self.out.last_error = Some(e.to_string());
                None
            }
        }
    }

    /// Add the notes not said yet (every scrape repeats its own).
    fn note(&mut self, notes: &[String]) {
        for n in notes {
            if !self.out.notes.contains(n) {
                self.out.notes.push(n.clone());
            }
        }
    }

    /// A point, timed from the scraper's start (shifted to the window's
    /// start at the end).
    fn push(&mut self, s: &Snapshot, at: Instant) {
        let t_s = at.saturating_duration_since(self.started).as_secs_f64();
        let preemptions = self
            .base
            .as_ref()
            .and_then(|(b, _)| Some(s.preemptions? - b.preemptions?).filter(|d| *d >= 0.0));
        let rate = self.prev.as_ref().and_then(|(p, t)| {
            let dt = at.checked_duration_since(*t)?.as_secs_f64();
            let d = s.generation_tokens? - p.generation_tokens?;
            (dt > 0.0 && d >= 0.0).then(|| d / dt)
        });
        self.out.series.push(ServerSample {
            t_s,
            running: s.running,
            waiting: s.waiting,
            kv_usage: s.kv_usage,
            preemptions,
            generation_tokens_per_s: rate,
        });
        self.prev = Some((s.clone(), at));
    }

    fn finish(mut self, last: Result<Snapshot, ScrapeError>, at: Instant) -> ServerMetrics {
        let last = self.take(last);
        if let Some(s) = &last {
            self.push(s, at);
        }
        if let Some((_, base_at)) = &self.base {
            let offset = base_at
                .saturating_duration_since(self.started)
                .as_secs_f64();
            for p in &mut self.out.series {
                p.t_s -= offset;
            }
        }
        let (Some((base, base_at)), Some(last)) = (self.base.clone(), last) else {
            self.out.notes.push(match &self.out.last_error {
                Some(e) => format!("no window of server metrics: {e}"),
                None => "no window of server metrics: the measured phase never started".into(),
            });
            return self.out;
        };
        let Some(d) = last.delta(&base) else {
            self.out.notes.push(
                "the server's counters went backwards during the run (a restart?): no window of server metrics".into(),
            );
            return self.out;
        };
        let window_s = at.saturating_duration_since(base_at).as_secs_f64();
        let (summary, notes) = summarise(&d, &self.out.series, window_s);
        self.note(&notes);
        self.out.summary = Some(summary);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;

    #[test]
    fn urls_split_and_default_to_the_root_metrics() {
        assert_eq!(
            split_url("http://h:8000/metrics").unwrap(),
            ("http://h:8000".into(), "/metrics".into())
        );
        assert_eq!(split_url("https://h").unwrap().1, "/metrics");
        assert_eq!(
            default_url("http://127.0.0.1:9/v1").as_deref(),
            Some("http://127.0.0.1:9/metrics")
        );
        assert!(split_url("localhost:8000").is_err());
    }

    /// A scraper's run over two fixture scrapes, `model` asked for.
    fn run_over(t0: &str, t1: &str, model: &str) -> ServerMetrics {
        let read = |t: &str| Ok(engines::snapshot(&parse::parse(t).samples, Some(model)));
        let started = Instant::now();
        let mut acc = Acc {
            out: ServerMetrics {
                url: "u".into(),
                engine: None,
                interval_s: 1.0,
                scrapes: 0,
                failed_scrapes: 0,
                last_error: None,
                summary: None,
                notes: Vec::new(),
                series: Vec::new(),
            },
            started,
            base: None,
            prev: None,
        };
        acc.baseline(read(t0), started);
        acc.sample(read(t0), started + Duration::from_secs(1));
        acc.finish(read(t1), started + Duration::from_secs(2))
    }

    #[test]
    fn notes_from_the_scrapes_and_the_window_reach_the_results_once() {
        let m = run_over(fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1, "sql-lora");
        let s = m.summary.as_ref().expect("a window");
        assert_eq!(s.prefix_cache_hit_share, Some(0.3));
        assert_eq!(s.prompt_tokens_cached, Some(6000.0));
        let count = |what: &str| m.notes.iter().filter(|n| n.contains(what)).count();
        // Three scrapes each fell back on every model: said once.
        assert_eq!(count("sql-lora"), 1, "{:?}", m.notes);
        assert_eq!(count("aborted 2 requests"), 1, "{:?}", m.notes);
        assert_eq!(count("per step"), 1, "{:?}", m.notes);
        assert_eq!(m.notes.len(), 3, "{:?}", m.notes);
        // In the JSON, and a document from before `notes` still reads.
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["notes"].as_array().unwrap().len(), 3);
        assert_eq!(json["summary"]["prompt_tokens_cached"], 6000.0);
        assert!(json["summary"].get("busy_slots_per_decode").is_none());
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("notes");
        let back: ServerMetrics = serde_json::from_value(old).unwrap();
        assert!(back.notes.is_empty());
    }

    #[test]
    fn llamacpp_seconds_become_speeds_per_slot_and_busy_slots_per_call() {
        let m = run_over(
            fixtures::LLAMACPP_CURRENT_T0,
            fixtures::LLAMACPP_CURRENT_T1,
            "any",
        );
        let s = m.summary.as_ref().expect("a window");
        assert_eq!(
            (s.prompt_seconds, s.generation_seconds),
            (Some(10.0), Some(80.0))
        );
        assert_eq!(s.prompt_tokens_per_slot_s, Some(2000.0));
        assert_eq!(s.generation_tokens_per_slot_s, Some(50.0));
        assert_eq!(s.decode_calls, Some(1250.0));
        let busy = s.busy_slots_per_decode.unwrap();
        assert!((busy - 3.6).abs() < 1e-3, "{busy}");
        assert_eq!((s.peak_running, s.peak_waiting), (Some(4.0), Some(3.0)));
        assert_eq!(s.prefix_cache_hit_share, None);
        assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
        assert!(m.notes[0].starts_with("llama.cpp counts only"));
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["summary"]["prompt_tokens_per_slot_s"], 2000.0);
    }

    /// The console summary and the HTML report of a run whose server
    /// metrics are `m`.
    fn rendered(m: ServerMetrics) -> (String, String) {
        use crate::output::report::saved::Saved;
        let mut r = crate::output::report::console::tests::sample_result();
        r.server_metrics = Some(m);
        let console = crate::output::report::console::summary(&r);
        let html =
            crate::output::report::html::render(&[("run.json".into(), Saved::Run(Box::new(r)))]);
        (console, html)
    }

    #[test]
    fn llamacpp_figures_are_shown_and_rows_it_never_fills_are_not() {
        let m = run_over(
            fixtures::LLAMACPP_CURRENT_T0,
            fixtures::LLAMACPP_CURRENT_T1,
            "any",
        );
        let (console, html) = rendered(m);
        for line in [
            "Running / waiting, peak:",
            "Prompt / generated tokens (server):",
            "Prompt / generation slot time (s):",
            "Prefill / decode per slot (tok/s):",
            "Busy slots per decode call:",
            "note: llama.cpp counts only",
        ] {
            assert!(console.contains(line), "no {line:?} in\n{console}");
        }
        assert!(console.contains("2000.0 / 50.00"), "{console}");
        assert!(console.contains("3.60 over 1250 calls"), "{console}");
        for absent in [
            "Server mean TTFT",
            "KV-cache usage",
            "Preemptions",
            "Prefix-cache",
        ] {
            assert!(!console.contains(absent), "{absent:?} in\n{console}");
        }
        let server = &html[html
            .find("data-section=\"server\"")
            .expect("a server section")..];
        for row in [
            "Prefill / decode per slot (tok/s)",
            "Busy slots per decode call",
            "Decode calls",
            "Mean running / waiting",
            "llama.cpp counts only",
        ] {
            assert!(server.contains(row), "no {row:?} in the server section");
        }
        for absent in [
            "Server mean TTFT (ms)",
            "Preemptions",
            "Peak KV-cache usage",
        ] {
            assert!(!server.contains(absent), "{absent:?} in the server section");
        }
    }

    #[test]
    fn vllm_figures_and_notes_are_shown_without_llamacpp_rows() {
        let m = run_over(fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1, "sql-lora");
        let (console, html) = rendered(m);
        assert!(
            console.contains("30.0% (6000 of 20000 prompt tokens)"),
            "{console}"
        );
        assert!(console.contains("Server mean ITL (ms):"), "{console}");
        assert!(console.contains("note: vLLM labels no series"), "{console}");
        assert!(!console.contains("slot"), "{console}");
        let server = &html[html
            .find("data-section=\"server\"")
            .expect("a server section")..];
        assert!(server.contains("Prompt tokens from the prefix cache"));
        assert!(server.contains("per step, not per token"));
        assert!(!server.contains("Busy slots per decode call"));
    }
}
