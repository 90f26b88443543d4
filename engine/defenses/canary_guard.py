"""Canary guard: an answer carrying one of the knowledge base's canaries is redacted or refused."""

from __future__ import annotations

import re
from typing import Sequence

from ..canaries import LINE_PATTERN, canary_hits, loose_pattern
from ..params import Params, param
from .base import Chunk, Defense, DefenseAction, DefenseContext


class CanaryGuard(Defense):
    """Screen every answer for the knowledge base's canaries; redact them, or refuse the whole answer.

    Source: the output-side use of honeytokens (Spitzner 2003, *Honeytokens: The Other Honeypot*): a canary only a
    leak can carry is a tripwire an operator can check every answer against, as data-loss-prevention filters do.
    The guard reads the canaries from the knowledge base it protects (``pattern``: the planted line, by default the
    one ``engine.canaries`` writes; its first group is the code) and matches them with case, spaces and dashes
    ignored. Its limit is built in: it sees only canaried chunks — the rest of a copied chunk, and every chunk
    without a canary, passes (measure it: CRR barely moves while the canary hits drop to zero).
    """

    stage = "output"

    class Params(Params):
        mode: str = param(
            "block", choices=("block", "redact"), help="block: refuse the whole answer; redact: cut the codes out"
        )
        refusal: str = param(
            "I can't share that: the answer contained protected record data.", help="The answer given instead"
        )
        pattern: str = param(LINE_PATTERN, help="Regular expression of a planted line; its first group is the code")

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._codes: list[str] | None = None

    def codes(self, ctx: DefenseContext) -> list[str]:
        """The canary codes found in the knowledge base (read once)."""
        if self._codes is None:
            rx = re.compile(self.params.pattern)
            self._codes = sorted({m.group(1) for d in ctx.corpus.documents for m in rx.finditer(d.text)})
        return self._codes

    def screen_answer(
        self, question: str, answer: str, chunks: Sequence[Chunk], ctx: DefenseContext
    ) -> tuple[str, DefenseAction]:
        """Blocks (or redacts) an answer carrying a canary; the action names how many codes it caught."""
        found = canary_hits(answer, {code: code for code in self.codes(ctx)})
        text = answer
        for code in found:
            text = loose_pattern(code).sub("[redacted]", text)
        if not found:
            return answer, self.action("passed", canaries=len(self.codes(ctx)))
        if self.params.mode == "block":
            return self.params.refusal, self.action("blocked", caught=len(found))
        return text, self.action("redacted", caught=len(found))
