//! `goodput predict`: a deployment's sustained goodput and its
//! latency–throughput curve, forecast in virtual time from a profile
//! (`goodput calibrate`) or a built-in deployment (`--sim`), for a workload
//! and an SLO, on N replicas.
//!
//! The forecast is goodput-calibrate's ([`goodput_calibrate::Prediction`]):
//! here are the flags turned into its options, its note, its text and its
//! JSON file.

use goodput_calibrate::{PredictOptions, Prediction, TraceReplay};
use goodput_sim::forecast::Routing;

use crate::cli::{PredictArgs, RoutingArg};
use crate::exit::{Code, Exit};

pub fn main(args: PredictArgs) -> Result<Code, Exit> {
    let prediction = Prediction::new(options(&args))?;
    if let Some(note) = prediction.note() {
        eprintln!("goodput: note: {note}");
    }
    let forecast = prediction.forecast()?;
    print!("{}", forecast.console());
    if let Some(path) = &args.out {
        forecast.write_json(path)?;
    }
    Ok(Code::Ok)
}

/// The predict flags goodput-calibrate reads.
fn options(args: &PredictArgs) -> PredictOptions {
    PredictOptions {
        profile: args.profile.clone(),
        sim: args.sim.clone(),
        replicas: args.replicas,
        routing: match args.routing {
            RoutingArg::RoundRobin => Routing::RoundRobin,
            RoutingArg::LeastOutstanding => Routing::LeastOutstanding,
        },
        slo: args.slo.iter().flatten().copied().collect(),
        max_error_rate: args.max_error_rate,
        input_tokens: args.input_tokens.clone(),
        output_tokens: args.output_tokens.clone(),
        prefix_tokens: args.prefix_tokens,
        prefix_groups: args.prefix_groups,
        turns: args.turns.clone(),
        think_time: args.think_time,
        trace: args.replay.trace.clone().map(|path| TraceReplay {
            path,
            options: args.replay.options(),
            speed: args.replay.trace_speed,
        }),
        rates: args.rates.clone(),
        requests: args.requests,
        schedules: args.schedules,
        draws: args.draws,
        precision: args.precision,
        seed: args.seed,
        frontier: args.frontier,
    }
}
