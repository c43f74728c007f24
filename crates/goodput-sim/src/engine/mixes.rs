//! What the engine schedules by beyond arrival: request priority and LoRA
//! adapters, as vLLM's v1 scheduler does.
//!
//! - **Priority** (`--scheduling-policy priority`): the waiting queue is
//!   ordered by (priority, arrival time), lower first; when a KV-cache block
//!   runs out, the running request with the highest (priority, arrival time)
//!   is preempted (`max(self.running, key=lambda r: (r.priority,
//!   r.arrival_time))` in vLLM's `scheduler.py`). The engine keeps its
//!   running list in that same order, so that victim is always the last.
//!   Under `fcfs`, vLLM rejects a request whose priority is not 0 ("Got
//!   priority P but Priority scheduling is not enabled."), and so does the
//!   simulator's server.
//! - **LoRA** (`--max-loras`): a waiting request whose adapter is not among
//!   the batch's and would make the batch hold more than `max_loras`
//!   distinct adapters is skipped until a slot frees (vLLM's scheduler
//!   skips it and looks at the next). Adapters stay resident in
//!   `max_cpu_loras` slots (least recently used out, default `max_loras`);
//!   a step whose batch holds an adapter that is not resident loads it,
//!   which adds `lora_load_ms` to the step. vLLM documents no fixed
//!   per-adapter decode overhead (its LoRA kernels' cost depends on rank
//!   and batch), so the simulator adds none.

use std::cmp::Ordering;

/// How the waiting queue is ordered (vLLM's `--scheduling-policy`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum SchedulingPolicy {
    /// First come, first served (vLLM's default).
    #[default]
    Fcfs,
    /// By (priority, arrival time): lower priority values first.
    Priority,
}

impl SchedulingPolicy {
    /// The policy's name as the flag and config file spell it (`fcfs`, `priority`).
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulingPolicy::Fcfs => "fcfs",
            SchedulingPolicy::Priority => "priority",
        }
    }
}

impl std::str::FromStr for SchedulingPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fcfs" => Ok(SchedulingPolicy::Fcfs),
            "priority" => Ok(SchedulingPolicy::Priority),
            _ => Err(format!("'{s}' (expected fcfs or priority)")),
        }
    }
}

/// The engine's LoRA limits.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoraLimits {
    /// Most distinct adapters in one batch; `None`: no LoRA serving.
    pub max_loras: Option<usize>,
    /// Adapters kept resident (default `max_loras`).
    pub max_cpu_loras: Option<usize>,
    /// Time a step spends loading one adapter that is not resident, seconds
    /// (already scaled by the time scale).
    pub load_s: f64,
}

/// (priority, arrival time): the order of the waiting queue and of the
/// running list under the priority policy.
pub(super) fn rank(a: (i64, f64), b: (i64, f64)) -> Ordering {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
}

/// The resident adapters, most recently used last.
#[derive(Debug, Default)]
pub(super) struct Resident {
    slots: Vec<u32>,
}

