"""The defense contract: a plugin acts at one stage of the RAG pipeline and reports what it did.

Stages, in pipeline order (any subset of defenses can be on at once):

* ``index``      — replaces the document index before any query (RAGFort reindexing);
* ``query``      — may block a query before retrieval (query-intent block);
* ``retrieval``  — filters / re-orders the retrieved chunks (distance threshold, re-rank cut);
* ``context``    — rewrites the chunks the generator will see (summarize, paraphrase);
* ``prompt``     — adds to the system prompt (defensive system prompt);
* ``generation`` — produces the answer itself (RAGFort constrained cascade generation);
* ``output``     — screens the finished answer: passes, redacts or replaces it (canary guard). Answers are not
  streamed while an output-stage defense is on (the screen sees the whole answer before anyone does).

Every hook returns what it did as a :class:`DefenseAction`, which the run records as an event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Optional, Sequence

from ..capabilities import Declares
from ..params import Params
from ..progress import Progress

if TYPE_CHECKING:
    from ..corpora import Corpus
    from ..embedders.base import Retriever
    from ..generators.base import Generation, Generator
    from ..store import BaseIndex, StoreSettings

STAGES = ("index", "query", "retrieval", "context", "prompt", "generation", "output")
STAGE_HOOKS = {
    "index": "reindex",
    "query": "check_query",
    "retrieval": "filter",
    "context": "rewrite",
    "prompt": "system_prompt",
    "generation": "generate",
    "output": "screen_answer",
}  # the method a defense of each stage overrides


@dataclass(frozen=True)
class Chunk:
    """A retrieved chunk as the pipeline carries it: id, exact score and rank, and its text."""

    doc_id: str
    text: str
    score: float
    rank: int


@dataclass(frozen=True)
class DefenseAction:
    """What one defense did at its stage (``action``) and the details, recorded as a ``defense_applied`` event."""

    defense: str
    stage: str
    action: str  # e.g. blocked, passed, dropped, rewritten, reindexed, generated
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class DefenseContext:
    """What a defense may use when it is set up for a knowledge base."""

    corpus: "Corpus"
    retriever: "Retriever"
    generator: Optional["Generator"]
    settings: Optional["StoreSettings"] = None
    progress: Optional[Progress] = None


class Defense(Declares):
    """Base class; a subclass sets ``stage`` and overrides that stage's hook (:data:`STAGE_HOOKS`). Every defense
    acts inside the engine's own pipeline (``requires = {"pipeline"}``, :mod:`engine.capabilities`); one that asks
    the pipeline's generator for more adds ``"generator"``."""

    requires = frozenset({"pipeline"})

    name: ClassVar[str] = ""
    stage: ClassVar[str] = ""
    Params: ClassVar[type[Params]]
    token_report: ClassVar[bool] = False  # its answers carry per-token decoding statistics (the lab charts them)

    def __init__(self, params: Params) -> None:
        self.params = params

    def describe(self) -> dict:
        """Name, stage and parameters (for the run manifest)."""
        return {"name": self.name, "stage": self.stage, "params": self.params.to_dict()}

    @classmethod
    def hook(cls) -> str:
        """The name of the method this defense's stage calls."""
        return STAGE_HOOKS[cls.stage]

    def action(self, action: str, **detail: Any) -> DefenseAction:
        """A :class:`DefenseAction` stamped with this defense's name and stage; ``detail`` should be JSON-able."""
        return DefenseAction(self.name, self.stage, action, detail)

    # hooks (each stage overrides its own)
    def reindex(self, base: "BaseIndex", ctx: DefenseContext) -> tuple["BaseIndex", DefenseAction]:
        """Index stage: a replacement for ``base``, built once before any query, and what was done."""
        raise NotImplementedError

    def check_query(self, query: str, ctx: DefenseContext) -> DefenseAction:
        """Query stage: ``blocked`` (with a ``refusal`` in the detail, given as the answer) or ``passed``."""
        raise NotImplementedError

    def filter(self, query: str, chunks: Sequence[Chunk], ctx: DefenseContext) -> tuple[list[Chunk], DefenseAction]:
        """Retrieval stage: the chunks kept from the top-K (possibly re-ordered) and what was dropped."""
        raise NotImplementedError

    def rewrite(self, query: str, chunks: Sequence[Chunk], ctx: DefenseContext) -> tuple[list[Chunk], DefenseAction]:
        """Context stage: the chunks as the generator will see them (same ids, new text)."""
        raise NotImplementedError

    def system_prompt(self) -> str:
        """Prompt stage: text added to the system prompt."""
        raise NotImplementedError

    def generate(
        self,
        messages: Sequence[dict],
        chunks: Sequence[Chunk],
        ctx: DefenseContext,
        max_tokens: int,
        *,
        question: str = "",
        context: Optional[Sequence[Chunk]] = None,
    ) -> "Generation":
        """Generation stage: the answer itself, in place of the pipeline's generator, in at most ``max_tokens``.
        ``chunks`` are the retrieved chunks as retrieved (protected text), ``context`` what the earlier stages
        left of them, ``question`` the user's question."""
        raise NotImplementedError

    def screen_answer(
        self, question: str, answer: str, chunks: Sequence[Chunk], ctx: DefenseContext
    ) -> tuple[str, DefenseAction]:
        """Output stage: the answer as the user will get it (``answer`` unchanged, redacted or replaced by a
        refusal) and what was done. ``chunks`` are the retrieved chunks as retrieved, ``question`` the user's."""
        raise NotImplementedError
