//! Agent trajectories as one run's requests.
//!
//! [`AgentSource`] hands the executor each trajectory's first call, sent as
//! the load says (a free lane in closed loop, the next arrival in open
//! loop). Every later call comes back through [`FollowUps::next_calls`]
//! when its last parent completes: after its gap ([`Timing::Gaps`]) or at
//! its recorded time, never earlier than that completion
//! ([`Timing::Recorded`]). A call fanning out to parallel subagents hands
//! back several calls that share the trajectory's slot, so a closed loop's
//! lane takes its next trajectory only when the whole tree has drained. A
//! failed call ends its trajectory: what waited for it is not sent.
//!
//! Each call's record carries its trajectory as a session (the instance,
//! the call's index, the trajectory's calls), so a task's figures are the
//! session figures: tasks completed and their duration, first send to last
//! end. Prompts are built from the call's `hash_ids` as blocks of the
//! trace's `block_size` tokens, in a namespace of the trajectory instance
//! (local ids) or of the pass over the file (global ids), so a call shares
//! exactly the prefix its ids share and a second pass over a file starts
//! cold.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::super::replay::{Blocks, BuildContext};
use super::super::source::{FollowUps, NextCall, Planned, RequestSource};
use super::super::synthetic::mix_seed;
use super::{AgentTraces, Replay, Timing, Trajectory};
use crate::request::protocol::{request_body, PreparedRequest, Prompt, RequestParams, SessionTurn};
use crate::request::record::{AgentCall, RequestRecord};

/// A run's agent trajectories: the source of their first calls.
pub struct AgentSource {
    shared: Arc<Shared>,
    /// Start the file over (fresh namespaces) when it runs out.
    cycle: bool,
    next: u64,
}

/// What the source and the follow-ups share.
struct Shared {
    traces: Arc<AgentTraces>,
    /// Each trajectory's children per call (the inverse of `parents`).
    children: Vec<Vec<Vec<u32>>>,
    replay: Replay,
    params: RequestParams,
    ids: AtomicU64,
    state: Mutex<State>,
}

struct State {
    blocks: Blocks,
    rng: StdRng,
    /// Trajectories under way, by instance.
    running: HashMap<u64, Running>,
}

/// A trajectory under way.
struct Running {
    /// Index into the file's trajectories.
    trace: usize,
    /// Parents each call still waits for.
    waiting: Vec<u32>,
    /// Its calls sent and not yet completed.
    in_flight: u32,
    /// When its first call was due (run clock, ns).
    start_ns: Option<u64>,
    /// A call failed: nothing more is sent.
    failed: bool,
}

impl AgentSource {
    /// The trajectories as one run's requests; `cycle`: start the file over
    /// when it runs out (a run bounded by a count or a duration).
    pub fn new(traces: Arc<AgentTraces>, replay: Replay, cycle: bool, build: BuildContext) -> Self {
        let children = traces
            .trajectories
            .iter()
            .map(|t| {
                let mut ch = vec![Vec::new(); t.calls.len()];
                for (i, c) in t.calls.iter().enumerate() {
                    for &p in &c.parents {
                        ch[p as usize].push(i as u32);
                    }
                }
                ch
            })
            .collect();
        AgentSource {
            shared: Arc::new(Shared {
                traces,
                children,
                replay,
                params: build.params,
                ids: AtomicU64::new(0),
                state: Mutex::new(State {
                    blocks: Blocks::new(build.text, build.nonce),
                    rng: StdRng::seed_from_u64(build.seed ^ 0x3c6e_f372_fe94_f82b),
                    running: HashMap::new(),
                }),
            }),
            cycle,
            next: 0,
        }
    }
}

impl RequestSource for AgentSource {
    fn next(&mut self) -> Option<Planned> {
        let n = self.shared.traces.trajectories.len() as u64;
        if n == 0 || (!self.cycle && self.next >= n) {
            return None;
        }
        let instance = self.next;
        self.next += 1;
        let trace = (instance % n) as usize;
        let t = &self.shared.traces.trajectories[trace];
        let mut state = self.shared.state.lock().expect("agent state");
        state.running.insert(
            instance,
            Running {
                trace,
                waiting: t.calls.iter().map(|c| c.parents.len() as u32).collect(),
                in_flight: 1,
                start_ns: None,
                failed: false,
            },
        );
        let request = self.shared.build(&mut state, instance, trace, 0);
        Some(Planned { request, at: None })
    }

    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        Some(self.shared.clone() as Arc<dyn FollowUps>)
    }
}

