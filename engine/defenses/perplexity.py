"""Perplexity filter: drop retrieved chunks whose text an offline language model finds unusually surprising."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..params import Params, param
from .base import Chunk, Defense, DefenseAction, DefenseContext


class PerplexityFilter(Defense):
    """Drop retrieved chunks whose perplexity under an offline model exceeds a threshold.

    Source: the perplexity-based detection baseline of Jain et al., "Baseline Defenses for Adversarial
    Attacks Against Aligned Language Models", 2023, §4.1, evaluated against corpus poisoning by Zou et al.,
    "PoisonedRAG", USENIX Security 2025, §6 (perplexity-based detection). Perplexity = exp(−mean token
    log-probability) of the chunk's text (its first ``max_tokens`` tokens) under the local model.
    Threshold (choice, documented, as in the Mahalanobis detector's protocol): unless ``max_perplexity`` is
    set, the ``quantile`` of the perplexities of ``calibration_docs`` clean KB chunks drawn with ``seed``,
    so about 1 − quantile of clean chunks are dropped. Poisons written in fluent language (q ⊕ a fluent
    target) are not surprising, which is why the paper's authors found this filter weak.
    """

    stage = "retrieval"

    class Params(Params):
        model: str = param("smollm2-135m", help="Local model that scores the text (registered name or .gguf)")
        max_perplexity: float = param(
            0.0, min=0.0, help="Drop chunks above this perplexity; 0 = calibrate on clean KB chunks"
        )
        quantile: float = param(
            0.95, min=0.5, max=0.999, help="Calibrated threshold: this quantile of clean chunks' perplexities"
        )
        calibration_docs: int = param(60, min=10, max=2000, help="Clean KB chunks scored to calibrate")
        max_tokens: int = param(256, min=16, max=2048, help="Tokens of each chunk that are scored")
        seed: int = param(0, min=0, help="Which clean chunks calibrate")

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._scorer = None
        self._cache: dict[str, float] = {}
        self.threshold: float | None = params.max_perplexity or None

    def perplexity(self, text: str) -> float:
        """exp(−mean log-probability) of the text's tokens under the scoring model (cached by text)."""
        if text not in self._cache:
            if self._scorer is None:
                from ..generators import GENERATORS

                self._scorer = GENERATORS.create("local", {"model": self.params.model})
            lp = self._scorer.token_logprobs(text, self.params.max_tokens)
            self._cache[text] = math.exp(-sum(lp) / len(lp)) if lp else 1.0
        return self._cache[text]

    def calibrate(self, ctx: DefenseContext) -> float:
        """The threshold: ``max_perplexity``, or the quantile of clean KB chunks' perplexities."""
        if self.threshold is None:
            docs = ctx.corpus.documents
            rng = np.random.default_rng(self.params.seed)
            pick = rng.choice(len(docs), size=min(self.params.calibration_docs, len(docs)), replace=False)
            scores = [self.perplexity(docs[int(i)].text) for i in pick]
            self.threshold = float(np.quantile(scores, self.params.quantile))
        return self.threshold

    def filter(self, query: str, chunks: Sequence[Chunk], ctx: DefenseContext) -> tuple[list[Chunk], DefenseAction]:
        """Drops chunks above the threshold; the action lists the dropped ids, every chunk's perplexity and the
        threshold."""
        thr = self.calibrate(ctx)
        ppl = {c.doc_id: round(self.perplexity(c.text), 3) for c in chunks}
        kept = [c for c in chunks if ppl[c.doc_id] <= thr]
        dropped = tuple(c.doc_id for c in chunks if ppl[c.doc_id] > thr)
        return kept, self.action(
            "dropped" if dropped else "passed", dropped=dropped, kept=len(kept), perplexity=ppl, threshold=round(thr, 3)
        )
