"""A target seen as the RAG system an extraction run attacks.

:class:`~engine.runs.extraction.ExtractionRun` asks its system for ``build()``, ``answer(question)`` and
``close()``; :class:`TargetSystem` gives a target that shape, so every extraction attack, the leakage
metrics, resume and the round view work unchanged against a remote service, a callable or a collection.
The contexts a target reports are mapped to reference chunks (:mod:`engine.targets.reference`); each round
also records, per reported context, how much of it the answer reproduced (ROUGE-L recall), the measure that
needs no reference knowledge base at all.
"""

from __future__ import annotations

from typing import Any

from ..corpora import Corpus
from ..defenses import Chunk
from ..generators.base import Generation, TextCallback
from ..metrics.overlap import rouge_l, stemmed_tokens
from ..progress import Progress
from ..rag.system import RagAnswer
from ..secrets import scrub_known
from .base import Target
from .reference import ContextMatcher

CONTEXT_TEXT_CAP = 1500  # characters of each reported context kept in the round's event


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` by the usual 4/3-per-word estimate (a remote target's tokenizer is unknown)."""
    return max(1, round(len(text.split()) * 4 / 3)) if text.strip() else 0


class TargetSystem:
    """A :class:`~engine.targets.base.Target` behind the interface of :class:`~engine.rag.system.RagSystem`."""

    def __init__(self, target: Target, corpus: Corpus) -> None:
        self.target = target
        self.corpus = corpus
        self.defenses: list = []
        self.index = None
        self.store = None
        self.matcher = ContextMatcher(corpus)

    def build(self, progress: Progress | None = None) -> list:
        """Open the target (connect, load); no defense acts at the index stage here."""
        self.target.open(progress)
        return []

    def close(self) -> None:
        """Close the target."""
        self.target.close()

    def answer(self, question: str, *, on_text: TextCallback | None = None, **_: Any) -> RagAnswer:
        """Ask the target; the answer arrives in one piece (``on_text`` gets it whole)."""
        reply = self.target.query(question)
        answer = scrub_known(reply.answer)
        if on_text is not None and answer:
            on_text(answer)
        out_stems = stemmed_tokens(answer)
        chunks, reported = [], []
        for rank, s in enumerate(reply.contexts, start=1):
            rid = self.matcher.match(s.text, s.id)
            chunks.append(Chunk(rid, s.text, float(s.score) if s.score is not None else 0.0, rank))
            recall = rouge_l(stemmed_tokens(s.text), out_stems)[0] if out_stems else 0.0
            reported.append(
                {"id": s.id, "matched": rid, "recall": round(recall, 4), "text": scrub_known(s.text[:CONTEXT_TEXT_CAP])}
            )
        info = {k: v for k, v in dict(reply.info).items() if k not in ("blocked_by",)}
        info.update(contexts_reported=bool(reply.contexts_reported), contexts=reported, target=self.target.name)
        gen = Generation(
            text=answer,
            prompt_tokens=int(info.get("prompt_tokens") or 0),
            completion_tokens=int(info.get("completion_tokens") or estimate_tokens(answer)),
            model=str(info.get("model") or self.target.name),
            seconds=reply.seconds,
            info=info,
        )
        context_tokens = sum(estimate_tokens(c.text) for c in chunks)
        return RagAnswer(
            question,
            tuple(chunks),
            tuple(chunks),
            (),
            answer,
            gen,
            blocked_by=str(reply.info.get("blocked_by") or ""),
            timings={"target": reply.seconds},
            context_tokens=context_tokens,
            answer_budget=0,
        )
