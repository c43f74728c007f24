#!/usr/bin/env python3
"""A proxy that strips `usage` and `timings` from llama-server's answers
(streamed events included) and adds up the completion tokens they held.

    strip_usage.py LISTEN_PORT UPSTREAM_URL TOTALS_FILE

TOTALS_FILE gets, after every answer, the JSON {x-request-id:
completion_tokens} of everything proxied so far.
"""
import http.client
import http.server
import json
import sys
import threading
import urllib.parse

port, upstream, totals_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
up = urllib.parse.urlparse(upstream)
lock = threading.Lock()
totals = {}


def strip(obj, seen):
    usage = obj.pop("usage", None)
    obj.pop("timings", None)
    if usage and usage.get("completion_tokens") is not None:
        seen.append(usage["completion_tokens"])
    return obj


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.forward(None)

    def do_POST(self):
        self.forward(self.rfile.read(int(self.headers.get("content-length", 0))))

    def forward(self, body):
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=600)
        headers = {"content-type": "application/json"}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        ctype = resp.getheader("content-type", "application/json")
        seen = []
        self.send_response(resp.status)
        self.send_header("content-type", ctype)
        if "text/event-stream" in ctype:
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for line in resp:
                text = line.decode("utf-8", "replace")
                if text.startswith("data: ") and text.strip() != "data: [DONE]":
                    obj = strip(json.loads(text[6:]), seen)
                    if not obj.get("choices") and "usage" not in obj and len(obj) <= 6 and seen:
                        # an event that carried only usage is dropped whole
                        if all(k in ("id", "object", "created", "model", "system_fingerprint", "choices") for k in obj):
                            continue
                    text = "data: " + json.dumps(obj, ensure_ascii=False) + "\n"
                data = text.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            raw = resp.read()
            try:
                raw = json.dumps(strip(json.loads(raw), seen)).encode()
            except ValueError:
                pass
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        if self.path.startswith("/v1/") and body is not None:
            with lock:
                totals[self.headers.get("x-request-id", str(len(totals)))] = seen[-1] if seen else 0
                with open(totals_path, "w") as f:
                    json.dump(totals, f)


http.server.ThreadingHTTPServer(("127.0.0.1", port), Proxy).serve_forever()
