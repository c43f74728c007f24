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
//!   share of the requests, the same `k mod N` ones;
//! - sessions stay whole: a session is one new item of the source, and its
//!   turns follow on the shard that started it;
//! - a trace splits by request, each keeping its own time.
//!
//! The warm-up and the measured count are split the same way: request `k`
//! is warm-up when `k < W` (the whole plan's `W`), so shard `i` sends its
//! share of `0..W`, then its share of `W..W+P`. `--max-concurrency` is
//! split like a closed loop's concurrency.

use serde::{Deserialize, Serialize};

use crate::executor::{RunPlan, Warmup};
use crate::schedule::Load;

/// Which part of the plan a process sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardOf {
    /// N, the number of shards.
    pub shards: u32,
    /// This shard's index, 0..N.
    pub shard: u32,
    /// The whole plan's warm-up requests (`W`), when the warm-up is a
    /// count: request `W` is the first measured one, on whichever shard.
    #[serde(default)]
    pub warmup_requests: Option<u64>,
}

impl ShardOf {
    /// A shard's place in `shards` (a usage error when `shard` is not below `shards`).
    pub fn new(shards: u32, shard: u32) -> Result<ShardOf, String> {
        if shards == 0 {
            return Err("--shards must be at least 1".into());
        }
        if shard >= shards {
            return Err(format!(
                "--shard {shard} is not below --shards {shards} (shards are numbered 0 to {})",
                shards - 1
            ));
        }
        Ok(ShardOf {
            shards,
            shard,
            warmup_requests: None,
        })
    }

    /// Whether this shard sends the source's `k`th new item.
    pub fn owns(&self, k: u64) -> bool {
        k % self.shards as u64 == self.shard as u64
    }

    /// How many of `0..n` this shard owns.
    pub fn share_below(&self, n: u64) -> u64 {
        let shards = self.shards as u64;
        n / shards + u64::from((self.shard as u64) < n % shards)
    }

    /// `n` split as evenly as possible: this shard's part.
    pub fn split(&self, n: usize) -> usize {
        self.share_below(n as u64) as usize
    }
}

impl RunPlan {
    /// This shard's part of the plan (see the module's documentation). An
    /// error when a closed loop's concurrency or a `--max-concurrency` is
    /// smaller than the number of shards (a shard would have no slot).
    pub fn for_shard(&self, of: ShardOf) -> Result<RunPlan, String> {
        let mut plan = self.clone();
        let mut of = of;
        let too_few = |what: &str, n: usize| {
            format!(
                "{what} {n} cannot be split over {} shards: each shard needs at least one request in flight",
                of.shards
            )
        };
        plan.load = match self.load {
            Load::Closed { concurrency } => {
                let c = of.split(concurrency);
                if c == 0 {
                    return Err(too_few("--concurrency", concurrency));
                }
                Load::Closed { concurrency: c }
            }
            Load::Open {
                rate,
                arrival,
                max_concurrency,
            } => Load::Open {
                rate,
                arrival,
                max_concurrency: match max_concurrency {
                    Some(m) if of.split(m) == 0 => return Err(too_few("--max-concurrency", m)),
                    m => m.map(|m| of.split(m)),
                },
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
        plan.shard = Some(of);
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Arrival;
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
            for (c, w, n) in [(7usize, 7u64, 100u64), (5, 4, 3), (64, 0, 1001)] {
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
                    .filter_map(|i| whole.for_shard(ShardOf::new(shards, i).unwrap()).ok())
                    .collect();
                if c < shards as usize {
                    assert!(parts.len() < shards as usize);
                    continue;
                }
                let sum = |f: &dyn Fn(&RunPlan) -> u64| parts.iter().map(f).sum::<u64>();
                assert_eq!(sum(&|p| p.load.concurrency_cap().unwrap() as u64), c as u64);
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

    #[test]
    fn a_cap_below_the_shard_count_is_refused() {
        let open = Load::Open {
            rate: 10.0,
            arrival: Arrival::Poisson,
            max_concurrency: Some(3),
        };
        let e = plan(open, Warmup::None, 10)
            .for_shard(ShardOf::new(4, 3).unwrap())
            .unwrap_err();
        assert!(e.contains("--max-concurrency 3"), "{e}");
        assert!(ShardOf::new(4, 4).is_err());
        assert!(ShardOf::new(0, 0).is_err());
    }
}
