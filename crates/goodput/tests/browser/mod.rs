//! Headless Chromium over the DevTools protocol, for tests of the HTML
//! report: load a file, collect console errors, exceptions, dialogs and
//! network requests, evaluate an expression, take a full-page screenshot.
//!
//! Chromium is Debian's `chromium` package. Without it the tests that need
//! it say so and pass, so the README's test command works on a bare
//! machine; `.ci/run` installs it and sets `GOODPUT_REQUIRE_CHROMIUM=1`,
//! which turns its absence into a failure.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// The Chromium binary, if there is one.
pub fn chromium() -> Option<PathBuf> {
    let candidates = [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ];
    let found = candidates.iter().map(PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("GOODPUT_REQUIRE_CHROMIUM").is_err(),
            "GOODPUT_REQUIRE_CHROMIUM is set but Chromium is not installed (apt-get install chromium)"
        );
        eprintln!("SKIPPED: Chromium is not installed (apt-get install chromium); the HTML report was not checked in a browser");
    }
    found
}

/// What a page did while it loaded.
#[derive(Debug, Default)]
pub struct PageLog {
    /// Console messages of level error, uncaught exceptions, log errors.
    pub errors: Vec<String>,
    /// Requests for anything but the file itself.
    pub requests: Vec<String>,
    /// `alert`/`confirm`/`prompt` dialogs opened (a script ran).
    pub dialogs: Vec<String>,
}

pub struct Browser {
    child: Child,
    _profile: PathBuf,
    ws: WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next_id: u64,
    session: String,
}

impl Browser {
    pub fn launch(exe: &Path) -> Browser {
        let profile = std::env::temp_dir().join(format!(
            "goodput-chromium-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        let mut child = Command::new(exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "about:blank",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(i) = line.find("ws://") {
                    let _ = tx.send(line[i..].trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium printed no DevTools address");
        let (ws, _) = tungstenite::connect(url.as_str()).expect("connect to DevTools");
        let mut b = Browser {
            child,
            _profile: profile,
            ws,
            next_id: 0,
            session: String::new(),
        };
        let target = b.call(
            "Target.createTarget",
            json!({"url": "about:blank"}),
            &mut PageLog::default(),
        );
        let id = target["targetId"].as_str().expect("targetId").to_string();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": id, "flatten": true}),
            &mut PageLog::default(),
        );
        b.session = attached["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string();
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Log.enable",
            "Network.enable",
        ] {
            b.call(domain, json!({}), &mut PageLog::default());
        }
        b
    }

    /// Send a command (to the page once attached) and wait for its answer,
    /// recording events that arrive meanwhile.
    fn call(&mut self, method: &str, params: Value, log: &mut PageLog) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.ws
            .send(Message::Text(msg.to_string().into()))
            .expect("send to DevTools");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "no answer to {method}");
            let v = self.read();
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            record(&v, log);
        }
    }

    fn read(&mut self) -> Value {
        loop {
            match self.ws.read().expect("read from DevTools") {
                Message::Text(t) => return serde_json::from_str(&t).expect("DevTools JSON"),
                _ => continue,
            }
        }
    }

    /// Load `file` at this viewport width and wait for its load event.
    pub fn open(&mut self, file: &Path, width: u32) -> PageLog {
        let mut log = PageLog::default();
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
            &mut log,
        );
        let url = format!(
            "file://{}",
            file.canonicalize().expect("report file").display()
        );
        self.call("Page.navigate", json!({"url": url}), &mut log);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "the page never loaded");
            let v = self.read();
            if v["method"] == "Page.loadEventFired" {
                break;
            }
            if v["method"] == "Page.javascriptDialogOpening" {
                // A dialog blocks the page: dismiss it (without waiting).
                self.next_id += 1;
                let msg = json!({"id": self.next_id, "method": "Page.handleJavaScriptDialog",
                    "params": {"accept": true}, "sessionId": self.session});
                let _ = self.ws.send(Message::Text(msg.to_string().into()));
            }
            record(&v, &mut log);
        }
        // Late console messages and requests (none are expected).
        self.call("Runtime.evaluate", json!({"expression": "1"}), &mut log);
        log.requests
            .retain(|u| u != &url && !u.starts_with("data:"));
        log
    }

    /// Evaluate a JavaScript expression in the page; its JSON value.
    pub fn eval(&mut self, expression: &str, log: &mut PageLog) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
            log,
        );
        r["result"]["value"].clone()
    }

    /// A PNG of the whole page.
    pub fn screenshot(&mut self, path: &Path, log: &mut PageLog) {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
            log,
        );
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("png data"))
            .expect("base64");
        std::fs::write(path, png).expect("write screenshot");
    }
}

fn record(v: &Value, log: &mut PageLog) {
    let p = &v["params"];
    match v["method"].as_str().unwrap_or("") {
        "Runtime.consoleAPICalled" if p["type"] == "error" || p["type"] == "assert" => {
            log.errors.push(p["args"].to_string())
        }
        "Runtime.exceptionThrown" => log.errors.push(p["exceptionDetails"].to_string()),
        "Log.entryAdded" if p["entry"]["level"] == "error" => {
            log.errors.push(p["entry"]["text"].to_string())
        }
        "Network.requestWillBeSent" => log
            .requests
            .push(p["request"]["url"].as_str().unwrap_or("").to_string()),
        "Page.javascriptDialogOpening" => log.dialogs.push(p["message"].to_string()),
        _ => {}
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self._profile);
    }
}
