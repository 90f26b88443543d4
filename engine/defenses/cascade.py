"""RAGFort intra-class protection as a defense: answers come from constrained cascade generation."""
from __future__ import annotations

from typing import Sequence

from ..generators.base import Generation
from ..params import Params, param
from .base import Chunk, Defense, DefenseContext


class CascadeGeneration(Defense):
    """RAGFort constrained cascade generation (intra-class path): draft proposes, verifier decides.

    Source: RAGFort, "Key Designs 2. Intra-class Protection: Constrained Cascade Generation", the
    approximate rejection rule r̂ = 1 ⇔ max q_t < max p_t − α·D_TV(p_t, q_t) + η·q_t(z)/p_t(z).
    The decoder (and every choice the paper leaves open) is in :mod:`engine.generators.cascade`;
    the retrieved chunks are the protected texts whose verbatim continuation ``z`` is penalised.
    When this defense is on, it produces the answer in place of the pipeline's generator (use the
    verifier model as the generator of the undefended baseline to compare like with like).

    Default α = 1 (our choice; the paper gives no value). Since D_TV(p, q) ≥ p(y*) − q(y*) for the
    verifier's argmax y*, max_y p − D_TV ≤ q(y*) ≤ max_y q: with α ≥ 1 the budget term alone never
    rejects, and rejections come only from the copy term η·q(z)/p(z) — the cascade then intervenes
    exactly where verbatim copying of a retrieved chunk is likely and otherwise runs at the draft's
    pace. Lower α also rejects where the draft is much less confident than the verifier (closer to
    plain speculative decoding quality-wise), at a large CPU cost: ~20% of draft tokens accepted at
    α = 0.3 in our measurements.
    """

    stage = "generation"

    class Params(Params):
        draft: str = param("qwen2.5-0.5b", help="Draft model (registered name or .gguf path)")
        verifier: str = param("qwen2.5-1.5b", help="Verifier model (same tokenizer as the draft)")
        gamma: int = param(4, min=1, max=32, help="γ: tokens the draft proposes per block")
        alpha: float = param(1.0, min=0.0, max=10.0,
                             help="α: weight of D_TV(p, q); at α ≥ 1 only the copy term can reject (see docstring)")
        eta: float = param(0.5, min=0.0, max=100.0, help="η: weight of the copy ratio q(z)/p(z)")
        min_match: int = param(3, min=1, max=64, help="Tokens of verbatim overlap before z is defined")
        n_ctx: int = param(4096, min=512, max=32768, help="Context window of both models")
        n_threads: int = param(2, min=1, max=64, help="CPU threads")

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._decoder = None

    def decoder(self):
        if self._decoder is None:
            from ..generators.cascade import CascadeDecoder
            p = self.params
            self._decoder = CascadeDecoder(draft=p.draft, verifier=p.verifier, gamma=p.gamma, alpha=p.alpha,
                                           eta=p.eta, min_match=p.min_match, n_ctx=p.n_ctx, n_threads=p.n_threads)
        return self._decoder

    def generate(self, messages: Sequence[dict], chunks: Sequence[Chunk], ctx: DefenseContext,
                 max_tokens: int) -> Generation:
        out = self.decoder().generate(list(messages), [c.text for c in chunks], max_tokens=max_tokens)
        info = {k: getattr(out, k) for k in ("accepted", "rejected", "suppressed", "draft_tokens_evaluated",
                                             "verifier_tokens_evaluated", "flops_draft", "flops_verifier",
                                             "flops_verifier_only")}
        info["decisions"] = tuple(out.decisions)
        return Generation(text=out.text, prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                          model=f"cascade({self.params.draft}→{self.params.verifier})", seconds=out.seconds,
                          info=info)
