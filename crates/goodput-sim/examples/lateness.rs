//! Measure whether the simulator keeps real time under load: N concurrent
//! streaming clients in a closed loop against an in-process server, then the
//! step-lateness percentiles and the streamed token rate.
//!
//! `cargo run --release -p goodput-sim --example lateness -- [STREAMS] [SECONDS] [TIME_SCALE]`
//! (defaults: 1000 streams, 10 s, time scale 1; Llama-3.1-8B on H100,
//! max_num_seqs = STREAMS, 100-token prompts, 200-token outputs). A time
//! scale below 1 shortens every step, raising the token rate.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use goodput_sim::{SimConfig, SimServer};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

async fn stream_once(addr: SocketAddr, body: Bytes, chunks: &AtomicU64) -> Option<()> {
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.set_nodelay(true).ok()?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(conn);
    let req = http::Request::post("/v1/completions")
        .header("host", "sim")
        .header("content-type", "application/json")
        .body(Full::new(body))
        .ok()?;
    let mut resp = sender.send_request(req).await.ok()?.into_body();
    while let Some(frame) = resp.frame().await {
        if frame.ok()?.is_data() {
            chunks.fetch_add(1, Ordering::Relaxed);
        }
    }
    Some(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let streams: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let time_scale: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let config = SimConfig {
        max_num_seqs: streams.max(1),
        time_scale,
        ..SimConfig::default()
    };
    let server = match SimServer::spawn(config, "127.0.0.1:0".parse().expect("address")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let addr = server.local_addr();
    let prompt: String = (0..100).map(|_| " the").collect();
    let body = Bytes::from(
        serde_json::json!({"prompt": prompt, "max_tokens": 200, "ignore_eos": true, "stream": true})
            .to_string(),
    );
    let chunks = Arc::new(AtomicU64::new(0));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("client runtime");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    rt.block_on(async {
        for _ in 0..streams {
            let (body, chunks) = (body.clone(), chunks.clone());
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    stream_once(addr, body.clone(), &chunks).await;
                }
            });
        }
        // Measure after a warm-up of a quarter of the run.
        tokio::time::sleep(Duration::from_secs(seconds / 4)).await;
        server.reset_lateness();
        let (t0, c0, g0) = (Instant::now(), chunks.load(Ordering::Relaxed), server.stats().generation_tokens);
        tokio::time::sleep_until(deadline.into()).await;
        let dt = t0.elapsed().as_secs_f64();
        let s = server.stats();
        println!(
            "streams {streams}: {:.0} tokens/s generated, {:.0} chunks/s received; step lateness over {} steps: \
             mean {:.3} ms, p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms, max {:.3} ms; running {}, waiting {}",
            (s.generation_tokens - g0) as f64 / dt,
            (chunks.load(Ordering::Relaxed) - c0) as f64 / dt,
            s.lateness_samples,
            s.lateness_mean_s * 1e3,
            s.lateness_p50_s * 1e3,
            s.lateness_p99_s * 1e3,
            s.lateness_p999_s * 1e3,
            s.lateness_max_s * 1e3,
            s.running,
            s.waiting,
        );
    });
    rt.shutdown_background();
    server.shutdown();
}
