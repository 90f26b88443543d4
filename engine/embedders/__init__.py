"""Retriever registry: dense encoders (sentence-transformers, packaged offline models, E5)
and the sparse BM25 retriever. Any name not registered is treated as a sentence-transformers
model name or local path (``facebook/contriever``, ``./my-model``)."""

from __future__ import annotations

from ..params import param
from ..registry import Registry
from .base import Retriever
from .bm25 import BM25Retriever, BM25Index
from .packaged import E5SmallRetriever, MiniLMRetriever, MPNetRetriever, assemble_mpnet
from .sentence_transformer import SentenceTransformerRetriever

RETRIEVERS: Registry[Retriever] = Registry("retriever")
RETRIEVERS.register("minilm")(MiniLMRetriever)
RETRIEVERS.register("mpnet")(MPNetRetriever)
RETRIEVERS.register("e5-small")(E5SmallRetriever)
RETRIEVERS.register("bm25")(BM25Retriever)
RETRIEVERS.register("sentence-transformers")(SentenceTransformerRetriever)


class ContrieverRetriever(SentenceTransformerRetriever):
    """Contriever (unsupervised contrastive; unnormalised, inner product). Needs the HF hub.

    Source: Izacard et al., "Unsupervised Dense Information Retrieval with Contrastive
    Learning", TMLR 2022 (facebook/contriever). Used by the universal-poisoning paper.
    """

    class Params(SentenceTransformerRetriever.Params):
        model: str = param("facebook/contriever", help="Encoder (name or path)")
        similarity: str = param("ip", choices=("auto", "ip", "cosine"), help="Native geometry")
        pooling: str = param("mean", choices=("auto", "cls", "mean"), help="Pooling")


class MedCPTRetriever(SentenceTransformerRetriever):
    """MedCPT (asymmetric: query and article encoders, [CLS] pooling, inner product). Needs the HF hub.

    Source: Jin et al., "MedCPT: Contrastive Pre-trained Transformers with large-scale PubMed
    search logs for zero-shot biomedical information retrieval", Bioinformatics 2023.
    """

    class Params(SentenceTransformerRetriever.Params):
        model: str = param("ncbi/MedCPT-Article-Encoder", help="Article (document) encoder")
        query_model: str = param("ncbi/MedCPT-Query-Encoder", help="Query encoder")
        similarity: str = param("ip", choices=("auto", "ip", "cosine"), help="Native geometry")
        pooling: str = param("cls", choices=("auto", "cls", "mean"), help="Pooling")


RETRIEVERS.register("contriever")(ContrieverRetriever)
RETRIEVERS.register("medcpt")(MedCPTRetriever)


def offline_retrievers() -> list[str]:
    """The registered retrievers that work with no network (:attr:`Retriever.offline`), dense ones first."""
    return sorted(
        (n for n in RETRIEVERS.names() if RETRIEVERS.get(n).offline), key=lambda n: (not RETRIEVERS.get(n).dense, n)
    )


def make_retriever(name: str, params: dict | None = None) -> Retriever:
    """A registered retriever by name, else a sentence-transformers model name or path."""
    name = (name or "").strip()
    if name in RETRIEVERS:
        return RETRIEVERS.create(name, params)
    if not name:
        return RETRIEVERS.create("minilm", params)
    looks_like_model = "/" in name or name.startswith((".", "~"))
    if not looks_like_model:
        RETRIEVERS.get(name)  # raises UnknownNameError listing the choices
    return RETRIEVERS.create("sentence-transformers", {**(params or {}), "model": name})


__all__ = [
    "RETRIEVERS",
    "Retriever",
    "BM25Index",
    "make_retriever",
    "preload_retriever",
    "offline_retrievers",
    "assemble_mpnet",
]


def preload_retriever(name: str, params: dict | None = None) -> Retriever:
    """Load a retriever's model into this process now (and run one uncached encoding, so the first real batch does
    not pay for the framework's first call): what a server does before its first user asks, so a run's
    "loading the embedding model" stage finds the model ready. Returns the retriever."""
    retriever = make_retriever(name, params)
    if retriever.dense:
        retriever.window()
        retriever.encode_transient(["warming up"])
    return retriever
