"""The user's own Chroma collection as a target: the engine builds the RAG around it and reads it as the reference.

The collection is opened where it lives (a persistent folder, or a Chroma server at host:port) and is only
read: each query is embedded with the model that embedded the collection (``retriever``), the collection's
nearest ``top_k`` records are the context, the engine's defenses act on it as in the built-in pipeline, and
the generator answers. Its records are the reference knowledge base of the leakage metrics.

Poisoning writes to a **copy**: at the first plant, every record (id, vector, text, metadata) is copied into
a scratch store of the audit's own, and from then on the target queries the copy; the user's collection is
never changed. Only with ``in_place`` on are documents planted in the collection itself — each id journaled
before it is planted and removed (and checked gone) afterwards by the audit.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from typing import Any, Mapping, Sequence

import numpy as np

from ..corpora import Corpus, fingerprint
from ..errors import ConfigError
from ..params import Params, param
from ..progress import Progress
from ..types import Document
from .base import SourceItem, Target, TargetReply, timed_reply
from .http_client import TargetError

KB_WRITE = "Knowledge-base write surface (poisoning)"
PIPELINE = "RAG around the collection"
BATCH = 1000


class ChromaTarget(Target):
    """Your Chroma collection (a persistent folder or a server) with an embedding model and a generator.

    Source: this playground; Chroma's client API (``PersistentClient`` / ``HttpClient``, ``get`` / ``query``).
    Reads the collection without changing it; poisoning plants into a copy unless ``in_place`` is on (see the
    module docstring). The embedding model must be the one that embedded the collection (the dimension is
    checked when the target opens).
    """

    runs_engine_defenses = True
    readable = writable = verifiable = True
    server_side = True  # opens a folder of the machine it runs on (or any Chroma server it can reach)

    class Params(Params):
        path: str = param("", help="Folder of a persistent Chroma store (blank: use host and port)")
        host: str = param("127.0.0.1", help="Chroma server host (used when no path is given)")
        port: int = param(8000, min=1, max=65535, help="Chroma server port")
        collection: str = param("documents", help="Name of the collection")
        text_key: str = param(
            "",
            help="Metadata key holding a record's text when the collection stores no documents (blank: the documents)",
        )
        retriever: str = param(
            "minilm",
            group=PIPELINE,
            help="The embedding model that embedded the collection (registered name or sentence-transformers model)",
        )
        generator: str = param(
            "local:qwen2.5-0.5b",
            group=PIPELINE,
            help="Generator: local:<model>, a .gguf path or a litellm provider string",
        )
        generator_params: Mapping[str, Any] | None = param(None, group=PIPELINE, help="Generator parameters")
        top_k: int = param(3, min=1, max=1000, group=PIPELINE, help="Records retrieved per query")
        template: str = param("rag-privacy", choices=("rag-privacy", "chat"), group=PIPELINE, help="Prompt template")
        max_tokens: int = param(
            192,
            min=8,
            max=8192,
            group=PIPELINE,
            help="Tokens per answer (the floor when the budget covers the context)",
        )
        answer_budget: str = param(
            "context",
            choices=("context", "fixed"),
            group=PIPELINE,
            help="context: answers as long as their context; fixed: max_tokens",
        )
        defenses: tuple[str, ...] = param(
            (),
            group=PIPELINE,
            help="The engine's defenses in front of the collection "
            "(query, retrieval, context, prompt, generation "
            "stages)",
        )
        defense_params: Mapping[str, Any] | None = param(None, group=PIPELINE, help="Per-defense parameters")
        where: Mapping[str, Any] | None = param(
            None,
            group=PIPELINE,
            help='The metadata filter your application puts in every vector search, e.g. {"tenant": "clinic-a"} '
            "(Chroma where); blank: none — the misconfiguration a multi-tenant audit looks for",
        )
        model_check: float = param(
            0.8,
            min=0.0,
            max=1.0,
            group=PIPELINE,
            help="Lowest median cosine between a few stored vectors and the retriever's own vectors of the same "
            "documents: below it the retriever is not the model that embedded the collection (the same model gives "
            "≈ 1.0, another of the same dimension ≈ 0); 0: no check",
        )
        in_place: bool = param(
            False,
            group=KB_WRITE,
            help="Plant poisons in the collection itself (journaled, removed after); off: in a copy",
        )

        def validate(self) -> None:
            if not self.collection.strip():
                raise ConfigError("collection: name the Chroma collection to audit")
            if not self.path.strip() and not self.host.strip():
                raise ConfigError("give the store's folder (path) or a Chroma server (host and port)")
            from ..defenses import DEFENSES

            for d in self.defenses:
                if DEFENSES.get(d).stage == "index":
                    raise ConfigError(
                        f"defense {d!r} rebuilds the index: not available on your own collection "
                        "(it would have to re-embed it)"
                    )
            from ..generators.spec import parse_generator

            parse_generator(self.generator)

    def __init__(self, params: Params, **kw: Any) -> None:
        super().__init__(params, **kw)
        self._client = self._col = self._copy_client = None
        self._copy_dir: str | None = None
        self.retriever = self.generator = None
        self.defenses: list = []
        self.space = "cosine"
        self._corpus: Corpus | None = None
        self._ctx = None

    # lifecycle -----------------------------------------------------------------------------------
    def _connect(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        p = self.params
        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        try:
            if p.path.strip():
                from pathlib import Path

                folder = Path(p.path).expanduser()
                if not (folder / "chroma.sqlite3").is_file():
                    raise ConfigError(f"path: {p.path!r} holds no Chroma store (no chroma.sqlite3)")
                return chromadb.PersistentClient(path=str(folder), settings=settings)
            client = chromadb.HttpClient(host=p.host, port=p.port, settings=settings)
            client.heartbeat()
            return client
        except ConfigError:
            raise
        except Exception as e:
            where = p.path or f"{p.host}:{p.port}"
            raise TargetError(
                f"cannot open the Chroma store at {where} ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:200] if str(e) else ''})"
            ) from None

    def open(self, progress: Progress | None = None) -> None:
        if self._col is not None:
            return super().open(progress)
        from ..defenses import DefenseContext, make_defenses
        from ..embedders import make_retriever
        from ..generators import GENERATORS
        from ..generators.spec import parse_generator

        p = self.params
        self._client = self._connect()
        try:
            self._col = self._client.get_collection(p.collection, embedding_function=None)
        except Exception:
            try:
                names = sorted(c if isinstance(c, str) else c.name for c in self._client.list_collections())
            except Exception:
                names = []
            raise ConfigError(
                f"collection {p.collection!r} not found"
                + (f" (the store holds: {', '.join(names[:20])})" if names else " (the store is empty)")
            ) from None
        conf = getattr(self._col, "configuration", None) or {}
        self.space = (conf.get("hnsw") or {}).get("space") or (self._col.metadata or {}).get("hnsw:space") or "l2"
        self.retriever = make_retriever(p.retriever)
        if not self.retriever.dense:
            raise ConfigError(
                f"retriever {p.retriever!r} is sparse (it scores words and makes no vectors), and a Chroma collection "
                "is searched by vectors: name the dense model that embedded the collection (e.g. minilm, e5-small, or "
                "a sentence-transformers model)"
            )
        peek = self._col.get(limit=8, include=["embeddings", "documents", "metadatas"])
        if not peek["ids"]:
            raise ConfigError(f"collection {p.collection!r} is empty: nothing to retrieve")
        dim = len(peek["embeddings"][0])
        got = self.retriever.encode_transient(["dimension check"]).shape[1]
        if dim != got:
            raise ConfigError(
                f"the collection's vectors have {dim} dimensions but retriever {p.retriever!r} gives "
                f"{got}: choose the model that embedded the collection"
            )
        self._check_model(peek)
        name, gparams = parse_generator(p.generator)
        self.generator = GENERATORS.create(name, {**gparams, **dict(p.generator_params or {})})
        self.defenses = make_defenses(p.defenses, dict(p.defense_params or {}))
        if self.defenses:
            self._ctx = DefenseContext(self.reference_corpus(), self.retriever, self.generator)
        super().open(progress)

    def _check_model(self, peek: Mapping[str, Any]) -> None:
        """Refuse a retriever of the right dimension that is not the collection's model: its vectors of a few stored
        documents must lie close to the stored ones (``model_check``: the lowest median cosine)."""
        p = self.params
        metas = peek.get("metadatas") or [None] * len(peek["ids"])
        docs = peek.get("documents") or [None] * len(peek["ids"])
        pairs = [(t, v) for t, v in zip((self._text(d, m) for d, m in zip(docs, metas)), peek["embeddings"]) if t]
        if not p.model_check or not pairs:
            return
        mine, _ = self.retriever.encode_documents([t for t, _ in pairs])
        stored = np.asarray([v for _, v in pairs], dtype=np.float64)
        mine = np.asarray(mine, dtype=np.float64)
        cos = (stored * mine).sum(1) / np.maximum(np.linalg.norm(stored, axis=1) * np.linalg.norm(mine, axis=1), 1e-12)
        median = float(np.median(cos))
        if median < p.model_check:
            raise ConfigError(
                f"the collection's vectors were not made by retriever {p.retriever!r}: its vectors of {len(pairs)} "
                f"stored documents lie at a median cosine of {median:.2f} from the stored ones (the same model gives "
                f"≈ 1.0; model_check is {p.model_check:g}); name the model that embedded the collection"
            )

    def close(self) -> None:
        self._col = self._client = self._copy_client = None
        if self._copy_dir:
            shutil.rmtree(self._copy_dir, ignore_errors=True)
            self._copy_dir = None
        super().close()

    def endpoint(self) -> str:
        p = self.params
        return f"chroma {p.path or f'{p.host}:{p.port}'} / {p.collection}"

    # reading ------------------------------------------------------------------------------------
    def _records(self, col: Any, include: list[str]):
        n = col.count()
        for off in range(0, n, BATCH):
            yield col.get(limit=BATCH, offset=off, include=include)

    def _text(self, doc: Any, meta: Any) -> str:
        key = self.params.text_key
        if key:
            return str((meta or {}).get(key) or "")
        return str(doc or "")

    def reference_corpus(self) -> Corpus:
        if self._corpus is None:
            if self._col is None:
                self.open()
            docs = []
            for got in self._records(self._col, ["documents", "metadatas"]):
                for i, doc, meta in zip(
                    got["ids"],
                    got["documents"] or [None] * len(got["ids"]),
                    got["metadatas"] or [None] * len(got["ids"]),
                ):
                    text = self._text(doc, meta)
                    if text.strip():
                        docs.append(Document(str(i), text, dict(meta or {})))
            if not docs:
                raise ConfigError(
                    f"collection {self.params.collection!r} holds no text (set text_key if the text is in the metadata)"
                )
            self._corpus = Corpus(f"chroma:{self.params.collection}", tuple(docs), fingerprint(docs))
        return self._corpus

    @property
    def reports_contexts(self) -> bool:
        return True

    def _score(self, distance: float) -> float:
        return -float(distance) if self.space == "l2" else 1.0 - float(distance)

    def retrieve(self, text: str) -> list[SourceItem]:
        """The collection's (or the copy's) ``top_k`` nearest records for ``text``."""
        if self._col is None:
            self.open()
        q = np.asarray(self.retriever.encode_transient([text]), dtype=np.float32)
        got = self._col.query(
            query_embeddings=q.tolist(),
            n_results=self.params.top_k,
            where=dict(self.params.where) if self.params.where else None,
            include=["documents", "metadatas", "distances"],
        )
        ids, docs = got["ids"][0], (got["documents"] or [[None] * len(got["ids"][0])])[0]
        metas = (got["metadatas"] or [[None] * len(ids)])[0]
        return [
            SourceItem(self._text(d, m), str(i), self._score(dist))
            for i, d, m, dist in zip(ids, docs, metas, got["distances"][0])
        ]

    def query(self, text: str, *, session: str = "") -> TargetReply:
        from ..defenses import Chunk
        from ..rag.prompts import get_template, render
        from ..rag.system import covering_budget, defend_context, defended_generation, prompt_additions, screen_query

        t0 = time.perf_counter()
        if self._col is None:
            self.open()
        p = self.params
        actions, blocker = screen_query(text, self.defenses, self._ctx)
        if blocker is not None:
            return timed_reply(t0, str(actions[-1].detail.get("refusal", "")), [], True, blocked_by=blocker.name)
        found = self.retrieve(text)
        chunks = [Chunk(s.id, s.text, s.score or 0.0, r + 1) for r, s in enumerate(found)]
        context, acts = defend_context(text, chunks, self.defenses, self._ctx)
        extra, _ = prompt_additions(self.defenses)
        messages = render(get_template(p.template), text, [c.text for c in context], extra_system=extra)
        n = p.max_tokens
        if p.answer_budget == "context":
            n = covering_budget(sum(self.generator.count_tokens(c.text) for c in context), n)
        gen, _ = defended_generation(text, messages, chunks, context, self.defenses, self._ctx, self.generator, n)
        return timed_reply(
            t0,
            gen.text,
            [SourceItem(c.text, c.doc_id, c.score) for c in context],
            True,
            retrieved=[c.doc_id for c in chunks],
            model=gen.model,
            prompt_tokens=gen.prompt_tokens,
            completion_tokens=gen.completion_tokens,
            token_limit=n,
        )

    # writing ------------------------------------------------------------------------------------
    @property
    def writes_in_place(self) -> bool:
        """Whether plants go into the user's collection itself (else into the audit's copy)."""
        return bool(self.params.in_place)

    def _writable(self) -> Any:
        """The collection plants go to: the user's with ``in_place``, else a copy made at the first plant."""
        if self._col is None:
            self.open()
        if self.params.in_place or self._copy_client is not None:
            return self._col
        import chromadb
        from chromadb.config import Settings

        from ..paths import cache_dir

        self._copy_dir = tempfile.mkdtemp(prefix="chroma-copy-", dir=str(cache_dir("audit-copies")))
        self._copy_client = chromadb.PersistentClient(
            path=self._copy_dir, settings=Settings(anonymized_telemetry=False)
        )
        copy = self._copy_client.create_collection(
            f"copy-{uuid.uuid4().hex[:12]}", embedding_function=None, configuration={"hnsw": {"space": self.space}}
        )
        for got in self._records(self._col, ["embeddings", "documents", "metadatas"]):
            metas = got["metadatas"] if got["metadatas"] and any(m for m in got["metadatas"]) else None
            copy.add(
                ids=got["ids"],
                embeddings=np.asarray(got["embeddings"], dtype=np.float32),
                documents=got["documents"],
                metadatas=metas,
            )
        self._col = copy
        return copy

    def ingest(self, docs: Sequence[Document]) -> list[str]:
        col = self._writable()
        vecs, _ = self.retriever.encode_documents([d.text for d in docs])
        meta_key = self.params.text_key
        metas = [
            {
                **{k: v for k, v in dict(d.metadata).items() if isinstance(v, (str, int, float, bool))},
                "planted_by": "rag-playground-audit",
                **({meta_key: d.text} if meta_key else {}),
            }
            for d in docs
        ]
        col.add(
            ids=[d.id for d in docs],
            embeddings=np.asarray(vecs, dtype=np.float32),
            documents=[d.text for d in docs],
            metadatas=metas,
        )
        return [d.id for d in docs]

    def remove(self, ids: Sequence[str]) -> None:
        if self._col is None:
            self.open()
        if ids:
            self._col.delete(ids=list(ids))

    def exists(self, ids: Sequence[str]) -> list[bool]:
        if self._col is None:
            self.open()
        have = set(self._col.get(ids=list(ids), include=[])["ids"]) if ids else set()
        return [i in have for i in ids]
