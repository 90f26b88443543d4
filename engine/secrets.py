"""Secrets never leave the process: scrub API keys from every message the engine writes or prints.

A provider's error body can echo the request's Authorization header (``upstream rejected header Bearer
sk-…``); that text becomes an error message, then a ``run_ended`` event, a log line, a UI message. Every
such text goes through :func:`scrub`: the key values the engine was given (registered with
:func:`register_secret`, e.g. a key typed into the app) are replaced, and so is anything shaped like a
credential — ``Bearer <token>``, ``Basic <token>``, ``sk-…`` / ``sk_…`` keys, ``api_key=…`` / ``x-api-key: …``
pairs. Over-scrubbing an innocent ``sk-…`` word in an error message is the accepted cost.
"""

from __future__ import annotations

import re
import threading
from typing import Iterable

MASK = "[redacted]"
_PATTERNS = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}"),
    re.compile(r"\b(?:sk|rk|pk)[-_][A-Za-z0-9._\-]{6,}"),
    re.compile(r"(?i)\b((?:x-)?api[-_]?key|access[-_]?token|authorization)(\s*[:=]\s*[\"']?)[^\s\"',;}]+"),
)
_known: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a secret value (an API key) so that :func:`scrub` removes it wherever it shows up."""
    if value and len(value) >= 6:
        with _lock:
            _known.add(value)


def scrub(text: object, extra: Iterable[str] = ()) -> str:
    """``text`` with every known secret and every credential-shaped token replaced by ``[redacted]``."""
    s = str(text)
    with _lock:
        values = sorted({*_known, *(e for e in extra if e and len(e) >= 6)}, key=len, reverse=True)
    for v in values:
        s = s.replace(v, MASK)
    s = _PATTERNS[0].sub(lambda m: f"{m.group(1)} {MASK}", s)
    s = _PATTERNS[1].sub(MASK, s)
    s = _PATTERNS[2].sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", s)
    return s


def scrub_known(text: str) -> str:
    """``text`` with only the registered secret values replaced (no pattern matching): for answers and contexts,
    whose credential-shaped words may be the knowledge base's own text, but which must never carry a key the
    engine was given (a service that echoes the request's key inside a normal answer)."""
    with _lock:
        values = sorted(_known, key=len, reverse=True)
    for v in values:
        if v in text:
            text = text.replace(v, MASK)
    return text
