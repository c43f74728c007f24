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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SchedulingPolicy {
    /// First come, first served (vLLM's default).
    #[default]
    Fcfs,
    /// By (priority, arrival time): lower priority values first.
    Priority,
}

impl SchedulingPolicy {
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
}
