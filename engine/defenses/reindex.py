"""RAGFort inter-class protection as a defense: the knowledge base is re-indexed once, up front."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ..devices import DEVICE_HELP, check_device
from ..params import Params, param
from .base import Defense, DefenseAction, DefenseContext

if TYPE_CHECKING:
    from ..store import BaseIndex


class ContrastiveReindex(Defense):
    """RAGFort structure-aware contrastive reindexing (inter-class path).

    Source: RAGFort, "Key Designs 1. Inter-class Protection: Contrastive Reindexing": HDBSCAN
    pseudo-labels over chunk embeddings, a copy of the retriever's encoder fine-tuned with the
    supervised contrastive loss on them, all chunks re-encoded into a new index. Queries are still
    encoded by the unchanged retriever and the generator still reads the original chunk text.
    The algorithm is in :mod:`engine.defenses.supcon`; the result (vectors, labels, cluster
    separation before/after, 2-D projections) is cached on disk and kept in ``self.result``.
    """

    stage = "index"

    class Params(Params):
        min_cluster_size: int = param(5, min=2, max=1000, help="HDBSCAN: smallest cluster")
        min_samples: Optional[int] = param(
            2, min=1, max=1000, help="HDBSCAN: core-point neighbours (lower = less noise; None = min_cluster_size)"
        )
        selection: str = param(
            "leaf", choices=("leaf", "eom"), help="HDBSCAN cluster selection: leaf = fine topics, eom = broad clusters"
        )
        noise: str = param(
            "nearest",
            choices=("nearest", "own", "drop"),
            help="HDBSCAN noise chunks: nearest cluster, a class each, or left out of training",
        )
        epochs: int = param(2, min=1, max=50, help="SupCon training epochs")
        temperature: float = param(0.1, min=0.01, max=2.0, help="SupCon temperature τ")
        batch_size: int = param(32, min=4, max=512, help="SupCon batch size")
        lr: float = param(2e-5, min=1e-7, max=1e-2, help="Learning rate")
        max_steps: int = param(100, min=1, max=100000, help="Cap on optimisation steps (CPU time)")
        per_class: int = param(4, min=2, max=64, help="Chunks of one pseudo-class per batch group (positives)")
        train_layers: Optional[int] = param(
            None, min=1, max=48, help="Fine-tune only the top N transformer layers (None = all, as the paper)"
        )
        max_length: int = param(128, min=16, max=512, help="Tokens per training input (re-encoding uses whole chunks)")
        seed: int = param(0, min=0, help="Training seed")
        device: str = param("auto", help=f"Where the SupCon fine-tuning runs: {DEVICE_HELP}")

        def validate(self) -> None:
            check_device(self.device)

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self.result = None

    def reindex(self, base: "BaseIndex", ctx: DefenseContext) -> tuple["BaseIndex", DefenseAction]:
        """Fine-tune a copy of the encoder on HDBSCAN pseudo-labels and re-encode every chunk into a new index
        (slow; cached on disk, the result kept in ``self.result``)."""
        from ..store import BaseIndex
        from .supcon import contrastive_reindex

        p = self.params
        res = contrastive_reindex(
            ctx.corpus.texts,
            ctx.retriever,
            min_cluster_size=p.min_cluster_size,
            min_samples=p.min_samples,
            selection=p.selection,
            per_class=p.per_class,
            train_layers=p.train_layers,
            max_length=p.max_length,
            noise=p.noise,
            epochs=p.epochs,
            temperature=p.temperature,
            batch_size=p.batch_size,
            lr=p.lr,
            max_steps=p.max_steps,
            seed=p.seed,
            progress=ctx.progress,
            device=p.device,
        )
        self.result = res
        index = BaseIndex.from_vectors(
            ctx.corpus, ctx.retriever, res.doc_vectors, res.model_id, settings=ctx.settings, progress=ctx.progress
        )
        return index, self.action(
            "reindexed",
            n_clusters=int(res.n_clusters),
            n_noise=int(res.n_noise),
            separation_before=dict(res.separation_before),
            separation_after=dict(res.separation_after),
            seconds=round(res.seconds, 2),
            model_id=res.model_id,
        )
