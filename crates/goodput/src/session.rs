//! What a measuring command (`run`, `sweep`) holds while it runs: the
//! signal control, the prepared target, the records sink, the output files
//! and the live exposition, and the built-in simulator when no `--url` is
//! given.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use goodput_core::load::RunControl;
use goodput_core::measure::{Exposition, RecordsSink};
use goodput_core::output::{self, Exporter};
use goodput_core::output::{OutFile, Saved};
use goodput_core::plan::{PreparedTarget, RunError, TargetOptions};

use crate::cli::{CommonArgs, TargetArgs};
use crate::exit::{run_error, usage, Exit};
use crate::setup::watch_signals;
use crate::spec;

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
    exposition: Option<Exposition>,
    _sim: Option<goodput_sim::SimServer>,
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
        let (target, output) = (&flags.target, &flags.output);
        let output_spec =
            spec::output_spec(target).map_err(|e| crate::exit::usage(anyhow::Error::msg(e)))?;
        let control = RunControl::new();
        watch_signals(control.clone());
        let dashes = [&output.out, &output.csv, &output.html]
            .iter()
            .filter(|p| p.as_deref().is_some_and(|p| p.as_os_str() == "-"))
            .count();
        if dashes > 1 {
            return Err(usage(anyhow::anyhow!(
                "only one of --out, --csv and --html can be - (stdout)"
            )));
        }
        let records = open_records(output.records.as_deref())?;
        let mut out = OutFile::open(output.out.as_deref(), "results")?;
        let csv = OutFile::open(output.csv.as_deref(), "CSV")?;
        let html = OutFile::open(output.html.as_deref(), "HTML")?;
        let exposition = output
            .metrics_listen
            .map(|a| Exposition::start(a, output.metrics_linger))
            .transpose()
            .map_err(|e| usage(anyhow::anyhow!(e)))?;
        if let Some(e) = &exposition {
            eprintln!("goodput: live metrics at http://{}/metrics", e.addr);
        }
        let server = Server::start(target)?;
        if target.insecure {
            eprintln!(
                "goodput: warning: --insecure: the server's TLS certificate is not verified; anyone on the path could read and alter this traffic"
            );
        }
        let mut options = spec::target_options(
            target,
            &flags.workload,
            server.url,
            server.model,
            server.sim.is_some(),
            server.target,
        );
        options.output = output_spec;
        let mut prepared = prepare(options, &control, &mut out, unstarted).await?;
        if let Some(e) = &exposition {
            prepared.set_live(e.live.clone());
        }
        Ok(Session {
            control,
            target: prepared,
            sink: RecordsSink::new(records, output.records_itl).with_text(output.records_text),
            out,
            csv,
            html,
            exposition,
            _sim: server.sim,
        })
    }

    /// The label results are known by in `--csv` and `--html`: the `--out`
    /// file's name (else `default`).
    pub fn label(&self, default: &str) -> String {
        self.out.label().unwrap_or_else(|| default.into())
    }

    /// Write the command's last `--out` document, then `--csv` and
    /// `--html` by the same exporters `goodput report` uses. Each is tried
    /// whatever became of the others; the first failure is returned (exit 7).
    pub fn save(&mut self, items: &[(String, Saved)]) -> Result<(), Exit> {
        let out = self.out.write_final(&output::Json.to_bytes(items));
        let csv = self.csv.write_final(&output::Csv.to_bytes(items));
        let html = self.html.write_final(&output::Html.to_bytes(items));
        out?;
        csv?;
        Ok(html?)
    }

    /// Print the human summary: on stdout, or on stderr when `-` puts the
    /// results JSON (or the CSV, or the HTML) there.
    pub fn say(&self, text: &str) {
        if self.out.is_stdout() || self.csv.is_stdout() || self.html.is_stdout() {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }

    /// The command's work is done: let a live exposition linger for its last scrape.
    pub async fn finish(&mut self) {
        if let Some(e) = self.exposition.take() {
            let mut say = |line: String| eprintln!("goodput: {line}");
            e.finish(&self.control, &mut say).await;
        }
    }
}

/// `--records`, opened for appending (one JSON line per request), if asked for.
fn open_records(path: Option<&Path>) -> Result<Option<Box<dyn Write + Send>>, Exit> {
    let Some(path) = path else { return Ok(None) };
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening records file {}", path.display()))
        .map_err(usage)?;
    Ok(Some(Box::new(std::io::BufWriter::with_capacity(
        64 * 1024,
        f,
    ))))
}

/// The server to benchmark: `--url`, or the built-in simulator.
struct Server {
    url: String,
    /// `--model`, else the simulator's model (`None`: the first one the
    /// server's /v1/models lists, found when the target is prepared).
    model: Option<String>,
    /// The built-in simulator, held (and serving) as long as the session.
    sim: Option<goodput_sim::SimServer>,
    /// What answers, as the results will say.
    target: goodput_core::output::Target,
}

impl Server {
    /// `--url` as given, or, without one, the simulator of `--sim` (or the
    /// default preset) started now on a loopback port.
    fn start(target: &TargetArgs) -> Result<Server, Exit> {
        if let Some(url) = &target.url {
            return Ok(Server {
                url: url.clone(),
                model: target.model.clone(),
                sim: None,
                target: goodput_core::output::Target::Server,
            });
        }
        let preset = target.sim.as_ref();
        let config = preset.map(|p| p.config.clone()).unwrap_or_default();
        let describe = preset.map_or("llama-3.1-8b,h100-sxm,tp=1".to_string(), |p| p.spec.clone());
        let simulated = goodput_core::output::Target::Simulated {
            preset: Some(describe.clone()),
            settings: serde_json::to_value(&config).ok(),
        };
        let server =
            goodput_sim::SimServer::spawn(config, std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
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
        Ok(Server {
            url,
            model,
            sim: Some(server),
            target: simulated,
        })
    }
}

/// Prepare the target (client, model discovery, the probe). A signal
/// during it writes `unstarted`'s document to `--out` and ends with 130.
async fn prepare(
    options: TargetOptions,
    control: &RunControl,
    out: &mut OutFile,
    unstarted: &dyn Fn(&TargetOptions) -> Vec<u8>,
) -> Result<PreparedTarget, Exit> {
    match PreparedTarget::prepare(options.clone(), control).await {
        Ok(p) => Ok(p),
        Err(RunError::Interrupted) => {
            out.write_final(&unstarted(&options))?;
            Err(run_error(RunError::Interrupted))
        }
        Err(e) => Err(run_error(e)),
    }
}
