"""A RAG pipeline's retrieval half, as the app composes it: corpus → chunks → retriever → index."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from .corpora import Corpus, corpus_from_documents, load_corpus, read_file, retriever_window
from .embedders import make_retriever
from .errors import CorpusError
from .params import Params, param
from .progress import Progress
from .store import BaseIndex, RunStore, StoreSettings, shared_base_index
from .types import Document


class PipelineConfig(Params):
    """Corpus, chunking, retriever and K."""

    corpus: str = param("clinic_handbook", help="Bundled name, benchmark name or path ('upload' for uploaded files)")
    chunk_size: Optional[int] = param(512, min=16, help="Chunk size in tokens (None: no chunking)")
    chunk_overlap: int = param(32, min=0, help="Chunk overlap in tokens")
    retriever: str = param("minilm", help="Retriever name or sentence-transformers model", registry="retrievers")
    top_k: int = param(
        5,
        min=1,
        max=1000,
        help="Documents retrieved per query (the bound of PoisonConfig.top_k: a poisoning run takes the pipeline's K)",
    )
    data_dir: str = param("", help="Benchmark data dir")


def documents_from_uploads(files: Sequence[Any]) -> tuple[list[Document], list[str]]:
    """Parse uploaded files (objects with ``.name`` and ``.getvalue()``); one clear message per bad file.

    Good files still load when others fail, so nothing the user gave is lost silently.
    """
    docs: list[Document] = []
    errors: list[str] = []
    for f in files:
        try:
            got = read_file(Path(f.name), f.getvalue())
            if not got:
                raise CorpusError(f"{f.name}: no text found")
            docs.extend(got)
        except CorpusError as e:
            errors.append(str(e))
    return docs, errors


class Pipeline:
    """Builds (or reuses) the shared index of a corpus under a retriever and answers test queries."""

    def __init__(
        self,
        config: PipelineConfig,
        *,
        uploaded: Sequence[Document] | None = None,
        settings: StoreSettings | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.retriever = make_retriever(config.retriever)
        window = retriever_window(self.retriever)  # chunks in the retriever's own tokens, never past its window
        if config.corpus == "upload":
            if not uploaded:
                raise CorpusError("no uploaded documents: add files first")
            self.corpus: Corpus = corpus_from_documents(
                "upload",
                list(uploaded),
                chunk_size=config.chunk_size,
                chunk_overlap=config.chunk_overlap,
                window=window,
            )
        else:
            self.corpus = load_corpus(
                config.corpus,
                data_dir=config.data_dir or None,
                chunk_size=config.chunk_size,
                chunk_overlap=config.chunk_overlap,
                window=window,
            )
        self.index: BaseIndex | None = None

    def build(self, progress: Progress | None = None) -> BaseIndex:
        """Build or reuse the shared base index of the corpus under the retriever, and keep it for queries."""
        self.index = shared_base_index(self.corpus, self.retriever, settings=self.settings, progress=progress)
        return self.index

    def try_query(self, text: str, k: int | None = None) -> list[dict[str, Any]]:
        """Top-K of the clean index for one query: rank, score, id, text."""
        if not text.strip():
            raise CorpusError("type a query first")
        index = self.index or self.build()
        k = min(k or self.config.top_k, len(self.corpus))
        with RunStore(index, settings=self.settings) as store:
            hits = store.search([text], k)[0].hits
        return [
            {"rank": h.rank, "score": round(h.score, 4), "doc_id": h.doc_id, "text": store.text_of(h.doc_id)}
            for h in hits
        ]
