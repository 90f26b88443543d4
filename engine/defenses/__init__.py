"""Defense registry, by pipeline stage (see :mod:`engine.defenses.base`); any subset can be on at once."""

from ..registry import Registry
from .base import STAGES, Chunk, Defense, DefenseAction, DefenseContext
from .canary_guard import CanaryGuard
from .cascade import CascadeGeneration
from .intent import QueryIntentBlock
from .llm_rewrite import Paraphrase, Summarize
from .mirabel import DetectAndHide
from .reindex import ContrastiveReindex
from .rerank import RerankCut
from .system_prompt import DefensiveSystemPrompt
from .perplexity import PerplexityFilter
from .robustrag import IsolateAggregate
from .threshold import DistanceThreshold
from .trustrag import ClusterFilter

DEFENSES: Registry[Defense] = Registry("defense")
DEFENSES.register("threshold")(DistanceThreshold)
DEFENSES.register("rerank")(RerankCut)
DEFENSES.register("summarize")(Summarize)
DEFENSES.register("paraphrase")(Paraphrase)
DEFENSES.register("system-prompt")(DefensiveSystemPrompt)
DEFENSES.register("intent-block")(QueryIntentBlock)
DEFENSES.register("reindex")(ContrastiveReindex)
DEFENSES.register("cascade")(CascadeGeneration)
DEFENSES.register("perplexity")(PerplexityFilter)
DEFENSES.register("trustrag-cluster")(ClusterFilter)
DEFENSES.register("isolate-aggregate")(IsolateAggregate)
DEFENSES.register("detect-and-hide")(DetectAndHide)
DEFENSES.register("canary-guard")(CanaryGuard)


def make_defenses(names, params=None) -> list[Defense]:
    """Instances in pipeline-stage order; ``params`` maps a defense name to its parameters."""
    params = dict(params or {})
    out = [DEFENSES.create(n, params.get(n)) for n in dict.fromkeys(names)]
    return sorted(out, key=lambda d: STAGES.index(d.stage))


__all__ = ["DEFENSES", "STAGES", "Chunk", "Defense", "DefenseAction", "DefenseContext", "make_defenses"]
