"""Context rewriting by the LLM before answering: summarization and paraphrase."""

from __future__ import annotations

from typing import Sequence

from ..errors import ConfigError
from ..params import Params, param
from .base import Chunk, Defense, DefenseAction, DefenseContext


class _LLMRewrite(Defense):
    stage = "context"
    requires = frozenset({"pipeline", "generator"})
    instruction = ""

    def rewrite(self, query: str, chunks: Sequence[Chunk], ctx: DefenseContext) -> tuple[list[Chunk], DefenseAction]:
        if ctx.generator is None:
            raise ConfigError(f"defense {self.name} needs a generator to rewrite the context")
        out: list[Chunk] = []
        tokens = 0
        for c in chunks:
            msgs = [
                {"role": "system", "content": self.instruction},
                {"role": "user", "content": f"Question: {query}\n\nText:\n{c.text}"},
            ]
            g = ctx.generator.chat(msgs, max_tokens=self.params.max_tokens)
            tokens += g.prompt_tokens + g.completion_tokens
            out.append(Chunk(c.doc_id, g.text.strip(), c.score, c.rank))
        return out, self.action("rewritten", n=len(out), tokens=tokens)


class Summarize(_LLMRewrite):
    """Each retrieved chunk is replaced by the LLM's short, question-focused summary of it.

    Source: summarization with the LLM as a context-side mitigation (Zeng et al. 2024, §5
    "summarization"). The summary keeps what answers the question and drops the rest, so verbatim
    copying of the private chunk becomes impossible; the price is one extra LLM call per chunk.
    """

    instruction = (
        "Summarize the text in at most two sentences, keeping only what helps answer the "
        "question. Do not copy sentences. Leave out names, phone numbers, emails, dates and ids."
    )

    class Params(Params):
        max_tokens: int = param(64, min=8, max=1024, help="Tokens per summary")


class Paraphrase(_LLMRewrite):
    """Each retrieved chunk is rewritten by the LLM in other words (same content, new surface form).

    Source: paraphrasing the retrieved context (Zeng et al. 2024, §5). It defeats exact-copy
    metrics (repeat contexts) more than semantic ones (semantic leak, CRR by ROUGE recall).
    """

    instruction = "Rewrite the text in your own words. Keep the meaning, change the wording of every sentence."

    class Params(Params):
        max_tokens: int = param(128, min=8, max=1024, help="Tokens per paraphrase")
