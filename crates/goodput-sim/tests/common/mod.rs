//! A small HTTP/1.1 client for the server tests: one connection per request,
//! every body frame timestamped on arrival, SSE events split out.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use goodput_common::words::words;
use goodput_sim::{SimConfig, SimServer};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

/// A response as the client saw it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub sent_at: Instant,
    pub head_at: Instant,
    /// Body frames with their arrival times.
    pub frames: Vec<(Instant, Bytes)>,
    /// Set when the body ended with an error (e.g. a cut connection).
    pub body_error: Option<String>,
}

impl Reply {
    pub fn body(&self) -> Vec<u8> {
        self.frames.iter().flat_map(|(_, b)| b.to_vec()).collect()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body()).expect("JSON body")
    }

    /// SSE `data:` payloads with the arrival time of the frame that completed them.
    pub fn events(&self) -> Vec<(Instant, String)> {
        let mut out = Vec::new();
        let mut pending = String::new();
        for (t, b) in &self.frames {
            pending.push_str(std::str::from_utf8(b).expect("utf-8 stream"));
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                if let Some(data) = event.trim_end().strip_prefix("data: ") {
                    out.push((*t, data.to_string()));
                }
            }
        }
        out
    }

    /// Arrival times of content-bearing events (non-empty delta content or text).
    pub fn content_times(&self) -> Vec<Instant> {
        self.events()
            .into_iter()
            .filter_map(|(t, e)| {
                let v: serde_json::Value = serde_json::from_str(&e).ok()?;
                let c = &v["choices"][0];
                let text = c["delta"]["content"].as_str().or(c["text"].as_str())?;
                (!text.is_empty()).then_some(t)
            })
            .collect()
    }

    pub fn ttft(&self) -> Duration {
        self.content_times()[0] - self.sent_at
    }

    pub fn tpot(&self) -> Duration {
        let t = self.content_times();
        (t[t.len() - 1] - t[0]) / (t.len() as u32 - 1)
    }
}

/// Send one request on a fresh connection and read the whole response.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> Reply {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(payload)))
        .unwrap();
    let sent_at = Instant::now();
    let resp = sender.send_request(req).await.expect("response head");
    let head_at = Instant::now();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut body = resp.into_body();
    let mut frames = Vec::new();
    let mut body_error = None;
    loop {
        match body.frame().await {
            Some(Ok(f)) => {
                if let Ok(d) = f.into_data() {
                    frames.push((Instant::now(), d));
                }
            }
            Some(Err(e)) => {
                body_error = Some(e.to_string());
                break;
            }
            None => break,
        }
    }
    Reply {
        status,
        headers,
        sent_at,
        head_at,
        frames,
        body_error,
    }
}

pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    send(addr, "GET", path, None).await
}

/// A streamed completion of exactly `max_tokens` tokens.
pub async fn stream_completion(addr: SocketAddr, prompt: &str, max_tokens: usize) -> Reply {
    let body = serde_json::json!({
        "prompt": prompt,
        "max_tokens": max_tokens,
        "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    send(addr, "POST", "/v1/completions", Some(body)).await
}

/// A prompt of exactly `n` tokens; `salt` varies its words.
pub fn prompt(n: usize, salt: usize) -> String {
    let w = words();
    (0..n)
        .map(|i| format!(" {}", w[(i * 7 + salt * 131) % w.len()]))
        .collect()
}

/// A value from the Prometheus text (first series of that name).
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("metric {name} not found"))
}

pub async fn metrics(addr: SocketAddr) -> String {
    String::from_utf8(get(addr, "/metrics").await.body()).unwrap()
}

pub fn start(config: SimConfig) -> SimServer {
    SimServer::spawn(config, "127.0.0.1:0".parse().unwrap()).expect("server starts")
}
