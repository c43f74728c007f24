//! Request mixes: which model (or LoRA adapter) and which priority class
//! each request is sent as.
//!
//! `--model base:0.5,adapter-a:0.3,adapter-b:0.2` draws each request's
//! model by weight, from the run's seed; `--model a,b,c` takes them in turn
//! (round-robin). Under vLLM a LoRA adapter is addressed by its name in
//! `model`. `--priority-mix 'interactive:0.2:priority=0,batch:0.8:priority=10'`
//! draws each request's class by share; a class is sent either as the
//! body's `priority` field (vLLM's and SGLang's; lower is served first under
//! vLLM's `--scheduling-policy priority`, higher by default under SGLang's
//! `--enable-priority-scheduling`) or as a header a gateway reads
//! (`header=NAME:VALUE`).
//!
//! [`MixSource`] wraps any [`RequestSource`]: the workload builds its
//! requests as it always does, and the mix sets each one's `model` (and
//! `priority`) in its body and names its model and class on the request, so
//! every record can be grouped by them ([`crate::measure::metrics`]). A session's
//! later turns keep the model and class of its first.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::source::{FollowUps, NextCall, Planned, RequestSource};
use crate::request::protocol::PreparedRequest;
use crate::request::record::RequestRecord;

/// One model of a `--model` list and its weight (`None`: round-robin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelShare {
    pub name: String,
    pub weight: Option<f64>,
}

/// A `--model` list of more than one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMix {
    pub models: Vec<ModelShare>,
}

impl ModelMix {
    /// Taken in turn rather than drawn.
    pub fn round_robin(&self) -> bool {
        self.models.iter().all(|m| m.weight.is_none())
    }

    /// The first model listed (what a single-model run would send).
    pub fn first(&self) -> &str {
        self.models.first().map_or("", |m| m.name.as_str())
    }
}

/// `--model` as given: one name, or a mix. A name may itself hold a colon
/// (`llama3:8b`): only a last `:` followed by a number is a weight.
pub fn parse_models(s: &str) -> Result<Result<String, ModelMix>, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!(
            "--model '{s}': an empty model name (expected NAME, a list NAME,NAME for round-robin, or NAME:WEIGHT,... such as base:0.5,adapter-a:0.5)"
        ));
    }
    let mut models = Vec::with_capacity(parts.len());
    for p in &parts {
        let weighted = p
            .rsplit_once(':')
            .and_then(|(n, w)| w.parse::<f64>().ok().map(|w| (n, w)));
        models.push(match weighted {
            Some((name, w)) if !name.is_empty() => {
                if !(w.is_finite() && w > 0.0) {
                    return Err(format!(
                        "--model '{s}': weight {w} of '{name}' must be a positive number"
                    ));
                }
                ModelShare {
                    name: name.to_string(),
                    weight: Some(w),
                }
            }
            _ => ModelShare {
                name: p.to_string(),
                weight: None,
            },
        });
    }
    let weighted = models.iter().filter(|m| m.weight.is_some()).count();
    if weighted == 1 && models.len() == 1 {
        // `llama3:8b`-like names are names; one weighted model is one model.
        return Ok(Ok(parts[0]
            .rsplit_once(':')
            .map_or(parts[0], |(n, _)| n)
            .to_string()));
    }
    if weighted != 0 && weighted != models.len() {
        return Err(format!(
            "--model '{s}': give every model a weight (base:0.5,adapter-a:0.5) or none (base,adapter-a for round-robin)"
        ));
    }
    if models.len() == 1 {
        return Ok(Ok(models.remove(0).name));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = models.iter().find(|m| !seen.insert(m.name.as_str())) {
        return Err(format!("--model '{s}': '{}' is listed twice", dup.name));
    }
    Ok(Err(ModelMix { models }))
}

/// How a priority class is sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassSend {
    /// `"priority": P` in the body (vLLM, SGLang).
    Priority(i64),
    /// A header `NAME: VALUE` (a gateway's).
    Header { name: String, value: String },
}

/// One class of `--priority-mix`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorityClass {
    pub name: String,
    pub share: f64,
    pub send: ClassSend,
}

/// `--priority-mix`: the classes and their shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorityMix {
    /// The classes, in the order given; each request's is drawn by share.
    pub classes: Vec<PriorityClass>,
}

impl FromStr for PriorityMix {
    type Err = String;

