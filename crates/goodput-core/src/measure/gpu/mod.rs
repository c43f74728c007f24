//! What the GPUs drew: a DCGM exporter's Prometheus text (`--gpu-metrics
//! URL`, one per node) scraped over the run's measured window the way the
//! server's own metrics are ([`super::server_metrics`]: a baseline as the
//! measured phase starts, a scrape every interval, a last one after the
//! last measured request), on its own task and connection.
//!
//! | figure | DCGM field | unit |
//! |---|---|---|
//! | power | `DCGM_FI_DEV_POWER_USAGE` | W |
//! | energy | `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` | mJ since the driver loaded |
//! | utilisation | `DCGM_FI_DEV_GPU_UTIL` | % |
//! | memory used | `DCGM_FI_DEV_FB_USED` | MiB |
//! | SM clock | `DCGM_FI_DEV_SM_CLOCK` | MHz |
//!
//! A GPU is its node (the `Hostname` label, else the URL's host), its `gpu`
//! index and its `UUID`; series that repeat one GPU under other labels (the
//! pod a Kubernetes exporter attributes it to) are copies, read once.
//!
//! Each GPU's energy over the window is its energy counter's difference
//! between the baseline and the last scrape; where it has no counter (or
//! the counter went backwards), its power integrated over the scrapes
//! (trapezoids), which sees only what the scrapes sample. An exporter
//! refreshes its readings every collection interval (dcgm-exporter's
//! default is 30 s), not at each scrape: the readings' own refresh period
//! is read from the changes the scrapes saw, and a window short beside it
//! is said in a note.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

mod nvml;
mod reading;

pub use reading::GpuId;
pub(crate) use reading::GpuReading;

use super::server_metrics::parse::{self, Sample};
use super::server_metrics::scrape::{client_for, over_the_window, ScrapeError, Window};
use crate::load::executor::Progress;
use crate::request::client::{Client, ClientOptions};
use crate::request::clock::RunClock;

const POWER: &str = "DCGM_FI_DEV_POWER_USAGE";
const ENERGY: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
const UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
const SM_CLOCK: &str = "DCGM_FI_DEV_SM_CLOCK";

/// The path the simulator serves its GPUs' telemetry on, as a DCGM
/// exporter would.
pub const SIM_PATH: &str = "/dcgm/metrics";

/// Every GPU of one exporter's text; `node` names GPUs without a
/// `Hostname` label.
pub(crate) fn read(samples: &[Sample], node: &str) -> BTreeMap<GpuId, GpuReading> {
    let mut out: BTreeMap<GpuId, GpuReading> = BTreeMap::new();
    for s in samples {
        let field: fn(&mut GpuReading) -> &mut Option<f64> = match s.name.as_str() {
            POWER => |r| &mut r.power_w,
            ENERGY => |r| &mut r.energy_mj,
            UTIL => |r| &mut r.util_pct,
            FB_USED => |r| &mut r.fb_used_mib,
            SM_CLOCK => |r| &mut r.sm_clock_mhz,
            _ => continue,
        };
        if !s.value.is_finite() {
            continue;
        }
        let id = GpuId {
            node: s
                .label("Hostname")
                .filter(|h| !h.is_empty())
                .unwrap_or(node)
                .to_string(),
            gpu: s.label("gpu").unwrap_or("0").to_string(),
            uuid: s.label("UUID").map(str::to_string),
            model: s.label("modelName").map(str::to_string),
        };
        // A copy of a series already read (another pod's labels) is left.
        field(out.entry(id).or_default()).get_or_insert(s.value);
    }
    out
}

