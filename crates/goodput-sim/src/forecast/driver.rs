//! One schedule at one rate through N replicas, in virtual time, with
//! follow-up turns that depend on when earlier turns finish.
//!
//! Discrete events, processed in time order; at equal times, in this order:
//!
//! 1. **completions**: a replica whose step ends now hands over the step's
//!    finished requests (their follow-up turns are queued for
//!    `end + think time`; they stop counting as outstanding);
//! 2. **arrivals**: due follow-up turns first (oldest first), then new
//!    sessions from the schedule; each new session is routed to a replica
//!    ([`Routing`]), its later turns go to the same one, and each request
//!    reaches its replica's engine `request_latency_ms` after it arrives;
//! 3. **steps**: each free replica, lowest index first, takes in the
//!    requests that have reached it and runs one step.
//!
//! With one replica and one-turn sessions this is exactly
//! [`crate::virtual_time::simulate`]'s loop (requests reached by a step's
//! start are in that step), so a fixed-length workload gives the reference's
//! token times, bit for bit.
//!
//! **Sending stops** as a real run's does: requests are warm-up while fewer
//! than `warmup` warm-up requests have been sent when their session starts
//! (a session's turns share its phase, and every turn counts); once
//! `measured` measured requests have been sent, or a trace's last request
//! is, nothing more is sent (new sessions and pending turns alike) and the
//! requests in flight run to their end.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::SimConfig;
use crate::engine::{Engine, EngineRequest, StepOutputs};
use crate::error::SimError;

use super::workload::Book;

/// How a new session picks its replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// Replicas in turn, one new session each.
    #[default]
    RoundRobin,
    /// The replica with the fewest outstanding requests (routed and not
    /// finished, those still on their way in included); ties go to the
    /// lowest index.
    LeastOutstanding,
}

/// N identical replicas of one engine configuration behind a router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deployment {
    /// At least 1.
    pub replicas: usize,
    /// How a new session picks its replica.
    pub routing: Routing,
}

impl Default for Deployment {
    /// One replica.
    fn default() -> Self {
        Deployment {
            replicas: 1,
            routing: Routing::RoundRobin,
        }
    }
}

/// What happened to one request of a schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct ForecastRequest {
    /// Seconds from the start of the run.
    pub arrival_s: f64,
    /// The session's index in the schedule (the request's, without sessions).
    pub session: usize,
    /// 0-based turn within the session.
    pub turn: usize,
    /// 0-based index of the replica it was routed to.
    pub replica: usize,
    /// Left out of every figure when false (warm-up).
    pub measured: bool,
    /// Prompt length, tokens.
    pub prompt_tokens: usize,
    /// Prompt tokens served from the prefix cache at first admission.
    pub cached_tokens: usize,
    /// Token times, seconds; all `None` (and `tokens` 0) when it failed.
    pub first_token_s: Option<f64>,
    /// Time of its last token, seconds from the start of the run; `None` when it failed.
    pub last_token_s: Option<f64>,
    /// Output tokens it produced.
    pub tokens: usize,
    /// Largest gap between consecutive tokens, seconds (0 for one token).
    pub max_gap_s: f64,
    /// The engine refused it (too long for the context or the cache).
    pub rejected: bool,
}

impl ForecastRequest {
    /// When it was done: its last token, or its arrival when it failed.
    pub fn done_s(&self) -> f64 {
        self.last_token_s.unwrap_or(self.arrival_s)
    }

    /// When it stopped waiting for a first token (its first token, or its
    /// refusal when it failed).
    pub(crate) fn started_s(&self) -> f64 {
        self.first_token_s.unwrap_or(self.arrival_s)
    }

    /// Whether it produced no token (refused by the engine, or none generated).
    pub fn failed(&self) -> bool {
        self.rejected || self.tokens == 0
    }
}

struct Replica {
    engine: Engine,
    /// End of the step under way; `None` when idle.
    busy_until: Option<f64>,
    /// When its last step ended (it steps again then, work or not).
    free_since: Option<f64>,
    out: StepOutputs,
    /// Routed requests on their way in: (reaches the engine at, request).
    inbox: VecDeque<(f64, EngineRequest)>,
    outstanding: usize,
}

impl Replica {
    /// When this replica next has something to do.
    fn next_event(&self) -> Option<f64> {
        self.busy_until
            .or_else(|| self.inbox.front().map(|&(at, _)| at))
    }
}

/// A follow-up turn waiting for its time: (ready at, order queued, session, turn).
type Pending = Reverse<(Ord64, u64, usize, usize)>;

