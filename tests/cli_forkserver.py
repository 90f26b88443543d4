"""A fork server for the CLI tests: ``python -m engine ARGS`` without paying the heavy imports every time.

Each real ``python -m engine`` run spends 8–12 s of a 2-core machine importing torch, sentence-transformers,
litellm, chromadb and llama-index before it does anything; the suite starts the CLI dozens of times. This
server imports those third-party libraries once (never the engine, never a model, no thread started), then
forks for every request: the child gets the request's environment, working directory, argv, stdin from
/dev/null and its stdout/stderr in files, imports the engine fresh and runs it exactly as ``python -m engine``
would (``runpy``, ``SystemExit`` codes, thread join and atexit handlers at the end). Each run is its own
process in its own session: real exit codes, real crashes, killable as a group on timeout; nothing a run loads
(models, stores, caches) is shared with the next.

Requests whose environment differs from the server's in a variable read at import time (HF_*, TRANSFORMERS_*,
LITELLM_*, TORCH_*, OMP_*, …) are refused, and :func:`run` falls back to a plain subprocess, as it does when
the server cannot start or ``RAG_PLAYGROUND_TEST_FORK=0``.

Protocol (a Unix socket; one JSON line each way): the client sends ``{argv, env, cwd, out, err}``; the server
answers ``{"pid": P}`` (P leads the run's process group) and, when the run ends, ``{"returncode": R}``.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PREIMPORTS = ("numpy", "scipy", "sklearn", "pandas", "torch", "sentence_transformers", "litellm", "chromadb")
IMPORT_TIME_PREFIXES = ("HF_", "HUGGINGFACE", "TRANSFORMERS_", "LITELLM_", "TORCH", "OMP_", "MKL_", "CUDA", "PYTHON")
SWITCH = "RAG_PLAYGROUND_TEST_FORK"


DEFAULTS = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # what the engine sets before it imports litellm


def _import_time_env(env: dict) -> dict:
    """The variables of ``env`` that a library may read when it is imported (the engine's defaults applied)."""
    return {**DEFAULTS, **{k: v for k, v in env.items() if k.startswith(IMPORT_TIME_PREFIXES)}}


# ------------------------------------------------------------------ server side (its own process)

_SET_BY_IMPORTS: dict[str, str] = {}  # variables the pre-imported libraries set in os.environ


def _run_child(req: dict) -> None:
    """In the forked grandchild: become ``python -m engine ARGV`` and never return."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, req["out"]), (2, req["err"])):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        os.environ.clear()
        os.environ.update({**_SET_BY_IMPORTS, **req["env"]})  # as if the libraries had been imported now
        os.chdir(req["cwd"])
        sys.path.insert(0, req["cwd"])
        sys.argv = ["-m", *req["argv"]]
        import runpy

        try:
            runpy.run_module("engine", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 - what the interpreter would print for an uncaught exception
            import traceback

            traceback.print_exc()
            code = 1
        try:  # what interpreter shutdown does: join non-daemon threads, then the atexit handlers
            threading._shutdown()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001
            pass
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code & 0xFF)


def _handle(conn: socket.socket, listener: socket.socket) -> None:
    """In the forked child: lead a new session, fork the run, report its pid and its exit code."""
    try:
        listener.close()
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        with conn, conn.makefile("rwb") as f:
            req = json.loads(f.readline())
            pid = os.fork()
            if pid == 0:
                conn.close()
                _run_child(req)
            f.write(json.dumps({"pid": os.getpid()}).encode() + b"\n")
            f.flush()
            _, status = os.waitpid(pid, 0)
            f.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            f.flush()
    finally:
        os._exit(0)


def serve(path: str) -> None:
    """Import the heavy libraries, then fork a run for each connection on the Unix socket ``path``; stop when the
    test process that started it is gone."""
    parent = os.getppid()
    for k, v in DEFAULTS.items():
        os.environ.setdefault(k, v)
    before = dict(os.environ)
    started_with = _import_time_env(before)  # before the imports (torch sets variables of its own)
    import importlib

    for name in PREIMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    global _SET_BY_IMPORTS
    _SET_BY_IMPORTS = {k: v for k, v in os.environ.items() if k not in before}
    if threading.active_count() != 1:  # forking a process with threads is not safe: say so and stop
        print(f"threads started by the imports: {threading.enumerate()}", file=sys.stderr)
        sys.exit(2)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    listener.settimeout(5)
    print(json.dumps({"ready": True, "env": started_with}), flush=True)
    while os.getppid() == parent:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            _handle(conn, listener)
        conn.close()


# ------------------------------------------------------------------ client side (the test process)


class _Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="cli-fork-")
        self.path = os.path.join(self.dir, "sock")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, self.path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=open(os.path.join(self.dir, "server.log"), "wb"),
            start_new_session=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else b""
        hello = json.loads(line) if line.startswith(b"{") else {}
        self.ok = bool(hello.get("ready"))
        self.env = hello.get("env", {})
        atexit.register(self.close)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def accepts(self, env: dict) -> bool:
        return self.ok and self.proc.poll() is None and _import_time_env(env) == self.env


_server: _Server | None = None
_lock = threading.Lock()


def _get_server() -> _Server | None:
    global _server
    if os.environ.get(SWITCH, "1") == "0" or not hasattr(os, "fork"):
        return None
    with _lock:
        if _server is None:
            _server = _Server()
    return _server


def _decode(data: bytes) -> str:
    """As ``subprocess.run(text=True)`` reads a pipe: the locale's encoding, universal newlines."""
    import locale

    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def run(argv: list[str], *, cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
    """``python -m engine ARGV`` (a CompletedProcess with text output, as subprocess.run gives), forked from
    the server when it can be, else a plain subprocess."""
    server = _get_server()
    if server is None or not server.accepts(env):
        return subprocess.run(
            [sys.executable, "-m", "engine", *argv],
            cwd=cwd,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    with tempfile.TemporaryDirectory(prefix="cli-run-") as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        req = {"argv": list(argv), "env": env, "cwd": str(cwd), "out": out, "err": err}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(server.path)
            s.settimeout(timeout)
            f = s.makefile("rwb")
            f.write(json.dumps(req).encode() + b"\n")
            f.flush()
            pid = json.loads(f.readline())["pid"]
            try:
                line = f.readline()
            except TimeoutError:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                raise subprocess.TimeoutExpired([sys.executable, "-m", "engine", *argv], timeout) from None
            code = json.loads(line)["returncode"] if line else -signal.SIGKILL
        stdout = Path(out).read_bytes() if os.path.exists(out) else b""
        stderr = Path(err).read_bytes() if os.path.exists(err) else b""
    return subprocess.CompletedProcess([sys.executable, "-m", "engine", *argv], code, _decode(stdout), _decode(stderr))


if __name__ == "__main__":
    sys.path.pop(0)  # this file's folder (tests/) is not on a real run's path
    serve(sys.argv[1])