/// The GPUs' figures over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSummary {
    /// From the baseline scrape to the last one, s.
    pub window_s: f64,
    /// GPUs seen.
    pub gpus: usize,
    /// Every GPU's energy over the window, J; `None` when a GPU had neither
    /// a counter nor two power readings in it.
    pub energy_j: Option<f64>,
    /// Where the energy came from (some GPUs each way: `counter_and_power`).
    pub energy_from: Option<EnergyFrom>,
    /// Energy / window: every GPU together.
    pub mean_power_w: Option<f64>,
    /// The highest summed power of one scrape.
    pub peak_power_w: Option<f64>,
    /// The GPUs' utilisation over the window's scrapes, mean, %.
    pub mean_util_pct: Option<f64>,
    /// The most memory one GPU held at a scrape, MiB.
    pub peak_fb_used_mib: Option<f64>,
    /// The GPUs' SM clock over the window's scrapes, mean, MHz.
    pub mean_sm_clock_mhz: Option<f64>,
    /// The run's output tokens over `energy_j` (filled by the run).
    pub output_tokens_per_joule: Option<f64>,
    /// `energy_j` over the run's completed requests, J.
    #[serde(default)]
    pub joules_per_request: Option<f64>,
    /// `energy_j` over the run's output tokens, J.
    #[serde(default)]
    pub joules_per_output_token: Option<f64>,
    /// Each GPU's own figures.
    pub per_gpu: Vec<GpuWindow>,
}

/// One GPU over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuWindow {
    /// Which GPU.
    pub id: GpuId,
    /// Its energy over the window, J.
    pub energy_j: Option<f64>,
    /// `counter` or `power`.
    pub energy_from: Option<EnergyFrom>,
    /// Energy / window, W.
    pub mean_power_w: Option<f64>,
    /// The highest power a scrape read, W.
    pub peak_power_w: Option<f64>,
    /// Utilisation over the window's scrapes, mean, %.
    pub mean_util_pct: Option<f64>,
    /// The most memory it held at a scrape, MiB.
    pub peak_fb_used_mib: Option<f64>,
    /// SM clock over the window's scrapes, mean, MHz.
    pub mean_sm_clock_mhz: Option<f64>,
}

/// Where a window's energy came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergyFrom {
    /// The energy counters' differences.
    Counter,
    /// Power integrated over the scrapes (trapezoids).
    Power,
    /// Some GPUs each way.
    CounterAndPower,
}

impl EnergyFrom {
    /// In words, for the reports.
    pub fn words(self) -> &'static str {
        match self {
            EnergyFrom::Counter => "from the energy counters",
            EnergyFrom::Power => "power integrated over the scrapes",
            EnergyFrom::CounterAndPower => "counters and integrated power",
        }
    }
}

/// One point of the GPUs' time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    /// Seconds since the window's start (negative: warm-up).
    pub t_s: f64,
    /// Every GPU's power summed, W.
    pub power_w: Option<f64>,
    /// The GPUs' mean utilisation, %.
    pub util_pct: Option<f64>,
}

/// What the GPU scrapes of one run kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuMetrics {
    /// The exporters scraped.
    pub urls: Vec<String>,
    /// Time between scrapes, s.
    pub interval_s: f64,
    /// Rounds of scrapes (every exporter once).
    pub scrapes: u64,
    /// Rounds in which an exporter failed.
    pub failed_scrapes: u64,
    /// The last scrape error, if any.
    pub last_error: Option<String>,
    /// None when there was no window.
    pub summary: Option<GpuSummary>,
    /// What the figures need said (a counter that went backwards, readings
    /// the exporter refreshed rarely).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Summed power and mean utilisation at each scrape.
    pub series: Vec<GpuSample>,
}

impl GpuMetrics {
    /// The window's energy set against the run's output tokens and
    /// completed requests.
    pub fn with_run(mut self, output_tokens: u64, completed: u64) -> GpuMetrics {
        if let Some(s) = self.summary.as_mut() {
            let energy = s.energy_j.filter(|e| *e > 0.0);
            let per = |n: u64| energy.filter(|_| n > 0).map(|e| e / n as f64);
            s.output_tokens_per_joule = energy.map(|e| output_tokens as f64 / e);
            s.joules_per_request = per(completed);
            s.joules_per_output_token = per(output_tokens);
        }
        self
    }

    /// The window's energy, J, where every GPU's is known.
    pub fn energy_j(&self) -> Option<f64> {
        self.summary.as_ref()?.energy_j
    }
}

