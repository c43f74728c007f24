//! What a measuring command (`run`, `sweep`) holds while it runs: the
//! signal control, the prepared target, the records sink, the output files
//! and the live exposition, and the built-in simulator when no `--url` is
//! given.

use std::fs::File;

use anyhow::Context;
use goodput_core::aggregate::RecordsSink;
use goodput_core::client::ClientOptions;
use goodput_core::executor::RunControl;
use goodput_core::server_metrics::ScrapeOptions;
use goodput_core::target::{PreparedTarget, RunError, ServerMetricsChoice, TargetOptions};

use crate::cli::CommonArgs;
use crate::exit::{run_error, usage, Exit};
use crate::setup::watch_signals;

/// Everything a measuring command holds while it runs.
pub struct Session {
    pub control: RunControl,
    pub target: PreparedTarget,
    pub sink: RecordsSink,
    pub out: OutFile,
    /// `--csv`: one row per run or sweep point.
    pub csv: OutFile,
    /// `--html`: the report.
    pub html: OutFile,
    /// `--metrics-listen`: the live exposition.
    exposition: Option<crate::exposition::Exposition>,
    _sim: Option<goodput_sim::SimServer>,
}

/// `--out`, kept open from the start: writing it at the end then needs no
/// new file descriptor, even when the run used every one it may have.
pub struct OutFile(Option<(File, std::path::PathBuf)>);

impl OutFile {
    /// Open (create) the file now, if one was asked for.
    pub fn open(path: Option<&std::path::Path>, what: &str) -> Result<OutFile, Exit> {
        let Some(path) = path else {
            return Ok(OutFile(None));
        };
        let f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("opening {what} file {}", path.display()))
            .map_err(usage)?;
        Ok(OutFile(Some((f, path.to_path_buf()))))
    }

    /// The file name, as a label for reports.
    pub fn label(&self) -> Option<String> {
        self.0.as_ref().map(|(_, p)| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
    }

    /// Replace the file's contents (as often as a sweep finishes a point).
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Exit> {
        use std::io::{Seek, Write};
        let Some((file, path)) = self.0.as_mut() else {
            return Ok(());
        };
        (|| -> std::io::Result<()> {
            file.set_len(0)?;
            file.rewind()?;
            file.write_all(bytes)?;
            file.flush()
        })()
        .with_context(|| format!("writing {}", path.display()))
        .map_err(usage)
    }
}

impl Session {
    /// Open the output files, start the simulator when there is no `--url`,
    /// and prepare the target. Signals are watched from the first instant;
    /// one that stops the preparation (model discovery, the probe) ends it
    /// with `unstarted`'s document in `--out` (a valid document saying
    /// nothing was sent, never an empty file) and exit code 130.
    pub async fn start<L: clap::Args>(
        flags: &CommonArgs<L>,
        unstarted: &dyn Fn(&TargetOptions) -> Vec<u8>,
    ) -> Result<Session, Exit> {
        let (target, workload, output) = (&flags.target, &flags.workload, &flags.output);
        let control = RunControl::new();
        watch_signals(control.clone());
        let records: Option<Box<dyn std::io::Write + Send>> = match &output.records {
            Some(path) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening records file {}", path.display()))
                    .map_err(usage)?;
                Some(Box::new(std::io::BufWriter::with_capacity(64 * 1024, f)))
            }
            None => None,
        };
        let out = OutFile::open(output.out.as_deref(), "results")?;
        let csv = OutFile::open(output.csv.as_deref(), "CSV")?;
        let html = OutFile::open(output.html.as_deref(), "HTML")?;
        let exposition = output
            .metrics_listen
            .map(|a| crate::exposition::Exposition::start(a, output.metrics_linger))
            .transpose()?;
        let mut sim = None;
        let (url, model) = match &target.url {
            Some(u) => (u.clone(), target.model.clone()),
            None => {
                let preset = target.sim.clone();
                let config = preset
                    .as_ref()
                    .map(|p| p.config.clone())
                    .unwrap_or_default();
                let describe = preset
                    .as_ref()
                    .map_or("llama-3.1-8b,h100-sxm,tp=1".to_string(), |p| p.spec.clone());
                let server = goodput_sim::SimServer::spawn(
                    config,
                    std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                )
                .context("starting the built-in simulator")
                .map_err(usage)?;
                let url = format!("http://{}", server.local_addr());
                eprintln!(
                    "goodput: no --url given; benchmarking the built-in simulator ('{}', preset {describe}) at {url}",
                    server.model_name()
                );
                let model = target
                    .model
                    .clone()
                    .or_else(|| Some(server.model_name().to_string()));
                sim = Some(server);
                (url, model)
            }
        };
        if target.insecure {
            eprintln!(
                "goodput: warning: --insecure: the server's TLS certificate is not verified; anyone on the path could read and alter this traffic"
            );
        }
        let api_key = std::env::var(&target.api_key_env)
            .ok()
            .filter(|k| !k.is_empty());
        let options = TargetOptions {
            client: ClientOptions {
                url,
                endpoint: target.endpoint,
                headers: target.headers.clone(),
                api_key,
                timeout: target.timeout,
                idle_timeout: target.idle_timeout,
                connect_timeout: target.connect_timeout,
                no_proxy: target.no_proxy,
                tls: goodput_core::client::tls::TlsOptions {
                    insecure: target.insecure,
                    ca_cert: target.ca_cert.clone(),
                    client_auth: target.client_cert.clone().zip(target.client_key.clone()),
                },
            },
            model,
            stream: !target.no_stream,
            pin_output: !workload.no_pin_output,
            temperature: target.temperature,
            tokenizer: workload.tokenizer.clone(),
            server_in_process: sim.is_some(),
            server_metrics: match (&target.server_metrics, target.no_server_metrics) {
                (_, true) => ServerMetricsChoice::Off,
                (Some(url), false) => ServerMetricsChoice::Url(ScrapeOptions {
                    url: url.clone(),
                    interval: target.server_metrics_interval,
                }),
                (None, false) => ServerMetricsChoice::Auto {
                    interval: target.server_metrics_interval,
                },
            },
        };
        let mut prepared = match PreparedTarget::prepare(options.clone(), &control).await {
            Ok(p) => p,
            Err(RunError::Interrupted) => {
                let mut out = out;
                out.write(&unstarted(&options))?;
                return Err(run_error(RunError::Interrupted));
            }
            Err(e) => return Err(run_error(e)),
        };
        if let Some(e) = &exposition {
            prepared.set_live(e.live.clone());
        }
        Ok(Session {
            control,
            target: prepared,
            sink: RecordsSink::new(records, output.records_itl),
            out,
            csv,
            html,
            exposition,
            _sim: sim,
        })
    }

    /// Write `--csv` and `--html` for a result, labelled with the `--out`
    /// file's name (else `default`).
    pub fn write_reports(
        &mut self,
        saved: goodput_core::report::saved::Saved,
        default: &str,
    ) -> Result<(), Exit> {
        let label = self.out.label().unwrap_or_else(|| default.into());
        let items = [(label, saved)];
        self.csv
            .write(goodput_core::report::csv::render(&items).as_bytes())?;
        self.html
            .write(goodput_core::report::html::render(&items).as_bytes())
    }

    /// The command's work is done: let a live exposition linger for its last scrape.
    pub async fn finish(&mut self) {
        if let Some(e) = self.exposition.take() {
            e.finish(&self.control).await;
        }
    }
}
