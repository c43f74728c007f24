//! Schedule: *when* each request should be sent.
//!
//! Every load shape is a schedule of intended send times feeding the one
//! executor ([`crate::load::executor`]). Open loop yields offsets from the run's
//! origin — absolute, so a late send never shifts the ones after it (no
//! drift). Closed loop yields "as soon as a slot is free", and the executor's
//! concurrency limit supplies the slot.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};
use serde::{Deserialize, Serialize};

/// Inter-arrival process of an open-loop load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Arrival {
    /// Exponential gaps: a Poisson process (gamma with shape 1).
    Poisson,
    /// Equal gaps of exactly 1/rate.
    Constant,
    /// Gamma-distributed gaps with this shape and mean 1/rate: shape < 1 is
    /// burstier than Poisson, > 1 smoother (vLLM's `--burstiness`).
    Gamma(f64),
    /// Each request's time comes from a replayed trace (`--trace`); the
    /// rate is the trace's mean rate.
    Trace,
}

impl fmt::Display for Arrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arrival::Poisson => write!(f, "poisson"),
            Arrival::Constant => write!(f, "constant"),
            Arrival::Gamma(k) => write!(f, "gamma:{k}"),
            Arrival::Trace => write!(f, "trace"),
        }
    }
}

impl FromStr for Arrival {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "poisson" => Ok(Arrival::Poisson),
            "constant" => Ok(Arrival::Constant),
            other => match other.strip_prefix("gamma:").map(str::parse::<f64>) {
                Some(Ok(k)) if k > 0.0 && k.is_finite() => Ok(Arrival::Gamma(k)),
                _ => Err(format!(
                    "invalid arrival '{s}': valid values are poisson, constant, gamma:SHAPE (SHAPE > 0)"
                )),
            },
        }
    }
}

impl From<Arrival> for String {
    fn from(a: Arrival) -> String {
        a.to_string()
    }
}

impl TryFrom<String> for Arrival {
    type Error = String;
    /// As [`FromStr`], plus `trace`, which a results document may hold but
    /// the command line does not take (`--trace` sets it).
    fn try_from(s: String) -> Result<Self, String> {
        if s == "trace" {
            return Ok(Arrival::Trace);
        }
        s.parse()
    }
}

/// The offered load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Load {
    /// Closed loop: this many requests in flight at all times.
    Closed {
        /// Requests in flight (the slots; a session holds one through its turns).
        concurrency: usize,
    },
    /// Open loop: arrivals at `rate` requests/s (infinite: all at once),
    /// optionally capped in flight (the wait is reported as schedule lag).
    Open {
        /// Requests/s; infinite (all at once) is written as "inf".
        #[serde(with = "rate_serde")]
        rate: f64,
        /// The process the gaps between arrivals follow.
        arrival: Arrival,
        /// Cap on requests in flight (`--max-concurrency`); None: uncapped.
        max_concurrency: Option<usize>,
    },
}

/// A load in words, defined once for every report and message:
/// `concurrency 8`; `20 req/s (poisson)`, `20 req/s (poisson, at most 8 in
/// flight)`, `every request at once`. The rate takes the formatter's
/// precision (`{:.2}`: `12.00 req/s`), else at most two decimals with
/// trailing zeros cut and thousands grouped (`26.79`, `15`, `2,000`). The
/// alternate form (`{:#}`) names the loop first: `closed loop, concurrency
/// 8`, `open loop, 20 req/s (poisson)`.
impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            f.write_str(if self.is_open() {
                "open loop, "
            } else {
                "closed loop, "
            })?;
        }
        match *self {
            Load::Closed { concurrency } => write!(f, "concurrency {concurrency}"),
            Load::Open {
                rate,
                arrival,
                max_concurrency,
            } => {
                let cap = max_concurrency
                    .map(|c| format!(", at most {c} in flight"))
                    .unwrap_or_default();
                if !rate.is_finite() {
                    return write!(f, "every request at once{cap}");
                }
                let rate = match f.precision() {
                    Some(p) => format!("{rate:.p$}"),
                    None => {
                        let s = format!("{rate:.2}");
                        let s = s.trim_end_matches('0').trim_end_matches('.');
                        // Thousands grouped, as the reports print counts.
                        let (int, frac) = s.split_at(s.find('.').unwrap_or(s.len()));
                        let mut grouped = String::new();
                        for (i, c) in int.chars().enumerate() {
                            if i > 0 && (int.len() - i) % 3 == 0 {
                                grouped.push(',');
                            }
                            grouped.push(c);
                        }
                        grouped + frac
                    }
                };
                write!(f, "{rate} req/s ({arrival}{cap})")
            }
        }
    }
}

