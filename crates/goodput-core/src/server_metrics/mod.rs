//! What the server saw: its Prometheus `/metrics` scraped during every run
//! (`--server-metrics URL`; by default the target's own `/metrics` when it
//! answers), read whatever the engine calls things ([`engines`]: vLLM,
//! SGLang, TGI, llama.cpp), kept as a time series and summarised over the
//! measured window: peak KV-cache use, preemptions, the prefix-cache hit
//! share, and the server's own TTFT beside the client's, so the gap —
//! network, HTTP stack, tokenization and queueing outside the engine's
//! clock — is visible. Where a figure is not what its name suggests (the
//! run's model labels no series, so every model's were summed; aborted
//! requests sit in the server's latency histograms; vLLM's ITL is per step
//! under speculative decoding; a hit share from a weaker source), the
//! results carry a note ([`ServerMetrics::notes`]).
//!
//! The window: a baseline scrape as the measured phase starts (at once
//! when there is no warm-up; as soon as the first measured request is sent
//! otherwise) and a final one after the last measured request finished.
//! Engines observe TTFT when a request's first token is produced, so the
//! server's TTFT histogram over this window holds the measured requests
//! (and only the warm-up requests whose first token came after the first
//! measured send); finished-request counters and E2EL, observed at the end
//! of each request, also hold the warm-up requests still running when the
//! measured phase began. When the server's TTFT count differs from the
//! requests the client measured, a note says so.
//! Counters and histograms are the difference of the two
//! ([`engines::Snapshot::delta`]); a counter that went backwards (the server
//! restarted) voids the window, and the summary says so. Scraping runs on
//! its own task and connection, never on the request path; a scrape that
//! fails is counted, not fatal.

pub mod engines;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod parse;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::client::{Client, ClientError, ClientOptions};
use crate::clock::RunClock;
use crate::executor::Progress;
use engines::{Engine, Snapshot};

/// Where the server's metrics are, and how often to look.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeOptions {
    /// The full URL (`http://host:8000/metrics`).
    pub url: String,
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
}

