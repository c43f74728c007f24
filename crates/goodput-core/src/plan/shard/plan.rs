//! One plan cut into N shards' parts.
//!
//! Every shard builds the same seeded plan: the same request source (its
//! new requests, or new sessions, numbered 0, 1, 2, … in the order the
//! source makes them) and the same arrival schedule. Shard `i` of `N` sends
//! request `k` when `k mod N = i`:
//!
//! - open loop: each shard waits for request `k`'s instant on the one
//!   schedule, so the union of the shards' send times is the one-process
//!   schedule, request for request, and each shard's own arrivals keep the
//!   process's shape (a Poisson process thinned by a fixed pattern is
//!   still spread like one);
//! - closed loop: the concurrency is split as evenly as possible (shard `i`
//!   gets `⌊c/N⌋`, plus one for `i < c mod N`), and each shard sends its
//!   share of the requests, the same `k mod N` ones. With fewer slots than
//!   shards (a search's concurrency-1 floor over four shards), only the
//!   first `c` shards send — request `k` goes to shard `k mod c` — and the
//!   others sit the run out, starting and ending with the rest;
//! - sessions stay whole: a session is one new item of the source, and its
//!   turns follow on the shard that started it;
//! - a trace splits by request, each keeping its own time.
//!
//! The warm-up and the measured count are split the same way: request `k`
//! is warm-up when `k < W` (the whole plan's `W`), so shard `i` sends its
//! share of `0..W`, then its share of `W..W+P`. `--max-concurrency` is
//! split like a closed loop's concurrency (and likewise leaves shards
//! idle when it is smaller than N).

use crate::load::executor::{RunPlan, Warmup};
use crate::load::schedule::{Load, ShardOf};

impl RunPlan {
    /// This shard's part of the plan (see the module's documentation). An
    /// idle shard's part sends nothing (and its one slot is never used).
    /// An error for a cap of 0 (no plan has one).
    pub fn for_shard(&self, of: ShardOf) -> Result<RunPlan, String> {
        let mut plan = self.clone();
        let mut of = of;
        if let Some(0) = self.load.concurrency_cap() {
            return Err("a concurrency of 0 cannot be split".into());
        }
        let cap = self.load.concurrency_cap().unwrap_or(usize::MAX);
        of.senders = of.shards.min(cap.min(u32::MAX as usize) as u32);
        let part = |n: usize| of.split(n).max(1);
        plan.load = match self.load {
            Load::Closed { concurrency } => Load::Closed {
                concurrency: part(concurrency),
            },
            Load::Open {
                rate,
                arrival,
                max_concurrency,
            } => Load::Open {
                rate,
                arrival,
                max_concurrency: max_concurrency.map(part),
            },
        };
        let warmup = match self.warmup {
            Warmup::Requests(w) => {
                of.warmup_requests = Some(w);
                plan.warmup = Warmup::Requests(of.share_below(w));
                w
            }
            Warmup::None => {
                of.warmup_requests = Some(0);
                0
            }
            // A timed warm-up ends at an instant, not at a request: each
            // shard's measured phase starts at its first request past it.
            Warmup::Duration(_) => 0,
        };
        plan.num_prompts = self
            .num_prompts
            .map(|p| of.share_below(warmup + p) - of.share_below(warmup));
        if of.idle() {
            plan.num_prompts = Some(0);
            plan.warmup = Warmup::Requests(0);
        }
        plan.shard = Some(of);
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::schedule::Arrival;
    use std::time::Duration;

    fn plan(load: Load, warmup: Warmup, n: u64) -> RunPlan {
        RunPlan {
            load,
            num_prompts: Some(n),
            duration: None,
            warmup,
            drain_timeout: Duration::from_secs(5),
            seed: 1,
            ramp_up: None,
            shard: None,
        }
    }

    /// The parts add up to the whole, and each shard's count is the number
    /// of indices it owns in the whole plan's ranges.
    #[test]
    fn parts_add_up_to_the_plan() {
        for shards in 1..=5u32 {
            for (c, w, n) in [
                (7usize, 7u64, 100u64),
                (5, 4, 3),
                (64, 0, 1001),
                (1, 4, 10),
                (3, 0, 7),
            ] {
                let whole = plan(
                    Load::Closed { concurrency: c },
                    if w == 0 {
                        Warmup::None
                    } else {
                        Warmup::Requests(w)
                    },
                    n,
                );
                let parts: Vec<RunPlan> = (0..shards)
                    .map(|i| whole.for_shard(ShardOf::new(shards, i).unwrap()).unwrap())
                    .collect();
                let sum = |f: &dyn Fn(&RunPlan) -> u64| parts.iter().map(f).sum::<u64>();
                let slots = |p: &RunPlan| match p.shard.unwrap().idle() {
                    true => 0,
                    false => p.load.concurrency_cap().unwrap() as u64,
                };
                assert_eq!(sum(&slots), c as u64);
                assert_eq!(sum(&|p| p.num_prompts.unwrap()), n, "{shards} {c} {w} {n}");
                let warm = |p: &RunPlan| match p.warmup {
                    Warmup::Requests(k) => k,
                    _ => 0,
                };
                assert_eq!(sum(&warm), w);
                for (i, p) in parts.iter().enumerate() {
                    let of = p.shard.unwrap();
                    let owned = (w..w + n).filter(|&k| of.owns(k)).count() as u64;
                    assert_eq!(p.num_prompts, Some(owned), "shard {i}");
                }
            }
        }
    }

    /// Three slots over four shards: the first three send every third
    /// request, the fourth sits the run out.
    #[test]
    fn fewer_slots_than_shards_leave_the_last_shards_idle() {
        let open = Load::Open {
            rate: 10.0,
            arrival: Arrival::Poisson,
            max_concurrency: Some(3),
        };
        let whole = plan(open, Warmup::None, 10);
        let last = whole.for_shard(ShardOf::new(4, 3).unwrap()).unwrap();
        assert_eq!(last.num_prompts, Some(0));
        assert!(last.shard.unwrap().idle());
        let first = whole.for_shard(ShardOf::new(4, 0).unwrap()).unwrap();
        assert_eq!(first.num_prompts, Some(4));
        assert!(first.shard.unwrap().owns(3) && !first.shard.unwrap().owns(4));
        assert!(ShardOf::new(4, 4).is_err());
        assert!(ShardOf::new(0, 0).is_err());
    }
}
