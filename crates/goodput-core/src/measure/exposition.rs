//! `--metrics-listen ADDR`: serve the client's live figures
//! ([`LiveMetrics`]) at `http://ADDR/metrics` for Prometheus, from
//! before the first request until the command ends (plus `--metrics-linger`,
//! so a scraper's last look sees the final counts).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::measure::live::{LiveMetrics, CONTENT_TYPE};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// A running exposition.
pub struct Exposition {
    /// The figures served, which the run updates.
    pub live: Arc<LiveMetrics>,
    /// The address bound (a port 0 asked for is the one given).
    pub addr: SocketAddr,
    linger: Duration,
    task: tokio::task::JoinHandle<()>,
}

impl Exposition {
    /// Bind now (a bad or busy address is said, before any request) and
    /// serve in the background, on the runtime this is called on.
    pub fn start(addr: SocketAddr, linger: Duration) -> Result<Exposition, String> {
        let listener = std::net::TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|_| l))
            .and_then(|l| Ok((l.local_addr()?, tokio::net::TcpListener::from_std(l)?)));
        let (bound, listener) = listener.map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
        let live = Arc::new(LiveMetrics::new());
        let task = tokio::spawn(serve(listener, live.clone()));
        Ok(Exposition {
            live,
            addr: bound,
            linger,
            task,
        })
    }

    /// Keep serving for `--metrics-linger` (cut short by a signal; `say`
    /// hears that it lingers), then stop.
    pub async fn finish(self, control: &crate::load::RunControl, say: &mut dyn FnMut(String)) {
        if !self.linger.is_zero() && !control.is_stopping() {
            say(format!(
                "serving the final figures at http://{}/metrics for {:?} (--metrics-linger)",
                self.addr, self.linger
            ));
            tokio::select! {
                _ = tokio::time::sleep(self.linger) => {}
                _ = control.stopped() => {}
            }
        }
        self.task.abort();
    }
}

async fn serve(listener: tokio::net::TcpListener, live: Arc<LiveMetrics>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors (a run may use them all): back off briefly.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let live = live.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let live = live.clone();
                async move { Ok::<_, Infallible>(answer(&live, &req)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn answer<B>(live: &LiveMetrics, req: &Request<B>) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (req.method().as_str(), req.uri().path()) {
        ("GET" | "HEAD", "/metrics") => (StatusCode::OK, CONTENT_TYPE, live.render()),
        ("GET" | "HEAD", "/") => (
            StatusCode::OK,
            "text/plain; charset=utf-8",
            "goodput: the client's live figures are at /metrics\n".to_string(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: try /metrics\n".to_string(),
        ),
    };
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}
