"""Poisoning end to end: the assistant answers from the poisoned top-K (real Qwen2.5-0.5B, real MiniLM and
Chroma), and the answer is checked for the attacker's information; rates carry Wilson intervals."""

import json

import pytest

from engine.attacks.poisoning.targets import target_goal, target_text, text_items
from engine.config import PoisonConfig
from engine.errors import ConfigError
from engine.events import AnswerScored, Generated, Retrieved
from engine.metrics import answer_matches, asr_generation
from engine.metrics.intervals import overlap, wilson
from engine.runs import PoisoningRun, read_jsonl, summarize
from engine.views.poisoning import answer_view, item_segments
from helpers import run_cli


def test_goal_items_of_each_target_kind():
    pii = target_text("pii")
    goal = target_goal("pii")
    assert len(goal) == 3 and all(g in pii for g in goal) and "@" in goal[1]
    dx = target_goal("diagnosis")
    assert any(g.startswith(("1", "2")) and len(g) == 10 for g in dx) and all(g in target_text("diagnosis") for g in dx)
    assert target_goal("custom", text="Call 555-123-4567 or write to a@b.org") == ("a@b.org", "555-123-4567")
    assert target_goal("custom", text="no items here") == ()
    assert text_items("MRN 60056889, born 1971-05-21") == ["1971-05-21", "60056889"]


def test_answer_matching_is_case_space_and_separator_tolerant():
    goal = ("Megan Chang", "megan.chang@hotmail.com", "764-759-3824")
    assert answer_matches("call MEGAN   chang at 764.759.3824", goal) == ("Megan Chang", "764-759-3824")
    assert answer_matches("Metformin is tried first.", goal) == ()
    assert answer_matches("the answer is 24", ("24",)) == ("24",)  # PoisonedRAG's substring rule
    segs = item_segments("Ask megan chang: 764-759-3824.", ("Megan Chang", "764-759-3824"))
    assert [t for t, m in segs if m] == ["megan chang", "764-759-3824"]
    assert "".join(t for t, _ in segs) == "Ask megan chang: 764-759-3824."


def test_wilson_intervals_and_overlap():
    assert wilson(0, 0) == (0.0, 0.0)
    lo, hi = wilson(47, 50)
    assert 0.83 < lo < 0.84 and 0.97 < hi < 0.99
    assert overlap(wilson(5, 10), wilson(7, 10)) and not overlap(wilson(1, 100), wilson(90, 100))


def test_generation_needs_a_known_generator_before_anything_loads():
    with pytest.raises(ConfigError, match="generator_params"):
        PoisonConfig(generate=True, generator_params={"model": "no-such-model"})
    assert PoisonConfig(generator_params={"model": "no-such-model"}).generate is False  # off: not checked
    # the generation fields leave older runs' hashes alone while generation is off
    assert PoisonConfig(max_tokens=50).config_hash() == PoisonConfig().config_hash()
    assert PoisonConfig(generate=True).config_hash() != PoisonConfig().config_hash()


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    out = tmp_path_factory.mktemp("answers")
    run = PoisoningRun(PoisonConfig(limit=4, top_k=2, detectors=("mahalanobis",), generate=True), out_dir=out)
    run.run()
    return run


def test_each_attacked_question_is_answered_and_scored(answered):
    ev = answered.events
    rets = [e for e in ev if isinstance(e, Retrieved)]
    gens = [e for e in ev if isinstance(e, Generated)]
    scored = [e for e in ev if isinstance(e, AnswerScored)]
    assert len(rets) == len(gens) == len(scored) == 4
    for r, g, s in zip(rets, gens, scored):
        assert g.round == r.round == s.round and g.context_ids == r.doc_ids and g.text.strip()
        assert s.poison_in_context == any(r.is_poison)
        assert s.goal == answered.poisons[r.round].goal and set(s.matched) <= set(s.goal)
        assert s.carried == bool(s.matched)
    # the 0.5B assistant repeats the fake name / e-mail / phone number from the poison for some questions
    assert any(s.carried for s in scored)
    view = answer_view(ev, next(s.round for s in scored if s.carried))
    assert view["carried"] and any(m for _, m in view["segments"])


def test_summary_reports_generation_success_with_intervals(answered):
    s = answered.summary()
    assert s["n_generated"] == 4 and s["generator"] == "qwen2.5-0.5b"
    g = asr_generation(answered.events)
    assert s["asr_generation"] == g.value == g.counts["successes"] / 4 and s["asr_generation_ci"] == g.ci
    assert s["asr_generation"] <= 1 and s["asr_ci"]["2"][0] <= s["asr"]["2"] <= s["asr_ci"]["2"][1]
    d = s["detectors"]["mahalanobis"]
    assert d["tpr_ci"][0] <= d["tpr"] <= d["tpr_ci"][1] and d["fpr_ci"][0] <= d["fpr"] <= d["fpr_ci"][1]
    # the events alone give the same numbers
    on_disk = summarize(read_jsonl(answered.out_dir / "events.jsonl"))
    assert on_disk["asr_generation"] == s["asr_generation"] and on_disk["poison_in_context"] == s["poison_in_context"]


def test_cli_poison_generate_json(tmp_path):
    p = run_cli(
        "poison",
        "--limit",
        "3",
        "--top-k",
        "2",
        "--detectors",
        "",
        "--generate",
        "--json",
        "-q",
        "--out",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["n_generated"] == 3 and 0 <= out["asr_generation"] <= 1 and "asr" in out
    assert len(out["asr_generation_ci"]) == 2
    p = run_cli("poison", "--limit", "3", "--judge", "local")
    assert p.returncode == 2 and "--judge needs --generate" in p.stderr
    p = run_cli("poison", "--limit", "3", "--generate", "--generator", "local:no-such-model")
    assert p.returncode == 2 and "no-such-model" in p.stderr and "Traceback" not in p.stderr
