//! `goodput calibrate`: fit the simulator's step-time model to a server seen
//! only over HTTP, and write a profile that `goodput predict`, `goodput sim
//! --profile` and `--sim FILE` use.
//!
//! The experiment's design, the fit and the calibration from saved results
//! (`--from`) are goodput-calibrate's ([`goodput_calibrate::calibrate`],
//! [`goodput_calibrate::calibrate_from`]). Here are the flags turned into
//! its options and the [`Measure`] it runs each design point through: the
//! same executor and client as `goodput run`, in this command's session,
//! the records read back from memory. Without `--url` it calibrates the
//! built-in simulator (`--sim` chooses which), which is how its fit is
//! checked.

use std::io::Write;
use std::sync::{Arc, Mutex};

use clap::Parser;
use goodput_calibrate::{CalibrateOptions, Error, Measure, Rec};
use goodput_core::load::{LengthSpec, Progress, Warmup, WarmupPolicy};
use goodput_core::measure::RecordsSink;
use goodput_core::plan::RunError;

use crate::cli::{CalibrateArgs, CommonArgs, LoadArgs, RunArgs};
use crate::exit::{usage, Code, Exit};
use crate::report_cmd::read_all;
use crate::session::Session;
use crate::{setup, spec};

pub fn main(args: CalibrateArgs) -> Result<Code, Exit> {
    if !args.from.is_empty() {
        let saved = read_all(&args.from)?;
        goodput_calibrate::calibrate_from(&saved, &options(&args), &mut |s| print!("{s}"))?;
        return Ok(Code::Ok);
    }
    setup::raise_fd_limit();
    setup::reserve_fd_table(None, args.target.url.is_none());
    setup::runtime(args.target.client_threads)?.block_on(calibrate(args))
}

/// The calibrate flags goodput-calibrate reads.
fn options(args: &CalibrateArgs) -> CalibrateOptions {
    CalibrateOptions {
        from: args.from.clone(),
        out: args.out.clone(),
        prompt_lengths: args.prompt_lengths.clone(),
        prefill_requests: args.prefill_requests,
        batches: args.batches.clone(),
        contexts: args.contexts.clone(),
        decode_tokens: args.decode_tokens,
        burst: args.burst,
        held_queue: args.held_queue,
        max_num_batched_tokens: args.max_num_batched_tokens,
    }
}

/// The run flags every design point starts from: `goodput run`'s defaults
/// with the user's target flags.
fn base_flags(args: &CalibrateArgs) -> Result<CommonArgs<LoadArgs>, Exit> {
    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        run: RunArgs,
    }
    let mut flags = Wrap::try_parse_from(["goodput", "--quiet"])
        .map_err(usage)?
        .run
        .common;
    flags.target = args.target.clone();
    flags.bounds.seed = args.seed;
    Ok(flags)
}

async fn calibrate(args: CalibrateArgs) -> Result<Code, Exit> {
    let base = base_flags(&args)?;
    let mut session = Session::start(&base, &|_| Vec::new()).await?;
    let published = goodput_calibrate::published(&session.target).await;
    let model = session.target.model().to_string();
    let source = match (&args.target.url, &args.target.sim) {
        (Some(u), _) => u.clone(),
        (None, Some(p)) => format!("built-in simulator '{}'", p.spec),
        (None, None) => "built-in simulator (default preset)".into(),
    };
    let mut runner = Runner {
        session: &mut session,
        base,
        quiet: args.quiet,
    };
    let written = goodput_calibrate::calibrate(
        &mut runner,
        &options(&args),
        &model,
        &source,
        &published,
        &mut |s| print!("{s}"),
    )
    .await?;
    session.finish().await;
    written.enough()?;
    Ok(Code::Ok)
}

/// A `Write` into memory that the caller keeps a handle on.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs design points against the session's prepared target.
struct Runner<'a> {
    session: &'a mut Session,
    /// The run flags every point starts from (the user's target flags).
    base: CommonArgs<LoadArgs>,
    quiet: bool,
}

impl Measure for Runner<'_> {
    /// A closed-loop `goodput run` without warm-up, its records written to
    /// memory and read back.
    async fn point(
        &mut self,
        concurrency: usize,
        requests: u64,
        prompt_tokens: u32,
        output_tokens: u32,
    ) -> Result<Vec<Rec>, Error> {
        let mut flags = self.base.clone();
        flags.load.concurrency = Some(concurrency);
        flags.load.request_rate = None;
        flags.bounds.num_prompts = Some(requests);
        flags.bounds.duration = None;
        flags.bounds.warmup = WarmupPolicy::Fixed(Warmup::None);
        flags.workload.input_tokens = LengthSpec::Fixed(prompt_tokens);
        flags.workload.output_tokens = Some(LengthSpec::Fixed(output_tokens));
        // The specs' errors are all usage errors (a flag that does not fit).
        let spec = spec::run_spec(spec::run_load(&flags.load), &flags)
            .map_err(|Exit(_, e)| Error::Usage(e.into()))?;
        let buffer = Shared::default();
        let mut sink = RecordsSink::new(Some(Box::new(buffer.clone())), true);
        let progress = Arc::new(Progress::default());
        let result = match self
            .session
            .target
            .run(&spec, &mut sink, &self.session.control, progress)
            .await
        {
            Err(RunError::Interrupted) => return Err(Error::Interrupted),
            r => r.map_err(Error::Run)?,
        };
        if result.exec.interrupted {
            return Err(Error::Interrupted);
        }
        let bytes = buffer
            .0
            .lock()
            .map_err(|_| Error::Internal("the records buffer was poisoned".into()))?
            .clone();
        Ok(String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(Rec::parse)
            .collect())
    }

    /// A line of progress on standard error, unless `--quiet`.
    fn say(&mut self, line: String) {
        if !self.quiet {
            eprintln!("goodput calibrate: {line}");
        }
    }
}
