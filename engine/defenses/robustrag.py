"""RobustRAG: answer from each passage alone, then keep only what several isolated answers agree on."""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Sequence

from ..generators.base import Generation
from ..params import Params, param
from .base import Chunk, Defense, DefenseContext

_STOP = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her his how i
if in into is it its may might more most must no not of on or our she should so such than that the their them
then there these they this those to was we were what when where which while who whom why will with would you
your yes also about any each other some only very just answer question context document based provided""".split()
)
_WORD = re.compile(r"[\w.@+-]*\w")


def keywords(text: str) -> set[str]:
    """The distinct content words of an answer (lower-cased, stop words and one- or two-letter words dropped;
    e-mails, numbers and phone numbers kept whole)."""
    return {
        w
        for w in (m.group(0).lower() for m in _WORD.finditer(text))
        if w not in _STOP and (len(w) > 2 or any(ch.isdigit() for ch in w))
    }


class IsolateAggregate(Defense):
    """RobustRAG's isolate-then-aggregate with keyword aggregation.

    Source: Xiang et al., "Certifiably Robust RAG against Retrieval Corruption", 2024, §3.3 (keyword
    aggregation). Each of the k retrieved passages is answered alone (isolation), so a poison can shape
    only its own answer; the keywords of the isolated answers are counted and only those that appear in at
    least μ = min(α·k, β) of them are kept; the final answer is generated from the question and the kept
    keywords, sorted, without the passages. A single poison's target (a phone number, a wrong answer)
    appears in one isolated answer, below μ once α·k > 1. Cost: k + 1 generations per question instead of
    one, reported in the answer's ``info`` (``isolated_calls``, tokens, seconds).
    """

    stage = "generation"
    requires = frozenset({"pipeline", "generator"})

    class Params(Params):
        alpha: float = param(0.3, min=0.0, max=1.0, help="Keyword threshold share of passages: μ = min(α·k, β)")
        beta: float = param(3.0, min=1.0, max=20.0, help="Keyword threshold cap: μ = min(α·k, β)")
        isolated_tokens: int = param(48, min=8, max=512, help="Tokens of each isolated answer")

    def generate(
        self,
        messages: Sequence[dict],
        chunks: Sequence[Chunk],
        ctx: DefenseContext,
        max_tokens: int,
        *,
        question: str = "",
        context: Sequence[Chunk] | None = None,
    ) -> Generation:
        """Isolated answers, keyword vote, final answer from the kept keywords; ``info`` holds the kept and
        dropped keywords, μ and the cost of the isolated calls."""
        if ctx.generator is None:
            from ..errors import ConfigError

            raise ConfigError("isolate-aggregate needs the pipeline's generator to answer each passage")
        t0 = time.perf_counter()
        passages = list(context if context is not None else chunks)
        q = question or str(messages[-1]["content"])
        counts: Counter[str] = Counter()
        p_tok = c_tok = 0
        for c in passages:
            alone = [
                {"role": "system", "content": "Answer the question from the context document, briefly."},
                {"role": "user", "content": f"Context document:\n{c.text}\n\nQuestion: {q}"},
            ]
            g = ctx.generator.chat(alone, max_tokens=self.params.isolated_tokens)
            counts.update(keywords(g.text))
            p_tok += g.prompt_tokens
            c_tok += g.completion_tokens
        mu = min(self.params.alpha * len(passages), self.params.beta)
        kept = sorted(w for w, n in counts.items() if n >= mu)
        final = [
            {
                "role": "system",
                "content": "Answer the question using only the given keywords, which several "
                "independent sources agree on. If they are not enough, say you "
                "do not know.",
            },
            {"role": "user", "content": f"Question: {q}\nKeywords: {', '.join(kept) or '(none)'}\nAnswer:"},
        ]
        g = ctx.generator.chat(final, max_tokens=max_tokens)
        info = {
            "isolated_calls": len(passages),
            "mu": round(mu, 3),
            "kept_keywords": kept[:60],
            "dropped_keywords": sorted(w for w, n in counts.items() if n < mu)[:60],
            "isolated_prompt_tokens": p_tok,
            "isolated_completion_tokens": c_tok,
        }
        return Generation(
            text=g.text,
            prompt_tokens=p_tok + g.prompt_tokens,
            completion_tokens=c_tok + g.completion_tokens,
            model=f"isolate-aggregate({g.model})",
            seconds=time.perf_counter() - t0,
            info=info,
        )
