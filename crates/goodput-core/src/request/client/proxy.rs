//! HTTP proxies from the environment, as curl reads them.
//!
//! - `http://` targets: `http_proxy` (lower case only: curl ignores
//!   `HTTP_PROXY`, which a CGI request could set), else `ALL_PROXY` /
//!   `all_proxy`. Requests go to the proxy in absolute form
//!   (`POST http://host:port/v1/... HTTP/1.1`).
//! - `https://` targets: `https_proxy` / `HTTPS_PROXY`, else `ALL_PROXY` /
//!   `all_proxy`. A `CONNECT host:port` tunnel, then TLS with the server
//!   through it.
//! - `NO_PROXY` / `no_proxy`: comma-separated hosts, domains (`example.com`
//!   and `.example.com` both match `api.example.com`), IP addresses, or `*`;
//!   a match goes direct.
//! - The proxy URL is `http://[user:password@]host[:port]` (port 1080 when
//!   absent, as curl); credentials are sent as `Proxy-Authorization: Basic`
//!   and redacted like any secret.
//!
//! The proxy's own failures (unreachable, refusing the tunnel, asking for
//! credentials) are the `proxy` error kind, told apart from the server's.

use base64::Engine as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::error::ClientError;
use super::target::BaseUrl;

/// A proxy to reach the target through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    pub host: String,
    pub port: u16,
    /// `Basic <base64(user:password)>`, when the URL has credentials.
    pub authorization: Option<String>,
    /// Which variable named it (for messages).
    pub from: String,
}

impl Proxy {
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The proxy for `target` from `env` (a lookup of variables), or `None` to
/// go direct.
pub fn from_env(
    target: &BaseUrl,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, ClientError> {
    let get = |name: &str| {
        env(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name.to_string(), v))
    };
    let chosen = if target.https {
        get("https_proxy").or_else(|| get("HTTPS_PROXY"))
    } else {
        get("http_proxy")
    }
    .or_else(|| get("all_proxy"))
    .or_else(|| get("ALL_PROXY"));
    let Some((from, url)) = chosen else {
        return Ok(None);
    };
    let no_proxy = env("no_proxy")
        .or_else(|| env("NO_PROXY"))
        .unwrap_or_default();
    if bypassed(&target.host, &no_proxy) {
        return Ok(None);
    }
    parse(&url, &from).map(Some)
}

/// Whether `host` matches a `NO_PROXY` list.
pub fn bypassed(host: &str, no_proxy: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    no_proxy
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            // An entry may carry a port (`host:8080`); curl matches the host part.
            let entry = entry
                .rsplit_once(':')
                .filter(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok())
                .map_or(entry, |(h, _)| h)
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_lowercase();
            let domain = entry.trim_start_matches('.');
            host == domain || host.ends_with(&format!(".{domain}"))
        })
}

fn parse(url: &str, from: &str) -> Result<Proxy, ClientError> {
    let bad = |why: &str| ClientError::BadUrl {
        url: format!("{from}={}", redact_userinfo(url)),
        why: why.to_string(),
    };
    let rest = match url.split_once("://") {
        Some(("http", rest)) => rest,
        None => url,
        Some((scheme, _)) => {
            return Err(bad(&format!(
                "proxy scheme '{scheme}' is not supported (only http:// proxies); use --no-proxy to go direct"
            )))
        }
    };
    let rest = rest.split('/').next().unwrap_or("");
    let (userinfo, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, p) = v6
            .split_once(']')
            .ok_or_else(|| bad("unclosed '[' in the host"))?;
        (h.to_string(), p.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad("it has no host"));
    }
    let port = match port {
        None | Some("") => 1080,
        Some(p) => p.parse().map_err(|_| bad("the port is not a number"))?,
    };
    let authorization = userinfo.map(|u| {
        let decoded = percent_decode(u);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(decoded)
        )
    });
    Ok(Proxy {
        host,
        port,
        authorization,
        from: from.to_string(),
    })
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(x) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// A proxy URL with its credentials hidden, for messages.
pub fn redact_userinfo(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}<redacted>{}", &url[..s + 3], &url[at..]),
        (None, Some(at)) => format!("<redacted>{}", &url[at..]),
        _ => url.to_string(),
    }
}

/// Open a `CONNECT` tunnel to `authority` through a connected proxy socket.
/// Bounded: a head over 16 KiB is refused.
pub async fn connect_tunnel(
    stream: &mut TcpStream,
    proxy: &Proxy,
    authority: &str,
) -> Result<(), String> {
    let mut req = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(a) = &proxy.authorization {
        req.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    stream
        .write_all(req.as_bytes())
        .await
        .map_err(|e| format!("writing CONNECT to the proxy: {e}"))?;
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    // Byte by byte: nothing of the tunnel may be read past the head.
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 * 1024 {
            return Err("the proxy's answer to CONNECT has a head over 16 KiB".into());
        }
        match stream.read(&mut byte).await {
            Ok(0) => return Err("the proxy closed the connection during CONNECT".into()),
            Ok(_) => head.push(byte[0]),
            Err(e) => return Err(format!("reading the proxy's answer to CONNECT: {e}")),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let status_line = line.lines().next().unwrap_or("");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if !(200..300).contains(&status) {
        return Err(format!(
            "the proxy refused the tunnel to {authority}: {status_line}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> BaseUrl {
        BaseUrl::parse(url).unwrap()
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn variables_are_read_as_curl_reads_them() {
        let http = target("http://api.example.com:8000");
        let https = target("https://api.example.com");
        // Upper-case HTTP_PROXY is ignored for http targets, as curl does.
        assert_eq!(
            from_env(&http, env(&[("HTTP_PROXY", "http://p:1")])).unwrap(),
            None
        );
        let p = from_env(&http, env(&[("http_proxy", "http://p:3128")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (p.host.as_str(), p.port, p.from.as_str()),
            ("p", 3128, "http_proxy")
        );
        let p = from_env(&https, env(&[("HTTPS_PROXY", "p2")]))
            .unwrap()
            .unwrap();
        assert_eq!((p.host.as_str(), p.port), ("p2", 1080));
        let p = from_env(&https, env(&[("ALL_PROXY", "http://all:9")]))
            .unwrap()
            .unwrap();
        assert_eq!(p.host, "all");
        assert!(from_env(&https, env(&[("https_proxy", "socks5://s:1")])).is_err());
    }

    #[test]
    fn no_proxy_matches_hosts_domains_ports_and_star() {
        assert!(bypassed("api.example.com", "localhost, example.com"));
        assert!(bypassed("api.example.com", ".example.com"));
        assert!(!bypassed("example.org", "example.com"));
        assert!(!bypassed("notexample.com", "example.com"));
        assert!(bypassed("127.0.0.1", "127.0.0.1:8000"));
        assert!(bypassed("anything", "*"));
        assert!(bypassed("::1", "[::1]"));
        let t = target("http://localhost:8000");
        assert_eq!(
            from_env(&t, env(&[("http_proxy", "p:1"), ("NO_PROXY", "localhost")])).unwrap(),
            None
        );
    }

    #[test]
    fn credentials_become_basic_auth_and_are_redacted_in_messages() {
        let p = parse("http://us%40er:p%3Ass@proxy:8080", "https_proxy").unwrap();
        let expected = base64::engine::general_purpose::STANDARD.encode("us@er:p:ss");
        assert_eq!(p.authorization, Some(format!("Basic {expected}")));
        assert_eq!(
            redact_userinfo("http://user:pw@proxy:1"),
            "http://<redacted>@proxy:1"
        );
    }
}
