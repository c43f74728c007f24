//! Proxies from the environment, as curl reads them, through a small proxy
//! the test starts: absolute-form requests for http targets, a CONNECT
//! tunnel for https, NO_PROXY and --no-proxy going direct, the proxy's own
//! failures told apart from the server's, its credentials never printed.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The first line of every request or CONNECT the proxy saw.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

/// A forwarding proxy; with `auth`, every request must carry it.
async fn start_proxy(auth: Option<&'static str>) -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let seen = s.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut b).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(b[0]);
                }
                let text = String::from_utf8_lossy(&head).to_string();
                let first = text.lines().next().unwrap_or("").to_string();
                seen.0.lock().unwrap().push(first.clone());
                if let Some(a) = auth {
                    if !text.contains(&format!("Proxy-Authorization: {a}"))
                        && !text.contains(&format!("proxy-authorization: {a}"))
                    {
                        let _ = client
                            .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
                            .await;
                        return;
                    }
                }
                let mut parts = first.split_whitespace();
                let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let upstream_addr = if method == "CONNECT" {
                    target.to_string()
                } else {
                    let rest = target.trim_start_matches("http://");
                    rest.split('/').next().unwrap_or("").to_string()
                };
                let Ok(mut upstream) = TcpStream::connect(&upstream_addr).await else {
                    let _ = client
                        .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                };
                if method == "CONNECT" {
                    let _ = client
                        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        .await;
                } else {
                    // Absolute-form is forwarded as it came (hyper accepts it).
                    let _ = upstream.write_all(&head).await;
                }
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    (addr, seen)
}

fn run_with_env(args: &[&str], env: &[(&str, String)]) -> (i32, serde_json::Value, String, String) {
    let out = tmp("r.json");
    let mut cmd = goodput_command();
    cmd.args(pinned(args))
        .args(["--out", out.to_str().unwrap()]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let v = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    (
        o.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

async fn run(
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
) -> (i32, serde_json::Value, String, String) {
    tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run_with_env(&a, &env)
    })
    .await
    .unwrap()
}

fn args(url: &str, extra: &[&str]) -> Vec<String> {
    let mut v = argv(&[
        "run",
        "--url",
        url,
        "--model",
        "m",
        "--concurrency",
        "2",
        "--num-prompts",
        "6",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--quiet",
    ]);
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_goes_through_http_proxy_in_absolute_form_unless_bypassed() {
    let server = start(Script::quick()).await;
    let (proxy, seen) = start_proxy(None).await;
    let env = vec![("http_proxy", format!("http://{proxy}"))];
    let (code, v, _, err) = run(args(&server.url(), &[]), env.clone()).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["completed"], 6);
    let lines = seen.0.lock().unwrap().clone();
    assert!(!lines.is_empty());
    assert!(
        lines
            .iter()
            .all(|l| l.contains(&format!("http://{}", server.addr))),
        "absolute form: {lines:?}"
    );
    seen.0.lock().unwrap().clear();
    let mut bypass = env.clone();
    bypass.push(("NO_PROXY", "127.0.0.1".into()));
    let (code, _, _, err) = run(args(&server.url(), &[]), bypass).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, _, err) = run(args(&server.url(), &["--no-proxy"]), env).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        seen.0.lock().unwrap().is_empty(),
        "NO_PROXY and --no-proxy go direct"
    );
    // HTTP_PROXY in capitals is ignored for http, as curl does.
    let (code, _, _, err) = run(
        args(&server.url(), &[]),
        vec![("HTTP_PROXY", "http://127.0.0.1:9".into())],
    )
    .await;
    assert_eq!(code, 0, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_tunnels_through_connect_with_credentials_never_printed() {
    let server = start_tls(Script::quick()).await;
    let (proxy, seen) = start_proxy(Some("Basic dXNlcjpzM2NyZXQtcGFzcw==")).await;
    let env = vec![("HTTPS_PROXY", format!("http://user:s3cret-pass@{proxy}"))];
    let (code, v, stdout, err) = run(args(&server.tls_url(), &["--insecure"]), env).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["completed"], 6);
    let lines = seen.0.lock().unwrap().clone();
    assert!(
        lines.iter().all(|l| l.starts_with("CONNECT localhost:")),
        "{lines:?}"
    );
    for text in [v.to_string(), stdout, err] {
        assert!(!text.contains("s3cret-pass") && !text.contains("dXNlcjpzM2NyZXQtcGFzcw"));
    }
    // Wrong credentials: the proxy answers 407, a failure of the proxy.
    let env = vec![("https_proxy", format!("http://user:wrong@{proxy}"))];
    let (code, v, _, err) = run(args(&server.tls_url(), &["--insecure"]), env).await;
    assert_eq!(code, 3, "{err}");
    assert_eq!(v["errors"]["by_kind"]["proxy"], 6, "{v}");
    assert!(err.contains("407"), "{err}");
    assert!(!err.contains("wrong"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_proxy_is_the_proxys_failure_not_the_servers() {
    let server = start(Script::quick()).await;
    let dead = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let env = vec![("http_proxy", format!("http://{dead}"))];
    let (code, v, _, err) = run(args(&server.url(), &[]), env).await;
    assert_eq!(code, 3, "{err}");
    assert_eq!(v["errors"]["by_kind"]["proxy"], 6, "{v}");
    assert!(v["errors"]["by_kind"].get("connect").is_none());
    assert!(server.log.lock().unwrap().is_empty());
}
