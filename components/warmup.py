"""Load the default retriever's model while the first visitor reads the home page (once per server process)."""

from __future__ import annotations

import logging
import os
import threading

WARMUP_ENV = "RAG_PLAYGROUND_WARMUP"  # 0 / false / off: load models only when a run asks (the tests' in-process app)
_started = threading.Event()
_log = logging.getLogger(__name__)


def warmup_enabled() -> bool:
    """On unless :data:`WARMUP_ENV` says 0, false, no or off."""
    return os.environ.get(WARMUP_ENV, "").strip().lower() not in ("0", "false", "no", "off")


def start_warmup(retriever: str) -> threading.Thread | None:
    """Start loading ``retriever``'s model in a background thread, the first time a script run asks in this process;
    None when it was started before or warm-up is off. A run that needs the model meanwhile waits on the model's
    own lock for the rest of the load (no second load); a failure here is only logged — the run that needs the
    model reports it in its own words."""
    if not warmup_enabled() or _started.is_set():
        return None
    _started.set()

    def load() -> None:
        try:
            from engine.embedders import preload_retriever

            preload_retriever(retriever)
        except Exception as e:  # noqa: BLE001 - the run that needs the model says why in its own words
            _log.warning("warming up retriever %r failed: %s", retriever, e)

    thread = threading.Thread(target=load, name="warmup-retriever", daemon=True)
    thread.start()
    return thread
