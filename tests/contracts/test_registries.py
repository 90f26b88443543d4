"""Contract tests over every registry entry: builds from defaults, documented, cites its source."""

import numpy as np
import pytest

from engine.attacks.extraction import EXTRACTION_ATTACKS, AttackContext, Exchange, make_agent
from engine.attacks.membership import MEMBERSHIP_ATTACKS
from engine.attacks.poisoning import PARAPHRASERS, POISONING_ATTACKS, make_attack
from engine.defenses import DEFENSES, STAGES, Defense
from engine.detectors import DETECTORS
from engine.embedders import RETRIEVERS
from engine.generators import GENERATORS
from engine.errors import ModelUnavailableError
from engine.params import Params
from engine.targets import TARGETS
from engine.types import Query

ALL = [
    (reg, name)
    for reg in (
        RETRIEVERS,
        POISONING_ATTACKS,
        DETECTORS,
        PARAPHRASERS,
        GENERATORS,
        EXTRACTION_ATTACKS,
        MEMBERSHIP_ATTACKS,
        DEFENSES,
        TARGETS,
    )
    for name in reg.names()
]
OFFLINE_RETRIEVERS = {"minilm", "mpnet", "e5-small", "bm25"}


@pytest.mark.parametrize("reg,name", ALL, ids=[f"{r.kind}:{n}" for r, n in ALL])
def test_entry_builds_from_defaults_and_cites_source(reg, name):
    cls = reg.get(name)
    doc = (cls.__doc__ or "").strip()
    assert doc.splitlines()[0], "first docstring line describes the plugin"
    assert "Source:" in doc, f"{name} must cite its source in the docstring"
    assert len(reg.source(name)) > 10, "the citation `python -m engine list` prints"
    assert issubclass(cls.Params, Params)
    params = cls.Params()
    assert cls.Params.from_dict(params.to_dict()) == params
    for f in cls.Params.describe():
        assert f["help"], f"{name}.{f['name']} needs help text for its UI widget"
    if reg is POISONING_ATTACKS:
        obj = make_attack(name)
    elif reg is EXTRACTION_ATTACKS:
        obj = make_agent(name, None, AttackContext(embedder=RETRIEVERS.create("minilm")))
    else:
        obj = reg.create(name)
    assert obj.params == params


@pytest.mark.parametrize("name", sorted(OFFLINE_RETRIEVERS - {"bm25"}))
def test_offline_dense_retrievers_embed(name):
    r = RETRIEVERS.create(name)
    q = r.encode_queries(["what lowers blood pressure?"])
    d, _ = r.encode_documents(
        ["Lisinopril is an ACE inhibitor that lowers blood pressure.", "Casts immobilise fractured bones."]
    )
    assert q.shape[0] == 1 and d.shape[0] == 2 and q.shape[1] == d.shape[1]
    s = r.score(q, d)[0]
    assert s[0] > s[1], "the relevant document scores higher"
    assert r.similarity in ("ip", "cosine")


def test_hub_only_retrievers_fail_clearly_offline():
    for name in sorted(set(RETRIEVERS.names()) - OFFLINE_RETRIEVERS - {"sentence-transformers"}) + [
        "sentence-transformers"
    ]:
        r = RETRIEVERS.create(name)
        with pytest.raises(ModelUnavailableError, match="could not be loaded"):
            r.encode_queries([f"offline check {name}"])


def test_bm25_scores_lexically():
    r = RETRIEVERS.create("bm25")
    idx = r.build_index(["lisinopril lowers blood pressure", "casts immobilise bones", "blood tests"])
    base, _ = idx.scores("blood pressure medicine")
    assert np.argmax(base) == 0


@pytest.mark.parametrize("name", POISONING_ATTACKS.names())
def test_attack_crafts_one_document_per_target(name):
    qs = [
        Query(
            "q1", "Is aspirin useful for blood pressure after a heart attack?", {"adv_texts": ("a", "b", "c", "d", "e")}
        ),
        Query("q2", "What does HbA1c measure?", {"adv_texts": ("f", "g", "h", "i", "j")}),
    ]
    attack = make_attack(name)
    if attack.needs("index"):
        attack.bind(lambda texts, k: [["a clean neighbour document"] * k for _ in texts])
    poisons = attack.craft(qs)
    assert {p.query_id for p in poisons} == {"q1", "q2"}
    assert len({p.doc.id for p in poisons}) == len(poisons)
    for p in poisons:
        assert p.doc.text.strip()


def test_every_bundled_preset_validates():
    from engine.config import PRESET_KINDS, list_presets, load_preset

    presets = list_presets()
    assert {"quick-demo", "universal-poisoning-table1"} <= {p["name"] for p in presets}
    for p in presets:
        kind, cfg, meta = load_preset(p["name"])
        assert isinstance(cfg, PRESET_KINDS[kind]) and meta["description"].strip()


def test_engine_is_headless():
    """The engine is a library: importing and running it never imports Streamlit."""
    import subprocess
    import sys

    code = (
        "import sys, engine; engine.PoisoningRun(engine.PoisonConfig(limit=2, detectors=())).run(); "
        "assert 'streamlit' not in sys.modules, 'streamlit imported'"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=__import__("pathlib").Path(__file__).resolve().parents[2],
    )
    assert p.returncode == 0, p.stderr[-2000:]


@pytest.mark.parametrize("name", EXTRACTION_ATTACKS.names())
def test_extraction_agent_respects_its_budget_and_exposes_json_state(name):
    import json

    agent = make_agent(name, {"budget": 2}, AttackContext(seed=3, embedder=RETRIEVERS.create("minilm")))
    q1 = agent.next_query([])
    q2 = agent.next_query([Exchange(q1, "Patient: I have a cough.\n\nDoctor: It is probably a cold, rest.")])
    assert q1.strip() and q2.strip()
    assert agent.next_query([Exchange(q1, "a"), Exchange(q2, "b")]) is None
    state = json.loads(json.dumps(agent.state()))
    assert state["seen"] == 2


@pytest.mark.parametrize("name", DEFENSES.names())
def test_defense_acts_at_one_stage_and_implements_its_hook(name):
    cls = DEFENSES.get(name)
    assert cls.stage in STAGES
    hook = cls.hook()
    assert getattr(cls, hook) is not getattr(Defense, hook), f"{name} must implement {hook}()"


def test_every_hook_a_plugin_author_overrides_is_documented():
    """A method of the engine that only raises NotImplementedError is a hook a plugin author implements: it
    says what it receives, returns and may raise."""
    import ast
    from pathlib import Path

    missing = []
    for path in sorted((Path(__file__).resolve().parents[2] / "engine").rglob("*.py")):
        for cls in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)):
            for f in cls.body:
                if (
                    isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and any(
                        isinstance(n, ast.Raise) and n.exc is not None and "NotImplementedError" in ast.unparse(n.exc)
                        for n in ast.walk(f)
                    )
                    and not ast.get_docstring(f)
                ):
                    missing.append(f"{path.name}:{f.lineno} {cls.name}.{f.name}")
    assert missing == [], f"hooks without a docstring: {missing}"
