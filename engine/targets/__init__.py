"""Audit targets (registry): the RAG systems an audit attacks — the built-in pipeline, any JSON-over-HTTP
service, an OpenAI-compatible chat endpoint, a Python callable (e.g. a LlamaIndex query engine) and a Chroma
collection the engine builds the RAG around."""

from __future__ import annotations

from typing import Any, Mapping

from ..registry import Registry
from .base import SourceItem, Target, TargetReply
from .chroma import ChromaTarget
from .http import HttpTarget
from .http_client import BudgetSpent, TargetError
from .openai_chat import OpenAIChatTarget
from .pipeline import PipelineTarget
from .python_callable import PythonTarget

TARGETS: Registry[Target] = Registry("target")
TARGETS.register("pipeline")(PipelineTarget)
TARGETS.register("http")(HttpTarget)
TARGETS.register("openai-chat")(OpenAIChatTarget)
TARGETS.register("python")(PythonTarget)
TARGETS.register("chroma")(ChromaTarget)


def make_target(
    kind: str,
    params: Mapping[str, Any] | None = None,
    *,
    secrets: Mapping[str, str] | None = None,
    data_dir: str | None = None,
) -> Target:
    """A target by registry name with validated ``params``; ``secrets`` fill its ``${NAME}`` references (else the
    environment), ``data_dir`` is where benchmark corpora lie."""
    cls = TARGETS.get(kind)
    return cls(cls.Params.from_dict(params, where=f"target {kind}"), secrets=secrets, data_dir=data_dir)


def check_shared_audit(kind: str, params: Mapping[str, Any] | None, kb: str, canary_codes: str = "") -> None:
    """On a shared deployment a web user's audit must not read the server's files or run its code: no
    ``server_side`` target, knowledge bases and presets only by bundled or benchmark name, canary codes only as
    a list (no paths)."""
    from ..config import PRESETS_DIR
    from ..corpora import BENCHMARK_CORPORA, BUNDLED
    from ..errors import ConfigError

    if TARGETS.get(kind).server_side:
        raise ConfigError(
            f"target {kind!r} reads this server's files or runs its code: not offered on a shared deployment"
        )
    names = set(BUNDLED) | set(BENCHMARK_CORPORA) | {"", "none", "target"}
    p = dict(params or {})
    for what, value in (("reference knowledge base", kb), ("kb", str(p.get("kb") or ""))):
        if value not in names:
            known = ", ".join(sorted(names - {"", "target"}))
            raise ConfigError(f"{what}: a shared deployment reads knowledge bases by name only ({known})")
    if canary_codes.strip() and "," not in canary_codes and (("/" in canary_codes) or "." in canary_codes):
        raise ConfigError("canary codes: a shared deployment takes them as a list (CR-7Q4K-2291,…), not a file")
    preset = str(p.get("preset") or "")
    if preset and not (PRESETS_DIR / f"{preset}.yaml").is_file():
        raise ConfigError("preset: a shared deployment takes a bundled preset by name, not a path")


def check_target(kind: str, params: Mapping[str, Any] | None) -> None:
    """A registered target kind and valid parameters, else one ConfigError (nothing is opened)."""
    TARGETS.get(kind).Params.from_dict(params, where=f"target {kind}")


__all__ = [
    "TARGETS",
    "Target",
    "TargetReply",
    "SourceItem",
    "TargetError",
    "BudgetSpent",
    "check_shared_audit",
    "check_target",
    "make_target",
    "PipelineTarget",
    "HttpTarget",
    "OpenAIChatTarget",
    "PythonTarget",
    "ChromaTarget",
]
