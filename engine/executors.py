"""Where the cells of a sweep or a comparison run: here, one after another (``local``), or as Ray tasks
(``ray``) on a local Ray or a cluster.

A cell is a plain function ``fn(item, reporter) -> result`` (module-level, so Ray can ship it); the same
function runs in both executors, so a cell's result does not depend on where it ran. ``reporter`` carries
the cell's progress back (``reporter.progress(stage, done, total)``) and tells it when to stop
(the reporter is the cell's stop token, ``reporter.is_set()``, as everywhere in the engine (engine/progress.py):
checked between rounds or target documents); a cell that stops returns None.

On Ray (https://docs.ray.io) each cell is one task reserving ``cpus_per_cell`` CPUs; at most ``workers``
run at once and the rest wait in this process, so Stop cancels every cell not yet started and asks the
running ones to stop at their next step (a comparison's half-finished run stays on disk and resumes). A
task that raises is retried ``retries`` times by Ray itself (``retry_exceptions``); a cell that still fails
is reported with its error and the other cells go on. Progress comes back through a small Ray actor the
driver polls. What a cluster needs: the same checkout (or ``PYTHONPATH``) and dependencies on every node,
the data dir and the output folder on storage every node sees at the same path (NFS or similar), and the
model cache either shared or warm on each node.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Protocol

from .errors import ConfigError
from .params import Params, param
from .paths import CACHE_ENV, DATA_DIR_ENV, REPO_ROOT
from .progress import CellProgress, StopToken, stopped
from .secrets import scrub

EXECUTORS = ("local", "ray")
SCALE_REQUIREMENTS = "requirements-scale.txt"


class ExecutorConfig(Params):
    """Where a sweep's or a comparison's cells run (never part of the results: the same cells give the same
    numbers on either executor)."""

    executor: str = param(
        "local", choices=EXECUTORS, help="Where cells run: here, one after another (local), or as Ray tasks (ray)"
    )
    ray_address: str = param(
        "",
        label="Ray address",
        help="Ray cluster to join: empty starts a local Ray, 'auto' joins the one "
        "started on this machine with 'ray start', ray://host:10001 a remote one",
    )
    workers: int = param(
        0, min=0, max=4096, help="Cells running at once on Ray (0: the cluster's CPUs ÷ CPUs per cell)"
    )
    cpus_per_cell: int = param(1, min=1, max=256, help="CPUs Ray reserves for each cell", label="CPUs per cell")
    retries: int = param(1, min=0, max=10, help="Retries of a cell that raised, before it is recorded as failed")


class Reporter(Protocol):
    """What a running cell may call: progress of its own work (the engine's one ``Progress`` signature), and the
    run's stop token (``is_set()``: pass the reporter itself as ``stop=``)."""

    def progress(self, stage: str, done: int, total: int) -> None:
        """Report the cell's own progress (``stage``: done of total)."""

    def is_set(self) -> bool:
        """Whether the run's stop token is set: the cell should end at this step, returning None."""


@dataclass(frozen=True)
class CellOutcome:
    """One cell's end: its ``result`` (None when it stopped early or failed), the ``error`` that failed it,
    the Ray node (``local`` here) and the seconds it ran."""

    index: int
    result: Any
    error: Optional[str]
    node: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """Placement record written beside a sweep's or a comparison's results."""
        return {
            "index": self.index,
            "node": self.node,
            "seconds": round(self.seconds, 3),
            "status": "failed" if self.error else ("stopped" if self.result is None else "finished"),
            **({"error": self.error} if self.error else {}),
        }


CellFn = Callable[[Any, Reporter], Any]


class _LocalReporter:
    def __init__(self, index: int, progress: Optional[CellProgress], stop: Optional[StopToken]) -> None:
        self.index, self._progress, self._stop = index, progress, stop

    def progress(self, stage: str, done: int, total: int) -> None:
        if self._progress:
            self._progress(self.index, stage, done, total)

    def is_set(self) -> bool:
        return stopped(self._stop)


def run_cells(
    fn: CellFn,
    items: Iterable[tuple[int, Any]],
    *,
    executor: ExecutorConfig | None = None,
    on_done: Callable[[CellOutcome], None] | None = None,
    progress: CellProgress | None = None,
    stop: Optional[StopToken] = None,
) -> list[CellOutcome]:
    """Run ``fn(item, reporter)`` for every ``(index, item)``; ``on_done`` gets each :class:`CellOutcome` as it
    ends (in completion order on Ray); ``stop`` (a stop token) ends the run between cells, and running cells at
    their next step. Locally an exception in a cell propagates (serial behaviour); on Ray it
    is retried, then recorded in the outcome."""
    cfg = executor or ExecutorConfig()
    if cfg.executor == "ray":
        return _run_on_ray(fn, list(items), cfg, on_done, progress, stop)
    outcomes = []
    for index, item in items:
        if stopped(stop):
            break
        t0 = time.perf_counter()
        result = fn(item, _LocalReporter(index, progress, stop))
        o = CellOutcome(index, result, None, "local", time.perf_counter() - t0)
        outcomes.append(o)
        if on_done:
            on_done(o)
    return outcomes


# ---- Ray ---------------------------------------------------------------------------------------------------


def checked(cfg: ExecutorConfig) -> ExecutorConfig:
    """``cfg`` after the checks that must come before any work: Ray importable, the cluster's port answering."""
    if cfg.executor == "ray":
        import_ray()
        if cfg.ray_address:
            check_reachable(cfg.ray_address)
    return cfg


def import_ray() -> Any:
    """The ``ray`` module, or one clear error naming the requirements file that installs it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            f"--executor ray needs Ray, which is not installed: pip install -r {SCALE_REQUIREMENTS}"
        ) from None
    return ray


def _worker_env() -> dict[str, str]:
    """Environment of the Ray workers: the engine on the path, and the data dir, cache and offline switches
    of this process."""
    path = [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path)), "TOKENIZERS_PARALLELISM": "false"}
    for k in (DATA_DIR_ENV, CACHE_ENV, "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    return env


def connect(cfg: ExecutorConfig) -> bool:
    """Join (or start) the Ray cluster ``cfg`` names; returns True when this call started the connection
    (then the caller shuts it down when done). A cluster that cannot be reached is a clear error."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    import logging

    kwargs: dict[str, Any] = dict(
        runtime_env={"env_vars": _worker_env()},
        log_to_driver=False,
        logging_level=logging.WARNING,
        include_dashboard=False,
    )
    if not cfg.ray_address:  # a private local Ray, sized to this machine, with a small object store
        kwargs.update(object_store_memory=256 * 1024 * 1024)
    else:
        check_reachable(cfg.ray_address)
    # a new local cluster gets token authentication, as Ray chooses by default; its warning about that choice
    # on every start ("Token authentication is enabled ... RAY_AUTH_MODE=disabled to opt out") is silenced
    auth_log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = auth_log.level
    auth_log.setLevel(logging.ERROR)
    try:
        ray.init(address=cfg.ray_address or None, **kwargs)
    except Exception as e:  # noqa: BLE001 - Ray raises many kinds here (no client extras, a version mismatch...)
        raise ConfigError(f"cannot reach the Ray cluster {cfg.ray_address or '(local)'}: {scrub(e)}") from None
    finally:
        auth_log.setLevel(level)
    return True


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A cluster address (``host:port`` or ``ray://host:port``; ``auto`` is left to Ray) whose port does not
    answer is one clear error at once (Ray itself waits minutes for an absent head node)."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--ray-address {address!r}: give host:port, ray://host:port or auto")
    import socket

    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as e:
        raise ConfigError(
            f"cannot reach the Ray cluster {address}: {e.strerror or e} (is 'ray start --head' running there?)"
        ) from None


def _board_class(ray: Any) -> Any:
    @ray.remote(num_cpus=0)
    class Board:
        """Progress and the stop flag, shared by the driver and the running cells."""

        def __init__(self) -> None:
            self.events: list[tuple[int, str, int, int]] = []
            self.stopped = False

        def report(self, index: int, stage: str, done: int, total: int) -> None:
            self.events.append((index, stage, done, total))

        def drain(self) -> list[tuple[int, str, int, int]]:
            out, self.events = self.events, []
            return out

        def stop(self) -> None:
            self.stopped = True

        def is_stopped(self) -> bool:
            return self.stopped

    return Board


class _RayReporter:
    """A cell's reporter inside a Ray task: progress goes to the board (fire and forget, at most a few a
    second), the stop flag is read from it at most once a second."""

    def __init__(self, board: Any, index: int) -> None:
        self.board, self.index = board, index
        self._last_report = self._last_check = 0.0
        self._stopped = False

    def progress(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last_report >= 0.25 or done >= total:
            self._last_report = now
            self.board.report.remote(self.index, stage, done, total)

    def is_set(self) -> bool:
        if not self._stopped and time.monotonic() - self._last_check >= 1.0:
            import ray

            self._last_check = time.monotonic()
            self._stopped = bool(ray.get(self.board.is_stopped.remote()))
        return self._stopped


def _ray_task(fn: CellFn, item: Any, index: int, board: Any) -> tuple[Any, str, float]:
    import ray

    t0 = time.perf_counter()
    result = fn(item, _RayReporter(board, index))
    return result, ray.get_runtime_context().get_node_id(), time.perf_counter() - t0


def _error_text(e: BaseException) -> str:
    cause = getattr(e, "cause", None)
    err = cause if isinstance(cause, BaseException) else e
    from .errors import EngineError

    return scrub(str(err) if isinstance(err, EngineError) else f"{type(err).__name__}: {err}")


def _run_on_ray(
    fn: CellFn,
    items: list[tuple[int, Any]],
    cfg: ExecutorConfig,
    on_done: Callable[[CellOutcome], None] | None,
    progress: CellProgress | None,
    stop: Optional[StopToken],
) -> list[CellOutcome]:
    ray = import_ray()
    started = connect(cfg)
    try:
        board = _board_class(ray).remote()
        task = ray.remote(_ray_task).options(
            num_cpus=cfg.cpus_per_cell, max_retries=cfg.retries, retry_exceptions=cfg.retries > 0
        )
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        limit = cfg.workers or max(1, int(cpus // cfg.cpus_per_cell))
        pending = deque(items)
        running: dict[Any, tuple[int, float]] = {}
        outcomes: list[CellOutcome] = []
        stopping = False
        while pending or running:
            if not stopping and stopped(stop):
                stopping = True
                pending.clear()  # never started: nothing to undo
                board.stop.remote()  # running cells end at their next step
            while pending and len(running) < limit:
                index, item = pending.popleft()
                running[task.remote(fn, item, index, board)] = (index, time.perf_counter())
            if not running:
                break
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
            if progress:
                for ev in ray.get(board.drain.remote()):
                    progress(*ev)
            for ref in ready:
                index, t0 = running.pop(ref)
                try:
                    result, node, secs = ray.get(ref)
                    o = CellOutcome(index, result, None, node, secs)
                except Exception as e:  # noqa: BLE001 - any failure of one cell is recorded, the rest go on
                    o = CellOutcome(index, None, _error_text(e), "", time.perf_counter() - t0)
                outcomes.append(o)
                if on_done:
                    on_done(o)
        return outcomes
    finally:
        if started:
            ray.shutdown()
