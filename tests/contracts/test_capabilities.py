"""Declared capabilities: every plugin's ``requires`` / ``uses`` come from the vocabulary, and a run whose
configuration cannot give a plugin what it needs is refused by its config, with one line naming the plugin, the
capability and what to change, before any model or data loads."""

import pytest

from engine.attacks.extraction import EXTRACTION_ATTACKS
from engine.attacks.membership import MEMBERSHIP_ATTACKS
from engine.attacks.poisoning import POISONING_ATTACKS
from engine.capabilities import CAPABILITIES, check_requirements, unknown_capabilities
from engine.config import AuditConfig, ComparisonConfig, ExtractionConfig, MembershipConfig, PoisonConfig
from engine.defenses import DEFENSES
from engine.errors import ConfigError

PLUGINS = [
    (reg, name) for reg in (EXTRACTION_ATTACKS, MEMBERSHIP_ATTACKS, POISONING_ATTACKS, DEFENSES) for name in reg.names()
]


@pytest.mark.parametrize("reg,name", PLUGINS, ids=[f"{r.kind}:{n}" for r, n in PLUGINS])
def test_declared_capabilities_are_in_the_vocabulary(reg, name):
    cls = reg.get(name)
    assert not unknown_capabilities(cls), f"{name} declares capabilities the vocabulary lacks"
    assert cls.needs("nothing-declared") is False
    for cap in cls.requires:
        assert cls.needs(cap) and cls.can_use(cap)


def test_every_capability_is_declared_by_some_plugin():
    declared = set()
    for reg, name in PLUGINS:
        cls = reg.get(name)
        declared |= set(cls.requires) | set(cls.uses)
    assert declared == set(CAPABILITIES), "a capability nobody declares (or an undeclared one) in the vocabulary"


def test_one_error_names_every_unmet_need():
    with pytest.raises(ConfigError) as e:
        check_requirements(
            "extraction",
            [("attack", "worm", EXTRACTION_ATTACKS.get("worm")), ("defense", "summarize", DEFENSES.get("summarize"))],
            {"generator"},
            {"pipeline": "target 'http' runs its own"},
        )
    msg = str(e.value)
    assert msg.startswith("this extraction run cannot start: ")
    assert "attack 'worm' needs a dense retriever" in msg
    assert "defense 'summarize' needs the engine's own RAG pipeline" in msg and "target 'http' runs its own" in msg
    assert "\n" not in msg


def test_worm_with_a_sparse_retriever_is_refused_by_its_config():
    msg = r"attack 'worm' needs a dense retriever \(vectors, not BM25\) — retriever 'bm25' is not dense"
    with pytest.raises(ConfigError, match=msg):
        ExtractionConfig(attack="worm", retriever="bm25")
    ExtractionConfig(attack="rag-thief", retriever="bm25")  # the others do without


def test_defenses_against_an_external_target_are_refused():
    with pytest.raises(ConfigError, match="defense 'threshold' needs the engine's own RAG pipeline"):
        ExtractionConfig(target="http", target_params={"url": "http://127.0.0.1:9/x"}, kb="", defenses=("threshold",))


def test_index_querying_poisoning_attack_is_refused_in_an_audit():
    (adaptive,) = [n for n in POISONING_ATTACKS.names() if POISONING_ATTACKS.get(n).needs("index")]
    with pytest.raises(ConfigError, match=f"poisoning attack '{adaptive}' needs the clean index"):
        AuditConfig(poisoning_attacks=(adaptive,))
    PoisonConfig(attack=adaptive)  # a poisoning run provides the index


def test_generator_needing_defense_in_a_retrieval_only_poisoning_run():
    with pytest.raises(ConfigError, match="switch generation on"):
        PoisonConfig(defenses=("summarize",))


def test_a_comparison_checks_every_cell_before_any_starts():
    with pytest.raises(ConfigError, match="attack 'worm' needs a dense retriever"):
        ComparisonConfig(base={"retriever": "bm25"}, attacks=("rag-thief", "worm"), configurations=("none",))


def test_membership_runs_check_their_defenses():
    MembershipConfig(defenses=("detect-and-hide", "cascade"))  # the pipeline and its generator are always there
