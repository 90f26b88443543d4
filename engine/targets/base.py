"""The target contract: the RAG system under audit, seen from outside.

A target answers a query (``query(text) -> TargetReply``: the answer and, where the system reports them,
the contexts it retrieved). Some targets also expose their knowledge base:

* **read** — ``reference_corpus()``: the chunks the system retrieves from (a Chroma collection, the built-in
  pipeline's corpus), the reference the leakage metrics compare answers against;
* **write** — ``ingest(docs) -> ids``, ``remove(ids)`` and ``exists(ids)``: the surface poisoning needs. The
  audit journals every id before it is planted and removes (and, where ``exists`` can tell, verifies) every
  one afterwards (:mod:`engine.audit.journal`).

Targets are plugins like every other kind: a class with a typed ``Params`` (which never holds a secret —
credentials are named as ``${NAME}``, see :mod:`engine.targets.credentials`), registered in
:data:`engine.targets.TARGETS`. ``open()`` connects or loads, ``close()`` releases; a failure is a
:class:`~engine.targets.http_client.TargetError` with one clear line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Optional, Sequence

from ..corpora import Corpus
from ..params import Params
from ..progress import Progress
from ..types import Document
from .http_client import TargetError


@dataclass(frozen=True)
class SourceItem:
    """One context the target says it used: its text, its id in the target's store (when given) and score."""

    text: str
    id: str = ""
    score: Optional[float] = None


@dataclass(frozen=True)
class TargetReply:
    """What the target said to one query.

    ``contexts_reported``: whether this target reports its contexts at all (an empty ``contexts`` then means
    "retrieved nothing", not "unknown"). ``info`` carries what else the target told (model, tokens, status,
    a refusal flag)."""

    answer: str
    contexts: tuple[SourceItem, ...] = ()
    contexts_reported: bool = False
    seconds: float = 0.0
    info: Mapping[str, Any] = field(default_factory=dict)


class Target:
    """Base class of the systems an audit can attack (see the module docstring).

    Subclasses implement :meth:`query` and, where they can, the read surface (``readable`` set, and
    :meth:`reference_corpus`) and the write surface; ``runs_engine_defenses`` is True when the engine itself
    builds the RAG around the target (so the engine's defenses can be switched on in front of it)."""

    name: ClassVar[str] = ""
    runs_engine_defenses: ClassVar[bool] = False
    readable: ClassVar[bool] = False  # reference_corpus() can read the knowledge base back
    writable: ClassVar[bool] = False  # ingest / remove always work (remote targets: when configured)
    verifiable: ClassVar[bool] = False  # exists() can tell whether a planted document is still there
    server_side: ClassVar[bool] = False  # reads the server's own files or runs its code (python, chroma paths):
    # not offered to web users of a shared deployment

    class Params(Params):
        pass

    def __init__(
        self, params: Params, *, secrets: Mapping[str, str] | None = None, data_dir: str | None = None
    ) -> None:
        self.params = params
        self.secrets = dict(secrets or {})
        self.data_dir = data_dir
        self._opened = False

    # lifecycle ----------------------------------------------------------------------------------
    def open(self, progress: Progress | None = None) -> None:
        """Connect, load or build whatever the target needs before the first query (idempotent)."""
        self._opened = True

    def close(self) -> None:
        """Release connections and models (safe to call again)."""
        self._opened = False

    def __enter__(self) -> "Target":
        self.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # the query surface --------------------------------------------------------------------------
    def query(self, text: str, *, session: str = "") -> TargetReply:
        """Ask the target one question; ``session`` ties the turns of one conversation where supported."""
        raise NotImplementedError

    @property
    def reports_contexts(self) -> bool:
        """Whether replies carry the retrieved contexts (as configured)."""
        return False

    # the knowledge-base surface -----------------------------------------------------------------
    def reference_corpus(self) -> Corpus | None:
        """The knowledge base as the target holds it, read without changing it; None when it cannot be read."""
        return None

    @property
    def can_write(self) -> bool:
        """Whether documents can be planted (and removed) in the target's knowledge base."""
        return self.writable

    @property
    def can_verify(self) -> bool:
        """Whether :meth:`exists` can tell if planted documents are still there."""
        return self.verifiable

    def ingest(self, docs: Sequence[Document]) -> list[str]:
        """Plant ``docs`` (their ids are the audit's own); returns the ids the target keeps them under."""
        raise TargetError(
            f"target {self.name} has no knowledge-base write surface: poisoning cannot run "
            "against it (see the target's ingest parameters)"
        )

    def remove(self, ids: Sequence[str]) -> None:
        """Remove planted documents by the ids :meth:`ingest` returned (removing an absent id is not an error)."""
        raise TargetError(f"target {self.name} has no knowledge-base write surface")

    def exists(self, ids: Sequence[str]) -> list[bool] | None:
        """For each id, whether it is still in the knowledge base; None when the target cannot tell."""
        return None

    # description --------------------------------------------------------------------------------
    # how to make the target report its contexts, for ``audit probe`` when it reported none ('' : nothing to set)
    contexts_hint = "set contexts_path to where the response holds its sources"

    def request_preview(self, text: str) -> str:
        """The request a query of ``text`` sends, for ``audit probe`` to show (no credential values; '' for a target
        that sends no request of its own)."""
        return ""

    def endpoint(self) -> str:
        """Where the audit's traffic goes, in words (a URL, a folder, a callable)."""
        return self.name

    def describe(self) -> dict[str, Any]:
        """Kind and parameters (secret-free: credentials are ``${NAME}`` references) for manifests and reports."""
        return {"kind": self.name, "params": self.params.to_dict(), "endpoint": self.endpoint()}