/// Split `http://host:port/path` into the base (`http://host:port`) and the path.
fn split_url(url: &str) -> Result<(String, String), ScrapeError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| ScrapeError::Url(format!("invalid --server-metrics URL '{url}': {e}")))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(ScrapeError::Url(format!(
            "invalid --server-metrics URL '{url}': it needs a scheme and a host, for example http://localhost:8000/metrics"
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

impl Scraper {
    /// Build a client for `opts.url` and read it once: an answer that is
    /// not Prometheus text is an error. The target's credentials go with it
    /// only when it is on the target's host and port.
    pub async fn connect(
        opts: &ScrapeOptions,
        target: &ClientOptions,
        clock: RunClock,
    ) -> Result<Scraper, ScrapeError> {
        let (base, path) = split_url(&opts.url)?;
        let same_host = split_url(&target.url).is_ok_and(|(b, _)| b == base);
        let client_opts = ClientOptions {
            url: base,
            api_key: target.api_key.clone().filter(|_| same_host),
            headers: if same_host {
                target.headers.clone()
            } else {
                Vec::new()
            },
            timeout: opts.interval.max(Duration::from_secs(2)),
            ..target.clone()
        };
        let client = Client::new(client_opts, clock).await?;
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

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn engine(&self) -> Option<Engine> {
        self.engine
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
        mut stop: tokio::sync::oneshot::Receiver<()>,
    ) -> ServerMetrics {
        let started = Instant::now();
        let mut acc = Acc::new(&self, started);
        if !warmup {
            acc.baseline(self.scrape().await, started);
        }
        let mut next_tick = Instant::now() + self.interval;
        loop {
            // Poll for the measured phase's start every 10 ms until it has
            // a baseline (atomics only), else sleep to the next tick.
            let wake = if acc.base.is_none() {
                (Instant::now() + Duration::from_millis(10)).min(next_tick)
            } else {
                next_tick
            };
            tokio::select! {
                biased;
                _ = &mut stop => break,
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
            if acc.base.is_none() && progress.sent_measured.load(Relaxed) > 0 {
                acc.baseline(self.scrape().await, Instant::now());
                continue;
            }
            if Instant::now() >= next_tick {
                next_tick += self.interval;
                if next_tick < Instant::now() {
                    next_tick = Instant::now() + self.interval;
                }
                let s = self.scrape().await;
                acc.sample(s, Instant::now());
            }
        }
        let last = self.scrape().await;
        acc.finish(last, Instant::now())
    }
}

/// One point of the server's time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// Seconds since the measured phase started (negative: warm-up).
    pub t_s: f64,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// KV-cache use, 0..1.
    pub kv_usage: Option<f64>,
    /// Preemptions since the window started.
    pub preemptions: Option<f64>,
    /// Tokens the server generated per second since the previous sample.
    pub generation_tokens_per_s: Option<f64>,
}

/// The server's figures over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    pub window_s: f64,
    pub peak_kv_usage: Option<f64>,
    pub mean_kv_usage: Option<f64>,
    pub peak_running: Option<f64>,
    pub mean_running: Option<f64>,
    pub peak_waiting: Option<f64>,
    pub mean_waiting: Option<f64>,
    pub preemptions: Option<f64>,
    pub prefix_cache_queries: Option<f64>,
    pub prefix_cache_hits: Option<f64>,
    /// Hits over queries in the window; or the engine's hit-rate gauge at
    /// the end where it has no counters (SGLang's older builds).
    pub prefix_cache_hit_share: Option<f64>,
    pub prompt_tokens: Option<f64>,
    pub generation_tokens: Option<f64>,
    pub requests_finished: Option<f64>,
    /// The server's own latency histograms over the window: mean (exact,
    /// from the sums) and median / p99 (interpolated inside buckets, as
    /// Prometheus' `histogram_quantile`: as coarse as the buckets).
    pub ttft_ms: Option<HistSummary>,
    pub queue_time_ms: Option<HistSummary>,
    pub tpot_ms: Option<HistSummary>,
    pub itl_ms: Option<HistSummary>,
    pub e2e_ms: Option<HistSummary>,
    /// The client's mean TTFT over the same requests (filled by the run).
    pub client_mean_ttft_ms: Option<f64>,
    /// Client minus server mean TTFT: time outside the engine's clock.
    pub ttft_gap_ms: Option<f64>,
    /// Prompt tokens served from the prefix cache, each request counted
    /// once (vLLM's `prompt_tokens_cached`, SGLang's `cached_tokens`); over
    /// `prompt_tokens` it is the hit share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_cached: Option<f64>,
    /// llama.cpp: seconds its slots spent evaluating prompts, summed over
    /// slots (two slots in one decode each count its whole time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_seconds: Option<f64>,
    /// llama.cpp: seconds its slots spent generating, summed over slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_seconds: Option<f64>,
    /// llama.cpp: prompt tokens evaluated per second of a slot's prompt
    /// time: one slot's prefill speed, not the server's throughput (and
    /// without the tokens reused from the cache, which cost no time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_per_slot_s: Option<f64>,
    /// llama.cpp: tokens generated per second of a slot's generation time:
    /// one stream's decode speed, not the server's throughput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens_per_slot_s: Option<f64>,
    /// llama.cpp: `llama_decode()` calls in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_calls: Option<f64>,
    /// llama.cpp: the mean number of busy slots per decode call in the
    /// window: how many requests one batch carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_slots_per_decode: Option<f64>,
}

/// A server histogram over the window, in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistSummary {
    pub count: f64,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

fn hist_summary(h: &Option<engines::Hist>) -> Option<HistSummary> {
    let h = h.as_ref().filter(|h| h.count > 0.0)?;
    Some(HistSummary {
        count: h.count,
        mean: h.mean().map(|s| s * 1e3),
        p50: h.quantile(0.5).map(|s| s * 1e3),
        p99: h.quantile(0.99).map(|s| s * 1e3),
    })
}

/// What was scraped during one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    pub url: String,
    pub engine: Option<Engine>,
    pub interval_s: f64,
    pub scrapes: u64,
    pub failed_scrapes: u64,
    /// The last scrape error, if any.
    pub last_error: Option<String>,
    /// None when there was no window (no baseline, or the server restarted).
    pub summary: Option<ServerSummary>,
    /// What the figures need said: how the scrape was read (a model filter
    /// that matched nothing, a series left out), what the window held
    /// (aborts, speculative decoding), where a figure is weaker than it
    /// looks.
    #[serde(default)]
    pub notes: Vec<String>,
    pub series: Vec<ServerSample>,
}

/// The scraper's running state.
struct Acc {
    out: ServerMetrics,
    /// Samples' times are kept from here until the window's start is known.
    started: Instant,
    base: Option<(Snapshot, Instant)>,
    prev: Option<(Snapshot, Instant)>,
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
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

    fn baseline(&mut self, s: Result<Snapshot, ScrapeError>, at: Instant) {
        if let Some(s) = self.take(s) {
            self.base = Some((s.clone(), at));
            self.push(&s, at);
        }
    }

    fn sample(&mut self, s: Result<Snapshot, ScrapeError>, at: Instant) {
        if let Some(s) = self.take(s) {
            self.push(&s, at);
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

/// The window `d`, the time series and the window's length as the summary,
/// with the notes its figures need.
fn summarise(d: &Snapshot, series: &[ServerSample], window_s: f64) -> (ServerSummary, Vec<String>) {
    let window: Vec<&ServerSample> = series.iter().filter(|p| p.t_s >= 0.0).collect();
    let mean = |f: &dyn Fn(&ServerSample) -> Option<f64>| {
        let v: Vec<f64> = window.iter().filter_map(|p| f(p)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let peak = |f: &dyn Fn(&ServerSample) -> Option<f64>| {
        window.iter().fold(None, |m, p| max_opt(m, f(p)))
    };
    let per =
        |n: Option<f64>, over: Option<f64>| n.zip(over.filter(|s| *s > 0.0)).map(|(n, s)| n / s);
    let (hit_share, hit_note) = engines::prefix_hit_share(d);
    let mut notes: Vec<String> = hit_note.into_iter().collect();
    notes.extend(engines::window_notes(d));
    let summary = ServerSummary {
        window_s,
        peak_kv_usage: peak(&|p| p.kv_usage),
        mean_kv_usage: mean(&|p| p.kv_usage),
        peak_running: peak(&|p| p.running),
        mean_running: mean(&|p| p.running),
        peak_waiting: peak(&|p| p.waiting),
        mean_waiting: mean(&|p| p.waiting),
        preemptions: d.preemptions,
        prefix_cache_queries: d.prefix_queries,
        prefix_cache_hits: d.prefix_hits,
        prefix_cache_hit_share: hit_share,
        prompt_tokens: d.prompt_tokens,
        generation_tokens: d.generation_tokens,
        requests_finished: d.requests_finished,
        ttft_ms: hist_summary(&d.ttft),
        queue_time_ms: hist_summary(&d.queue_time),
        tpot_ms: hist_summary(&d.tpot),
        itl_ms: hist_summary(&d.itl),
        e2e_ms: hist_summary(&d.e2e),
        client_mean_ttft_ms: None,
        ttft_gap_ms: None,
        prompt_tokens_cached: d.prompt_tokens_cached,
        prompt_seconds: d.prompt_seconds,
        generation_seconds: d.generation_seconds,
        prompt_tokens_per_slot_s: per(
            d.prompt_tokens_evaluated.or(d.prompt_tokens),
            d.prompt_seconds,
        ),
        generation_tokens_per_slot_s: per(d.generation_tokens, d.generation_seconds),
        decode_calls: d.decode_calls,
        busy_slots_per_decode: per(d.busy_slot_decodes, d.decode_calls),
    };
    (summary, notes)
}

impl ServerMetrics {
    /// Put the client's mean TTFT beside the server's; `completed`: the
    /// client's completed measured requests, to say when the two windows
    /// did not hold the same requests.
    pub fn set_client_ttft(&mut self, client_mean_ttft_ms: Option<f64>, completed: u64) {
        if let Some(s) = self.summary.as_mut() {
            // The server's TTFT count is the one aligned with the measured
            // requests (observed at each first token).
            if let Some(n) = s
                .ttft_ms
                .as_ref()
                .map(|h| h.count)
                .filter(|n| (n - completed as f64).abs() >= 0.5)
            {
                self.notes.push(format!(
                    "the server observed {n:.0} first tokens in the window and the client measured {completed} requests (warm-up requests whose first token came after the first measured send, failed requests, or another client's): the TTFT comparison is approximate"
                ));
            }
            if let Some(n) = s
                .requests_finished
                .filter(|n| (n - completed as f64).abs() >= 0.5)
            {
                self.notes.push(format!(
                    "the server finished {n:.0} requests in the window and the client measured {completed}: its E2EL and token counts include warm-up requests still running when the measured phase began (--warmup 0 makes them match)"
                ));
            }
            s.client_mean_ttft_ms = client_mean_ttft_ms;
            s.ttft_gap_ms = client_mean_ttft_ms
                .zip(s.ttft_ms.as_ref().and_then(|h| h.mean))
                .map(|(c, srv)| c - srv);
        }
    }
}

impl ServerMetrics {
    /// Compare the server's generated tokens over the window with the
    /// output tokens the client counted on its completed requests; where
    /// the server has no finished-requests counter to say so (llama.cpp),
    /// a gap above 1 % is said: warm-up answers still running when the
    /// measured phase began, or failed requests' partial answers.
    pub fn set_client_output_tokens(&mut self, client: u64) {
        let Some(s) = self.summary.as_ref() else {
            return;
        };
        let (Some(server), None) = (s.generation_tokens, s.requests_finished) else {
            return;
        };
        let c = client as f64;
        if (server - c).abs() > 0.01 * c.max(1.0) {
            self.notes.push(format!(
                "the server generated {server:.0} tokens in the window and the client counted {client} on its completed requests: the server's figure includes warm-up answers still running when the measured phase began and failed requests' partial answers (--warmup 0 makes them match)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttft_gap_is_the_client_minus_the_server_and_a_count_mismatch_is_said() {
        let summary = |count: f64| ServerSummary {
            ttft_ms: Some(HistSummary {
                count,
                mean: Some(100.0),
                p50: None,
                p99: None,
            }),
            ..ServerSummary::default()
        };
        let mut m = ServerMetrics {
            url: "u".into(),
            engine: Some(Engine::Vllm),
            interval_s: 1.0,
            scrapes: 2,
            failed_scrapes: 0,
            last_error: None,
            summary: Some(summary(300.0)),
            notes: Vec::new(),
            series: Vec::new(),
        };
        m.set_client_ttft(Some(104.5), 300);
        let s = m.summary.as_ref().unwrap();
        assert_eq!(s.ttft_gap_ms, Some(4.5));
        assert!(m.notes.is_empty());
        m.summary = Some(summary(308.0));
        m.set_client_ttft(Some(104.5), 300);
        assert!(m.notes[0].contains("308 first tokens"), "{:?}", m.notes);
        // Warm-up requests that finish in the window are in the server's E2EL and counts.
        m.notes.clear();
        m.summary = Some(ServerSummary {
            requests_finished: Some(309.0),
            ..summary(300.0)
        });
        m.set_client_ttft(Some(104.5), 300);
        assert_eq!(m.notes.len(), 1);
        assert!(
            m.notes[0].contains("finished 309 requests"),
            "{:?}",
            m.notes
        );
    }

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
        use crate::report::saved::Saved;
        let mut r = crate::report::console::tests::sample_result();
        r.server_metrics = Some(m);
        let console = crate::report::console::summary(&r);
        let html = crate::report::html::render(&[("run.json".into(), Saved::Run(Box::new(r)))]);
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

    #[test]
    fn a_server_generating_more_than_the_client_counted_is_said() {
        let mut m = ServerMetrics {
            url: String::new(),
            engine: None,
            interval_s: 1.0,
            scrapes: 2,
            failed_scrapes: 0,
            last_error: None,
            summary: Some(ServerSummary {
                generation_tokens: Some(4872.0),
                ..Default::default()
            }),
            notes: Vec::new(),
            series: Vec::new(),
        };
        m.set_client_output_tokens(4850);
        assert!(m.notes.is_empty(), "within 1 %: {:?}", m.notes);
        m.set_client_output_tokens(4800);
        assert!(m.notes[0].contains("4872"), "{:?}", m.notes);
    }
}
