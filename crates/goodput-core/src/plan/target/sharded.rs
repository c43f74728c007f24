//! A run of a sharded plan on a prepared target ([`crate::plan::shard`]).
//!
//! Each shard runs its part of the plan through the same executor as a
//! run of one process, with two differences: it starts at the instant the
//! coordinator gives (its gate), and its records are kept as they finish
//! instead of being summarized on the spot. The coordinator (shard 0)
//! then gathers every shard's part and merges them all into the one
//! result ([`crate::plan::shard::merge`]); another shard sends its part to the
//! coordinator and keeps a result of its own part only.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::keep::{self, Outlets, Upload};
use super::{
    collector_for, process_cpu_s, stop_scrape, PreparedTarget, Ran, RunError, RunSpec, Started,
};
use crate::load::executor::{Msg, Progress, RunControl, StartGate};
use crate::measure::aggregate::{LineContext, RecordsSink};
use crate::measure::metrics::RequestMetrics;
use crate::output::result::RunResult;
use crate::plan::shard::merge::{self, MergeInto, ShardPart};
use crate::plan::shard::part::{Part, PartEnd, PartHeader, PartWriter};
use crate::plan::shard::wire::PointOrder;
use crate::plan::shard::{Coordinator, Follower, ShardOf};
use crate::request::record::RequestRecord;

/// This process's side of a sharded run.
pub enum Role {
    /// Shard 0: it orders the runs and merges the parts.
    Coordinator(Arc<tokio::sync::Mutex<Coordinator>>),
    /// Another shard: it runs what it is ordered to.
    Follower(Arc<tokio::sync::Mutex<Follower>>),
}

/// A process's place in a sharded run.
pub struct Sharding {
    /// Coordinator (shard 0) or follower, with its connection.
    pub role: Role,
    /// Which shard this process is, of how many (`--shard`, `--shards`).
    pub of: ShardOf,
    /// Where this shard's parts are written (appended, one per run).
    pub part_files: Vec<PathBuf>,
    /// How long the coordinator waits for a shard past a run's drain.
    pub wait: Duration,
}

/// What another shard keeps of its part of a run: its counts (measured
/// requests completed and failed), and a note when its part file could not
/// be written.
#[derive(Debug, Clone, Default)]
pub struct PartSummary {
    pub exec: crate::load::executor::ExecSummary,
    pub completed: u64,
    pub failed: u64,
    pub note: Option<String>,
}

/// One shard's run of its part.
struct PartRun {
    records: Vec<RequestRecord>,
    measure_start_ns: Option<u64>,
    end: PartEnd,
    /// Why the part file could not be written, if it could not.
    unwritten: Option<String>,
    /// Whether the part reached the coordinator whole (another shard's).
    uploaded: Result<(), String>,
}

impl PreparedTarget {
    /// Run as one shard of a sharded plan from now on.
    pub fn set_sharding(&mut self, s: Sharding) {
        self.sharding = Some(s);
    }

    /// This process's place in a sharded run, if it has one.
    pub fn sharding(&self) -> Option<&Sharding> {
        self.sharding.as_ref()
    }

