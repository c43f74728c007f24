//! The scripted server over hand-written HTTP/1.1 on raw TCP: the same
//! [`Script`] and [`Reply`]s as the hyper server, plus what hyper will not
//! do — close or reset a connection before the head, chunk extensions and
//! trailers, bodies delimited by the close or cut short of their
//! `Content-Length`, and closing keep-alive connections left idle.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::reply::{self, Framing, HeadPlan, Incoming, Reply, Step};
use super::{LogEntry, Script, ScriptedServer};

pub async fn start_raw(script: Script) -> ScriptedServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let (log2, seen2) = (log.clone(), seen.clone());
    tokio::spawn(async move {
        loop {
            let (sock, _) = tokio::select! {
                r = listener.accept() => match r { Ok(s) => s, Err(_) => continue },
                _ = &mut rx => break,
            };
            let _ = sock.set_nodelay(true);
            let (script, log, seen) = (script.clone(), log2.clone(), seen2.clone());
            tokio::spawn(serve_connection(sock, script, log, seen));
        }
    });
    ScriptedServer {
        addr,
        log,
        seen,
        _shutdown: tx,
    }
}

async fn serve_connection(
    mut sock: TcpStream,
    script: Script,
    log: Arc<Mutex<Vec<LogEntry>>>,
    seen: Arc<Mutex<Vec<String>>>,
) {
    let mut buf = Vec::new();
    loop {
        let read = read_request(&mut sock, &mut buf);
        let req = match script.idle_close {
            // A keep-alive timeout: an idle connection is closed, unannounced.
            Some(d) => match tokio::time::timeout(d, read).await {
                Ok(r) => r,
                Err(_) => return,
            },
            None => read.await,
        };
        let Some(req) = req else { return };
        let received = Instant::now();
        seen.lock().unwrap().push(req.tag.clone());
        let r = reply::reply(&script, &req);
        if !play(&mut sock, &r, received, &log).await {
            return;
        }
    }
}

/// Read one request (head and `Content-Length` body); None at end of stream.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Incoming> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let header = |name: &str| {
                head.lines().skip(1).find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| v.trim().to_string())
                })
            };
            let len: usize = header("content-length").map_or(0, |v| v.parse().unwrap_or(0));
            while buf.len() < end + 4 + len {
                fill(sock, buf).await?;
            }
            let body = serde_json::from_slice(&buf[end + 4..end + 4 + len]).unwrap_or_default();
            let echoed = ["authorization", "x-api-key"]
                .iter()
                .filter_map(|h| header(h))
                .collect::<Vec<_>>()
                .join(" / ");
            let req = Incoming {
                tag: header("x-request-id").unwrap_or_default(),
                path: head.split_whitespace().nth(1).unwrap_or("").to_string(),
                body,
                echoed,
            };
            buf.drain(..end + 4 + len);
            return Some(req);
        }
        fill(sock, buf).await?;
    }
}

async fn fill(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<()> {
    let mut tmp = [0u8; 8192];
    match sock.read(&mut tmp).await {
        Ok(0) | Err(_) => None,
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            Some(())
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Scripted",
    }
}

/// Reset the connection when it is dropped (SO_LINGER with a zero timeout).
fn reset_on_close(sock: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket we own, with a properly sized struct.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// Play one reply on the socket; false when the connection must close.
async fn play(
    sock: &mut TcpStream,
    r: &Reply,
    received: Instant,
    log: &Mutex<Vec<LogEntry>>,
) -> bool {
    match r.head {
        HeadPlan::At(d) => tokio::time::sleep_until((received + d).into()).await,
        HeadPlan::Never => std::future::pending::<()>().await,
        HeadPlan::Close => return false,
        HeadPlan::Reset => {
            reset_on_close(sock);
            return false;
        }
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", r.status, reason(r.status));
    for (name, value) in &r.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let mut writes = Vec::new();
    let mut keep = true;
    match r.framing {
        Framing::Length => {
            let mut body = Vec::new();
            for step in &r.steps {
                if let Step::Send { bytes, content } = step {
                    body.extend_from_slice(bytes);
                    if *content {
                        writes.push(Instant::now());
                    }
                }
            }
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            let mut all = head.into_bytes();
            all.extend_from_slice(&body);
            keep = sock.write_all(&all).await.is_ok();
        }
        framing => {
            head.push_str(
                match framing {
                    Framing::Chunked { .. } => "transfer-encoding: chunked\r\n\r\n".to_string(),
                    Framing::ShortLength(n) => {
                        format!("connection: close\r\ncontent-length: {n}\r\n\r\n")
                    }
                    _ => "connection: close\r\n\r\n".to_string(),
                }
                .as_str(),
            );
            if sock.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for step in &r.steps {
                match step {
                    Step::At(d) => tokio::time::sleep_until((received + *d).into()).await,
                    Step::Stall(d) => tokio::time::sleep(*d).await,
                    Step::Send { bytes, content } => {
                        let framed = match framing {
                            Framing::Chunked { extensions: false } => {
                                [format!("{:x}\r\n", bytes.len()).as_bytes(), bytes, b"\r\n"]
                                    .concat()
                            }
                            Framing::Chunked { extensions: true } => [
                                format!("{:x};scripted=\"yes\";n=1\r\n", bytes.len()).as_bytes(),
                                bytes,
                                b"\r\n",
                            ]
                            .concat(),
                            _ => bytes.clone(),
                        };
                        if *content {
                            writes.push(Instant::now());
                        }
                        if sock.write_all(&framed).await.is_err() {
                            keep = false;
                            break;
                        }
                    }
                }
            }
            keep = keep && r.complete && matches!(framing, Framing::Chunked { .. });
            if keep {
                let end: &[u8] = match framing {
                    Framing::Chunked { extensions: true } => {
                        b"0;scripted=\"end\"\r\nx-scripted-trailer: done\r\n\r\n"
                    }
                    _ => b"0\r\n\r\n",
                };
                keep = sock.write_all(end).await.is_ok();
            }
        }
    }
    if let Some(tag) = r.log_tag.clone() {
        log.lock().unwrap().push(LogEntry {
            request_tag: tag,
            received,
            writes,
        });
    }
    keep
}
