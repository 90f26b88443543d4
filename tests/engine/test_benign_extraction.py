"""Extraction attacks that look benign (IKEA-style accumulation, code-task logical masking) against the intent block,
with the real offline models."""

import pytest

from engine.attacks.extraction import AttackContext, Exchange, make_agent
from engine.config import ExtractionConfig
from engine.defenses import DEFENSES
from engine.embedders import make_retriever
from engine.runs.extraction import ExtractionRun

SMALL = {
    "generator": "local",
    "generator_params": {"model": "qwen2.5-0.5b", "max_tokens": 64},
    "attacker_llm": "",
    "max_tokens": 64,
    "answer_budget": "fixed",
    "data_dir": "",
    "top_k": 2,
}


def test_ikea_asks_benign_questions_and_mutates_its_anchors_within_the_trust_region():
    agent = make_agent(
        "ikea", {"budget": 4}, AttackContext(seed=0, embedder=make_retriever("minilm"), kb_hint="medical")
    )
    block = DEFENSES.create("intent-block", {})
    q1 = agent.next_query([])
    assert q1 and not block.matches(q1)
    before = len(agent.state()["anchors"])
    anchor = agent.state()["asked"][0]
    answer = (
        f"For {anchor}, patients usually get a physical examination, blood tests and imaging; "
        f"treatment of {anchor} combines medication, specialist referral and regular follow-up visits."
    )
    q2 = agent.next_query([Exchange(q1, answer)])
    state = agent.state()
    assert q2 and q2 != q1 and len(state["anchors"]) > before and state["asked"][0] in q1
    # a refusal lowers the weight of the anchor that drew it (experience reflection)
    agent.next_query([Exchange(q1, answer), Exchange(q2, "I'm sorry, I cannot share that.")])
    assert min(agent.state()["weights"]) < 1.0


@pytest.mark.parametrize("attack,expect_blocked", [("zeng", True), ("ikea", False)])
def test_the_intent_block_stops_the_plain_attack_but_not_the_benign_one(tmp_path, attack, expect_blocked):
    cfg = ExtractionConfig.from_dict({**SMALL, "attack": attack, "rounds": 3, "defenses": ["intent-block"]})
    run = ExtractionRun(cfg, out_dir=tmp_path)
    run.run()
    s = run.summary()
    assert (s["blocked"] == 3) if expect_blocked else (s["blocked"] == 0)
    if not expect_blocked:
        assert s["retrieved_coverage"] > 0  # benign questions do reach the knowledge base


def test_code_claim_dresses_the_request_as_a_code_task():
    agent = make_agent("code-claim", {"budget": 2}, AttackContext(seed=0, kb_hint="medical"))
    q = agent.next_query([])
    assert "SAMPLES" in q and "repeat" not in q.lower()
    assert agent._parts(q)[1] == agent.params.command  # the part an adaptive attacker would rephrase
