//! Length specs: how many tokens a prompt or an output should have.
//!
//! `512` (or `fixed:512`), `uniform:256,1024`, `normal:512,128`,
//! `lognormal:512,0.5` (median 512, sigma 0.5 of the underlying normal),
//! `exponential:200` (mean 200), `empirical:PATH` (draws from the lengths
//! listed in a file, one whole number per line or the first field of a CSV
//! line; a header line and `#` comments are skipped). Samples are rounded and clamped to
//! `1..=`[`MAX_LENGTH`]. One grammar for the client's `--input-tokens` /
//! `--output-tokens` and the simulator's `--output-len`.

use std::fmt;
use std::str::FromStr;

use std::sync::Arc;

use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use serde::{Deserialize, Serialize};

/// The largest length a spec may ask for or draw (tokens).
pub const MAX_LENGTH: u32 = 10_000_000;

/// How many tokens each prompt or output gets: fixed, or drawn from a
/// distribution. Parsed from and printed as the grammar the module docs give,
/// which is also its serde form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum LengthSpec {
    /// `N` or `fixed:N`: always N tokens.
    Fixed(u32),
    /// `uniform:MIN,MAX`: a whole number drawn uniformly from MIN to MAX,
    /// both included.
    Uniform {
        /// Smallest length, tokens (at least 1).
        min: u32,
        /// Largest length, tokens (at least `min`).
        max: u32,
    },
    /// `normal:MEAN,STD`: a normal draw, rounded and clamped.
    Normal {
        /// Mean, tokens.
        mean: f64,
        /// Standard deviation, tokens.
        std: f64,
    },
    /// `lognormal:MEDIAN,SIGMA`: a log-normal draw, rounded and clamped.
    LogNormal {
        /// Median, tokens (above 0).
        median: f64,
        /// Standard deviation of the underlying normal (of the log length).
        sigma: f64,
    },
    /// `exponential:MEAN`: an exponential draw, rounded and clamped.
    Exponential {
        /// Mean, tokens (at least 1).
        mean: f64,
    },
    /// Lengths drawn uniformly from the values a file lists.
    Empirical {
        /// The file, as given after `empirical:`; printed back as given.
        path: String,
        /// The lengths read from it, tokens, each from 1 to `MAX_LENGTH`;
        /// never empty.
        values: Arc<[u32]>,
    },
}

impl LengthSpec {
    /// The smallest length a draw can have.
    pub fn min(&self) -> u32 {
        match self {
            LengthSpec::Fixed(n) => *n,
            LengthSpec::Uniform { min, .. } => *min,
            LengthSpec::Empirical { values, .. } => values.iter().copied().min().unwrap_or(1),
            _ => 1,
        }
        .max(1)
    }

    /// Draw one length, tokens, from `rng`: never below 1; a continuous draw
    /// is rounded and clamped to `1..=MAX_LENGTH`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let x = match *self {
            LengthSpec::Fixed(n) => return n.max(1),
            LengthSpec::Uniform { min, max } => return rng.random_range(min..=max).max(1),
            LengthSpec::Normal { mean, std } => Normal::new(mean, std)
                .map(|d| d.sample(rng))
                .unwrap_or(mean),
            LengthSpec::LogNormal { median, sigma } => LogNormal::new(median.ln(), sigma)
                .map(|d| d.sample(rng))
                .unwrap_or(median),
            LengthSpec::Exponential { mean } => {
                Exp::new(1.0 / mean).map(|d| d.sample(rng)).unwrap_or(mean)
            }
            LengthSpec::Empirical { ref values, .. } => {
                return values[rng.random_range(0..values.len())].max(1)
            }
        };
        x.round().clamp(1.0, MAX_LENGTH as f64) as u32
    }
}

impl fmt::Display for LengthSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthSpec::Fixed(n) => write!(f, "{n}"),
            LengthSpec::Uniform { min, max } => write!(f, "uniform:{min},{max}"),
            LengthSpec::Normal { mean, std } => write!(f, "normal:{mean},{std}"),
            LengthSpec::LogNormal { median, sigma } => write!(f, "lognormal:{median},{sigma}"),
            LengthSpec::Exponential { mean } => write!(f, "exponential:{mean}"),
            LengthSpec::Empirical { path, .. } => write!(f, "empirical:{path}"),
        }
    }
}

impl From<LengthSpec> for String {
    fn from(s: LengthSpec) -> String {
        s.to_string()
    }
}

impl TryFrom<String> for LengthSpec {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

const VALID: &str =
    "valid: 512, fixed:512, uniform:MIN,MAX, normal:MEAN,STD, lognormal:MEDIAN,SIGMA, exponential:MEAN, empirical:PATH";

impl FromStr for LengthSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let bad = |why: &str| format!("invalid length '{s}': {why} ({VALID})");
        let fixed = |n: &str| match n.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_LENGTH).contains(&n) => Ok(LengthSpec::Fixed(n)),
            _ => Err(bad(&format!(
                "expected a whole number from 1 to {MAX_LENGTH}"
            ))),
        };
        let Some((kind, args)) = s.split_once(':') else {
            return fixed(s);
        };
        if kind == "fixed" {
            return fixed(args);
        }
        if kind == "empirical" {
            return empirical(args).map_err(|why| bad(&why));
        }
        let nums: Vec<f64> = args
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad("parameters must be numbers"))?;
        if nums
            .iter()
            .any(|x| !x.is_finite() || *x < 0.0 || *x > MAX_LENGTH as f64)
        {
            return Err(bad(&format!(
                "parameters must be numbers from 0 to {MAX_LENGTH}"
            )));
        }
        if kind == "exponential" {
            return match nums.as_slice() {
                [m] if *m >= 1.0 => Ok(LengthSpec::Exponential { mean: *m }),
                _ => Err(bad("expected one MEAN >= 1")),
            };
        }
        if nums.len() != 2 {
            return Err(bad("expected two numbers"));
        }
        let (a, b) = (nums[0], nums[1]);
        match kind {
            // Whole numbers: `uniform:1.5,3.7` used to draw from 1 to 3.
            "uniform" if a.fract() != 0.0 || b.fract() != 0.0 => {
                Err(bad("MIN and MAX must be whole numbers"))
            }
            "uniform" if a >= 1.0 && b >= a => Ok(LengthSpec::Uniform {
                min: a as u32,
                max: b as u32,
            }),
            "uniform" => Err(bad("need 1 <= MIN <= MAX")),
            "normal" => Ok(LengthSpec::Normal { mean: a, std: b }),
            "lognormal" if a > 0.0 => Ok(LengthSpec::LogNormal {
                median: a,
                sigma: b,
            }),
            "lognormal" => Err(bad("MEDIAN must be > 0")),
            _ => Err(bad(&format!("unknown distribution '{kind}'"))),
        }
    }
}

