"""Reading a server's ``Retry-After``: the seconds a 429 or 503 asks the client to wait.

Shared by every remote client of the engine (litellm generators, audit targets), so a rate-limited provider is
waited for as it asks — up to a cap the caller sets — instead of on a fixed backoff that gives up too early.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date), None if absent/unreadable."""
    if not value:
        return None
    v = str(value).strip()
    try:
        seconds = float(v)
    except ValueError:
        seconds = None
    if seconds is not None:
        return max(0.0, seconds) if seconds == seconds else None
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def retry_after_of(error: Any) -> float | None:
    """The ``Retry-After`` of an exception carrying a response (httpx / OpenAI / litellm errors), else None."""
    for holder in (getattr(error, "response", None), error):
        headers = getattr(holder, "headers", None) or getattr(holder, "litellm_response_headers", None)
        if headers is not None:
            try:
                got = retry_after(headers.get("retry-after") or headers.get("Retry-After"))
            except AttributeError:
                got = None
            if got is not None:
                return got
    return None
