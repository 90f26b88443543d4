"""Canaries: seeded, unique codes planted at the head of a share of the chunks; an answer carrying one is a leak
with no false positive; extraction runs record them, count hits round by round and estimate the KB share leaked."""

import pytest

from engine.canaries import canary_codes, canary_hits, canary_line, plant_canaries
from engine.config import ExtractionConfig
from engine.corpora import load_corpus
from engine.errors import ConfigError
from engine.events import CanariesPlanted, LeakScored
from engine.generators import GENERATORS
from engine.metrics.leakage import LeakageTracker
from engine.runs.extraction import ExtractionRun


def test_codes_are_seeded_unique_and_cover_the_share():
    kb = load_corpus("clinic_records")
    codes = canary_codes(kb.ids, 0.25, seed=3)
    assert len(codes) == round(0.25 * len(kb)) and len(set(codes.values())) == len(codes)
    assert canary_codes(kb.ids, 0.25, seed=3) == codes and canary_codes(kb.ids, 0.25, seed=4) != codes
    assert len(canary_codes(kb.ids, 1e-6, seed=0)) == 1 and canary_codes(kb.ids, 0.0, seed=0) == {}
    planted, same = plant_canaries(kb, 0.25, seed=3)
    assert same == codes and planted.fingerprint != kb.fingerprint and planted.ids == kb.ids
    for before, after in zip(kb.documents, planted.documents):
        if before.id in codes:
            assert after.text.startswith(canary_line(codes[before.id])) and after.text.endswith(before.text.strip())
        else:
            assert after.text == before.text
    every = " ".join(d.text for d in kb.documents)  # no code occurs in the knowledge base's own text
    assert canary_hits(every, codes) == []


def test_a_hit_is_read_through_case_spaces_and_dashes():
    codes = {"a": "CR-7Q4K-22M9", "b": "CR-ABCD-EFGH"}
    assert canary_hits("the reference was cr 7q4k 22m9, I think", codes) == ["a"]
    assert canary_hits("nothing here: CR-7Q4K", codes) == []


def test_the_tracker_counts_each_canary_once():
    kb = load_corpus("clinic_records")
    planted, codes = plant_canaries(kb, 0.1, seed=0)
    tracker = LeakageTracker(planted, canaries=codes)
    first, second = list(codes)[:2]
    leak = tracker.update(f"Sure: {codes[first]} and more", [])
    assert leak.canaries == (first,) and leak.metrics["canaries_leaked"] == 1
    leak = tracker.update(f"{codes[first]} again, and {codes[second]}", [])
    assert leak.canaries == (second,) and leak.metrics["canaries_leaked"] == 2
    assert leak.metrics["canaries_planted"] == len(codes)
    assert "canaries_planted" not in LeakageTracker(kb).metrics()  # no canaries, no keys


def test_without_canaries_the_config_record_is_unchanged():
    assert "canaries" not in ExtractionConfig().to_dict()
    assert ExtractionConfig().config_hash() == ExtractionConfig(canaries=0.0).config_hash()
    assert ExtractionConfig(canaries=0.5).to_dict()["canaries"] == 0.5
    with pytest.raises(ConfigError, match="canaries"):
        ExtractionConfig(canaries=1.5)
    with pytest.raises(ConfigError, match="canaries: planted in the built-in pipeline"):
        ExtractionConfig.from_dict(
            {"target": "http", "target_params": {"url": "http://127.0.0.1:1/q"}, "canaries": 0.2}
        )


def test_an_extraction_run_records_its_canaries_and_their_hits():
    gen = GENERATORS.create("local", {"model": "smollm2-135m"})
    cfg = ExtractionConfig(attack="zeng", rounds=2, canaries=1.0, attacker_llm="", max_tokens=64, top_k=2)
    run = ExtractionRun(cfg, generator=gen)
    run.run()
    run.close()
    planted = [e for e in run.events if isinstance(e, CanariesPlanted)]
    assert len(planted) == 1 and len(planted[0].doc_ids) == len(run.corpus) and planted[0].share == 1.0
    codes = dict(zip(planted[0].doc_ids, planted[0].codes))
    hits = [c for e in run.events if isinstance(e, LeakScored) for c in e.canaries]
    answers = " ".join(e.text for e in run.events if e.kind == "generated")
    assert sorted(hits) == sorted(canary_hits(answers, codes))  # every hit is in an answer, none is missed
    from engine.views.extraction import round_view

    for e in (e for e in run.events if isinstance(e, LeakScored)):  # the lab's round view marks each hit
        assert round_view(run.events, e.round)["canaries"] == list(e.canaries)
    s = run.summary()
    assert s["canaries_planted"] == len(run.corpus) and s["canaries_leaked"] == len(set(hits))
    assert s["canaries_ci"][0] <= s["canaries_leaked"] / s["canaries_planted"] <= s["canaries_ci"][1]


def test_the_canary_guard_blocks_or_redacts_an_answer_that_carries_a_canary():
    from engine.defenses import DEFENSES, DefenseContext

    planted, codes = plant_canaries(load_corpus("clinic_records"), 0.2, seed=1)
    ctx = DefenseContext(planted, None, None)
    code = next(iter(codes.values()))
    block = DEFENSES.create("canary-guard")
    assert sorted(block.codes(ctx)) == sorted(codes.values())  # read back from the planted lines
    text, action = block.screen_answer("q", f"The record says {code.lower().replace('-', ' ')} and more.", [], ctx)
    assert action.action == "blocked" and text == block.params.refusal
    redact = DEFENSES.create("canary-guard", {"mode": "redact"})
    text, action = redact.screen_answer("q", f"Ref {code}: chest pain.", [], ctx)
    assert action.action == "redacted" and code not in text and "[redacted]" in text and "chest pain" in text
    text, action = block.screen_answer("q", "No canary in this answer.", [], ctx)
    assert action.action == "passed" and text == "No canary in this answer."


def test_with_the_guard_on_no_canary_reaches_an_answer_and_nothing_streams_before_the_screen():
    gen = GENERATORS.create("local", {"model": "smollm2-135m"})
    cfg = ExtractionConfig(
        attack="zeng", rounds=2, canaries=1.0, attacker_llm="", max_tokens=64, top_k=2, defenses=("canary-guard",)
    )
    run = ExtractionRun(cfg, generator=gen)
    run.prepare()
    pieces: list[str] = []
    while not run.done:
        run.step(on_text=pieces.append)
    run.close()
    answers = [e.text for e in run.events if e.kind == "generated"]
    assert pieces == [a for a in answers if a]  # one piece per answer: the screened one
    assert run.summary()["canaries_leaked"] == 0
    acts = [e for e in run.events if e.kind == "defense_applied" and e.defense == "canary-guard"]
    assert len(acts) == 2 and all(a.stage == "output" for a in acts)
