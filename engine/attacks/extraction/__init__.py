"""Knowledge-base extraction attacks (registry): black-box agents that ask, read and ask again."""

from __future__ import annotations

from ...registry import Registry
from .base import AttackContext, Exchange, ExtractionAgent
from .benign import CodeClaimAgent, IkeaAgent
from .rag_thief import RagThiefAgent
from .seeds import INFORMATION_KINDS
from .worm import WormAgent
from .zeng import ZengAgent

EXTRACTION_ATTACKS: Registry[ExtractionAgent] = Registry("extraction attack")
EXTRACTION_ATTACKS.register("zeng")(ZengAgent)
EXTRACTION_ATTACKS.register("worm")(WormAgent)
EXTRACTION_ATTACKS.register("rag-thief")(RagThiefAgent)
EXTRACTION_ATTACKS.register("ikea")(IkeaAgent)
EXTRACTION_ATTACKS.register("code-claim")(CodeClaimAgent)


def make_agent(name: str, params: dict | None = None, ctx: AttackContext | None = None) -> ExtractionAgent:
    """An extraction agent by registry name, its ``params`` validated, with the attacker's resources ``ctx``."""
    cls = EXTRACTION_ATTACKS.get(name)
    return cls(cls.Params.from_dict(params, where=f"attack {name}"), ctx)


__all__ = [
    "AttackContext",
    "EXTRACTION_ATTACKS",
    "Exchange",
    "ExtractionAgent",
    "INFORMATION_KINDS",
    "RagThiefAgent",
    "WormAgent",
    "ZengAgent",
    "IkeaAgent",
    "CodeClaimAgent",
    "make_agent",
]
