"""Credentials of a target: named, never written.

A target's headers (and an OpenAI-compatible target's key) name their secrets as ``${NAME}`` — e.g.
``{"Authorization": "Bearer ${RAG_API_KEY}"}``. The configuration, the run's manifest, its events and the
report hold only that reference; the value is looked up when a request is made, first in the secrets the
caller handed over (a key typed into the app lives in that browser session only), then in the environment.
A header whose name says it carries a credential (Authorization, X-API-Key, Cookie, …) may not hold a
literal value: it would be written to disk with the run, so it is refused with a line saying how to name it.
Every value looked up is registered with :func:`engine.secrets.register_secret`, so it is scrubbed from any
message, answer or error that echoes it.
"""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

from ..errors import ConfigError
from ..secrets import register_secret

REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
SENSITIVE = re.compile(r"(?i)(authorization|api[-_ ]?key|token|secret|cookie|password|passwd|credential|auth)")


def references(text: str) -> list[str]:
    """The secret names ``text`` refers to (``${NAME}``)."""
    return REF.findall(text or "")


def check_headers(headers: Mapping[str, Any] | None, *, what: str = "headers") -> None:
    """Header names and values are text, and a credential-carrying header refers to its value by name."""
    for name, value in dict(headers or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigError(f"{what}: each header is a name and a text value (got {name!r}: {type(value).__name__})")
        if "\n" in name or "\n" in value or "\r" in value:
            raise ConfigError(f"{what}: header {name!r} holds a line break")
        if SENSITIVE.search(name) and value.strip() and not references(value):
            raise ConfigError(
                f"{what}: header {name!r} holds a literal credential, which would be written to the "
                f'run\'s files; name it instead, e.g. "Bearer ${{RAG_API_KEY}}", and set RAG_API_KEY '
                f"in the environment (or type the key in the app)"
            )


def resolve(text: str, secrets: Mapping[str, str] | None = None, *, what: str = "header") -> str:
    """``text`` with every ``${NAME}`` replaced by its value (the given secrets first, then the environment);
    a name with no value is one ConfigError saying how to give it."""
    secrets = dict(secrets or {})

    def value(m: re.Match) -> str:
        name = m.group(1)
        v = secrets.get(name) or os.environ.get(name)
        if not v:
            raise ConfigError(
                f"{what} refers to ${{{name}}}, which is not set: export {name}=… before the run "
                f"(or type it in the app's key field)"
            )
        register_secret(v)
        return v

    return REF.sub(value, text or "")


def resolve_headers(headers: Mapping[str, str] | None, secrets: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every header value with its ``${NAME}`` references filled in (see :func:`resolve`)."""
    return {k: resolve(v, secrets, what=f"header {k!r}") for k, v in dict(headers or {}).items()}


def secret_values(headers: Mapping[str, str] | None, secrets: Mapping[str, str] | None = None) -> list[str]:
    """The values behind every reference in ``headers`` that is set (what :func:`engine.secrets.scrub` removes)."""
    secrets = dict(secrets or {})
    out = []
    for v in dict(headers or {}).values():
        for name in references(v):
            val = secrets.get(name) or os.environ.get(name)
            if val:
                out.append(val)
    return out
