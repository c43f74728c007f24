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
}