/// One exporter.
#[derive(Clone)]
struct Source {
    url: String,
    node: String,
    client: Client,
    path: String,
}

/// Scrapes every exporter of a run.
#[derive(Clone)]
pub struct GpuScraper {
    sources: Vec<Source>,
    /// The local GPUs through NVML (`--nvml`).
    nvml: Option<std::sync::Arc<nvml::Nvml>>,
    interval: Duration,
}

impl GpuScraper {
    /// A client per URL, each read once: an answer without DCGM's GPU
    /// series is an error; with `nvml`, the local GPUs through NVML too
    /// (an error where it cannot be loaded).
    pub async fn connect(
        urls: &[String],
        nvml: bool,
        interval: Duration,
        target: &ClientOptions,
        clock: RunClock,
    ) -> Result<GpuScraper, ScrapeError> {
        let nvml = match nvml {
            true => Some(std::sync::Arc::new(
                nvml::Nvml::open().map_err(ScrapeError::Url)?,
            )),
            false => None,
        };
        let mut sources = Vec::with_capacity(urls.len());
        for url in urls {
            let (client, path) = client_for(url, interval, target, clock).await?;
            let node = (url.parse::<http::Uri>().ok())
                .and_then(|u| u.authority().map(|a| a.to_string()))
                .unwrap_or_else(|| url.clone());
            let source = Source {
                url: url.clone(),
                node,
                client,
                path,
            };
            if source.scrape().await?.is_empty() {
                return Err(ScrapeError::NoGpus { url: url.clone() });
            }
            sources.push(source);
        }
        Ok(GpuScraper {
            sources,
            nvml,
            interval,
        })
    }

    /// Scrape until `stop` fires, then once more (as the server's scrape).
    pub fn spawn(
        &self,
        progress: std::sync::Arc<Progress>,
        warmup: bool,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> tokio::task::JoinHandle<GpuMetrics> {
        let s = self.clone();
        tokio::spawn(async move {
            let mut acc = Acc::new(&s, Instant::now());
            let last =
                over_the_window(&mut acc, s.interval, &progress, warmup, stop, || s.scrape()).await;
            acc.finish(last, Instant::now())
        })
    }

    /// Every exporter once: the GPUs read, and the errors.
    async fn scrape(&self) -> Scrape {
        let mut out = Scrape::default();
        if let Some(nvml) = &self.nvml {
            out.gpus.extend(nvml.read());
        }
        for source in &self.sources {
            match source.scrape().await {
                Ok(r) => out.gpus.extend(r),
                Err(e) => out.errors.push(e.to_string()),
            }
        }
        out
    }
}

impl Source {
    async fn scrape(&self) -> Result<BTreeMap<GpuId, GpuReading>, ScrapeError> {
        let (status, body) = self.client.get_path(&self.path, "gpu-metrics").await?;
        if status != 200 {
            return Err(ScrapeError::Status {
                url: self.url.clone(),
                status,
            });
        }
        Ok(read(
            &parse::parse(&String::from_utf8_lossy(&body)).samples,
            &self.node,
        ))
    }
}

/// One round of scrapes over every exporter.
#[derive(Debug, Default)]
pub(crate) struct Scrape {
    gpus: BTreeMap<GpuId, GpuReading>,
    errors: Vec<String>,
}

/// One GPU's readings through the run.
#[derive(Debug, Default)]
struct Track {
    base: Option<GpuReading>,
    last: Option<GpuReading>,
    /// (seconds from the scraper's start, reading)
    points: Vec<(f64, GpuReading)>,
}

/// The scraper's running state.
struct Acc {
    out: GpuMetrics,
    started: Instant,
    base_t: Option<f64>,
    /// The last scrape that read any GPU.
    last_t: Option<f64>,
    gpus: BTreeMap<GpuId, Track>,
    /// (t, summed power, mean utilisation) per scrape.
    series: Vec<(f64, Option<f64>, Option<f64>)>,
}

impl Window for Acc {
    type Scrape = Scrape;

