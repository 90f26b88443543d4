"""Plain data contracts (BEIR-style): documents, queries and hits are frozen records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


TENANT_KEY = "tenant"  # the metadata field (and Chroma metadata key) naming a chunk's tenant


@dataclass(frozen=True)
class Document:
    """A retrievable unit (a chunk of a source document)."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tenant(self) -> str | None:
        """The chunk's tenant (metadata ``tenant``, :data:`TENANT_KEY`; multi-tenant KBs, engine/tenancy.py), or
        None when it carries none."""
        t = self.metadata.get(TENANT_KEY) if self.metadata else None
        return None if t is None or str(t) == "" else str(t)


@dataclass(frozen=True)
class Query:
    """A question with optional gold answer and gold document ids."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One retrieved document: exact score and 1-based rank under the retriever's similarity."""

    doc_id: str
    score: float
    rank: int
    is_poison: bool = False
