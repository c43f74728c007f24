//! The parser of every flag's grammar, and the values they produce.
//!
//! Every flag is checked here, by its parser, before anything starts: a bad
//! value exits 2 with what would be valid, before the simulator, a
//! connection or a file is touched. One parser per grammar: `run` and
//! `sweep` share them, and a narrower grammar is built on the wider one
//! (`finite_rate` on `rate`'s numbers, `burstiness` on `positive`).
//! Grammars that the core also reads (durations, SLO terms, arrival
//! processes, tokenizers) are the core's own parsers, called from here.

use std::path::PathBuf;

use goodput_core::output::compare::FailOn;

/// `--percentiles`: the percentiles to report, each from 0 to 100.
#[derive(Debug, Clone)]
pub struct Percentiles(pub Vec<f64>);

/// A duration, zero allowed (`--drain-timeout`, `--trace-start`, `--metrics-linger`).
pub(super) fn duration(s: &str) -> Result<std::time::Duration, String> {
    goodput_core::units::parse_duration(s)
}

/// A duration above zero (the timeouts, `--duration`, `--ramp-up`, sweep times...).
/// `--search-time`: `auto` (sized to the answer) or a load time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SearchTime {
    Auto,
    Fixed(std::time::Duration),
}

impl SearchTime {
    /// The fixed budget, None for `auto`.
    pub fn fixed(self) -> Option<std::time::Duration> {
        match self {
            SearchTime::Auto => None,
            SearchTime::Fixed(d) => Some(d),
        }
    }
}

pub(super) fn search_time(s: &str) -> Result<SearchTime, String> {
    if s == "auto" {
        return Ok(SearchTime::Auto);
    }
    positive_duration(s)
        .map(SearchTime::Fixed)
        .map_err(|e| format!("{e} (or auto)"))
}

pub(super) fn positive_duration(s: &str) -> Result<std::time::Duration, String> {
    goodput_core::units::parse_positive_duration(s)
}

/// `--server-metrics`: an http(s) URL to scrape.
pub(super) fn server_metrics_url(s: &str) -> Result<String, String> {
    goodput_core::measure::check_url(s).map(|_| s.to_string())
}

/// `--temperature`: a number >= 0.
pub(super) fn temperature(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("invalid temperature '{s}': expected a number >= 0")),
    }
}

/// `--metrics-listen`: HOST:PORT (port 0: any free port).
pub(super) fn listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            format!("invalid address '{s}': expected HOST:PORT, for example 127.0.0.1:9464")
        })
}

/// The least rate a flag accepts: slower than one request per longest
/// duration a flag accepts, a run could never send twice.
fn min_rate() -> f64 {
    1.0 / goodput_core::units::MAX_DURATION.as_secs_f64()
}

/// A finite rate in requests/s, at least [`min_rate`].
fn finite_rate_number(s: &str) -> Option<f64> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r >= min_rate())
}

/// `--request-rate`: requests/s, or `inf` (everything at once).
pub(super) fn rate(s: &str) -> Result<f64, String> {
    if s.trim() == "inf" {
        return Ok(f64::INFINITY);
    }
    finite_rate_number(s).ok_or_else(|| {
        format!(
            "invalid rate '{s}': expected requests/s as a number >= {:.2e} (one a year), or 'inf'",
            min_rate()
        )
    })
}

/// `sweep --rates`: the `--request-rate` grammar without `inf`. A sweep's
/// points are bounded by time (`--point-time`), and an infinite rate would
/// send all of a point's requests at its first instant: as many as the
/// bound allows, which for a time bound is no bound at all. The curve and
/// its knees also need every point's offered rate as a number.
pub(super) fn finite_rate(s: &str) -> Result<f64, String> {
    finite_rate_number(s).ok_or_else(|| {
        format!(
            "invalid rate '{s}': expected requests/s as a number >= {:.2e} (one a year)",
            min_rate()
        )
    })
}

/// A count of at least 1 (surrounding spaces allowed, as in `1, 8, 64`).
pub(super) fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("invalid value '{s}': expected a whole number >= 1")),
    }
}

/// `sweep --precision`: a share strictly between 0 and 1, as a percentage
/// (5%) or a fraction (0.05).
pub(super) fn percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(x) if x > 0.0 && x < 1.0 => Ok(x),
        _ => Err(format!(
            "invalid precision '{s}': expected a share such as 5% or 0.05"
        )),
    }
}

/// `--burstiness`: vLLM's gamma shape, the [`positive`] grammar with a
/// message that says what the number means.
pub(super) fn burstiness(s: &str) -> Result<f64, String> {
    positive(s)
        .map_err(|_| format!("invalid burstiness '{s}': expected a number > 0 (1 is Poisson)"))
}

/// A share from 0 to 1 (`--slo-attainment`, `--max-error-rate`).
pub(super) fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "invalid share '{s}': expected a number from 0 to 1, e.g. 0.01"
        )),
    }
}

/// `--warmup`: auto, a request count (0: none) or a duration (the core's grammar).
pub(super) fn warmup(s: &str) -> Result<goodput_core::load::WarmupPolicy, String> {
    s.parse()
}

/// `--goodput`: one per-request threshold METRIC:MS.
pub(super) fn threshold(s: &str) -> Result<goodput_core::measure::Threshold, String> {
    s.parse()
}

/// A finite number above zero (`--cost-per-hour`, `--power-watts`).
pub(super) fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("invalid value '{s}': expected a number > 0")),
    }
}

/// A simulator preset (`--sim`), validated into a configuration at parse time.
#[derive(Debug, Clone)]
pub struct SimPreset {
    pub spec: String,
    pub config: goodput_sim::SimConfig,
}

