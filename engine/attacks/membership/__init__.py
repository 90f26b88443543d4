"""Membership-inference attacks (registry): is this record in the knowledge base?"""

from __future__ import annotations

from ...registry import Registry
from .base import MembershipAttack, MembershipContext
from .direct import DirectQuestion
from .mba import MaskBased
from .riddle import RiddleMeThis
from .s2mia import S2MIA

MEMBERSHIP_ATTACKS: Registry[MembershipAttack] = Registry("membership attack")
MEMBERSHIP_ATTACKS.register("direct")(DirectQuestion)
MEMBERSHIP_ATTACKS.register("s2mia")(S2MIA)
MEMBERSHIP_ATTACKS.register("mba")(MaskBased)
MEMBERSHIP_ATTACKS.register("riddle")(RiddleMeThis)


def make_membership_attack(
    name: str, params: dict | None = None, ctx: MembershipContext | None = None
) -> MembershipAttack:
    """A membership attack by registry name, its ``params`` validated."""
    cls = MEMBERSHIP_ATTACKS.get(name)
    return cls(cls.Params.from_dict(params, where=f"attack {name}"), ctx)


__all__ = ["MEMBERSHIP_ATTACKS", "MembershipAttack", "MembershipContext", "make_membership_attack"]
