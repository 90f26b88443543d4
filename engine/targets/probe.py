"""Test a target's connection: one query, and what came back — or the one line that says what went wrong.

The app's *Test connection* button and ``python -m engine audit probe`` call :func:`probe`: it opens the
target, asks one harmless question, and reports the parsed answer, the contexts (if the target reports
them), the seconds, and the target's surfaces (reads back its store, accepts plants, verifies removal).
A wrong JSON path, a refused key, an HTML error page, a timeout: each is the error's one line (a path error
quotes the start of the response), never a traceback.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from ..errors import EngineError
from ..secrets import scrub

PROBE_QUESTION = "What kind of information can you help me with?"


def probe(
    kind: str,
    params: Mapping[str, Any] | None = None,
    *,
    secrets: Mapping[str, str] | None = None,
    question: str = PROBE_QUESTION,
    data_dir: str | None = None,
) -> dict[str, Any]:
    """``{"ok": True, "request" (what was sent, for an HTTP target), "answer", "contexts": [{"id", "text", "score"}],
    "contexts_reported", "seconds", "cut" (the answer stopped at the target's token limit, when it says so),
    "endpoint", "can_write", "can_verify", "readable"}`` or ``{"ok": False, "error": one line, "endpoint"}``."""
    from . import make_target
    from .base import cut_at_limit

    endpoint = ""
    t0 = time.perf_counter()
    try:
        target = make_target(kind, dict(params or {}), secrets=secrets, data_dir=data_dir)
        endpoint = target.endpoint()
        sent = target.request_preview(question)
        try:
            target.open()
            reply = target.query(question)
        finally:
            target.close()
    except EngineError as e:
        return {"ok": False, "error": scrub(str(e)), "endpoint": endpoint}
    return {
        "ok": True,
        "endpoint": endpoint,
        "question": question,
        "request": sent,
        "answer": reply.answer,
        "cut": cut_at_limit(reply.info),
        "token_limit": int(reply.info.get("token_limit") or 0),
        "contexts": [{"id": s.id, "text": s.text, "score": s.score} for s in reply.contexts],
        "contexts_reported": reply.contexts_reported,
        "contexts_hint": target.contexts_hint,
        "seconds": round(time.perf_counter() - t0, 3),
        "can_write": target.can_write,
        "can_verify": target.can_verify,
        "readable": target.readable,
    }