    /// `NAME:SHARE:priority=P` or `NAME:SHARE:header=HEADER:VALUE`, comma-separated.
    fn from_str(s: &str) -> Result<PriorityMix, String> {
        let expected = "expected NAME:SHARE:priority=P or NAME:SHARE:header=NAME:VALUE, comma-separated, such as interactive:0.2:priority=0,batch:0.8:priority=10";
        let mut classes: Vec<PriorityClass> = Vec::new();
        for part in s.split(',').map(str::trim) {
            let mut it = part.splitn(3, ':');
            let (Some(name), Some(share), Some(send)) = (it.next(), it.next(), it.next()) else {
                return Err(format!("--priority-mix: '{part}' ({expected})"));
            };
            let share: f64 = share
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x > 0.0)
                .ok_or_else(|| format!("--priority-mix: share '{share}' of class '{name}' must be a positive number ({expected})"))?;
            let send = if let Some(p) = send.strip_prefix("priority=") {
                ClassSend::Priority(p.trim().parse().map_err(|_| {
                    format!("--priority-mix: priority '{p}' of class '{name}' must be an integer")
                })?)
            } else if let Some(h) = send.strip_prefix("header=") {
                match h.split_once(':') {
                    Some((n, v)) if valid_header_name(n.trim()) && !v.contains(['\r', '\n']) => {
                        ClassSend::Header {
                            name: n.trim().to_string(),
                            value: v.trim().to_string(),
                        }
                    }
                    _ => {
                        return Err(format!(
                        "--priority-mix: header '{h}' of class '{name}' must be NAME:VALUE with a token NAME ({expected})"
                    ))
                    }
                }
            } else {
                return Err(format!(
                    "--priority-mix: '{send}' of class '{name}' ({expected})"
                ));
            };
            if name.is_empty() || classes.iter().any(|c| c.name == name) {
                return Err(format!(
                    "--priority-mix: class name '{name}' is empty or given twice"
                ));
            }
            classes.push(PriorityClass {
                name: name.to_string(),
                share,
                send,
            });
        }
        Ok(PriorityMix { classes })
    }
}

fn valid_header_name(n: &str) -> bool {
    !n.is_empty()
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What a run mixes: models, classes, or both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestMix {
    /// The models requests are sent to (`--model` with more than one); `None`: the one model.
    pub models: Option<ModelMix>,
    /// The priority classes (`--priority-mix`); `None`: no class.
    pub classes: Option<PriorityMix>,
}

impl RequestMix {
    /// Mixes nothing: neither models nor classes.
    pub fn is_empty(&self) -> bool {
        self.models.is_none() && self.classes.is_none()
    }
}

impl fmt::Display for RequestMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.models {
            let names: Vec<&str> = m.models.iter().map(|m| m.name.as_str()).collect();
            let how = if m.round_robin() {
                "in turn"
            } else {
                "by weight"
            };
            write!(f, "models {} ({how})", names.join(", "))?;
        }
        if let Some(c) = &self.classes {
            let names: Vec<&str> = c.classes.iter().map(|c| c.name.as_str()).collect();
            let sep = if self.models.is_some() { "; " } else { "" };
            write!(f, "{sep}classes {}", names.join(", "))?;
        }
        Ok(())
    }
}

/// A draw by weight from `weights` (positive), with `u` uniform in [0, 1).
fn pick(weights: impl Iterator<Item = f64> + Clone, u: f64) -> usize {
    let total: f64 = weights.clone().sum();
    let mut at = u * total;
    let mut last = 0;
    for (i, w) in weights.enumerate() {
        last = i;
        if at < w {
            return i;
        }
        at -= w;
    }
    last
}

/// What the mix chose for one request (shared by a session's turns).
#[derive(Debug, Clone, Default)]
struct Choice {
    model: Option<Arc<str>>,
    class: Option<Arc<str>>,
    priority: Option<i64>,
    header_line: Option<Arc<str>>,
}

impl Choice {
    fn of(req: &PreparedRequest, mix: &RequestMix) -> Choice {
        let class = req.class.as_ref().and_then(|name| {
            mix.classes
                .as_ref()?
                .classes
                .iter()
                .find(|c| c.name.as_str() == &**name)
        });
        let mut c = Choice {
            model: req.model.clone(),
            ..Default::default()
        };
        if let Some(class) = class {
            c.set_class(class);
        }
        c
    }

    fn set_class(&mut self, class: &PriorityClass) {
        self.class = Some(class.name.as_str().into());
        match &class.send {
            ClassSend::Priority(p) => self.priority = Some(*p),
            ClassSend::Header { name, value } => {
                self.header_line = Some(format!("{name}: {value}\r\n").into());
            }
        }
    }

