"""Shared test helpers: loopback ports, waiting for a server to listen, the CLI as a subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path


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


def reply_json(handler, status: int, body: bytes) -> None:
    """Send one JSON response from a BaseHTTPRequestHandler."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 serving ``handler``; ``url`` ends in /v1 (OpenAI-style)."""

    def _serve(self, handler) -> None:
        import http.server
        import threading

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FlakyProxy(LoopbackServer):
    """A loopback HTTP proxy in front of a real server that answers 429 while ``failing`` is set.

    It stands for a provider that rate-limits: requests pass through to the real upstream (a
    llama.cpp server) except while ``failing`` is true, when they get ``429 Too Many Requests``.
    """

    def __init__(self, upstream: str) -> None:
        import http.server
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
                    reply_json(self, 429, b'{"error": {"message": "rate limited", "type": "rate_limit_error"}}')
                    return
                req = urllib.request.Request(
                    proxy.upstream + self.path.replace("/v1", "", 1),
                    data=body,
                    headers={"Content-Type": "application/json"},
                    method="POST",
                )
                with urllib.request.urlopen(req, timeout=300) as r:
                    reply_json(self, r.status, r.read())

        self._serve(Handler)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _healthy(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def streamlit_server(repo, log_path, env=None, timeout: float = 90):
    """Context manager: ``streamlit run app.py`` on a free loopback port; yields its URL, stops it after."""
    import contextlib
    import os
    import sys
    from pathlib import Path

    @contextlib.contextmanager
    def run():
        port = free_port()
        full_env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "RAG_PLAYGROUND_WARMUP": "1",  # as a user's server: the embedder loads while the first page is read
            **(env or {}),
        }
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("streamlit")),
                    "run",
                    "app.py",
                    "--server.port",
                    str(port),
                    "--server.address",
                    "127.0.0.1",
                    "--server.headless",
                    "true",
                    "--browser.gatherUsageStats",
                    "false",
                    "--server.fileWatcherType",
                    "none",
                ],
                cwd=repo,
                env=full_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                until = time.monotonic() + timeout
                while not _healthy(f"http://127.0.0.1:{port}/_stcore/health"):
                    if proc.poll() is not None or time.monotonic() > until:
                        raise RuntimeError(f"streamlit did not come up:\n{Path(log_path).read_text()[-3000:]}")
                    time.sleep(0.5)
                yield f"http://127.0.0.1:{port}"
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    return run()


class RefusingServer(LoopbackServer):
    """A loopback 'LLM server' that answers every request with one fixed HTTP error: a 400 (``context too
    long``) or a 500 whose body echoes the request's Authorization header, as a misbehaving upstream does."""

    def __init__(self, status: int, message: str, echo_auth: bool = False) -> None:
        import http.server
        import json

        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                text = message + (
                    f" (upstream rejected header {self.headers.get('Authorization', '')})" if echo_auth else ""
                )
                body = json.dumps(
                    {"error": {"message": text, "type": "invalid_request_error" if status == 400 else "server_error"}}
                ).encode()
                server.calls += 1
                reply_json(self, status, body)

        self.calls = 0
        self._serve(Handler)


def run_cli(*args, env_extra=None, timeout=1800):
    """``python -m engine ARGS`` from the repository root in a process of its own (text output, never raises on exit
    codes); forked from :mod:`cli_forkserver`, which has the heavy libraries imported already, where it can be."""
    from cli_forkserver import run

    env = {**os.environ, **(env_extra or {})}
    return run([str(a) for a in args], cwd=Path(__file__).resolve().parents[1], env=env, timeout=timeout)


class ScriptedServer(LoopbackServer):
    """A real loopback HTTP service whose answers a test scripts: ``behave(method, path, body, headers)`` returns
    ``(status, headers, body bytes, delay seconds)``; every request is recorded in ``requests``. It stands for a
    misbehaving RAG service (401s, 429 storms, HTML error pages, huge or never-ending answers, redirects)."""

    def __init__(self, behave) -> None:
        import http.server

        server = self
        self.requests: list[tuple[str, str, bytes, dict]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def _serve(self):
                n = int(self.headers.get("Content-Length", 0) or 0)
                body = self.rfile.read(n) if n else b""
                # the headers as http.server parsed them: a Message, so lookups ignore case ("authorization")
                server.requests.append((self.command, self.path, body, self.headers))
                status, headers, payload, delay = behave(self.command, self.path, body, self.headers)
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    headers = {"Content-Type": "application/json", **(headers or {})}
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = do_PUT = _serve

        self._serve(Handler)
        self.base = self.url[: -len("/v1")]


def start_rag_service(port: int, *args: str, env: dict | None = None, timeout: float = 240):
    """``examples/rag_service.py`` on 127.0.0.1:port in a subprocess; returns the process once /health answers
    (raises RuntimeError with the log's tail if it does not come up)."""
    import tempfile

    repo = Path(__file__).resolve().parents[1]
    log = tempfile.NamedTemporaryFile(prefix="rag-service-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, str(repo / "examples" / "rag_service.py"), "--port", str(port), *args],
        cwd=repo,
        env={**os.environ, **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    until = time.monotonic() + timeout
    while not _healthy(f"http://127.0.0.1:{port}/health"):
        if proc.poll() is not None or time.monotonic() > until:
            proc.kill()
            raise RuntimeError("the example RAG service did not start:\n" + Path(log.name).read_text()[-3000:])
        time.sleep(0.5)
    proc.log = log.name
    return proc


def stop(proc) -> None:
    """Terminate a subprocess, killing it if it does not end within 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def http_target_params(base: str, **extra) -> dict:
    """The ``http`` target's parameters for the example RAG service at ``base`` (query, sources, documents API)."""
    return {
        "url": f"{base}/query",
        "contexts_path": "sources",
        "ingest_url": f"{base}/documents",
        "delete_url": base + "/documents/{id}",
        "exists_url": base + "/documents/{id}",
        **extra,
    }


def chroma_collection(docs, retriever, *, path: str | None = None, host: str | None = None, port: int | None = None):
    """A user's Chroma store: a cosine collection named ``clinic`` holding ``docs`` (their text, metadata — a
    placeholder where they have none — and ``retriever``'s embeddings), persistent at ``path`` or on a server."""
    import chromadb
    from chromadb.config import Settings

    client = (
        chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
        if path
        else chromadb.HttpClient(host=host, port=port, settings=Settings(anonymized_telemetry=False))
    )
    col = client.create_collection("clinic", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    vecs, _ = retriever.encode_documents([d.text for d in docs])
    col.add(
        ids=[d.id for d in docs],
        embeddings=vecs,
        documents=[d.text for d in docs],
        metadatas=[dict(d.metadata) or {"source": "clinic"} for d in docs],
    )
    return col