    fn has_baseline(&self) -> bool {
        self.base_t.is_some()
    }

    fn baseline(&mut self, s: Scrape, at: Instant) {
        if s.gpus.is_empty() {
            self.count(&s);
            return;
        }
        self.base_t = Some(self.t(at));
        for (id, r) in &s.gpus {
            self.gpus.entry(id.clone()).or_default().base = Some(r.clone());
        }
        self.sample(s, at);
    }

    fn sample(&mut self, s: Scrape, at: Instant) {
        self.count(&s);
        let t = self.t(at);
        if !s.gpus.is_empty() {
            self.last_t = Some(t);
        }
        let sum = |f: fn(&GpuReading) -> Option<f64>| {
            let v: Vec<f64> = s.gpus.values().filter_map(f).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>())
        };
        let n = s.gpus.values().filter(|r| r.util_pct.is_some()).count();
        let util = sum(|r| r.util_pct).map(|u| u / n.max(1) as f64);
        self.series.push((t, sum(|r| r.power_w), util));
        for (id, r) in s.gpus {
            let track = self.gpus.entry(id).or_default();
            track.points.push((t, r.clone()));
            track.last = Some(r);
        }
    }
}

impl Acc {
    fn new(s: &GpuScraper, started: Instant) -> Acc {
        Acc {
            out: GpuMetrics {
                urls: (s.sources.iter().map(|s| s.url.clone()))
                    .chain(s.nvml.as_ref().map(|_| "nvml".to_string()))
                    .collect(),
                interval_s: s.interval.as_secs_f64(),
                scrapes: 0,
                failed_scrapes: 0,
                last_error: None,
                summary: None,
                notes: Vec::new(),
                series: Vec::new(),
            },
            started,
            base_t: None,
            last_t: None,
            gpus: BTreeMap::new(),
            series: Vec::new(),
        }
    }

    fn t(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64()
    }

    fn count(&mut self, s: &Scrape) {
        self.out.scrapes += 1;
        if let Some(e) = s.errors.last() {
            self.out.failed_scrapes += 1;
            self.out.last_error = Some(e.clone());
        }
    }

    fn finish(mut self, last: Scrape, at: Instant) -> GpuMetrics {
        let Some(t0) = self.base_t else {
            self.count(&last);
            self.out.notes.push(match &self.out.last_error {
                Some(e) => format!("no window of GPU metrics: {e}"),
                None => "no window of GPU metrics: the measured phase never started".into(),
            });
            return self.out;
        };
        self.sample(last, at);
        // A last round that failed ends the window at the last one that
        // read the GPUs: their energy is known up to there.
        let (end, t1) = (self.t(at), self.last_t.unwrap_or(t0));
        if end - t1 > 1e-9 {
            self.out.notes.push(format!(
                "the last GPU scrapes failed: the energy covers the window's first {:.1} s of {:.1} s",
                t1 - t0,
                end - t0
            ));
        }
        let window_s = t1 - t0;
        self.out.series = (self.series.iter())
            .map(|&(t, power_w, util_pct)| GpuSample {
                t_s: t - t0,
                power_w,
                util_pct,
            })
            .collect();
        let mut notes = Vec::new();
        let per_gpu: Vec<GpuWindow> = (self.gpus.iter())
            .map(|(id, track)| gpu_window(id, track, t0, t1, &mut notes))
            .collect();
        for n in notes {
            if !self.out.notes.contains(&n) {
                self.out.notes.push(n);
            }
        }
        let energy_j = (!per_gpu.is_empty())
            .then(|| per_gpu.iter().map(|g| g.energy_j).sum::<Option<f64>>())
            .flatten();
        let from: Vec<EnergyFrom> = per_gpu.iter().filter_map(|g| g.energy_from).collect();
        let energy_from = match (
            from.contains(&EnergyFrom::Counter),
            from.contains(&EnergyFrom::Power),
        ) {
            (true, true) => Some(EnergyFrom::CounterAndPower),
            (true, false) => Some(EnergyFrom::Counter),
            (false, true) => Some(EnergyFrom::Power),
            (false, false) => None,
        };
        let in_window = |&&(t, _, _): &&(f64, Option<f64>, Option<f64>)| t >= t0 - 1e-9;
        let peak_power_w = (self.series.iter().filter(in_window))
            .filter_map(|p| p.1)
            .reduce(f64::max);
        self.out.summary = Some(GpuSummary {
            window_s,
            gpus: per_gpu.len(),
            energy_j,
            energy_from,
            mean_power_w: energy_j.filter(|_| window_s > 0.0).map(|e| e / window_s),
            peak_power_w,
            mean_util_pct: mean(per_gpu.iter().filter_map(|g| g.mean_util_pct)),
            peak_fb_used_mib: per_gpu
                .iter()
                .filter_map(|g| g.peak_fb_used_mib)
                .reduce(f64::max),
            mean_sm_clock_mhz: mean(per_gpu.iter().filter_map(|g| g.mean_sm_clock_mhz)),
            output_tokens_per_joule: None,
            joules_per_request: None,
            joules_per_output_token: None,
            per_gpu,
        });
        self.out
    }
}

