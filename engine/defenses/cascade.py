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

    Defaults (our choices; the paper gives no values), measured on HealthCareMagic with the Qwen pair:

    * α = 0: reject whenever the draft is less confident than the verifier (or the copy term says so).
      At α = 1 the budget term alone never rejects (D_TV(p, q) ≥ p(y*) − q(y*) for the verifier's argmax
      y*, so max p − D_TV ≤ max q) and the 0.5B draft writes almost every answer: ACC on 20 clinic-
      handbook questions fell from 1.00 (verifier alone) to 0.60; at α = 0 it stayed 1.00.
    * copy_window = 4: z follows a copy through deviations (see :class:`CopyTracker`). With the exact
      suffix only, the output stayed a near-verbatim copy (ROUGE-L recall 0.69 of the copied chunk);
      with the window it fell to 0.17–0.23.
    * γ = 2: the output does not depend on γ (the draft is greedy and the rule judges each position
      on its own), only the speed does; with few accepted draft tokens (α = 0 accepts ~5–25% during
      extraction) short blocks waste less draft work.
    """

    stage = "generation"
    token_report = True

    class Params(Params):
        draft: str = param("qwen2.5-0.5b", help="Draft model (registered name or .gguf path)")
        verifier: str = param("qwen2.5-1.5b", help="Verifier model (same tokenizer as the draft)")
        gamma: int = param(2, min=1, max=32, help="γ: tokens the draft proposes per block (speed only)")
        alpha: float = param(
            0.0,
            min=0.0,
            max=10.0,
            help="α: weight of D_TV(p, q); larger = fewer rejections, at α ≥ 1 only the copy term rejects",
        )
        eta: float = param(0.5, min=0.0, max=100.0, help="η: weight of the copy ratio q(z)/p(z)")
        min_match: int = param(3, min=1, max=64, help="Tokens of verbatim overlap before z is defined")
        copy_window: int = param(
            4,
            min=0,
            max=64,
            help="Keep following a copy through deviations of up to this many tokens (0: exact suffix only)",
        )
        n_ctx: int = param(4096, min=512, max=32768, help="Context window of both models")
        n_threads: int = param(2, min=1, max=64, help="CPU threads")
        n_gpu_layers: int = param(
            0,
            min=-1,
            max=1000,
            help="Layers of each model offloaded to a GPU (-1: all); used when llama.cpp was built with GPU support",
        )

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._decoder = None

    def decoder(self):
        """The :class:`CascadeDecoder`, built (both models loaded) on first use and reused after."""
        if self._decoder is None:
            from ..generators.cascade import CascadeDecoder

            p = self.params
            self._decoder = CascadeDecoder(
                draft=p.draft,
                verifier=p.verifier,
                gamma=p.gamma,
                alpha=p.alpha,
                eta=p.eta,
                min_match=p.min_match,
                n_ctx=p.n_ctx,
                n_threads=p.n_threads,
                copy_window=p.copy_window,
                n_gpu_layers=p.n_gpu_layers,
            )
        return self._decoder

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
        """The answer by constrained cascade decoding with the retrieved chunks as protected text; draft/verifier
        counts, decisions and FLOPs go in ``info``."""
        out = self.decoder().generate(list(messages), [c.text for c in chunks], max_tokens=max_tokens)
        info = {
            k: getattr(out, k)
            for k in (
                "accepted",
                "rejected",
                "suppressed",
                "draft_tokens_evaluated",
                "verifier_tokens_evaluated",
                "flops_draft",
                "flops_verifier",
                "flops_verifier_only",
            )
        }
        info["decisions"] = tuple(out.decisions)
        return Generation(
            text=out.text,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            model=f"cascade({self.params.draft}→{self.params.verifier})",
            seconds=out.seconds,
            info=info,
        )
