"""RAG Attack & Defense Playground engine: a headless library (no Streamlit).

The public API, loaded lazily so ``import engine`` stays light::

    from engine import PoisonConfig, PoisoningRun
    run = PoisoningRun(PoisonConfig(corpus="clinic_handbook", target="pii"))
    run.run(); print(run.summary().asr)      # a typed PoisoningSummary; it also reads as its JSON object
"""

from __future__ import annotations

import importlib

_API = {
    "PoisonConfig": "engine.config",
    "SweepConfig": "engine.config",
    "load_preset": "engine.config",
    "list_presets": "engine.config",
    "PoisoningRun": "engine.runs.poisoning",
    "summarize": "engine.runs.poisoning",
    "PoisoningSummary": "engine.summaries",
    "ExtractionSummary": "engine.summaries",
    "read_jsonl": "engine.events",
    "write_jsonl": "engine.events",
    "load_corpus": "engine.corpora",
    "load_queries": "engine.queries",
    "make_retriever": "engine.embedders",
    "RETRIEVERS": "engine.embedders",
    "POISONING_ATTACKS": "engine.attacks.poisoning",
    "DETECTORS": "engine.detectors",
    "run_sweep": "engine.sweep",
    "Pipeline": "engine.pipeline",
    "PipelineConfig": "engine.pipeline",
    "EngineError": "engine.errors",
    "ConfigError": "engine.errors",
}

__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