    /// The coordinator's run: order every shard to run `spec`'s plan,
    /// run its own part, gather the others' and merge them all.
    pub(super) async fn run_coordinated(
        &self,
        s: &Sharding,
        spec: &RunSpec,
        sink: &mut RecordsSink,
        control: &RunControl,
        progress: Arc<Progress>,
    ) -> Result<RunResult, RunError> {
        let Role::Coordinator(coordinator) = &s.role else {
            return Err(RunError::Internal(
                "a shard other than 0 runs what its coordinator orders (run_order)".into(),
            ));
        };
        let started = Started::now(self.clock);
        let nonce = rand::random::<u64>();
        let order = PointOrder {
            plan: spec.plan.clone(),
            control: spec.schedule_control,
            nonce,
            run_id: format!("{nonce:016x}"),
            clock_offset_ns: 0,
            clock_rtt_ns: 0,
        };
        let part_spec = part_spec(spec, s.of).map_err(RunError::Shard)?;
        let shards = {
            let mut c = coordinator.lock().await;
            c.announce(&order).await;
            c.shards()
        };
        let gate: StartGate = {
            let c = coordinator.clone();
            Box::new(move || Box::pin(async move { Some(c.lock().await.start().await) }))
        };
        let connections_before = self.client.connection_stats();
        let scrape = self.start_scrape(spec, &progress);
        let header = self.part_header(spec, &order, s.of);
        let files = part_files(s, &header);
        let own = self
            .run_part(
                &part_spec,
                nonce,
                control,
                progress,
                gate,
                Outlets {
                    files,
                    upload: None,
                },
            )
            .await;
        // The others are gathered even when this part failed: they must hear the point is over.
        let wait = spec.plan.drain_timeout + s.wait;
        let (gathered, lost) = {
            let mut c = coordinator.lock().await;
            let g = c.gather_parts(wait).await;
            (g, c.lost().to_vec())
        };
        let own = own?;
        let (server_metrics, gpu_metrics) = stop_scrape(scrape).await;
        let unwritten = own.unwritten.clone();
        let own = own.into_part(header);
        let mut parts = vec![ShardPart {
            shard: 0,
            part: own,
        }];
        parts.extend(gathered.into_iter().map(|g| ShardPart {
            shard: g.shard,
            part: g.part,
        }));
        let mut collector = collector_for(spec);
        let line = LineContext {
            run_id: order.run_id.clone(),
            origin_ns: started.origin_ns,
            sharded: true,
        };
        let into = MergeInto {
            collector: &mut collector,
            sink,
            tokenizer: &self.tokenizer,
            line: &line,
        };
        let (exec, report) = merge::merge(parts, shards, lost, &spec.plan, into);
        let ran = Ran {
            run_id: order.run_id,
            exec,
            connections: self.client.connection_stats().since(connections_before),
            server_metrics,
            gpu_metrics,
            shards: Some(report),
        };
        let mut r = self.result(spec, collector, sink, ran, started)?;
        r.notes.extend(unwritten);
        Ok(r)
    }

    /// Another shard's run of what its coordinator ordered: its part of
    /// `order`'s plan (the rest of `spec` is its own command line, the same
    /// as the coordinator's), sent to the coordinator, which computes the
    /// run's figures; this shard keeps only its counts.
    pub async fn run_order(
        &self,
        order: PointOrder,
        spec: &RunSpec,
        sink: &mut RecordsSink,
        control: &RunControl,
        progress: Arc<Progress>,
    ) -> Result<PartSummary, RunError> {
        let Some(s) = &self.sharding else {
            return Err(RunError::Internal("run_order without sharding".into()));
        };
        let Role::Follower(follower) = &s.role else {
            return Err(RunError::Internal(
                "the coordinator runs its own plan".into(),
            ));
        };
        let mut spec = spec.clone();
        spec.plan = order.plan.clone();
        spec.schedule_control = order.control;
        let part_spec = match part_spec(&spec, s.of) {
            Ok(p) => p,
            Err(e) => {
                follower.lock().await.fail(e.clone()).await;
                return Err(RunError::Shard(e));
            }
        };
        let gate: StartGate = {
            let f = follower.clone();
            Box::new(move || Box::pin(async move { f.lock().await.ready().await }))
        };
        let header = self.part_header(&spec, &order, s.of);
        let out = Outlets {
            files: part_files(s, &header),
            upload: Some(Upload::new(follower.clone(), header.clone())),
        };
        let own = match self
            .run_part(&part_spec, order.nonce, control, progress, gate, out)
            .await
        {
            Ok(p) => p,
            Err(e) => {
                follower.lock().await.fail(e.to_string()).await;
                return Err(e);
            }
        };
        let unwritten = own.unwritten.clone();
        own.uploaded.clone().map_err(RunError::Shard)?;
        let part = own.into_part(header);
        // Its own records file (`--records`): its requests, on its own clock.
        let line = LineContext {
            run_id: order.run_id.clone(),
            origin_ns: part.end.as_ref().map_or(0, |e| e.start_ns),
            sharded: true,
        };
        for rec in &part.records {
            sink.append(rec, &RequestMetrics::derive(rec, &self.tokenizer), &line);
        }
        sink.flush();
        let done = part.records.iter().filter(|r| !r.warmup && !r.incomplete());
        Ok(PartSummary {
            exec: part.end.map(|e| e.exec).unwrap_or_default(),
            completed: done.clone().filter(|r| r.ok()).count() as u64,
            failed: done.filter(|r| !r.ok()).count() as u64,
            note: unwritten,
        })
    }