impl Resident {
    /// Mark the batch's `adapters` used; returns how many had to be loaded.
    pub(super) fn use_batch(&mut self, adapters: &[u32], capacity: usize) -> usize {
        let mut loaded = 0;
        for &a in adapters {
            match self.slots.iter().position(|&s| s == a) {
                Some(i) => {
                    self.slots.remove(i);
                }
                None => loaded += 1,
            }
            self.slots.push(a);
        }
        let capacity = capacity.max(adapters.len()).max(1);
        if self.slots.len() > capacity {
            let extra = self.slots.len() - capacity;
            self.slots.drain(..extra);
        }
        loaded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_adapters_are_least_recently_used_out() {
        let mut r = Resident::default();
        assert_eq!(r.use_batch(&[1], 2), 1);
        assert_eq!(r.use_batch(&[1], 2), 0);
        assert_eq!(r.use_batch(&[2], 2), 1);
        assert_eq!(r.use_batch(&[1], 2), 0);
        // 2 is now the least recently used: 3 evicts it.
        assert_eq!(r.use_batch(&[3], 2), 1);
        assert_eq!(r.use_batch(&[1], 2), 0);
        assert_eq!(r.use_batch(&[2], 2), 1);
    }

    #[test]
    fn ranks_order_by_priority_then_arrival() {
        assert_eq!(rank((0, 5.0), (10, 1.0)), Ordering::Less);
        assert_eq!(rank((10, 1.0), (10, 2.0)), Ordering::Less);
        assert_eq!("priority".parse(), Ok(SchedulingPolicy::Priority));
        assert!("lifo".parse::<SchedulingPolicy>().is_err());
    }

    use crate::config::SimConfig;
    use crate::engine::{Engine, EngineRequest, StepOutputs};

    fn engine(policy: SchedulingPolicy, lora: LoraLimits, max_num_seqs: usize) -> Engine {
        let mut e = SimConfig {
            max_num_seqs,
            scheduling_policy: policy,
            ..Default::default()
        }
        .build_engine()
        .unwrap();
        e.limits.lora = lora;
        e
    }

    fn req(id: u64, priority: i64, adapter: Option<u32>) -> EngineRequest {
        EngineRequest {
            id,
            prompt_tokens: 64,
            output_tokens: 2,
            priority,
            adapter,
            ..Default::default()
        }
    }

    /// The ids of the requests admitted, step by step, until all finished.
    fn admissions(e: &mut Engine) -> Vec<Vec<u64>> {
        let (mut now, mut out, mut order) = (0.0, StepOutputs::default(), Vec::new());
        let mut running: Vec<u64> = Vec::new();
        while let Some(r) = e.step(now, &mut out) {
            now = r.end_s();
            let admitted: Vec<u64> = e
                .running
                .iter()
                .copied()
                .filter(|id| !running.contains(id))
                .collect();
            running = e.running.clone();
            if !admitted.is_empty() {
                order.push(admitted);
            }
            out.clear();
        }
        order
    }

    /// One sequence at a time: under fcfs the order of arrival, under the
    /// priority policy the high priority (lower value) first, ties by arrival.
    #[test]
    fn the_priority_policy_admits_by_priority_then_arrival() {
        for (policy, expected) in [
            (
                SchedulingPolicy::Fcfs,
                vec![vec![1], vec![2], vec![3], vec![4]],
            ),
            (
                SchedulingPolicy::Priority,
                vec![vec![3], vec![1], vec![4], vec![2]],
            ),
        ] {
            let mut e = engine(policy, LoraLimits::default(), 1);
            for (i, (id, prio)) in [(1, 5), (2, 10), (3, 0), (4, 5)].into_iter().enumerate() {
                e.add(req(id, prio, None), i as f64 * 1e-6).unwrap();
            }
            assert_eq!(admissions(&mut e), expected, "{policy:?}");
        }
    }

    /// With one adapter per batch, a request of another adapter waits while
    /// one of the running adapter (and the base model) go past it; a load of
    /// an adapter not resident lengthens its step by the load time.
    #[test]
    fn max_loras_skips_a_second_adapter_and_loads_cost_step_time() {
        let lora = LoraLimits {
            max_loras: Some(1),
            max_cpu_loras: None,
            load_s: 0.5,
        };
        let mut e = engine(SchedulingPolicy::Fcfs, lora, 8);
        e.add(req(1, 0, Some(0)), 0.0).unwrap();
        e.add(req(2, 0, Some(1)), 0.0).unwrap();
        e.add(req(3, 0, Some(0)), 0.0).unwrap();
        e.add(req(4, 0, None), 0.0).unwrap();
        let mut out = StepOutputs::default();
        let first = e.step(0.0, &mut out).unwrap();
        assert_eq!(e.running, vec![1, 3, 4]);
        assert!(first.time.total_s >= 0.5, "{:?}", first.time);
        let second = e.step(first.end_s(), &mut out).unwrap();
        assert!(second.time.total_s < 0.5, "resident: no load");
        assert_eq!(admissions(&mut e), vec![vec![2]]);
        assert_eq!(e.counters().lora_loads, 2);
    }

    /// Three requests fill a ten-block cache; when decoding needs a block,
    /// fcfs preempts the newest, the priority policy the worst ranked
    /// (highest priority value), whenever it came.
    #[test]
    fn the_priority_policy_preempts_the_worst_ranked_first() {
        for (policy, victim) in [(SchedulingPolicy::Fcfs, 3), (SchedulingPolicy::Priority, 1)] {
            let mut e = SimConfig {
                num_gpu_blocks_override: Some(10),
                enable_prefix_caching: false,
                scheduling_policy: policy,
                ..Default::default()
            }
            .build_engine()
            .unwrap();
            for (i, (id, prio)) in [(1, 10), (2, 0), (3, 5)].into_iter().enumerate() {
                let r = EngineRequest {
                    id,
                    prompt_tokens: 48,
                    output_tokens: 64,
                    priority: prio,
                    ..Default::default()
                };
                e.add(r, i as f64 * 1e-6).unwrap();
            }
            let (mut now, mut out) = (0.0, StepOutputs::default());
            let first_victims = loop {
                let r = e.step(now, &mut out).unwrap();
                now = r.end_s();
                if r.preempted > 0 {
                    break e.waiting.iter().copied().collect::<Vec<_>>();
                }
            };
            assert_eq!(first_victims, [victim], "{policy:?}");
        }
    }

    /// The keys reach the configuration from a `--sim` spec and a TOML file.
    #[test]
    fn the_keys_are_read_from_a_spec_and_a_file() {
        let c = crate::config::SimArgs::from_spec(
            "llama-3.1-8b,scheduling-policy=priority,lora-modules=a+b,max-loras=2,max-cpu-loras=3,lora-load-ms=5",
        )
        .unwrap()
        .to_config()
        .unwrap();
        assert_eq!(c.scheduling_policy, SchedulingPolicy::Priority);
        assert_eq!(c.lora.modules, ["a", "b"]);
        assert_eq!((c.lora.max_loras, c.lora.max_cpu_loras), (Some(2), Some(3)));
        assert_eq!(c.lora.load_ms, 5.0);
        let mut f = SimConfig::default();
        f.apply_toml(
            "scheduling_policy = \"priority\"\nlora_modules = [\"x\"]\nlora_load_ms = 2.5\n",
            std::path::Path::new("t.toml"),
        )
        .unwrap();
        assert_eq!(f.scheduling_policy, SchedulingPolicy::Priority);
        assert_eq!(f.lora.modules, ["x"]);
        assert!(crate::config::SimArgs::from_spec("scheduling-policy=lifo").is_err());
        let base = SimConfig::default().model_name().to_string();
        let clash = SimConfig {
            lora: crate::config::LoraConfig {
                modules: vec![base],
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(
            clash.validate().is_err(),
            "an adapter named as the base model"
        );
    }
}
