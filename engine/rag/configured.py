"""The RAG system a run configuration describes: its retriever, the knowledge base chunked for it, its generator
and defenses, top-K, template and answer length — built the same way for every caller that needs one outside a
run (an audit's built-in target, the utility a defense configuration keeps)."""

from __future__ import annotations

from typing import Any

from .system import RagSystem


def configured_system(c: Any, corpus: str, **extra: Any) -> RagSystem:
    """A (not yet built) :class:`RagSystem` over ``corpus`` (a name or path) as the config ``c`` sets it up
    (an extraction or membership config: ``retriever``, chunking, ``generator``, ``defenses``, ``top_k``,
    ``template``, ``max_tokens``, ``data_dir``); ``extra`` goes to the system (e.g. ``answer_budget``)."""
    from ..corpora import load_corpus, retriever_window
    from ..defenses import make_defenses
    from ..embedders import make_retriever
    from ..generators import GENERATORS

    retriever = make_retriever(c.retriever, dict(c.retriever_params or {}))
    kb = load_corpus(
        corpus,
        data_dir=c.data_dir or None,
        chunk_size=c.chunk_size,
        chunk_overlap=c.chunk_overlap,
        window=retriever_window(retriever),
    )
    return RagSystem(
        kb,
        retriever,
        GENERATORS.create(c.generator, dict(c.generator_params or {})),
        make_defenses(c.defenses, dict(c.defense_params or {})),
        top_k=c.top_k,
        template=c.template,
        max_tokens=c.max_tokens,
        **extra,
    )
