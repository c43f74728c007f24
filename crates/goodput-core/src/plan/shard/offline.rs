//! `goodput merge`: the shards' part files made one result, offline —
//! exactly what the coordinator would have merged, for a coordinator that
//! died, a run whose parts were gathered by hand, or a check of the live
//! merge.

use std::collections::BTreeMap;

use crate::load::executor::RunPlan;
use crate::measure::aggregate::{LineContext, RecordsSink};
use crate::measure::metrics::Collector;
use crate::measure::slo::Slo;
use crate::output::result::RunResult;
use crate::plan::shard::merge::{self, MergeInto, ShardPart};
use crate::plan::shard::part::Part;
use crate::plan::shard::LostShard;
use crate::tokenizer::Tokenizer;

/// Merge parts (from any number of files, in any order) into one result
/// per run they belong to, in the order each run's first part came;
/// records go to `sink`. An error for parts that cannot be merged: two
/// parts of the same shard, parts that disagree on the shard count, a
/// tokenizer that cannot be rebuilt.
pub fn merge_parts(parts: Vec<Part>, sink: &mut RecordsSink) -> Result<Vec<RunResult>, String> {
    let mut runs: Vec<(String, Vec<Part>)> = Vec::new();
    for p in parts {
        let Some(h) = &p.header else { continue };
        match runs.iter_mut().find(|(id, _)| *id == h.run_id) {
            Some((_, v)) => v.push(p),
            None => runs.push((h.run_id.clone(), vec![p])),
        }
    }
    runs.into_iter()
        .map(|(id, parts)| merge_run(&id, parts, sink))
        .collect()
}

/// One run's parts merged.
fn merge_run(run_id: &str, parts: Vec<Part>, sink: &mut RecordsSink) -> Result<RunResult, String> {
    let header = parts
        .first()
        .and_then(|p| p.header.clone())
        .ok_or("a part without its header")?;
    let shards = header.shard.shards;
    let (by_shard, lost) = by_shard(run_id, shards, parts)?;
    let tokenizer = Tokenizer::from_spec(&header.tokenizer)
        .map_err(|e| format!("run {run_id}: the tokenizer '{}': {e}", header.tokenizer))?;
    // The header's model, tokenizer, load and percentiles are what the
    // result reports; the result holds them once, in its config.
    let mut config = header.config.clone();
    config.model = header.model.clone();
    config.tokenizer = header.tokenizer.clone();
    config.load = header.load;
    config.percentiles = header.percentiles.clone();
    let plan = plan_of(&header);
    let slo = config.slo.clone();
    let mut collector = Collector::new(
        slo.as_ref()
            .map(Slo::request_thresholds)
            .unwrap_or_default(),
        header.load.is_open(),
    )
    .with_arrivals(&header.load);
    // Record times are written after the earliest shard's start.
    let origin_ns = by_shard
        .values()
        .filter_map(|p| {
            let h = p.header.as_ref()?;
            let e = p.end.as_ref()?;
            Some((e.start_ns as i64).saturating_sub(h.clock_offset_ns).max(0) as u64)
        })
        .min()
        .unwrap_or(0);
    let line = LineContext {
        run_id: run_id.to_string(),
        origin_ns,
        sharded: true,
    };
    let parts = by_shard
        .into_iter()
        .map(|(shard, part)| ShardPart { shard, part })
        .collect();
    let into = MergeInto {
        collector: &mut collector,
        sink,
        tokenizer: &tokenizer,
        line: &line,
    };
    let (exec, report) = merge::merge(parts, shards, lost, &plan, into);
    let metrics = collector.summarize(
        &header.percentiles,
        exec.ramp_end_ns,
        config.seed,
        slo.as_ref(),
    );
    let mut notes = vec![format!(
        "merged offline (goodput merge) from the parts of {} of {shards} shards",
        report.parts.len()
    )];
    notes.extend(merge::notes(&report));
    let warnings = crate::measure::traps::check(
        &metrics,
        &crate::measure::traps::RunFacts {
            load: header.load,
            pinned: config.min_tokens_sent || config.ignore_eos_sent,
            client_cpu_cores: None,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        &header.percentiles,
    );
    Ok(RunResult {
        run_id: run_id.to_string(),
        config,
        metrics,
        exec,
        connections: Default::default(),
        early_stop: None,
        cost: None,
        notes,
        warnings,
        started_at: header.started_at,
        clock_origin_monotonic_ns: None,
        output_hashes: Vec::new(),
        server_metrics: None,
        gpu_metrics: None,
        shards: Some(report),
    })
}

/// The parts by shard, and the shards without a whole part.
fn by_shard(
    run_id: &str,
    shards: u32,
    parts: Vec<Part>,
) -> Result<(BTreeMap<u32, Part>, Vec<LostShard>), String> {
    let mut by_shard: BTreeMap<u32, Part> = BTreeMap::new();
    for p in parts {
        let of = p.header.as_ref().ok_or("a part without its header")?.shard;
        if of.shards != shards {
            return Err(format!(
                "run {run_id}: one part says {} shards, another {shards}",
                of.shards
            ));
        }
        if by_shard.insert(of.shard, p).is_some() {
            return Err(format!(
                "run {run_id}: two parts of shard {} (give each part file once)",
                of.shard
            ));
        }
    }
    let mut lost = Vec::new();
    for i in 0..shards {
        match by_shard.get(&i) {
            None => lost.push(LostShard {
                shard: i,
                why: "no part of it was given".into(),
            }),
            Some(p) if p.end.is_none() => lost.push(LostShard {
                shard: i,
                why: format!(
                    "its part ends after {} records, before its end line: the shard stopped mid-run",
                    p.records.len()
                ),
            }),
            Some(_) => {}
        }
    }
    Ok((by_shard, lost))
}

/// The whole plan, as the parts' configuration recorded it.
fn plan_of(header: &crate::plan::shard::part::PartHeader) -> RunPlan {
    let config = &header.config;
    RunPlan {
        load: header.load,
        num_prompts: config.num_prompts,
        duration: config
            .duration_s
            .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok()),
        warmup: config.warmup,
        drain_timeout: std::time::Duration::from_secs_f64(config.drain_timeout_s.max(0.0)),
        seed: config.seed,
        ramp_up: None,
        shard: None,
    }
}