/// An f64 with a total order, for the event heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ord64(f64);
impl Eq for Ord64 {}
impl PartialOrd for Ord64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ord64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// One run: the book's sessions at `rate` through the deployment.
pub(crate) struct Run<'a> {
    book: &'a mut Book,
    rate: f64,
    latency_s: f64,
    routing: Routing,
    replicas: Vec<Replica>,
    requests: Vec<ForecastRequest>,
    pending: BinaryHeap<Pending>,
    queued: u64,
    /// Replica and phase of each session started.
    sessions: Vec<(usize, bool)>,
    round_robin: usize,
    warmup: usize,
    measured: usize,
    sent_warmup: usize,
    sent_measured: usize,
}

impl<'a> Run<'a> {
    pub fn new(
        config: &SimConfig,
        deployment: &Deployment,
        book: &'a mut Book,
        rate: f64,
        warmup: usize,
        measured: usize,
    ) -> Result<Self, SimError> {
        let replicas = (0..deployment.replicas.max(1))
            .map(|_| {
                Ok(Replica {
                    engine: config.build_engine()?,
                    busy_until: None,
                    free_since: None,
                    out: StepOutputs::default(),
                    inbox: VecDeque::new(),
                    outstanding: 0,
                })
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        Ok(Run {
            book,
            rate,
            latency_s: config.request_latency_ms * 1e-3,
            routing: deployment.routing,
            replicas,
            requests: Vec::with_capacity(warmup + measured),
            pending: BinaryHeap::new(),
            queued: 0,
            sessions: Vec::new(),
            round_robin: 0,
            warmup,
            measured,
            sent_warmup: 0,
            sent_measured: 0,
        })
    }

    fn sending(&self) -> bool {
        self.sent_measured < self.measured
    }

    /// Run to the end; every request sent, in the order sent.
    pub fn run(mut self) -> Vec<ForecastRequest> {
        loop {
            let next_new = if self.sending() {
                self.book.arrival(self.sessions.len(), self.rate)
            } else {
                None
            };
            let next_turn = self
                .pending
                .peek()
                .filter(|_| self.sending())
                .map(|p| p.0 .0 .0);
            let t = self
                .replicas
                .iter()
                .filter_map(Replica::next_event)
                .chain(next_new)
                .chain(next_turn)
                .min_by(f64::total_cmp);
            let Some(t) = t else { break };
            for r in 0..self.replicas.len() {
                if self.replicas[r].busy_until == Some(t) {
                    self.complete(r, t);
                }
            }
            self.arrive(t);
            for r in 0..self.replicas.len() {
                let rep = &self.replicas[r];
                let reached = rep.inbox.front().is_some_and(|&(at, _)| at <= t);
                if rep.busy_until.is_none() && (rep.free_since == Some(t) || reached) {
                    self.step(r, t);
                }
            }
        }
        self.requests
    }

    /// Replica `r`'s step ended at `t`: its finished requests leave, and
    /// their sessions' next turns are queued.
    fn complete(&mut self, r: usize, t: f64) {
        let rep = &mut self.replicas[r];
        rep.busy_until = None;
        rep.free_since = Some(t);
        let finished = std::mem::take(&mut rep.out.finished);
        for f in &finished {
            let i = f.id as usize;
            self.replicas[r].outstanding -= 1;
            self.requests[i].cached_tokens = f.cached_tokens;
            let (session, turn) = (self.requests[i].session, self.requests[i].turn);
            self.follow_up(session, turn, t);
        }
        self.replicas[r].out.finished = finished;
    }

    fn follow_up(&mut self, session: usize, turn: usize, done_s: f64) {
        let turns = self.book.written(session);
        if turn + 1 < turns.len() {
            let at = done_s + turns[turn].think_s;
            self.pending
                .push(Reverse((Ord64(at), self.queued, session, turn + 1)));
            self.queued += 1;
        }
    }

    /// Send everything due by `t`: follow-up turns first, then new sessions.
    fn arrive(&mut self, t: f64) {
        while self.sending() {
            match self.pending.peek() {
                Some(&Reverse((Ord64(at), _, session, turn))) if at <= t => {
                    self.pending.pop();
                    self.send(session, turn, at);
                }
                _ => break,
            }
        }
        while self.sending() {
            let j = self.sessions.len();
            let Some(at) = self.book.arrival(j, self.rate).filter(|&at| at <= t) else {
                break;
            };
            let replica = self.route();
            self.sessions
                .push((replica, self.sent_warmup < self.warmup));
            self.send(j, 0, at);
        }
    }

    fn route(&mut self) -> usize {
        let n = self.replicas.len();
        match self.routing {
            Routing::RoundRobin => {
                let r = self.round_robin % n;
                self.round_robin += 1;
                r
            }
            Routing::LeastOutstanding => (0..n)
                .min_by_key(|&r| (self.replicas[r].outstanding, r))
                .unwrap_or(0),
        }
    }

    fn send(&mut self, session: usize, turn: usize, at: f64) {
        let (replica, warmup) = self.sessions[session];
        if warmup {
            self.sent_warmup += 1;
        } else {
            self.sent_measured += 1;
        }
        let t = &self.book.session(session)[turn];
        let id = self.requests.len();
        let req = EngineRequest {
            id: id as u64,
            prompt_tokens: t.prompt_tokens,
            block_hashes: t.hashes.clone(),
            output_tokens: t.output_tokens,
            ..Default::default()
        };
        self.requests.push(ForecastRequest {
            arrival_s: at,
            session,
            turn,
            replica,
            measured: !warmup,
            prompt_tokens: t.prompt_tokens,
            cached_tokens: 0,
            first_token_s: None,
            last_token_s: None,
            tokens: 0,
            max_gap_s: 0.0,
            rejected: false,
        });
        let rep = &mut self.replicas[replica];
        rep.outstanding += 1;
        rep.inbox.push_back((at + self.latency_s, req));
    }

    /// Replica `r` takes in what has reached it by `t` and runs a step.
    fn step(&mut self, r: usize, t: f64) {
        let rep = &mut self.replicas[r];
        while rep.inbox.front().is_some_and(|&(at, _)| at <= t) {
            let Some((at, req)) = rep.inbox.pop_front() else {
                break;
            };
            let i = req.id as usize;
            if rep.engine.add(req, at.max(0.0)).is_err() {
                rep.outstanding -= 1;
                self.requests[i].rejected = true;
            }
        }
        rep.out.clear();
        let Some(report) = rep.engine.step(t, &mut rep.out) else {
            return; // Idle until the next request reaches it.
        };
        rep.busy_until = Some(report.end_s());
        for e in &rep.out.tokens {
            let q = &mut self.requests[e.id as usize];
            if let Some(last) = q.last_token_s {
                q.max_gap_s = q.max_gap_s.max(e.time_s - last);
            } else {
                q.first_token_s = Some(e.time_s);
            }
            q.last_token_s = Some(e.time_s);
            q.tokens += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::trace::{ForecastTrace, TraceRequest};
    use super::super::workload::ForecastWorkload;
    use super::*;

    /// Rows a second apart (each done before the next arrives), blocks of
    /// 64 tokens (4 engine blocks each).
    fn trace() -> ForecastWorkload {
        let rows: [(f64, u32, &[u64]); 5] = [
            (0.0, 256, &[1, 2, 3, 4]),
            (1.0, 256, &[1, 2, 3, 5]),
            (2.5, 256, &[]),
            (3.0, 256, &[]),
            (4.0, 200, &[1, 2, 6]),
        ];
        let requests = rows
            .iter()
            .map(|&(at_s, input_tokens, ids)| TraceRequest {
                at_s: 100.0 + at_s,
                input_tokens,
                output_tokens: 4,
                hash_ids: ids.to_vec(),
            })
            .collect();
        ForecastWorkload::replay(ForecastTrace::new(requests, 64).unwrap())
    }

    fn replay(w: &ForecastWorkload, rate: f64, warmup: usize) -> Vec<ForecastRequest> {
        let mut book = Book::new(w, 0);
        let config = SimConfig::default();
        Run::new(
            &config,
            &Deployment::default(),
            &mut book,
            rate,
            warmup,
            1000,
        )
        .unwrap()
        .run()
    }

    #[test]
    fn a_trace_at_its_mean_rate_arrives_at_its_offsets_and_twice_as_fast_at_double() {
        let w = trace();
        let mean = w.trace.as_ref().unwrap().mean_rate();
        assert_eq!(mean, 1.0);
        let at = |rate| -> Vec<f64> { replay(&w, rate, 0).iter().map(|q| q.arrival_s).collect() };
        assert_eq!(at(mean), [0.0, 1.0, 2.5, 3.0, 4.0]);
        assert_eq!(at(2.0 * mean), [0.0, 0.5, 1.25, 1.5, 2.0]);
    }

    #[test]
    fn rows_sharing_hash_ids_hit_the_prefix_cache_and_rows_without_do_not() {
        let run = replay(&trace(), 1.0, 1);
        let cached: Vec<usize> = run.iter().map(|q| q.cached_tokens).collect();
        // Three shared 64-token blocks, then two (the third, 6, is new).
        assert_eq!(cached, [0, 192, 0, 0, 128]);
        assert!(run.iter().all(|q| !q.failed()));
        let measured: Vec<bool> = run.iter().map(|q| q.measured).collect();
        assert_eq!(measured, [false, true, true, true, true], "one warm-up row");
    }
}
