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


def make_target(kind: str, params: Mapping[str, Any] | None = None, *, secrets: Mapping[str, str] | None = None,
                data_dir: str | None = None) -> Target:
    """A target by registry name with validated ``params``; ``secrets`` fill its ``${NAME}`` references (else the
    environment), ``data_dir`` is where benchmark corpora lie."""
    cls = TARGETS.get(kind)
    return cls(cls.Params.from_dict(params, where=f"target {kind}"), secrets=secrets, data_dir=data_dir)


def check_target(kind: str, params: Mapping[str, Any] | None) -> None:
    """A registered target kind and valid parameters, else one ConfigError (nothing is opened)."""
    TARGETS.get(kind).Params.from_dict(params, where=f"target {kind}")


__all__ = ["TARGETS", "Target", "TargetReply", "SourceItem", "TargetError", "BudgetSpent", "check_target", "make_target",
           "PipelineTarget", "HttpTarget", "OpenAIChatTarget", "PythonTarget", "ChromaTarget"]
