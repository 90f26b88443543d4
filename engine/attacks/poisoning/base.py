"""The poisoning-attack contract: one verb, ``craft(queries) -> poisons``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from ...params import Params
from ...types import Document, Query


@dataclass(frozen=True)
class Poison:
    """A document to inject and the query it is aimed at."""

    doc: Document
    query_id: str
    target_kind: str


class PoisoningAttack:
    """Base class: crafts the documents to inject for a set of protected queries."""

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]]

    def __init__(self, params: Params, *, seed: int = 0, data_dir: str | None = None) -> None:
        self.params = params
        self.seed = seed
        self.data_dir = data_dir

    def craft(self, queries: Sequence[Query]) -> list[Poison]:
        raise NotImplementedError