impl Load {
    /// The in-flight cap the executor enforces.
    pub fn concurrency_cap(&self) -> Option<usize> {
        match *self {
            Load::Closed { concurrency } => Some(concurrency),
            Load::Open {
                max_concurrency, ..
            } => max_concurrency,
        }
    }

    /// Whether this is an open loop.
    pub fn is_open(&self) -> bool {
        matches!(self, Load::Open { .. })
    }

    /// The open loop's arrival rate (req/s, possibly infinite); None in closed loop.
    pub fn offered_rate(&self) -> Option<f64> {
        match *self {
            Load::Open { rate, .. } => Some(rate),
            Load::Closed { .. } => None,
        }
    }
}

/// A rate as JSON: a number, or "inf" (JSON has no infinity).
mod rate_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(r: &f64, s: S) -> Result<S::Ok, S::Error> {
        if r.is_finite() {
            s.serialize_f64(*r)
        } else {
            s.serialize_str("inf")
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Rate {
            Number(f64),
            Text(String),
        }
        match Rate::deserialize(d)? {
            Rate::Number(x) => Ok(x),
            Rate::Text(t) if t == "inf" => Ok(f64::INFINITY),
            Rate::Text(t) => Err(serde::de::Error::custom(format!(
                "invalid rate '{t}': a number or \"inf\""
            ))),
        }
    }
}

/// How the load rises to its target (`--ramp-up`, `--ramp-up-strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RampUp {
    /// How long the load takes to reach its target.
    #[serde(with = "crate::serde_secs")]
    pub duration: Duration,
    /// The shape of the rise.
    pub strategy: RampStrategy,
}

/// The shape of a ramp-up: how the rate or concurrency rises to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RampStrategy {
    /// Rate (or concurrency) rises in proportion to time.
    Linear,
    /// Rate rises geometrically from 1 % of the target (vLLM's
    /// `--ramp-up-strategy exponential`); concurrency doubles at even steps.
    Exponential,
}

impl FromStr for RampStrategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "linear" => Ok(RampStrategy::Linear),
            "exponential" => Ok(RampStrategy::Exponential),
            _ => Err(format!(
                "invalid ramp-up strategy '{s}': valid values are linear, exponential"
            )),
        }
    }
}

/// The exponential ramp's starting rate, as a share of the target.
const EXP_RAMP_START: f64 = 0.01;

impl RampUp {
    /// Real time (s) of the arrival that a steady process at the target rate
    /// would make at `s`: the time warp of an open-loop ramp. The warped
    /// process's rate rises from 0 (linear) or 1 % (exponential) of the
    /// target to the target at the end of the ramp, and stays there; the
    /// arrivals keep their random gaps, stretched.
    pub fn warp(&self, s: f64) -> f64 {
        let t = self.duration.as_secs_f64();
        if t <= 0.0 {
            return s;
        }
        match self.strategy {
            // Cumulative arrivals in steady units: S(x) = x²/(2T) up to T.
            RampStrategy::Linear if s < t / 2.0 => (2.0 * t * s).sqrt(),
            RampStrategy::Linear => s + t / 2.0,
            RampStrategy::Exponential => {
                // rate(x) = R·e^{a(x−T)}, a = ln(1/start)/T; S(x) = (e^{a(x−T)} − start)/a.
                let a = (1.0 / EXP_RAMP_START).ln() / t;
                let at_end = (1.0 - EXP_RAMP_START) / a;
                if s < at_end {
                    t + (a * s + EXP_RAMP_START).ln() / a
                } else {
                    t + (s - at_end)
                }
            }
        }
    }

    /// When slot `i` of `n` (0-based) opens in a closed-loop ramp: slot 0
    /// at once, the last at the end of the ramp.
    pub fn slot_opens(&self, i: usize, n: usize) -> Duration {
        if n <= 1 || i == 0 {
            return Duration::ZERO;
        }
        let f = match self.strategy {
            RampStrategy::Linear => i as f64 / (n - 1) as f64,
            RampStrategy::Exponential => ((i + 1) as f64).ln() / (n as f64).ln(),
        };
        self.duration.mul_f64(f.clamp(0.0, 1.0))
    }
}

/// Yields intended send offsets from the run origin.
pub struct Schedule {
    load: Load,
    gaps: Option<Gamma<f64>>,
    rng: StdRng,
    next_s: f64,
    ramp: Option<RampUp>,
}

impl Schedule {
    /// The schedule of `load`, its random gaps drawn from a stream derived
    /// from `seed` (the same `seed` gives the same arrival times).
    pub fn new(load: Load, seed: u64) -> Self {
        let gaps = match load {
            Load::Open { rate, arrival, .. } if rate.is_finite() && rate > 0.0 => match arrival {
                Arrival::Poisson => Gamma::new(1.0, 1.0 / rate).ok(),
                Arrival::Gamma(k) => Gamma::new(k, 1.0 / (k * rate)).ok(),
                Arrival::Constant | Arrival::Trace => None,
            },
            _ => None,
        };
        Schedule {
            load,
            gaps,
            // A stream of its own, so the arrival times do not depend on the prompts drawn.
            rng: StdRng::seed_from_u64(goodput_common::schedule_seed(seed)),
            next_s: 0.0,
            ramp: None,
        }
    }

