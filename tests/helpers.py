"""Shared test helpers: loopback ports and waiting for a server to listen."""
from __future__ import annotations

import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    """True once 127.0.0.1:port accepts connections; False if the process exits or time runs out."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            if proc.poll() is not None:
                return False
            time.sleep(0.3)
    return False


class FlakyProxy:
    """A loopback HTTP proxy in front of a real server that answers 429 while ``failing`` is set.

    It stands for a provider that rate-limits: requests pass through to the real upstream (a
    llama.cpp server) except while ``failing`` is true, when they get ``429 Too Many Requests``.
    """

    def __init__(self, upstream: str) -> None:
        import http.server
        import threading
        import urllib.request

        self.upstream = upstream.rstrip("/")
        self.failing = False
        self.calls = 0
        self.refused = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                proxy.calls += 1
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if proxy.failing:
                    proxy.refused += 1
                    msg = b'{"error": {"message": "rate limited", "type": "rate_limit_error"}}'
                    self.send_response(429)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                req = urllib.request.Request(proxy.upstream + self.path.replace("/v1", "", 1), data=body,
                                             headers={"Content-Type": "application/json"}, method="POST")
                with urllib.request.urlopen(req, timeout=300) as r:
                    data = r.read()
                    self.send_response(r.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
