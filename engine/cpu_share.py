"""How many of this process's CPU cores other programs are using right now, and the thread count that follows.

llama.cpp's CPU threads meet at a spinning barrier after every operation of a forward pass: when another
program holds one of the cores, the thread that lost its core keeps every other thread spinning until the
scheduler gives it back, and a round slows by 5x or more (two threads on two cores beside one busy process).
One thread per *free* core avoids that: each generation asks :func:`threads_for` how many threads to use,
between 1 and the configured count, from what the other processes used since the previous decision.

The measure reads ``/proc/stat`` (busy time of the cores this process may run on) and ``/proc/self/stat``
(this process's own time, all threads: the app's server thread and the engine's work are not "others").
Other processes' busy time over the window, in cores, rounded to the nearest whole core, is what is taken.
The window is the time since the previous decision (which usually spans the previous round); a decision
asked for within 50 ms of the previous one repeats it, and when the window is over 10 s (or there is none
yet) a fresh 100 ms window is measured instead.

Thread counts never change what a greedy decoder produces (each dot product is computed by one thread);
``tests/engine/test_cpu_share.py`` checks that on the real models.

``RAG_PLAYGROUND_THREADS=fixed`` turns the adaptation off (always the configured count); where ``/proc`` is
missing (macOS, Windows) the configured count is used.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Optional

POLICIES = ("adaptive", "fixed")
FRESH_WINDOW_S = 0.1
MIN_WINDOW_S = 0.05
MAX_WINDOW_S = 10.0


@dataclass(frozen=True)
class CpuSample:
    """One reading: monotonic time, busy and total ticks of our cores, this process's own ticks."""

    at: float
    busy: int
    total: int
    own: int


def _cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def sample() -> Optional[CpuSample]:
    """Read the counters now; None where ``/proc`` is not available."""
    cores = {f"cpu{i}" for i in _cores()}
    busy = total = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                name, _, rest = line.partition(" ")
                if name not in cores:
                    continue
                v = [int(x) for x in rest.split()]
                idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
                t = sum(v[:8])  # guest time is already in user
                busy += t - idle
                total += t
        with open("/proc/self/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        own = int(fields[11]) + int(fields[12])  # utime + stime, every thread
    except (OSError, ValueError, IndexError):
        return None
    if total == 0:
        return None
    return CpuSample(time.monotonic(), busy, total, own)


def others_busy(a: CpuSample, b: CpuSample) -> float:
    """Cores' worth of CPU time that other processes used between two samples."""
    n = len(_cores())
    elapsed = (b.total - a.total) / max(n, 1)  # ticks of wall time per core
    if elapsed <= 0:
        return 0.0
    return max(0.0, ((b.busy - a.busy) - (b.own - a.own)) / elapsed)


def policy() -> str:
    """``adaptive`` (default) or ``fixed``, from ``RAG_PLAYGROUND_THREADS``."""
    p = os.environ.get("RAG_PLAYGROUND_THREADS", "adaptive").strip().lower() or "adaptive"
    return p if p in POLICIES else "adaptive"


class CoreMeter:
    """Free cores now, from the window since the previous reading (thread-safe; one per process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: Optional[CpuSample] = None
        self.last_others: Optional[float] = None
        self._free: Optional[int] = None

    def free(self) -> Optional[int]:
        """Whole cores the other processes left free (at least 1); None when it cannot be measured."""
        with self._lock:
            now = sample()
            if now is None:
                return None
            window = now.at - self._last.at if self._last else 0.0
            if self._last is not None and window < MIN_WINDOW_S and self._free is not None:
                return self._free  # back-to-back calls (a draft and its verifier): same answer
            if self._last is None or window > MAX_WINDOW_S:
                start = now
                time.sleep(FRESH_WINDOW_S)
                now = sample()
                if now is None:
                    return None
            else:
                start = self._last
            self._last = now
            others = others_busy(start, now)
            self.last_others = round(others, 2)
            self._free = max(1, len(_cores()) - int(others + 0.5))
            return self._free


_meter = CoreMeter()


def threads_for(configured: int) -> int:
    """The thread count for the next generation: the configured one, lowered to the free cores under the
    adaptive policy."""
    configured = max(1, int(configured))
    if policy() == "fixed" or configured == 1:
        return configured
    free = _meter.free()
    return configured if free is None else max(1, min(configured, free))


def last_others_busy() -> Optional[float]:
    """Other processes' load (in cores) that the last decision saw, for reports and benchmarks."""
    return _meter.last_others