/// One GPU's figures over the window `t0..t1` (the scraper's seconds).
fn gpu_window(id: &GpuId, track: &Track, t0: f64, t1: f64, notes: &mut Vec<String>) -> GpuWindow {
    let points: Vec<&(f64, GpuReading)> =
        track.points.iter().filter(|p| p.0 >= t0 - 1e-9).collect();
    let series = |f: fn(&GpuReading) -> Option<f64>| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter_map(|(t, r)| Some((*t, f(r)?)))
            .collect()
    };
    let power = series(|r| r.power_w);
    let counter = series(|r| r.energy_mj);
    let by_counter = track
        .base
        .as_ref()
        .and_then(|b| b.energy_mj)
        .zip(track.last.as_ref().and_then(|l| l.energy_mj))
        .map(|(a, b)| (b - a) / 1e3)
        .filter(|d| *d >= 0.0);
    let integrated = (power.len() >= 2).then(|| {
        power
            .windows(2)
            .map(|w| 0.5 * (w[0].1 + w[1].1) * (w[1].0 - w[0].0))
            .sum::<f64>()
    });
    let (energy_j, from) = match (by_counter, integrated) {
        (Some(e), _) => (Some(e), Some(EnergyFrom::Counter)),
        (None, Some(e)) => (Some(e), Some(EnergyFrom::Power)),
        (None, None) => (None, None),
    };
    if by_counter.is_none() && counter.len() >= 2 {
        notes.push(format!(
            "GPU {} on {}: its energy counter went backwards (a driver reload?); its power was integrated instead",
            id.gpu, id.node
        ));
    }
    // How often the exporter refreshed what it serves: the longest gap
    // between two scrapes that saw the counter (else the power) change.
    let refreshed = if counter.len() >= 2 { &counter } else { &power };
    let changes: Vec<f64> = refreshed
        .windows(2)
        .filter(|w| w[1].1 != w[0].1)
        .map(|w| w[1].0)
        .collect();
    let window_s = t1 - t0;
    let busy = power.iter().any(|p| p.1 > 0.0);
    if busy && refreshed.len() >= 3 && changes.len() < 2 {
        notes.push(format!(
            "GPU {} on {}: the exporter's readings hardly changed over the {window_s:.1} s window (its collection interval is longer?): the energy is uncertain by up to its whole refresh period; run longer or lower the exporter's interval (dcgm-exporter -c)",
            id.gpu, id.node
        ));
    } else if let Some(period) = changes.windows(2).map(|w| w[1] - w[0]).reduce(f64::max) {
        // Only a refresh slower than the scrapes themselves is the
        // exporter's: readings that changed at every scrape say nothing.
        let mut gaps: Vec<f64> = refreshed.windows(2).map(|w| w[1].0 - w[0].0).collect();
        gaps.sort_by(f64::total_cmp);
        let scrape_gap = gaps.get(gaps.len() / 2).copied().unwrap_or(0.0);
        if period > 1.5 * scrape_gap && period > 0.05 * window_s {
            notes.push(format!(
                "GPU {} on {}: the exporter refreshed its readings about every {period:.1} s, {:.0} % of the {window_s:.1} s window: its energy is uncertain by about that share",
                id.gpu,
                id.node,
                100.0 * period / window_s
            ));
        }
    }
    GpuWindow {
        id: id.clone(),
        energy_j,
        energy_from: from,
        mean_power_w: energy_j.filter(|_| window_s > 0.0).map(|e| e / window_s),
        peak_power_w: power.iter().map(|p| p.1).reduce(f64::max),
        mean_util_pct: mean(series(|r| r.util_pct).into_iter().map(|p| p.1)),
        peak_fb_used_mib: series(|r| r.fb_used_mib)
            .iter()
            .map(|p| p.1)
            .reduce(f64::max),
        mean_sm_clock_mhz: mean(series(|r| r.sm_clock_mhz).into_iter().map(|p| p.1)),
    }
}