impl Shared {
    /// Call `call` of trajectory instance `instance` (file trajectory
    /// `trace`) as a request.
    fn build(&self, state: &mut State, instance: u64, trace: usize, call: u32) -> PreparedRequest {
        let t: &Trajectory = &self.traces.trajectories[trace];
        let c = &t.calls[call as usize];
        let id = self.ids.fetch_add(1, Relaxed);
        // Local ids are the trajectory instance's own; global ids are
        // shared within one pass over the file.
        let n = self.traces.trajectories.len() as u64;
        let space = if t.global_ids {
            mix_seed((instance / n.max(1)) ^ 0x9e37_79b9_7f4a_7c15)
        } else {
            mix_seed(instance)
        };
        let State { blocks, rng, .. } = state;
        let (text, cacheable) = blocks.prompt(
            c.hash_ids.iter().map(|&h| mix_seed(h ^ space)),
            t.block_tokens,
            c.input_tokens,
            id,
            rng,
        );
        let prompt_tokens = blocks.count(&text, c.input_tokens);
        PreparedRequest {
            id,
            body: request_body(&self.params, Prompt::Text(&text), c.output_tokens),
            prompt_tokens,
            cacheable_tokens: cacheable.min(prompt_tokens.unwrap_or(u32::MAX)),
            max_tokens: Some(c.output_tokens),
            stream: self.params.stream,
            output_check: self.params.output.clone(),
            session: Some(Box::new(SessionTurn {
                session_id: instance,
                turn: call,
                turns: t.calls.len() as u32,
                history: Vec::new(),
            })),
            agent: Some(Arc::new(AgentCall {
                trace: t.id.as_str().into(),
                agent: c.agent,
                depth: c.depth,
                parents: c.parents.clone(),
            })),
            ..Default::default()
        }
    }
}

impl FollowUps for Shared {
    fn run_to_end(&self) -> bool {
        true
    }

    fn next_turn(
        &self,
        prev: &PreparedRequest,
        rec: &RequestRecord,
    ) -> Option<(PreparedRequest, std::time::Duration)> {
        // A trajectory's calls come through `next_calls`; one at a time
        // would serialise parallel subagents.
        let mut calls = self.next_calls(prev, rec);
        (calls.len() == 1).then(|| {
            let c = calls.pop().expect("one");
            (c.request, c.after)
        })
    }

    fn next_calls(&self, prev: &PreparedRequest, rec: &RequestRecord) -> Vec<NextCall> {
        let Some(turn) = prev.session.as_ref() else {
            return Vec::new();
        };
        let (instance, call) = (turn.session_id, turn.turn);
        let mut state = self.state.lock().expect("agent state");
        let Some(run) = state.running.get_mut(&instance) else {
            return Vec::new();
        };
        run.in_flight = run.in_flight.saturating_sub(1);
        if call == 0 {
            run.start_ns = Some(rec.t_sched);
        }
        if !rec.ok() {
            run.failed = true;
        }
        let trace = run.trace;
        let mut ready = Vec::new();
        if !run.failed {
            for &child in &self.children[trace][call as usize] {
                let w = &mut run.waiting[child as usize];
                *w = w.saturating_sub(1);
                if *w == 0 {
                    ready.push(child);
                }
            }
        }
        run.in_flight += ready.len() as u32;
        let start_ns = run.start_ns.unwrap_or(rec.t_sched);
        if run.in_flight == 0 {
            // Nothing of it is in flight or ready: it is over (its last
            // call ended, or a failed call's siblings have all come back).
            state.running.remove(&instance);
        }
        let t = &self.traces.trajectories[trace];
        ready
            .into_iter()
            .map(|child| {
                let c = &t.calls[child as usize];
                let request = self.build(&mut state, instance, trace, child);
                match self.replay.timing {
                    Timing::Gaps => NextCall {
                        request,
                        after: self.replay.gap(c),
                        not_before_ns: None,
                    },
                    Timing::Recorded => NextCall {
                        request,
                        after: std::time::Duration::ZERO,
                        not_before_ns: Some(
                            start_ns.saturating_add(self.replay.at(c).as_nanos() as u64),
                        ),
                    },
                }
            })
            .map(|mut c| {
                c.request.warmup = prev.warmup;
                c
            })
            .collect()
    }
}
