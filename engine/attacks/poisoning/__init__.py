"""Corpus-poisoning attacks (registry)."""

from __future__ import annotations

from ...registry import Registry
from .adaptive import CamouflagedPoisoning, clean_searcher
from .base import Poison, PoisoningAttack
from .paraphrase import PARAPHRASERS, RuleParaphraser
from .poisonedrag import PoisonedRAGBlackBox
from .targets import TARGET_KINDS, target_text
from .trigger import JammingPoisoning, TriggerPoisoning
from .universal import ParaphrasedPoisoning, UniversalPoisoning

POISONING_ATTACKS: Registry[PoisoningAttack] = Registry("attack")
POISONING_ATTACKS.register("universal")(UniversalPoisoning)
POISONING_ATTACKS.register("paraphrased")(ParaphrasedPoisoning)
POISONING_ATTACKS.register("poisonedrag")(PoisonedRAGBlackBox)
POISONING_ATTACKS.register("camouflaged")(CamouflagedPoisoning)
POISONING_ATTACKS.register("trigger")(TriggerPoisoning)
POISONING_ATTACKS.register("jamming")(JammingPoisoning)


def make_attack(
    name: str, params: dict | None = None, *, seed: int = 0, data_dir: str | None = None
) -> PoisoningAttack:
    """A poisoning attack by registry name with validated ``params``; ``seed`` and ``data_dir`` pick its targets."""
    cls = POISONING_ATTACKS.get(name)
    p = cls.Params.from_dict(params, where=f"attack {name}")
    return cls(p, seed=seed, data_dir=data_dir)


__all__ = [
    "CamouflagedPoisoning",
    "clean_searcher",
    "POISONING_ATTACKS",
    "PARAPHRASERS",
    "Poison",
    "PoisoningAttack",
    "TARGET_KINDS",
    "make_attack",
    "target_text",
    "UniversalPoisoning",
    "ParaphrasedPoisoning",
    "PoisonedRAGBlackBox",
    "RuleParaphraser",
    "TriggerPoisoning",
    "JammingPoisoning",
]