def timed_reply(t0: float, answer: str, contexts: Sequence[SourceItem], reported: bool, **info: Any) -> TargetReply:
    """A :class:`TargetReply` with the seconds since ``t0``."""
    return TargetReply(str(answer or ""), tuple(contexts), reported, round(time.perf_counter() - t0, 4), info)


def cut_at_limit(info: Mapping[str, Any]) -> bool:
    """Whether an answer stopped at its token limit rather than where the model ended it: the server's finish
    reason ``length`` when it gives one, otherwise a completion that used every token of ``token_limit``."""
    reason = str(info.get("finish_reason") or "")
    if reason:
        return reason == "length"
    limit, used = int(info.get("token_limit") or 0), int(info.get("completion_tokens") or 0)
    return bool(limit) and used >= limit


def as_sources(items: Any, text_keys: tuple[str, ...], id_keys: tuple[str, ...]) -> list[SourceItem]:
    """Contexts as returned by a service or a library — strings, objects with a text and an id, or LlamaIndex
    nodes (``NodeWithScore``) — as :class:`SourceItem` (items with no text are dropped)."""
    from .json_path import first_key

    if items is None:
        return []
    if isinstance(items, (str, dict)) or not isinstance(items, (list, tuple)):
        items = [items]
    out = []
    for it in items:
        if isinstance(it, str):
            out.append(SourceItem(it))
            continue
        if isinstance(it, dict):
            text = first_key(it, text_keys)
            cid = first_key(it, id_keys)
            score = it.get("score")
        else:  # a LlamaIndex NodeWithScore / TextNode, or any object with text and id attributes
            node = getattr(it, "node", it)
            text = node.get_content() if hasattr(node, "get_content") else getattr(node, "text", None)
            cid = getattr(node, "node_id", None) or getattr(node, "id_", None) or getattr(node, "id", None)
            score = getattr(it, "score", None)
        if text is None:
            continue
        try:
            score = float(score) if score is not None else None
        except (TypeError, ValueError):
            score = None
        out.append(SourceItem(str(text), "" if cid is None else str(cid), score))
    return out


TEXT_KEYS = ("text", "content", "page_content", "document", "chunk", "snippet", "node.text", "passage")
ID_KEYS = ("id", "doc_id", "document_id", "chunk_id", "node_id", "source", "metadata.id", "metadata.source")