    /// Open loop: arrivals rise to the rate over the ramp (see [`RampUp::warp`]).
    pub fn with_ramp(mut self, ramp: Option<RampUp>) -> Self {
        self.ramp = ramp;
        self
    }

    /// The next intended send time as an offset from the origin, or `None`
    /// for closed loop ("as soon as a slot is free").
    pub fn next_offset(&mut self) -> Option<Duration> {
        let Load::Open { rate, arrival, .. } = self.load else {
            return None;
        };
        if !rate.is_finite() {
            return Some(Duration::ZERO);
        }
        let gap = match (arrival, &self.gaps) {
            (Arrival::Constant, _) => 1.0 / rate,
            (_, Some(g)) => g.sample(&mut self.rng),
            (_, None) => 1.0 / rate,
        };
        // The first arrival is at the origin; each later one a gap after the last.
        let at = self.ramp.map_or(self.next_s, |r| r.warp(self.next_s));
        self.next_s += gap;
        // Saturates instead of panicking: an arrival a year away never comes.
        Some(Duration::try_from_secs_f64(at).unwrap_or(goodput_common::units::MAX_DURATION))
    }
}

/// Which part of the plan a process sends: shard `i` of `N` sends the
/// source's new items `k` with `k mod N = i` (`crate::plan::shard::plan` cuts a
/// run's plan so). A place in the schedule, so the executor and the
/// request source need nothing of sharding's machinery to keep to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardOf {
    /// N, the number of shards.
    pub shards: u32,
    /// This shard's index, 0..N.
    pub shard: u32,
    /// How many shards send (the first `senders`): N, or fewer when the
    /// plan holds fewer slots than shards.
    pub senders: u32,
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
            senders: shards,
            warmup_requests: None,
        })
    }

    /// This shard sends nothing (the plan has fewer slots than shards).
    pub fn idle(&self) -> bool {
        self.shard >= self.senders
    }

    /// Whether this shard sends the source's `k`th new item.
    pub fn owns(&self, k: u64) -> bool {
        !self.idle() && k % self.senders as u64 == self.shard as u64
    }

    /// How many of `0..n` this shard owns.
    pub fn share_below(&self, n: u64) -> u64 {
        if self.idle() {
            return 0;
        }
        let senders = self.senders as u64;
        n / senders + u64::from((self.shard as u64) < n % senders)
    }

    /// `n` split as evenly as possible: this shard's part.
    pub fn split(&self, n: usize) -> usize {
        self.share_below(n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One description of a load, for every report and message.
    #[test]
    fn a_load_in_words() {
        let open = |rate, max_concurrency| Load::Open {
            rate,
            arrival: Arrival::Poisson,
            max_concurrency,
        };
        let closed = Load::Closed { concurrency: 8 };
        assert_eq!(closed.to_string(), "concurrency 8");
        assert_eq!(format!("{closed:#}"), "closed loop, concurrency 8");
        assert_eq!(open(15.0, None).to_string(), "15 req/s (poisson)");
        assert_eq!(open(26.7943, None).to_string(), "26.79 req/s (poisson)");
        assert_eq!(open(2000.0, None).to_string(), "2,000 req/s (poisson)");
        assert_eq!(open(12500.5, None).to_string(), "12,500.5 req/s (poisson)");
        assert_eq!(format!("{:.2}", open(12.0, None)), "12.00 req/s (poisson)");
        assert_eq!(
            format!("{:#}", open(20.5, Some(8))),
            "open loop, 20.5 req/s (poisson, at most 8 in flight)"
        );
        assert_eq!(
            open(f64::INFINITY, Some(4)).to_string(),
            "every request at once, at most 4 in flight"
        );
    }

    fn open(rate: f64, arrival: Arrival) -> Load {
        Load::Open {
            rate,
            arrival,
            max_concurrency: None,
        }
    }

    #[test]
    fn poisson_mean_rate_and_dispersion() {
        let mut s = Schedule::new(open(100.0, Arrival::Poisson), 1);
        let offs: Vec<f64> = (0..20_001)
            .map(|_| s.next_offset().unwrap().as_secs_f64())
            .collect();
        let rate = 20_000.0 / offs[20_000];
        assert!((rate - 100.0).abs() < 3.0, "rate {rate}");
        // Counts per 100 ms window: Poisson has variance == mean (10).
        let mut counts = vec![0u32; (offs[20_000] / 0.1) as usize];
        for o in &offs {
            if let Some(c) = counts.get_mut((o / 0.1) as usize) {
                *c += 1;
            }
        }
        let n = counts.len() as f64;
        let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / n;
        let var = counts
            .iter()
            .map(|&c| (c as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        assert!(
            (var / mean - 1.0).abs() < 0.15,
            "index of dispersion {}",
            var / mean
        );
    }

    #[test]
    fn constant_and_gamma_gaps() {
        let mut s = Schedule::new(open(4.0, Arrival::Constant), 1);
        let offs: Vec<f64> = (0..5)
            .map(|_| s.next_offset().unwrap().as_secs_f64())
            .collect();
        assert_eq!(offs, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        let mut g = Schedule::new(open(50.0, Arrival::Gamma(0.5)), 3);
        let last = (0..10_001)
            .map(|_| g.next_offset().unwrap())
            .last()
            .unwrap();
        let rate = 10_000.0 / last.as_secs_f64();
        assert!((rate - 50.0).abs() < 3.0, "gamma rate {rate}");
    }

    #[test]
    fn closed_loop_and_infinite_rate() {
        assert_eq!(
            Schedule::new(Load::Closed { concurrency: 4 }, 0).next_offset(),
            None
        );
        let mut s = Schedule::new(open(f64::INFINITY, Arrival::Poisson), 0);
        assert_eq!(s.next_offset(), Some(Duration::ZERO));
        assert_eq!(s.next_offset(), Some(Duration::ZERO));
    }

    #[test]
    fn infinite_rates_round_trip_through_json() {
        let load = open(f64::INFINITY, Arrival::Poisson);
        let v = serde_json::to_value(load).unwrap();
        assert_eq!(v["rate"], "inf");
        assert_eq!(serde_json::from_value::<Load>(v).unwrap(), load);
        let finite = open(2.5, Arrival::Constant);
        assert_eq!(
            serde_json::from_value::<Load>(serde_json::to_value(finite).unwrap()).unwrap(),
            finite
        );
    }

    /// A linear ramp over 10 s to 100/s: arrivals in the first second are
    /// about 1 % of them, the rate at the end of the ramp is the target, and
    /// after it the process is the steady one shifted by T/2.
    #[test]
    fn ramps_warp_arrivals_to_a_rising_rate() {
        let ramp = RampUp {
            duration: Duration::from_secs(10),
            strategy: RampStrategy::Linear,
        };
        let mut s = Schedule::new(open(100.0, Arrival::Constant), 1).with_ramp(Some(ramp));
        let offs: Vec<f64> = (0..3000)
            .map(|_| s.next_offset().unwrap().as_secs_f64())
            .collect();
        let within = |a: f64, b: f64| offs.iter().filter(|&&t| t >= a && t < b).count();
        // Expected arrivals in [a, b): R (b² − a²) / (2T).
        assert!(
            (within(0.0, 1.0) as i64 - 5).abs() <= 1,
            "{}",
            within(0.0, 1.0)
        );
        assert!(
            (within(9.0, 10.0) as i64 - 95).abs() <= 1,
            "{}",
            within(9.0, 10.0)
        );
        assert!((within(15.0, 16.0) as i64 - 100).abs() <= 1);
        let exp = RampUp {
            duration: Duration::from_secs(10),
            strategy: RampStrategy::Exponential,
        };
        // Monotone, continuous at the end of the ramp, and rate ~1 % at first.
        let mut last = 0.0;
        for i in 0..2000 {
            let t = exp.warp(i as f64 * 0.01);
            assert!(t >= last);
            last = t;
        }
        let a = (100f64).ln() / 10.0;
        let end = 0.99 / a;
        assert!((exp.warp(end) - 10.0).abs() < 1e-9);
        assert!((exp.warp(end + 1.0) - 11.0).abs() < 1e-9);
        assert!(exp.warp(0.01) > 0.5, "the first arrivals are sparse");
        // Closed-loop slots: the first at once, the last at the end.
        assert_eq!(ramp.slot_opens(0, 8), Duration::ZERO);
        assert_eq!(ramp.slot_opens(7, 8), Duration::from_secs(10));
        assert_eq!(exp.slot_opens(7, 8), Duration::from_secs(10));
        assert!(exp.slot_opens(1, 8) < ramp.slot_opens(1, 8) * 3 + Duration::from_secs(3));
    }

    #[test]
    fn arrival_parsing() {
        assert_eq!("gamma:0.5".parse::<Arrival>().unwrap(), Arrival::Gamma(0.5));
        assert!("gamma:-1".parse::<Arrival>().unwrap_err().contains("valid"));
        assert_eq!("poisson".parse::<Arrival>().unwrap().to_string(), "poisson");
    }
}