/// `--sim`: a simulator preset, validated into its configuration.
pub(super) fn sim_preset(s: &str) -> Result<SimPreset, String> {
    // Each key is parsed with its own type (goodput-sim's `config::spec`).
    let config = goodput_sim::SimArgs::from_spec(s)
        .and_then(|a| a.to_config())
        // clap already names the flag and the value: say only what is wrong.
        .map_err(|e| match e {
            goodput_sim::SimError::Invalid { message, .. } => message,
            e => e.to_string(),
        })?;
    Ok(SimPreset {
        spec: s.to_string(),
        config,
    })
}

/// `--ca-cert`, `--client-cert`: a PEM file holding certificates.
pub(super) fn pem_certs(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    goodput_core::request::read_certs(&p).map(|_| p)
}

/// `--client-key`: a PEM file holding a private key.
pub(super) fn pem_key(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    goodput_core::request::read_key(&p).map(|_| p)
}

/// `--dataset-input-filter`, `--dataset-output-filter`: MIN,MAX tokens.
pub(super) fn token_range(s: &str) -> Result<(u32, u32), String> {
    let bad =
        || format!("invalid range '{s}': expected MIN,MAX, whole numbers with 1 <= MIN <= MAX");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    match (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
        (Ok(a), Ok(b)) if a >= 1 && a <= b => Ok((a, b)),
        _ => Err(bad()),
    }
}

/// `--trace-speed`: a replay speed from 0.000001 to 1000000.
pub(super) fn speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && (1e-6..=1e6).contains(&x) => Ok(x),
        _ => Err(format!(
            "invalid speed '{s}': expected a number from 0.000001 to 1000000"
        )),
    }
}

/// `--tokenizer`: a built-in tokenizer, a tokenizer.json path, or none.
pub(super) fn tokenizer(s: &str) -> Result<goodput_core::tokenizer::Tokenizer, String> {
    goodput_core::tokenizer::Tokenizer::from_spec(s).map_err(|e| e.to_string())
}

/// `--url`: the server's base URL.
pub(super) fn url(s: &str) -> Result<String, String> {
    goodput_core::request::BaseUrl::parse(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// `--header`: 'Name: value', with no line break in the value.
pub(super) fn header(s: &str) -> Result<String, String> {
    let valid = s.split_once(':').is_some_and(|(name, value)| {
        let name = name.trim();
        !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_graphic())
            && !value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
    });
    if valid {
        Ok(s.to_string())
    } else {
        Err(format!("invalid header '{s}': expected 'Name: value'"))
    }
}

/// `--model`: one name, or a list of models (checked here; split by
/// [`goodput_core::load::parse_models`] where the run is built).
pub(super) fn model_list(s: &str) -> Result<String, String> {
    goodput_core::load::parse_models(s).map(|_| s.to_string())
}

/// `--arrival` (run and sweep): poisson, constant or gamma:SHAPE.
pub(super) fn arrival(s: &str) -> Result<goodput_core::load::Arrival, String> {
    s.parse()
}

/// `--percentiles`: comma-separated numbers from 0 to 100.
pub(super) fn percentiles(s: &str) -> Result<Percentiles, String> {
    let v: Result<Vec<f64>, _> = s.split(',').map(|p| p.trim().parse::<f64>()).collect();
    match v {
        Ok(v) if !v.is_empty() && v.iter().all(|p| (0.0..=100.0).contains(p)) => Ok(Percentiles(v)),
        _ => Err(format!(
            "invalid percentiles '{s}': expected numbers in 0..=100, e.g. 50,90,99,99.9"
        )),
    }
}

/// `compare --fail-on`: a bound on a figure's change.
pub(super) fn fail_on(s: &str) -> Result<FailOn, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_rate_is_a_number_of_at_least_one_a_year_or_inf() {
        assert_eq!(rate("inf"), Ok(f64::INFINITY));
        assert_eq!(rate("2.5"), Ok(2.5));
        assert_eq!(rate(" 2"), Ok(2.0));
        for bad in ["0", "-1", "1e-9", "abc", "NaN"] {
            let e = rate(bad).unwrap_err();
            assert!(e.contains("or 'inf'"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_sweep_rate_is_the_run_grammar_without_inf() {
        for ok in ["2.5", " 2", "1e-7"] {
            assert_eq!(finite_rate(ok), rate(ok), "{ok}");
        }
        for bad in ["inf", "0", "1e-9", "abc"] {
            let e = finite_rate(bad).unwrap_err();
            assert!(!e.contains("or 'inf'"), "{bad}: {e}");
            assert!(e.contains("(one a year)"), "{bad}: {e}");
        }
    }

    #[test]
    fn counts_allow_the_spaces_of_a_comma_list() {
        assert_eq!(at_least_one(" 8"), Ok(8));
        assert!(at_least_one("0").is_err());
    }

    #[test]
    fn burstiness_keeps_its_own_message() {
        assert_eq!(burstiness("0.5"), Ok(0.5));
        assert_eq!(
            burstiness("0"),
            Err("invalid burstiness '0': expected a number > 0 (1 is Poisson)".to_string())
        );
        assert_eq!(
            positive("0"),
            Err("invalid value '0': expected a number > 0".to_string())
        );
    }
}

/// The tools of a `--tools` file, read when the flag is parsed.
#[derive(Debug, Clone)]
pub struct ToolsFile(pub Vec<goodput_core::request::ToolDef>);

/// `--tools FILE`: the file's tool definitions.
pub(super) fn tools_file(s: &str) -> Result<ToolsFile, String> {
    goodput_core::request::read_tools(std::path::Path::new(s)).map(ToolsFile)
}

/// `--response-format json_object|json_schema:FILE`.
pub(super) fn response_format(s: &str) -> Result<goodput_core::request::ResponseFormat, String> {
    goodput_core::request::read_response_format(s)
}
