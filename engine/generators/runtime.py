"""Whether local generation (llama-cpp-python, compiled on this machine) is installed, or how far its build is.

``scripts/app.sh`` starts the app before llama.cpp is compiled on a fresh machine: ``scripts/install.sh``
builds it in the background and records its progress in ``.venv/llama-status`` (``state=building|ready|
failed``, the start time and the current step). The pages that need a local model read :func:`local_runtime`
and say what is being prepared; every other page works meanwhile (poisoning needs no generator).
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..paths import REPO_ROOT

STATUS_FILE = REPO_ROOT / ".venv" / "llama-status"
LOG_FILE = REPO_ROOT / ".venv" / "llama-build.log"
TYPICAL_BUILD_S = 420  # compile + install on 2 cores, measured (docs/benchmarks.md)


@dataclass(frozen=True)
class LocalRuntime:
    """``ready`` (importable), ``building`` (the background install is running), ``failed`` or ``missing``."""

    state: str
    step: str = ""
    elapsed_s: Optional[float] = None

    @property
    def ready(self) -> bool:
        """Whether local generation can run now."""
        return self.state == "ready"

    def message(self) -> str:
        """One line for people: what is happening and what to do."""
        if self.state == "ready":
            return "local generation is installed"
        if self.state == "building":
            took = f", {self.elapsed_s / 60:.0f} of about {TYPICAL_BUILD_S // 60} minutes" if self.elapsed_s else ""
            return (
                f"local generation is being prepared in the background ({self.step}{took}); the poisoning "
                "pages work meanwhile, and this page can run as soon as it is ready (or use a litellm model)"
            )
        if self.state == "failed":
            return (
                f"building local generation failed ({self.step}); run `bash scripts/install.sh` to see why, or "
                "use a litellm model"
            )
        return (
            "local generation needs llama-cpp-python==0.3.36: `bash scripts/install.sh` builds it (about 5 "
            "minutes), or use a litellm model"
        )


def _read_status(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def local_runtime(status_file: Optional[Path] = None) -> LocalRuntime:
    """The state of local generation now (cheap: a file read, and a module lookup without importing it)."""
    importlib.invalidate_caches()  # a build that finished while the app runs is seen at once
    status = _read_status(status_file or STATUS_FILE)
    state = status.get("state", "")
    if state not in ("building", "failed") and importlib.util.find_spec("llama_cpp") is not None:
        return LocalRuntime("ready")
    if state in ("building", "failed"):
        try:
            elapsed = time.time() - float(status.get("started", ""))
        except ValueError:
            elapsed = None
        return LocalRuntime(state, status.get("step", ""), elapsed)
    return LocalRuntime("missing")
