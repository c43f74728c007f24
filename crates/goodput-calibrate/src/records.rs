//! The records of a design point as the experiment reads them: each
//! request's send, first token, end and every event's arrival, from the
//! records file `goodput run` writes (read back from memory), and the
//! statistics the experiment takes of them.

use serde_json::Value;

/// One request as the records file tells it.
#[derive(Debug, Clone)]
pub struct Rec {
    /// Whether the request completed.
    pub ok: bool,
    /// When it was sent, ms after the run's start.
    pub send_ms: Option<f64>,
    /// Send to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Send to last byte, ms.
    pub e2el_ms: Option<f64>,
    /// Each event's arrival after the send, ms, with its token count.
    pub events: Vec<(f64, u32)>,
    /// The server's own prompt token count (usage), else the client's.
    pub prompt_tokens: Option<u64>,
    /// Why it failed, where it did.
    pub error: Option<String>,
}

impl Rec {
    /// One line of the records file (JSON); `None` when it is not one.
    pub fn parse(line: &str) -> Option<Rec> {
        let v: Value = serde_json::from_str(line).ok()?;
        let times = v["event_times_ms"].as_array().cloned().unwrap_or_default();
        let tokens = v["event_tokens"].as_array().cloned().unwrap_or_default();
        let events = times
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let n = tokens.get(i).and_then(Value::as_u64).unwrap_or(1) as u32;
                Some((t.as_f64()?, n))
            })
            .collect();
        Some(Rec {
            ok: v["ok"].as_bool().unwrap_or(false),
            send_ms: v["send_s"].as_f64().map(|s| s * 1e3),
            ttft_ms: v["ttft_ms"].as_f64(),
            e2el_ms: v["e2el_ms"].as_f64(),
            events,
            prompt_tokens: v["server_prompt_tokens"]
                .as_u64()
                .or_else(|| v["input_tokens"].as_u64()),
            error: v["error"].as_str().map(str::to_string),
        })
    }

    /// Each event's time after the run's start, ms, with the tokens
    /// received before it.
    fn absolute(&self) -> Vec<(f64, u64)> {
        let send = self.send_ms.unwrap_or(0.0);
        let mut before = 0u64;
        self.events
            .iter()
            .map(|&(t, n)| {
                let e = (send + t, before);
                before += u64::from(n);
                e
            })
            .collect()
    }
}

/// The gaps between consecutive single-token events while every one of
/// `recs` was streaming (from the last first token to the first last
/// token), ms, each with the tokens its request had received before it.
/// Empty when the requests never all streamed at once.
pub(crate) fn common_gaps(recs: &[&Rec]) -> Vec<(f64, u64)> {
    let all: Vec<Vec<(f64, u64)>> = recs.iter().map(|r| r.absolute()).collect();
    let start = all
        .iter()
        .filter_map(|e| e.first().map(|x| x.0))
        .fold(f64::NEG_INFINITY, f64::max);
    let end = all
        .iter()
        .filter_map(|e| e.last().map(|x| x.0))
        .fold(f64::INFINITY, f64::min);
    let mut gaps = Vec::new();
    for (r, e) in recs.iter().zip(&all) {
        for (i, w) in e.windows(2).enumerate() {
            let single = r.events.get(i + 1).is_some_and(|x| x.1 == 1);
            if single && w[0].0 >= start && w[1].0 <= end {
                gaps.push((w[1].0 - w[0].0, w[1].1));
            }
        }
    }
    gaps
}

/// The median of `v` (sorted in place); `None` when empty.
pub(crate) fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// A robust spread of the values of `v` (sorted): 1.4826 × their median
/// absolute deviation (a normal's σ).
pub(crate) fn spread(v: &[f64]) -> f64 {
    let mut m: Vec<f64> = v.to_vec();
    let Some(mid) = median(&mut m) else {
        return f64::INFINITY;
    };
    let mut dev: Vec<f64> = v.iter().map(|x| (x - mid).abs()).collect();
    1.4826 * median(&mut dev).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(send_ms: f64, events: &[f64]) -> Rec {
        Rec {
            ok: true,
            send_ms: Some(send_ms),
            ttft_ms: events.first().copied(),
            e2el_ms: events.last().copied(),
            events: events.iter().map(|&t| (t, 1)).collect(),
            prompt_tokens: Some(100),
            error: None,
        }
    }

    #[test]
    fn common_gaps_are_those_while_every_request_streamed() {
        // a streams from 10 to 60 ms, b (sent 20 ms later, its events at 40
        // to 90 ms after the run's start) from 40 to 90: both stream from 40
        // to 60 ms.
        let a = rec(0.0, &[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        let b = rec(20.0, &[20.0, 30.0, 40.0, 50.0, 60.0, 70.0]);
        let gaps = common_gaps(&[&a, &b]);
        // a: 40→50, 50→60 (tokens before the later event: 4, 5); b: its
        // first two gaps (1, 2).
        let mut before: Vec<u64> = gaps.iter().map(|g| g.1).collect();
        before.sort_unstable();
        assert_eq!(before, vec![1, 2, 4, 5]);
        assert!(gaps.iter().all(|g| (g.0 - 10.0).abs() < 1e-9));
    }

    #[test]
    fn medians_and_spreads() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
        // MAD of 1,2,3,4,100 is 1: robust to the outlier.
        assert!((spread(&[1.0, 2.0, 3.0, 4.0, 100.0]) - 1.4826).abs() < 1e-9);
    }
}
