//! Durations as users write them: `500ms`, `60s`, `2m`, `1h`, `1.5s`, `250us`
//! (a bare number is seconds). One grammar for every flag of every command.
//!
//! A duration is at most [`MAX_DURATION`] (one year): anything longer is
//! almost certainly a typo, and every deadline computed from a parsed
//! duration (`Instant + d`) stays far from overflow. Values are checked, never
//! panicked on: `1e30s`, `NaN`, negatives and empty strings are errors that
//! say what would be valid.

use std::time::Duration;

/// The longest duration any flag accepts: 365 days.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

const EXAMPLES: &str = "expected a number with a unit, e.g. 500ms, 60s, 2m, 1h";

/// Parse a duration (`0` is allowed; callers that need a positive one check).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+'))
        .unwrap_or(t.len());
    // `1e3s` reads as a number with an exponent; `5m` must not lose its unit.
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration '{s}': {EXAMPLES}"))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => v,
        "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        other => {
            return Err(format!(
                "invalid duration '{s}': unknown unit '{other}' (use us, ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("invalid duration '{s}': must be >= 0"));
    }
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= MAX_DURATION => Ok(d),
        _ => Err(format!(
            "invalid duration '{s}': at most {} days",
            MAX_DURATION.as_secs() / 86_400
        )),
    }
}

/// Parse a duration that must be greater than zero.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!("invalid duration '{s}': must be greater than 0"));
    }
    Ok(d)
}

/// Format a duration the way [`parse_duration`] reads it back.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1000.0 || ms.fract() != 0.0 && (ms / 1000.0).fract() != 0.0 {
        format!("{}ms", trim_float(ms))
    } else {
        format!("{}s", trim_float(ms / 1000.0))
    }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A duration drawn per use, for think times: `2s` (fixed),
/// `uniform:1s,3s`, `exponential:2s` (mean), `lognormal:2s,0.5` (median and
/// the sigma of the underlying normal). Draws are capped at [`MAX_DURATION`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum DurationSpec {
    /// `2s` or `fixed:2s`: always this duration.
    Fixed(Duration),
    /// `uniform:LO,HI`: drawn uniformly from LO to HI (HI not below LO).
    Uniform(Duration, Duration),
    /// `exponential:MEAN`: an exponential draw with this mean.
    Exponential(Duration),
    /// `lognormal:MEDIAN,SIGMA`: a log-normal draw with this median and this
    /// standard deviation of the underlying normal (0 to 10).
    LogNormal(Duration, f64),
}

impl DurationSpec {
    /// Draw one duration from `rng`, capped at `MAX_DURATION`.
    pub fn sample<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        use rand_distr::{Distribution, Exp, LogNormal};
        let secs = match *self {
            DurationSpec::Fixed(d) => return d,
            DurationSpec::Uniform(a, b) => rng.random_range(a.as_secs_f64()..=b.as_secs_f64()),
            DurationSpec::Exponential(m) => Exp::new(1.0 / m.as_secs_f64().max(1e-9))
                .map(|d| d.sample(rng))
                .unwrap_or(m.as_secs_f64()),
            DurationSpec::LogNormal(median, sigma) => {
                LogNormal::new(median.as_secs_f64().max(1e-9).ln(), sigma)
                    .map(|d| d.sample(rng))
                    .unwrap_or(median.as_secs_f64())
            }
        };
        Duration::try_from_secs_f64(secs)
            .unwrap_or(MAX_DURATION)
            .min(MAX_DURATION)
    }

    /// The mean of the distribution, for descriptions.
    pub fn mean(&self) -> Duration {
        match *self {
            DurationSpec::Fixed(d) | DurationSpec::Exponential(d) => d,
            DurationSpec::Uniform(a, b) => (a + b) / 2,
            DurationSpec::LogNormal(m, sigma) => {
                Duration::try_from_secs_f64(m.as_secs_f64() * (sigma * sigma / 2.0).exp())
                    .unwrap_or(MAX_DURATION)
            }
        }
    }
}

