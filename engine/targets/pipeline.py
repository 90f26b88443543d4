"""The playground's own pipeline as a target: an extraction preset's RAG system (retriever, generator, defenses).

The audit of the built-in demo configuration and of the same configuration served over HTTP
(``examples/rag_service.py``) go through the same battery, so their findings can be compared: the target
layer adds no measurement of its own. Extraction cells against this target run the engine's own
:class:`~engine.runs.extraction.ExtractionRun` on :meth:`PipelineTarget.extraction_config` (every stage
recorded, as in the extraction lab); its knowledge base is the reference, and poisoning plants into the
run's own overlay store (the shared index is never changed).
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from ..config import ExtractionConfig
from ..corpora import Corpus
from ..errors import ConfigError
from ..params import Params, param
from ..progress import Progress
from ..types import Document
from .base import SourceItem, Target, TargetReply, timed_reply

OVERRIDES = "Overrides of the preset"


class PipelineTarget(Target):
    """The built-in RAG pipeline of an extraction preset (default: the extraction demo's configuration).

    Source: this playground (``presets/``; the system of :class:`~engine.rag.system.RagSystem`). Fields left
    blank keep the preset's values.
    """

    runs_engine_defenses = True
    readable = writable = verifiable = True

    class Params(Params):
        preset: str = param(
            "quick-extraction-demo",
            help="An extraction preset (bundled name or YAML path): "
            "its knowledge base, retriever, generator and defenses",
        )
        kb: str = param(
            "",
            group=OVERRIDES,
            label="Knowledge base",
            help="Knowledge base instead of the preset's (blank: the preset's)",
        )
        generator: str = param(
            "",
            group=OVERRIDES,
            help="Generator spec instead of the preset's, e.g. local:qwen2.5-1.5b (blank: the preset's)",
        )
        defenses: str = param(
            "",
            group=OVERRIDES,
            help="Defenses instead of the preset's, comma-separated (blank: the preset's; none: no defense)",
        )
        defense_params: Mapping[str, Any] | None = param(None, group=OVERRIDES, help="Per-defense parameters")
        top_k: int = param(
            0, min=0, max=1000, group=OVERRIDES, label="Top-K", help="Top-K instead of the preset's (0: the preset's)"
        )

        def validate(self) -> None:
            self.base_config()

        def base_config(self) -> ExtractionConfig:
            """The preset's configuration with the overrides applied (validated)."""
            from ..config import load_preset

            kind, cfg, _ = load_preset(self.preset)
            if kind != "extract":
                raise ConfigError(
                    f"preset: {self.preset!r} is a {kind} preset; choose an extraction preset "
                    "(e.g. quick-extraction-demo)"
                )
            over: dict[str, Any] = {}
            if self.kb:
                over["kb"] = self.kb
            if self.generator:
                from ..generators.spec import parse_generator

                name, gp = parse_generator(self.generator)
                over.update(generator=name, generator_params=gp)
            if self.defenses.strip():
                over["defenses"] = [d.strip() for d in self.defenses.split(",") if d.strip() and d.strip() != "none"]
            if self.defense_params is not None:
                over["defense_params"] = dict(self.defense_params)
            if self.top_k:
                over["top_k"] = self.top_k
            return cfg.replace(**over) if over else cfg

    def __init__(self, params: Params, **kw: Any) -> None:
        super().__init__(params, **kw)
        self.system = None

    def extraction_config(self, **fields: Any) -> ExtractionConfig:
        """The preset's configuration (overrides applied) with ``fields`` (attack, rounds, seed, …) on top;
        the data dir the audit was given fills in when the preset names none."""
        cfg = self.params.base_config()
        if self.data_dir and not cfg.data_dir:
            fields.setdefault("data_dir", self.data_dir)
        return cfg.replace(**fields) if fields else cfg

    def endpoint(self) -> str:
        return f"built-in pipeline ({self.params.preset})"

    def open(self, progress: Progress | None = None) -> None:
        if self.system is None:
            from ..rag.configured import configured_system

            c = self.extraction_config()
            self.system = configured_system(c, c.kb, answer_budget=c.answer_budget)
            self.system.build(progress=progress)
        super().open(progress)

    def close(self) -> None:
        if self.system is not None:
            self.system.close()
            self.system = None
        super().close()

    @property
    def reports_contexts(self) -> bool:
        return True

    def query(self, text: str, *, session: str = "") -> TargetReply:
        if self.system is None:
            self.open()
        t0 = time.perf_counter()
        ans = self.system.answer(text)
        g = ans.generation
        return timed_reply(
            t0,
            ans.answer,
            [SourceItem(c.text, c.doc_id, c.score) for c in ans.context],
            True,
            retrieved=[c.doc_id for c in ans.retrieved],
            blocked_by=ans.blocked_by,
            model=g.model if g else "",
            prompt_tokens=g.prompt_tokens if g else 0,
            completion_tokens=g.completion_tokens if g else 0,
            token_limit=ans.answer_budget,
        )

    def reference_corpus(self) -> Corpus:
        if self.system is None:
            self.open()
        return self.system.corpus

    def ingest(self, docs: Sequence[Document]) -> list[str]:
        if self.system is None:
            self.open()
        self.system.store.inject(list(docs))
        return [d.id for d in docs]

    def remove(self, ids: Sequence[str]) -> None:
        if self.system is not None:
            self.system.store.remove(list(ids))

    def exists(self, ids: Sequence[str]) -> list[bool]:
        injected = self.system.store.injected if self.system is not None else {}
        return [i in injected for i in ids]