    /// Set the choice on `req`: its body's `model` and `priority`, and the
    /// names its record will carry.
    fn apply(&self, req: &mut PreparedRequest) {
        if self.model.is_some() || self.priority.is_some() {
            req.body = rewrite(&req.body, self.model.as_deref(), self.priority);
        }
        req.model = self.model.clone();
        req.class = self.class.clone();
        req.header_line = self.header_line.clone();
    }
}

/// `body` with `model` and `priority` set. A body that is not a JSON object
/// (no workload builds one) is sent as it was. Parsing and writing the body
/// again costs about 2 µs for a 1 KB body and 150 µs for a 32k-token
/// prompt's 180 KB (serde_json, release build), on the workload's own
/// thread ahead of the sends: far less than building that prompt.
fn rewrite(body: &Bytes, model: Option<&str>, priority: Option<i64>) -> Bytes {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body)
    else {
        return body.clone();
    };
    if let Some(m) = model {
        v.insert("model".into(), m.into());
    }
    if let Some(p) = priority {
        v.insert("priority".into(), p.into());
    }
    serde_json::to_vec(&v).map_or_else(|_| body.clone(), Bytes::from)
}

/// A source whose requests are sent as the mix draws them.
pub struct MixSource {
    inner: Box<dyn RequestSource>,
    mix: Arc<RequestMix>,
    rng: StdRng,
    turn: usize,
}

impl MixSource {
    /// `inner` with `mix` applied; draws come from `seed` alone, so the same
    /// seed sends the same sequence of models and classes.
    pub fn new(inner: Box<dyn RequestSource>, mix: Arc<RequestMix>, seed: u64) -> Self {
        MixSource {
            inner,
            mix,
            rng: StdRng::seed_from_u64(seed ^ 0x6d69_7865_735f_6d69),
            turn: 0,
        }
    }

    fn choose(&mut self) -> Choice {
        let mut c = Choice::default();
        if let Some(m) = &self.mix.models {
            let i = if m.round_robin() {
                self.turn % m.models.len()
            } else {
                let u = self.rng.random::<f64>();
                pick(m.models.iter().map(|m| m.weight.unwrap_or(1.0)), u)
            };
            c.model = Some(m.models[i].name.as_str().into());
        }
        self.turn += 1;
        if let Some(classes) = &self.mix.classes {
            let u = self.rng.random::<f64>();
            let i = pick(classes.classes.iter().map(|c| c.share), u);
            c.set_class(&classes.classes[i]);
        }
        c
    }
}

impl RequestSource for MixSource {
    fn next(&mut self) -> Option<Planned> {
        let mut p = self.inner.next()?;
        self.choose().apply(&mut p.request);
        Some(p)
    }

    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        let inner = self.inner.follow_ups()?;
        Some(Arc::new(MixFollowUps {
            inner,
            mix: self.mix.clone(),
        }))
    }
}

/// A session's next turn, sent as its first was.
struct MixFollowUps {
    inner: Arc<dyn FollowUps>,
    mix: Arc<RequestMix>,
}

impl FollowUps for MixFollowUps {
    fn next_turn(
        &self,
        prev: &PreparedRequest,
        rec: &RequestRecord,
    ) -> Option<(PreparedRequest, Duration)> {
        let (mut next, think) = self.inner.next_turn(prev, rec)?;
        Choice::of(prev, &self.mix).apply(&mut next);
        Some((next, think))
    }