    /// Run this shard's part of a plan: start at the gate's instant, keep
    /// the records as they finish (and write them to `file` as they do).
    async fn run_part(
        &self,
        spec: &RunSpec,
        nonce: u64,
        control: &RunControl,
        progress: Arc<Progress>,
        gate: StartGate,
        out: Outlets,
    ) -> Result<PartRun, RunError> {
        let wall = Instant::now();
        let cpu = process_cpu_s();
        self.begin(spec, control, nonce).await?;
        let source = self.start_source(spec, nonce)?;
        let (tx, rx) = mpsc::unbounded_channel::<Msg>();
        let shard = spec.plan.shard.map_or(0, |s| s.shard);
        let keep = keep::spawn(rx, shard, out);
        let start = Arc::new(Mutex::new(None::<Instant>));
        let seen = start.clone();
        let gate: StartGate = Box::new(move || {
            Box::pin(async move {
                let at = gate().await;
                if let Ok(mut s) = seen.lock() {
                    *s = at;
                }
                at
            })
        });
        let exec = self
            .execute(spec, source, control, tx, progress, Some(gate))
            .await;
        let kept = keep
            .await
            .map_err(|e| RunError::Internal(format!("keeping the shard's records: {e}")))?;
        let start_ns = start
            .lock()
            .ok()
            .and_then(|s| *s)
            .map_or(0, |i| self.clock.ns(i));
        let end = PartEnd {
            exec,
            start_ns,
            cpu_s: process_cpu_s().zip(cpu).map(|(a, b)| a - b),
            wall_s: wall.elapsed().as_secs_f64(),
        };
        let unwritten = kept
            .files
            .into_iter()
            .filter_map(|f| f.finish(&end))
            .reduce(|a, b| format!("{a}; {b}"));
        let uploaded = match kept.upload {
            Some(u) => u.finish(end.clone()).await,
            None => Ok(()),
        };
        Ok(PartRun {
            records: kept.records,
            measure_start_ns: kept.measure_start_ns,
            end,
            unwritten,
            uploaded,
        })
    }

    /// The header of this shard's part of `order`'s run.
    fn part_header(&self, spec: &RunSpec, order: &PointOrder, of: ShardOf) -> PartHeader {
        PartHeader {
            shard: spec
                .plan
                .for_shard(of)
                .ok()
                .and_then(|p| p.shard)
                .unwrap_or(of),
            run_id: order.run_id.clone(),
            clock_offset_ns: order.clock_offset_ns,
            clock_rtt_ns: order.clock_rtt_ns,
            load: spec.plan.load,
            config: self.config(spec),
            model: self.model.clone(),
            tokenizer: self.tokenizer.spec().to_string(),
            percentiles: spec.reported_percentiles(),
            started_at: crate::output::result::now_rfc3339(),
        }
    }
}

/// This shard's part files for a run, opened (appending) with its
/// `header` written.
fn part_files(s: &Sharding, header: &PartHeader) -> Vec<PartWriter> {
    s.part_files
        .iter()
        .map(|p| PartWriter::open(p, header))
        .collect()
}

impl PartRun {
    fn into_part(self, header: PartHeader) -> Part {
        Part {
            header: Some(header),
            measure_start_ns: self.measure_start_ns,
            records: self.records,
            end: Some(self.end),
        }
    }
}

/// This shard's part of `spec`: its part of the plan, and no early end
/// (a shard sees only its own requests; the verdict is the merged one's).
fn part_spec(spec: &RunSpec, of: ShardOf) -> Result<RunSpec, String> {
    let mut part = spec.clone();
    part.plan = spec.plan.for_shard(of)?;
    part.early_stop = false;
    Ok(part)
}
