//! The target: where requests go and how they are addressed.
//!
//! URL rules (the CLI contract): the endpoint path is appended to the base
//! URL; a base that already ends in `/v1` does not get a second one; any path
//! the user gave is kept (`https://host/proxy` → `https://host/proxy/v1/chat/completions`).

use super::error::ClientError;

/// A parsed base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    /// The scheme is `https`: connections use TLS.
    pub https: bool,
    /// Host name or IP address (an IPv6 address without its brackets).
    pub host: String,
    /// TCP port; the scheme's default (80, 443) when the URL gives none.
    pub port: u16,
    /// Path up to and including `/v1`, without a trailing slash.
    pub api_prefix: String,
}

impl BaseUrl {
    /// Parse an `http` or `https` URL without a query string, appending
    /// `/v1` to its path unless it already ends in it.
    pub fn parse(url: &str) -> Result<Self, ClientError> {
        let bad = |why: &str| ClientError::BadUrl {
            url: url.to_string(),
            why: why.to_string(),
        };
        let uri: http::Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            Some(other) => return Err(bad(&format!("scheme '{other}' is not http or https"))),
            None => return Err(bad("it needs a scheme, for example http://localhost:8000")),
        };
        let host = uri
            .host()
            .ok_or_else(|| bad("it has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        if uri.query().is_some() {
            return Err(bad("a query string is not supported in the base URL"));
        }
        let mut path = uri.path().trim_end_matches('/').to_string();
        if !path.ends_with("/v1") {
            path.push_str("/v1");
        }
        Ok(BaseUrl {
            https,
            host,
            port,
            api_prefix: path,
        })
    }

    /// `host:port` as sent in the `Host` header (port omitted when default).
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.https { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The whole URL of an API route, scheme included
    /// (`http://127.0.0.1:8000/v1/models`), for messages.
    pub fn url(&self, route: &str) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority(), self.path(route))
    }

    /// The request path of an API route such as `/models` or `/chat/completions`.
    pub fn path(&self, route: &str) -> String {
        format!("{}{}", self.api_prefix, route)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::protocol::Endpoint;

    #[test]
    fn v1_is_appended_once_and_user_paths_are_kept() {
        let cases = [
            ("http://localhost:8000", false, 8000, "/v1/chat/completions"),
            (
                "http://localhost:8000/",
                false,
                8000,
                "/v1/chat/completions",
            ),
            (
                "https://api.example.com/v1",
                true,
                443,
                "/v1/chat/completions",
            ),
            (
                "https://api.example.com/v1/",
                true,
                443,
                "/v1/chat/completions",
            ),
            ("http://h/proxy", false, 80, "/proxy/v1/chat/completions"),
            ("http://h/proxy/v1", false, 80, "/proxy/v1/chat/completions"),
        ];
        for (url, https, port, path) in cases {
            let b = BaseUrl::parse(url).unwrap();
            assert_eq!((b.https, b.port), (https, port), "{url}");
            assert_eq!(b.path(Endpoint::Chat.path()), path, "{url}");
        }
    }

    #[test]
    fn authority_omits_default_port_and_brackets_ipv6() {
        assert_eq!(BaseUrl::parse("https://a.b").unwrap().authority(), "a.b");
        assert_eq!(
            BaseUrl::parse("http://a.b:81").unwrap().authority(),
            "a.b:81"
        );
        assert_eq!(
            BaseUrl::parse("http://[::1]:9").unwrap().authority(),
            "[::1]:9"
        );
    }

    #[test]
    fn bad_urls_say_why() {
        let e = BaseUrl::parse("localhost:8000").unwrap_err().to_string();
        assert!(e.contains("scheme"), "{e}");
        let e = BaseUrl::parse("ftp://x").unwrap_err().to_string();
        assert!(e.contains("ftp"), "{e}");
    }
}
