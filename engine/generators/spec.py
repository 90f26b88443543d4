"""Generator specs as users type them: ``local``, ``local:qwen2.5-1.5b``, ``smollm2-135m``, ``/path/m.gguf``,
``litellm:openai/gpt-4o-mini`` or just ``openai/gpt-4o-mini`` (any litellm provider string)."""

from __future__ import annotations

from typing import Any

from ..errors import UnknownNameError
from .models import MODELS


def parse_generator(spec: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    """(registry name, params) for a spec; ``extra`` (e.g. api_base) is merged into the params."""
    spec = (spec or "").strip()
    params = {k: v for k, v in extra.items() if v not in (None, "")}
    if spec in ("local", "litellm"):
        return spec, params
    for name in ("local", "litellm"):
        if spec.startswith(name + ":"):
            return name, {"model": spec[len(name) + 1 :], **params}
    if spec in MODELS or spec.lower().endswith(".gguf"):
        return "local", {"model": spec, **params}
    if "/" in spec:
        return "litellm", {"model": spec, **params}
    raise UnknownNameError(
        f"unknown generator {spec!r} (use local, local:<model> with a model from "
        f"{', '.join(MODELS)}, a .gguf path, or a litellm provider string such as "
        f"openai/gpt-4o-mini)"
    )