    fn next_calls(&self, prev: &PreparedRequest, rec: &RequestRecord) -> Vec<NextCall> {
        let choice = Choice::of(prev, &self.mix);
        let mut calls = self.inner.next_calls(prev, rec);
        for c in &mut calls {
            choice.apply(&mut c.request);
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_lists_parse() {
        assert_eq!(parse_models("m"), Ok(Ok("m".to_string())));
        assert_eq!(parse_models("llama3:8b"), Ok(Ok("llama3:8b".to_string())));
        let mix = parse_models("base:0.5,adapter-a:0.3,adapter-b:0.2")
            .unwrap()
            .unwrap_err();
        assert!(!mix.round_robin());
        assert_eq!(mix.models[1].name, "adapter-a");
        assert_eq!(mix.models[2].weight, Some(0.2));
        let rr = parse_models("a,b,c").unwrap().unwrap_err();
        assert!(rr.round_robin());
        assert_eq!(rr.first(), "a");
        for bad in ["a:0.5,b", "a,,b", "a:-1,b:1", "a:0,b:1", "a,a"] {
            let e = parse_models(bad).unwrap_err();
            assert!(e.contains("--model"), "{bad}: {e}");
        }
    }

    #[test]
    fn priority_mixes_parse() {
        let m: PriorityMix = "interactive:0.2:priority=0,batch:0.8:priority=10"
            .parse()
            .unwrap();
        assert_eq!(m.classes[1].name, "batch");
        assert_eq!(m.classes[1].send, ClassSend::Priority(10));
        let h: PriorityMix = "hi:1:header=x-priority:high".parse().unwrap();
        assert_eq!(
            h.classes[0].send,
            ClassSend::Header {
                name: "x-priority".into(),
                value: "high".into()
            }
        );
        for bad in [
            "a:0.5",
            "a:x:priority=1",
            "a:1:priority=x",
            "a:1:weight=3",
            "a:1:header=bad name:v",
            "a:1:priority=1,a:1:priority=2",
        ] {
            assert!(bad.parse::<PriorityMix>().is_err(), "{bad}");
        }
    }

    /// Draws follow the weights, and a body gets its model and priority.
    #[test]
    fn draws_follow_the_shares_and_rewrite_the_body() {
        struct Plain(u64);
        impl RequestSource for Plain {
            fn next(&mut self) -> Option<Planned> {
                self.0 += 1;
                (self.0 <= 4000).then(|| Planned {
                    request: PreparedRequest {
                        id: self.0,
                        body: Bytes::from_static(br#"{"model":"base","max_tokens":3}"#),
                        ..Default::default()
                    },
                    at: None,
                })
            }
            fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
                None
            }
        }
        let mix = RequestMix {
            models: parse_models("base:0.5,a:0.3,b:0.2").unwrap().err(),
            classes: Some("hi:0.25:priority=0,lo:0.75:priority=10".parse().unwrap()),
        };
        let mut s = MixSource::new(Box::new(Plain(0)), Arc::new(mix), 7);
        let mut counts = std::collections::BTreeMap::<String, u32>::new();
        while let Some(p) = s.next() {
            let r = p.request;
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(body["model"].as_str(), r.model.as_deref());
            let class = r.class.as_deref().unwrap();
            assert_eq!(body["priority"], if class == "hi" { 0 } else { 10 });
            *counts.entry(r.model.unwrap().to_string()).or_default() += 1;
            *counts.entry(class.to_string()).or_default() += 1;
        }
        let share = |k: &str| f64::from(counts[k]) / 4000.0;
        assert!((share("base") - 0.5).abs() < 0.04, "{counts:?}");
        assert!((share("b") - 0.2).abs() < 0.04, "{counts:?}");
        assert!((share("hi") - 0.25).abs() < 0.04, "{counts:?}");
    }

    /// A session's later turns go to its first turn's model and class.
    #[test]
    fn a_sessions_turns_keep_its_model_and_class() {
        struct Turns;
        impl FollowUps for Turns {
            fn next_turn(
                &self,
                prev: &PreparedRequest,
                _: &RequestRecord,
            ) -> Option<(PreparedRequest, Duration)> {
                let next = PreparedRequest {
                    id: prev.id + 100,
                    body: Bytes::from_static(br#"{"model":"base"}"#),
                    ..Default::default()
                };
                Some((next, Duration::ZERO))
            }
        }
        struct One(Arc<Turns>);
        impl RequestSource for One {
            fn next(&mut self) -> Option<Planned> {
                Some(Planned {
                    request: PreparedRequest {
                        body: Bytes::from_static(br#"{"model":"base"}"#),
                        ..Default::default()
                    },
                    at: None,
                })
            }
            fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
                Some(self.0.clone())
            }
        }
        let mix = RequestMix {
            models: parse_models("a,b").unwrap().err(),
            classes: Some("x:1:header=x-tier:gold".parse().unwrap()),
        };
        let mut s = MixSource::new(Box::new(One(Arc::new(Turns))), Arc::new(mix), 1);
        let follow = s.follow_ups().unwrap();
        s.next().unwrap();
        let second = s.next().unwrap().request;
        assert_eq!(second.model.as_deref(), Some("b"));
        let (turn, _) = follow
            .next_turn(&second, &RequestRecord::default())
            .unwrap();
        assert_eq!(turn.model.as_deref(), Some("b"));
        assert_eq!(turn.class.as_deref(), Some("x"));
        assert_eq!(turn.header_line.as_deref(), Some("x-tier: gold\r\n"));
        let body: serde_json::Value = serde_json::from_slice(&turn.body).unwrap();
        assert_eq!(body["model"], "b");
    }
}