impl std::fmt::Display for DurationSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            DurationSpec::Fixed(d) => write!(f, "{}", format_duration(d)),
            DurationSpec::Uniform(a, b) => {
                write!(f, "uniform:{},{}", format_duration(a), format_duration(b))
            }
            DurationSpec::Exponential(m) => write!(f, "exponential:{}", format_duration(m)),
            DurationSpec::LogNormal(m, s) => write!(f, "lognormal:{},{s}", format_duration(m)),
        }
    }
}

impl std::str::FromStr for DurationSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let valid = "valid: 2s, uniform:1s,3s, exponential:2s, lognormal:2s,0.5";
        let Some((kind, args)) = t.split_once(':') else {
            return parse_duration(t).map(DurationSpec::Fixed);
        };
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        let bad = |why: String| format!("invalid duration spec '{s}': {why} ({valid})");
        match (kind, args.as_slice()) {
            ("fixed", [d]) => parse_duration(d).map(DurationSpec::Fixed).map_err(bad),
            ("uniform", [a, b]) => {
                let (a, b) = (
                    parse_duration(a).map_err(bad)?,
                    parse_duration(b).map_err(bad)?,
                );
                if b < a {
                    return Err(bad("the upper bound is below the lower".into()));
                }
                Ok(DurationSpec::Uniform(a, b))
            }
            ("exponential", [m]) => parse_duration(m)
                .map(DurationSpec::Exponential)
                .map_err(bad),
            ("lognormal", [m, sigma]) => {
                let m = parse_duration(m).map_err(bad)?;
                match sigma.parse::<f64>() {
                    Ok(x) if x.is_finite() && (0.0..=10.0).contains(&x) => {
                        Ok(DurationSpec::LogNormal(m, x))
                    }
                    _ => Err(bad("sigma must be a number from 0 to 10".into())),
                }
            }
            _ => Err(bad("unknown form".into())),
        }
    }
}

impl From<DurationSpec> for String {
    fn from(d: DurationSpec) -> String {
        d.to_string()
    }
}

impl TryFrom<String> for DurationSpec {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("1e3ms").unwrap(), Duration::from_secs(1));
        assert!(parse_duration("5 parsecs").unwrap_err().contains("unit"));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("").is_err());
    }

    /// Values that once panicked (`Duration::from_secs_f64`, `Instant` overflow) are errors.
    #[test]
    fn huge_and_invalid_values_are_errors_not_panics() {
        for s in [
            "99999999999999999999s",
            "10000000000000000000s",
            "1e30",
            "inf",
            "NaN",
            "-1s",
            "366d",
            "8761h",
        ] {
            let e = parse_duration(s).unwrap_err();
            assert!(e.contains(s.trim()), "{s}: {e}");
        }
        assert!(parse_duration("365d").is_err(), "days are not a unit");
        assert_eq!(parse_duration("8760h").unwrap(), MAX_DURATION);
        assert!(parse_positive_duration("0s")
            .unwrap_err()
            .contains("greater than 0"));
        assert!(parse_positive_duration("1ms").is_ok());
    }

    #[test]
    fn formats_round_trip() {
        for d in [
            Duration::from_millis(250),
            Duration::from_secs(600),
            Duration::from_millis(1500),
        ] {
            assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }
    }

    #[test]
    fn duration_specs_parse_draw_and_round_trip() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for (text, mean) in [
            ("2s", 2.0),
            ("uniform:1s,3s", 2.0),
            ("exponential:500ms", 0.5),
            ("lognormal:1s,0.5", 0.5f64.powi(2).mul_add(0.5, 0.0).exp()),
        ] {
            let d: DurationSpec = text.parse().unwrap();
            assert_eq!(d.to_string().parse::<DurationSpec>().unwrap(), d);
            let n = 20_000;
            let m = (0..n)
                .map(|_| d.sample(&mut rng).as_secs_f64())
                .sum::<f64>()
                / n as f64;
            assert!(
                (m - mean).abs() < 0.03 * mean,
                "{text}: mean {m}, expected {mean}"
            );
            assert!((d.mean().as_secs_f64() - mean).abs() < 1e-9, "{text}");
        }
        for bad in ["uniform:3s,1s", "lognormal:1s,x", "gauss:1s", "uniform:1s"] {
            assert!(
                bad.parse::<DurationSpec>().unwrap_err().contains("valid"),
                "{bad}"
            );
        }
    }
}