/// Read an empirical distribution's lengths: one whole number per line, or
/// the first comma-separated field; a non-numeric first line (a header),
/// blank lines and `#` comments are skipped.
fn empirical(path: &str) -> Result<LengthSpec, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    let mut values = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let field = line.split(',').next().unwrap_or("").trim();
        if field.is_empty() || field.starts_with('#') {
            continue;
        }
        match field.parse::<u32>() {
            Ok(n) if (1..=MAX_LENGTH).contains(&n) => values.push(n),
            Err(_) if i == 0 => continue,
            _ => {
                return Err(format!(
                    "{path}:{}: expected a whole number from 1 to {MAX_LENGTH}, found '{field}'",
                    i + 1
                ))
            }
        }
    }
    if values.is_empty() {
        return Err(format!("{path}: no lengths found"));
    }
    Ok(LengthSpec::Empirical {
        path: path.to_string(),
        values: values.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_and_round_trips() {
        for s in [
            "512",
            "exponential:200",
            "uniform:256,1024",
            "normal:512,128",
            "lognormal:512,0.5",
        ] {
            let spec: LengthSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
        }
        assert!("0".parse::<LengthSpec>().is_err());
        assert!("uniform:9,3"
            .parse::<LengthSpec>()
            .unwrap_err()
            .contains("valid"));
        assert!("zipf:1,2".parse::<LengthSpec>().is_err());
        assert!("uniform:1.5,3.7"
            .parse::<LengthSpec>()
            .unwrap_err()
            .contains("whole numbers"));
        assert!("zipf:1,2"
            .parse::<LengthSpec>()
            .unwrap_err()
            .contains("empirical:PATH"));
        assert_eq!(
            "fixed:7".parse::<LengthSpec>().unwrap(),
            LengthSpec::Fixed(7)
        );
        assert!("99999999999"
            .parse::<LengthSpec>()
            .unwrap_err()
            .contains("valid"));
        assert!("normal:1e300,1".parse::<LengthSpec>().is_err());
    }

    #[test]
    fn samples_stay_in_range_and_at_least_one() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let u: LengthSpec = "uniform:5,9".parse().unwrap();
        let n: LengthSpec = "normal:2,50".parse().unwrap();
        for _ in 0..1000 {
            assert!((5..=9).contains(&u.sample(&mut rng)));
            assert!(n.sample(&mut rng) >= 1);
        }
    }

    #[test]
    fn empirical_lengths_come_from_the_file() {
        let path = std::env::temp_dir().join(format!("goodput-lengths-{}.csv", std::process::id()));
        std::fs::write(&path, "tokens,weight\n10,x\n# comment\n\n20\n30\n").unwrap();
        let spec: LengthSpec = format!("empirical:{}", path.display()).parse().unwrap();
        assert_eq!(spec.min(), 10);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let draws: Vec<u32> = (0..3000).map(|_| spec.sample(&mut rng)).collect();
        for v in [10, 20, 30] {
            let n = draws.iter().filter(|&&d| d == v).count();
            assert!((900..1100).contains(&n), "{v}: {n}");
        }
        std::fs::write(&path, "10\n0\n").unwrap();
        let e = format!("empirical:{}", path.display())
            .parse::<LengthSpec>()
            .unwrap_err();
        assert!(e.contains(":2:") && e.contains("whole number"), "{e}");
        let _ = std::fs::remove_file(&path);
    }

    /// Draws have the requested moments within sampling error.
    #[test]
    fn distributions_have_their_moments() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let n = 40_000;
        let stats = |spec: &str, rng: &mut rand::rngs::StdRng| {
            let spec: LengthSpec = spec.parse().unwrap();
            let v: Vec<f64> = (0..n).map(|_| spec.sample(rng) as f64).collect();
            let mean = v.iter().sum::<f64>() / n as f64;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            let mut s = v.clone();
            s.sort_by(f64::total_cmp);
            (mean, sd, s[n / 2])
        };
        let (m, sd, _) = stats("uniform:256,1024", &mut rng);
        assert!(
            (m - 640.0).abs() < 4.0 && (sd - 768.0 / 12f64.sqrt()).abs() < 4.0,
            "{m} {sd}"
        );
        let (m, sd, _) = stats("normal:512,128", &mut rng);
        assert!(
            (m - 512.0).abs() < 3.0 && (sd - 128.0).abs() < 3.0,
            "{m} {sd}"
        );
        let (_, _, median) = stats("lognormal:512,0.5", &mut rng);
        assert!((median - 512.0).abs() < 10.0, "{median}");
        let (m, _, _) = stats("exponential:200", &mut rng);
        assert!((m - 200.0).abs() < 5.0, "{m}");
    }
}
