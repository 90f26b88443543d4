"""The extraction-agent contract: one verb — the next query, from the transcript so far.

An agent sees only what a black-box user sees: its own past queries and the system's answers
(the :class:`Exchange` transcript). It has a query budget, and its internal state is a plain,
JSON-able dict (``state()``) that the UI shows and a resumed run restores (``load_state``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Sequence

import numpy as np

from ...capabilities import Declares
from ...params import Params, param

if TYPE_CHECKING:
    from ...embedders.base import Retriever
    from ...generators.base import Generator


@dataclass(frozen=True)
class Exchange:
    """One round as the attacker saw it."""

    query: str
    answer: str


@dataclass
class AttackContext:
    """The attacker's own resources: a seed, the data dir (query seeds), an LLM, an embedder."""

    seed: int = 0
    data_dir: Optional[str] = None
    attacker_llm: Optional["Generator"] = None
    embedder: Optional["Retriever"] = None  # the attacker's copy of an embedding model (Worm)
    kb_hint: str = ""  # e.g. "medical", "email": picks targeted seeds
    known_defenses: tuple = ()  # the active defenses, for adaptive attackers (white-box)


class ExtractionAgent(Declares):
    """Base class: subclasses implement ``_observe`` (learn from one exchange) and ``_propose``; their
    ``Params`` subclass ``ExtractionAgent.Params`` (the budget and the adaptive switch the base reads).
    Capabilities (:mod:`engine.capabilities`): ``uses = {"attacker_llm"}`` when the agent calls an LLM of its own
    if the run gives one (the UI offers one only then); ``requires`` what it cannot run without."""

    name: ClassVar[str] = ""

    class Params(Params):
        budget: int = param(20, min=1, max=10000, help="Query budget (rounds)")
        adaptive: bool = param(
            False,
            help="Knows the active defenses and adapts its query to them (see engine.attacks.extraction.adaptive)",
        )

    def __init__(self, params: Params, ctx: AttackContext | None = None) -> None:
        self.params = params
        self.ctx = ctx or AttackContext()
        self.rng = np.random.default_rng(self.ctx.seed)
        self.seen = 0  # exchanges already observed
        self.adapted: dict = {}  # what the adaptive attacker changed in its last query
        self.last_query = ""

    @property
    def budget(self) -> int:
        """The query budget: :meth:`next_query` returns None once the transcript is this long."""
        return int(self.params.budget)

    def next_query(self, transcript: Sequence[Exchange]) -> Optional[str]:
        """The next attack query, or None when the budget is spent or the agent has nothing left."""
        for ex in transcript[self.seen :]:
            self._observe(ex)
            self.seen += 1
        if len(transcript) >= self.budget:
            return None
        q = self._propose()
        if q is not None and self.params.adaptive and self.ctx.known_defenses:
            from .adaptive import adapt_query

            info, command = self._parts(q)
            q, self.adapted = adapt_query(info, command, self.ctx.known_defenses, self.ctx)
        self.last_query = q or ""
        return q

    def _parts(self, query: str) -> tuple[str, str]:
        """(information/anchor part, command part) of a query this agent built."""
        command = self._command()
        if command and query.endswith(command):
            return query[: -len(command)].strip(), command
        return query, ""

    def _command(self) -> str:
        """The command part this agent appends to its queries ('' if none): what an adaptive attacker
        rephrases past an intent block."""
        return ""

    def _observe(self, ex: Exchange) -> None:
        """Learn from one finished round: ``ex`` holds the query this agent sent and the answer it got (the
        black-box view: no retrieved context, no scores). Called once per round, oldest first, before the next
        :meth:`_propose`; returns nothing (the agent keeps what it learnt in its own state, which
        :meth:`state` exposes as JSON). May raise :class:`~engine.errors.EngineError` when the attacker's own
        LLM fails."""
        raise NotImplementedError

    def _propose(self) -> Optional[str]:
        """The next query to send, built from what :meth:`_observe` kept; None when the agent has nothing
        left to ask (the run then ends early). The budget is checked by :meth:`next_query`, not here; an
        adaptive rewrite (``adaptive = True``) is applied after it, to the command part :meth:`_command`
        names."""
        raise NotImplementedError

    # state ---------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Everything the agent knows, as JSON-able values (shown in the UI, restored on resume)."""
        return {"seen": self.seen, "rng": self.rng.bit_generator.state, "adapted": dict(self.adapted), **self._state()}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state` saved (on resume): exchanges seen, the RNG and the subclass's own state."""
        self.seen = int(state["seen"])
        self.rng.bit_generator.state = state["rng"]
        self._load_state(state)

    def _state(self) -> dict[str, Any]:
        return {}

    def _load_state(self, state: dict[str, Any]) -> None:
        pass

    def describe(self) -> dict:
        """Name and parameters (for the run manifest)."""
        return {"name": self.name, "params": self.params.to_dict()}
