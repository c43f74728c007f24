//! Response bodies: a whole body, or a server-sent-event stream fed by the
//! engine thread, with the stream faults (cut, stall, malformed event)
//! applied at the middle of the output.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc::UnboundedReceiver;

use super::openai::ChunkWriter;
use super::streams::TypedWriter;
use super::AbortGuard;
use crate::realtime::{FinishReason, StreamEvent};
use crate::text::output_word;

/// The error that ends a body early (hyper then resets the connection).
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("response cut short by fault injection")]
    Cut,
    #[error("the engine stopped before the response was complete")]
    EngineGone,
}

/// Where in the stream the faults strike.
#[derive(Debug, Default, Clone, Copy)]
pub struct StreamFaults {
    /// Token index at which the stream is cut (that token is not sent).
    pub cut_at: Option<u32>,
    /// Token index before which the stream stalls, and for how long.
    pub stall_at: Option<(u32, Duration)>,
    /// Token index before which a malformed event is sent.
    pub malformed_at: Option<u32>,
}

/// Writes a stream's events: chat and completions chunks by hand (the
/// fast path), or a typed writer's (Responses, Messages, structured
/// answers).
pub enum Writer {
    Chunk(ChunkWriter),
    /// With the answer's pieces when it is structured (one per token).
    Typed(Box<TypedWriter>, Option<Vec<String>>),
}

/// A streamed completion.
pub struct SseStream {
    pub events: UnboundedReceiver<StreamEvent>,
    pub writer: Writer,
    pub seed: u64,
    pub request_index: u64,
    pub reason: FinishReason,
    pub include_usage: bool,
    pub faults: StreamFaults,
    pub guard: AbortGuard,
    pub role_sent: bool,
    pub stall: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A token held back by a stall.
    pub held: Option<StreamEvent>,
    pub cut: bool,
    pub done: bool,
}

impl SseStream {
    /// Write one event; returns `false` if the stream must be cut instead.
    fn write(&mut self, ev: StreamEvent, buf: &mut BytesMut) -> bool {
        match ev {
            StreamEvent::Token { index, count, done } => {
                let at = |f: Option<u32>| f.is_some_and(|f| (index..index + count).contains(&f));
                if at(self.faults.cut_at) {
                    return false;
                }
                if !self.role_sent {
                    match &mut self.writer {
                        Writer::Chunk(w) => w.role(buf),
                        Writer::Typed(w, _) => w.start(buf),
                    }
                    self.role_sent = true;
                }
                if at(self.faults.malformed_at) {
                    buf.extend_from_slice(b"data: {\"id\":\"malformed\",\"choices\":[{\n\n");
                }
                let last = done.as_ref().map(|_| self.reason);
                let (seed, request) = (self.seed, self.request_index);
                let words = || {
                    let mut w = String::new();
                    for i in index..index + count {
                        if i > index {
                            w.push(' ');
                        }
                        w.push_str(output_word(seed, request, i));
                    }
                    w
                };
                match &mut self.writer {
                    Writer::Chunk(w) if count == 1 => {
                        w.token(buf, output_word(seed, request, index), last)
                    }
                    Writer::Chunk(w) => w.token(buf, &words(), last),
                    Writer::Typed(w, Some(pieces)) => {
                        let piece: String = (index..index + count)
                            .map(|i| pieces.get(i as usize).map_or(" ", String::as_str))
                            .collect();
                        w.token(buf, &piece, last);
                    }
                    Writer::Typed(w, None) => w.token(buf, &format!(" {}", words()), last),
                }
                if let Some(f) = done {
                    match &mut self.writer {
                        Writer::Chunk(w) => {
                            if self.include_usage {
                                w.usage(buf, &f);
                            }
                            w.done(buf);
                        }
                        Writer::Typed(w, _) => w.finish(buf, &f, self.reason, self.include_usage),
                    }
                    self.done = true;
                    self.guard.disarm();
                }
            }
            StreamEvent::Rejected(e) => {
                match &mut self.writer {
                    Writer::Chunk(w) => {
                        w.error(buf, 400, &e.to_string());
                        w.done(buf);
                    }
                    Writer::Typed(w, _) => w.error(buf, 400, &e.to_string()),
                }
                self.done = true;
                self.guard.disarm();
            }
        }
        true
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BodyError>>> {
        if let Some(sleep) = self.stall.as_mut() {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.stall = None;
        }
        if self.cut {
            return Poll::Ready(Some(Err(BodyError::Cut)));
        }
        if self.done {
            return Poll::Ready(None);
        }
        // One allocation for the usual single token chunk.
        let capacity = match &self.writer {
            Writer::Chunk(w) => w.chunk_capacity(),
            Writer::Typed(..) => 512,
        };
        let mut buf = BytesMut::with_capacity(capacity);
        loop {
            let ev = match self.held.take() {
                Some(ev) => ev,
                None => match self.events.poll_recv(cx) {
                    Poll::Ready(Some(ev)) => ev,
                    Poll::Ready(None) => {
                        self.done = true;
                        return Poll::Ready(Some(Err(BodyError::EngineGone)));
                    }
                    Poll::Pending => break,
                },
            };
            if let (StreamEvent::Token { index, count, .. }, Some((at, d))) =
                (&ev, self.faults.stall_at)
            {
                if (*index..*index + *count).contains(&at) {
                    self.faults.stall_at = None;
                    self.held = Some(ev);
                    let mut sleep = Box::pin(tokio::time::sleep(d));
                    // Register the timer now so that we are woken when it fires.
                    let _ = sleep.as_mut().poll(cx);
                    self.stall = Some(sleep);
                    break;
                }
            }
            if !self.write(ev, &mut buf) {
                self.cut = true;
                // Let what was written reach the socket before the reset.
                let mut sleep = Box::pin(tokio::time::sleep(FLUSH_GRACE));
                let _ = sleep.as_mut().poll(cx);
                self.stall = Some(sleep);
                break;
            }
            if self.done {
                break;
            }
        }
        if !buf.is_empty() {
            return Poll::Ready(Some(Ok(buf.freeze())));
        }
        if self.stall.is_some() {
            return Poll::Pending;
        }
        if self.done {
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

/// How long a cut body waits after its last bytes before failing, so that
/// hyper writes them (with the head) before it resets the connection.
const FLUSH_GRACE: Duration = Duration::from_millis(20);

/// A body that sends `bytes`, then fails: a response cut mid-way.
pub fn cut_after(bytes: Bytes) -> SimBody {
    SimBody::CutAfter(Some(bytes), Box::pin(tokio::time::sleep(FLUSH_GRACE)))
}

/// Every response body the server sends.
pub enum SimBody {
    Full(Option<Bytes>),
    /// `bytes`, then (after a flush grace) an error: a response cut mid-way.
    CutAfter(Option<Bytes>, Pin<Box<tokio::time::Sleep>>),
    /// Nothing for a while, then `bytes`.
    Delayed(Pin<Box<tokio::time::Sleep>>, Option<Bytes>),
    Stream(Box<SseStream>),
}

impl SimBody {
    pub fn full(b: impl Into<Bytes>) -> Self {
        SimBody::Full(Some(b.into()))
    }
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        match this {
            SimBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            SimBody::CutAfter(b, grace) => match b.take() {
                Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                None => grace.as_mut().poll(cx).map(|()| Some(Err(BodyError::Cut))),
            },
            SimBody::Delayed(sleep, b) => {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                Poll::Ready(b.take().map(|b| Ok(Frame::data(b))))
            }
            SimBody::Stream(s) => s.poll_next(cx).map(|o| o.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, SimBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}