/// The mean of `v`, `None` when it is empty.
fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = v.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| sum / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(power: f64, energy_mj: Option<f64>) -> String {
        let mut t = String::new();
        for gpu in 0..2 {
            let labels = format!(
                "gpu=\"{gpu}\",UUID=\"GPU-{gpu}\",device=\"nvidia{gpu}\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\""
            );
            t.push_str(&format!("DCGM_FI_DEV_POWER_USAGE{{{labels}}} {power}\n"));
            // A Kubernetes exporter repeats a GPU under its pod's labels.
            t.push_str(&format!(
                "DCGM_FI_DEV_POWER_USAGE{{{labels},pod=\"vllm-0\"}} {power}\n"
            ));
            if let Some(e) = energy_mj {
                t.push_str(&format!(
                    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {e}\n"
                ));
            }
            t.push_str(&format!("DCGM_FI_DEV_GPU_UTIL{{{labels}}} 50\n"));
            t.push_str(&format!("DCGM_FI_DEV_FB_USED{{{labels}}} {}\n", 1000 + gpu));
        }
        t.push_str("vllm:num_requests_running{model_name=\"m\"} 3\n");
        t
    }

    fn scrape(power: f64, energy_mj: Option<f64>) -> Scrape {
        Scrape {
            gpus: read(&parse::parse(&text(power, energy_mj)).samples, "h:9400"),
            errors: Vec::new(),
        }
    }

    fn acc() -> (Acc, Instant) {
        let s = GpuScraper {
            sources: Vec::new(),
            nvml: None,
            interval: Duration::from_secs(1),
        };
        let started = Instant::now();
        (Acc::new(&s, started), started)
    }

    #[test]
    fn gpus_are_read_once_each_by_node_and_index() {
        let s = scrape(300.0, Some(5e6));
        assert_eq!(s.gpus.len(), 2);
        let (id, r) = s.gpus.iter().next().unwrap();
        assert_eq!((id.node.as_str(), id.gpu.as_str()), ("node-a", "0"));
        assert_eq!(id.model.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(r.power_w, Some(300.0));
        assert_eq!(r.energy_mj, Some(5e6));
        assert_eq!(r.fb_used_mib, Some(1000.0));
    }

    #[test]
    fn energy_comes_from_the_counters_over_the_window() {
        let (mut a, t) = acc();
        let s = Duration::from_secs;
        // A warm-up scrape, then the window: 10 s at 400 W a GPU.
        a.sample(scrape(100.0, Some(1e6)), t);
        a.baseline(scrape(400.0, Some(2e6)), t + s(1));
        for k in 1..10 {
            a.sample(scrape(400.0, Some(2e6 + 4e5 * k as f64)), t + s(1 + k));
        }
        let m = a.finish(scrape(400.0, Some(6e6)), t + s(11));
        let sum = m.summary.as_ref().unwrap();
        assert_eq!(sum.gpus, 2);
        assert!((sum.window_s - 10.0).abs() < 1e-9);
        assert_eq!(sum.energy_j, Some(8000.0));
        assert_eq!(sum.energy_from, Some(EnergyFrom::Counter));
        assert_eq!(sum.mean_power_w, Some(800.0));
        assert_eq!(sum.peak_power_w, Some(800.0));
        assert_eq!(sum.mean_util_pct, Some(50.0));
        assert_eq!(sum.peak_fb_used_mib, Some(1001.0));
        assert!(m.notes.is_empty(), "{:?}", m.notes);
        assert_eq!(m.series[0].t_s, -1.0);
        let m = m.with_run(16_000, 40);
        let sum = m.summary.unwrap();
        assert_eq!(sum.output_tokens_per_joule, Some(2.0));
        assert_eq!(sum.joules_per_output_token, Some(0.5));
        assert_eq!(sum.joules_per_request, Some(200.0));
    }

    #[test]
    fn without_a_counter_the_power_is_integrated() {
        let (mut a, t) = acc();
        let ms = Duration::from_millis;
        // Power rising 100 → 300 W over 4 s: 800 J a GPU.
        a.baseline(scrape(100.0, None), t);
        for k in 1..4 {
            a.sample(scrape(100.0 + 50.0 * k as f64, None), t + ms(1000 * k));
        }
        let m = a.finish(scrape(300.0, None), t + ms(4000));
        let sum = m.summary.unwrap();
        assert_eq!(sum.energy_from, Some(EnergyFrom::Power));
        assert!((sum.energy_j.unwrap() - 1600.0).abs() < 1e-6);
        assert_eq!(sum.peak_power_w, Some(600.0));
    }

    #[test]
    fn readings_the_exporter_did_not_refresh_are_said() {
        let (mut a, t) = acc();
        let s = Duration::from_secs;
        a.baseline(scrape(400.0, Some(2e6)), t);
        for k in 1..5 {
            a.sample(scrape(400.0, Some(2e6)), t + s(k));
        }
        let m = a.finish(scrape(400.0, Some(2e6)), t + s(5));
        assert!(
            m.notes.iter().any(|n| n.contains("hardly changed")),
            "{:?}",
            m.notes
        );
        // Refreshed every 2 s of a 6 s window: a third of it.
        let (mut a, t) = acc();
        let mut e = 0.0;
        a.baseline(scrape(400.0, Some(e)), t);
        for k in 1..6u64 {
            if k % 2 == 0 {
                e += 1.6e6;
            }
            a.sample(scrape(400.0, Some(e)), t + s(k));
        }
        let m = a.finish(scrape(400.0, Some(e + 1.6e6)), t + s(6));
        assert!(
            m.notes
                .iter()
                .any(|n| n.contains("refreshed its readings about every 2.0 s")),
            "{:?}",
            m.notes
        );
    }

    #[test]
    fn a_failed_last_round_ends_the_window_at_the_last_reading() {
        let (mut a, t) = acc();
        let s = Duration::from_secs;
        // Two GPUs at 800 W each, then an exporter that stops answering.
        a.baseline(scrape(800.0, Some(0.0)), t);
        a.sample(scrape(800.0, Some(8e5)), t + s(1));
        a.sample(scrape(800.0, Some(1.6e6)), t + s(2));
        let failed = Scrape {
            gpus: BTreeMap::new(),
            errors: vec!["connection refused".into()],
        };
        let m = a.finish(failed, t + s(5));
        let sum = m.summary.as_ref().unwrap();
        assert!((sum.window_s - 2.0).abs() < 1e-9);
        assert_eq!(sum.energy_j, Some(3200.0));
        assert_eq!(sum.mean_power_w, Some(1600.0));
        assert!(
            m.notes.iter().any(|n| n.contains("first 2.0 s of 5.0 s")),
            "{:?}",
            m.notes
        );
    }

    #[test]
    fn no_baseline_is_no_window() {
        let (a, t) = acc();
        let m = a.finish(scrape(1.0, None), t);
        assert!(m.summary.is_none());
        assert!(m.notes[0].starts_with("no window of GPU metrics"));
    }
}
