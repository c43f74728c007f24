//! [`SimServer`]: the engine thread plus an OpenAI-compatible HTTP server on
//! its own tokio runtime (its own thread), so that it never shares a runtime,
//! or a scheduler queue, with the client that benchmarks it.

mod body;
mod handlers;
mod images;
mod mixes;
mod openai;
mod pooling;
mod streams;
mod tokens;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use goodput_common::tokenizer::Tokenizer;
use hyper_util::rt::TokioIo;

use crate::config::{OutputLenDist, SimConfig};
use crate::engine::RequestId;
use crate::error::SimError;
use crate::faults::FaultConfig;
use crate::metrics;
use crate::priority::EnginePriority;
use crate::realtime::{self, Command, EngineIo, MonoClock};
use crate::stats::{LiveStats, SimStats};
use crate::text::tokenizer;

/// Shared by every connection.
struct AppState {
    model_name: String,
    /// The model name as a JSON string literal.
    model_json: String,
    max_model_len: usize,
    /// vLLM's `cache_config_info` series for `/metrics` (the engine's KV
    /// cache as vLLM describes its own; written once at start).
    cache_config_info: String,
    created: u64,
    seed: u64,
    /// Held before a request reaches the engine ([`SimConfig::request_latency_ms`]).
    request_latency: std::time::Duration,
    output_len: OutputLenDist,
    faults: FaultConfig,
    engine: mpsc::Sender<Command>,
    clock: MonoClock,
    next_index: AtomicU64,
    tokenizer: &'static Tokenizer,
    stats: LiveStats,
    /// LoRA adapters served beside the base model.
    lora_modules: Vec<String>,
    scheduling_policy: crate::engine::SchedulingPolicy,
    /// [`SimConfig::image_patch_px`].
    image_patch_px: u32,
    /// [`SimConfig::embedding_dim`].
    embedding_dim: usize,
}

/// Tells the engine to drop a request whose response was abandoned.
pub(crate) struct AbortGuard {
    engine: Option<mpsc::Sender<Command>>,
    id: RequestId,
}

impl AbortGuard {
    fn new(engine: mpsc::Sender<Command>, id: RequestId) -> Self {
        AbortGuard {
            engine: Some(engine),
            id,
        }
    }

    /// The request completed; nothing to abort.
    pub(crate) fn disarm(&mut self) {
        self.engine = None;
    }
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if let Some(tx) = self.engine.take() {
            let _ = tx.send(Command::Abort(self.id));
        }
    }
}

/// A running simulator: engine thread plus HTTP server.
pub struct SimServer {
    addr: SocketAddr,
    model_name: String,
    stats: LiveStats,
    engine: mpsc::Sender<Command>,
    priority: EnginePriority,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server_thread: Option<JoinHandle<()>>,
    engine_thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SimServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimServer")
            .field("addr", &self.addr)
            .field("model_name", &self.model_name)
            .finish()
    }
}

impl SimServer {
    /// Bind `addr` (port 0 picks a free port), start the engine thread and the
    /// HTTP server, and return once both are running.
    pub fn spawn(config: SimConfig, addr: SocketAddr) -> Result<SimServer, SimError> {
        let engine = config.build_engine()?;
        let max_model_len = engine.limits().max_model_len;
        let engine_blocks = engine.limits().num_blocks;
        let tokenizer = tokenizer()?;
        let listener =
            std::net::TcpListener::bind(addr).map_err(|source| SimError::Bind { addr, source })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| SimError::Start(e.to_string()))?;
        let local = listener
            .local_addr()
            .map_err(|e| SimError::Start(e.to_string()))?;

        let runtime = if config.server_threads <= 1 {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(config.server_threads)
                .thread_name("goodput-sim-http")
                .enable_all()
                .build()
        }
        .map_err(|e| SimError::Start(format!("tokio runtime: {e}")))?;

        let stats = LiveStats::for_config(&config);
        let clock = MonoClock::new();
        let (engine_tx, engine_rx) = mpsc::channel();
        let (deliver_tx, deliver_rx) = tokio::sync::mpsc::unbounded_channel();
        let (started_tx, started_rx) = mpsc::channel();
        let io = EngineIo {
            commands: engine_rx,
            deliver: deliver_tx,
            priority: config.engine_priority,
            started: started_tx,
        };
        let engine_thread = {
            let stats = stats.clone();
            std::thread::Builder::new()
                .name("goodput-sim-engine".into())
                .spawn(move || realtime::run(engine, io, stats, clock))
                .map_err(|e| SimError::Start(format!("engine thread: {e}")))?
        };
        let priority = started_rx
            .recv()
            .map_err(|_| SimError::Start("the engine thread exited at start-up".into()))?;

        let model_name = config.model_name().to_string();
        let state = Arc::new(AppState {
            model_json: serde_json::Value::String(model_name.clone()).to_string(),
            model_name: model_name.clone(),
            max_model_len,
            cache_config_info: metrics::cache_config_info(
                engine_blocks,
                crate::kv::BLOCK_SIZE,
                config.gpu_memory_utilization,
                config.enable_prefix_caching,
            ),
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            seed: config.seed,
            request_latency: std::time::Duration::from_secs_f64(config.request_latency_ms * 1e-3),
            output_len: config.output_len,
            faults: config.faults.clone(),
            engine: engine_tx.clone(),
            clock,
            next_index: AtomicU64::new(0),
            tokenizer,
            stats: stats.clone(),
            lora_modules: config.lora.modules.clone(),
            scheduling_policy: config.scheduling_policy,
            image_patch_px: config.image_patch_px,
            embedding_dim: config.embedding_dim,
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let server_thread = std::thread::Builder::new()
            .name("goodput-sim-http".into())
            .spawn(move || {
                runtime.spawn(realtime::dispatch(deliver_rx));
                runtime.block_on(accept_loop(listener, state, stop_rx));
            })
            .map_err(|e| SimError::Start(format!("server thread: {e}")))?;

        Ok(SimServer {
            addr: local,
            model_name,
            stats,
            engine: engine_tx,
            priority,
            stop: Some(stop_tx),
            server_thread: Some(server_thread),
            engine_thread: Some(engine_thread),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The model name served on `/v1/models`.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The scheduling priority the engine thread obtained.
    pub fn engine_priority(&self) -> EnginePriority {
        self.priority
    }

    /// The engine's cumulative counters now.
    pub fn counters(&self) -> crate::engine::EngineCounters {
        self.stats.lock().counters
    }

    /// Live statistics, including step lateness.
    pub fn stats(&self) -> SimStats {
        self.stats.snapshot()
    }

    /// Forget the lateness samples so far (to measure a window).
    pub fn reset_lateness(&self) {
        self.stats.reset_lateness();
    }

    /// Stop the server and the engine and wait for their threads.
    pub fn shutdown(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.engine.send(Command::Shutdown);
        if let Some(t) = self.server_thread.take() {
            let _ = t.join();
        }
        if let Some(t) = self.engine_thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    state: Arc<AppState>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(_) => return,
    };
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors and the like: back off briefly.
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let state = state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move {
                            Ok::<_, std::convert::Infallible>(handlers::handle(state, req).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}
