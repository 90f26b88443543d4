"""The poisoning runner end to end with the real MiniLM model and a real Chroma."""

import json

import pytest

from engine.config import PoisonConfig
from engine.errors import ConfigError
from engine.metrics import asr, detection
from engine.runs import PoisoningRun, read_jsonl, summarize
from engine.events import PoisonInjected, Retrieved, RunEnded, RunStarted, jsonable
from engine.summaries import PoisoningSummary


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    run = PoisoningRun(PoisonConfig(detectors=("l2", "l2-distance", "mahalanobis")), out_dir=out)
    run.run()
    return run


def test_quick_demo_attack_succeeds(demo_run):
    s = demo_run.summary()
    assert s["n_queries"] >= 60 and s["corpus_size"] >= 150
    assert s["asr"]["2"] >= 0.9 and s["asr"]["5"] >= s["asr"]["2"] >= s["asr"]["1"]
    assert s["store_agreement"] >= 0.9


def test_events_are_typed_frozen_and_ordered(demo_run):
    ev = demo_run.events
    assert isinstance(ev[0], RunStarted) and isinstance(ev[-1], RunEnded)
    assert [e.seq for e in ev] == list(range(len(ev)))
    with pytest.raises(Exception):
        ev[0].seq = 5
    m = ev[0].manifest
    assert m["corpus"]["fingerprint"] and m["config_hash"] and m["packages"]["chromadb"] != "not installed"


def test_jsonl_roundtrip_gives_the_same_metrics(demo_run):
    path = demo_run.out_dir / "events.jsonl"
    back = read_jsonl(path)
    assert len(back) == len(demo_run.events)
    assert [type(e) for e in back] == [type(e) for e in demo_run.events]
    a, b = summarize(back), demo_run.summary()
    assert json.dumps(jsonable(a), sort_keys=True) == json.dumps(jsonable(b), sort_keys=True)
    assert (demo_run.out_dir / "manifest.json").is_file()


def test_the_summary_is_typed_and_reads_as_its_json(demo_run):
    s = demo_run.summary()
    assert isinstance(s, PoisoningSummary)
    assert s.asr == s["asr"] and s.n_queries == s["n_queries"] and s.detectors["mahalanobis"]["auroc"] > 0.5
    assert s.generation is None and "asr_generation" not in s and "trigger" not in s  # sections it lacks
    on_disk = json.loads((demo_run.out_dir / "summary.json").read_text())
    assert on_disk == jsonable(s) == dict(demo_run.events[-1].summary)  # summary.json = the run_ended event
    back = PoisoningSummary.from_dict(on_disk)
    assert jsonable(back) == on_disk
    flat = PoisoningSummary.from_dict({**on_disk, "asr_generation": 0.5, "n_generated": 4})
    assert flat.generation == {"asr_generation": 0.5, "n_generated": 4} and flat["asr_generation"] == 0.5


def test_detectors_reported_honestly(demo_run):
    d = demo_run.summary()["detectors"]
    assert 0.3 <= d["l2"]["auroc"] <= 0.7, "normalised embeddings: the l2-norm filter is near chance"
    assert d["mahalanobis"]["auroc"] >= 0.9
    assert d["mahalanobis"]["fpr_in_sample"] >= d["mahalanobis"]["fpr"]
    assert d["mahalanobis"]["beta"] in (0.001, 0.005, 0.01, 0.05, 0.1, 0.2)


def test_metrics_are_pure_functions_of_events(demo_run):
    ev = list(demo_run.events)
    assert asr(ev, 2).value == asr(ev, 2).value
    rs = [e for e in ev if isinstance(e, Retrieved)]
    manual = sum(min(e.target_ranks) <= 2 for e in rs) / len(rs)
    assert asr(ev, 2).value == manual
    assert detection(ev, "mahalanobis")["tpr"].counts["poisons"] == len(rs)


def test_preparation_reports_each_stage_it_spends_time_in():
    """A page's bar reads the stage: after the queries' embedding come the injection and each detector's fit (the
    bar stood full on "embedding queries and poisons 2/2" while they ran)."""
    seen: list[tuple[str, int, int]] = []
    run = PoisoningRun(PoisonConfig(limit=3, detectors=("l2", "mahalanobis")), progress=lambda *a: seen.append(a))
    run.prepare()
    run.close()
    stages = list(dict.fromkeys(s for s, _, _ in seen))
    assert stages[-3:] == ["embedding queries and poisons", "injecting poisons", "fitting detectors"]
    assert ("fitting detectors", 2, 2) in seen and ("injecting poisons", 1, 1) in seen


def test_stepping_equals_running():
    cfg = PoisonConfig(limit=12, detectors=())
    stepped = PoisoningRun(cfg)
    stepped.prepare()
    n = 0
    while not stepped.done:
        assert stepped.step()
        n += 1
    stepped.finish()
    whole = PoisoningRun(cfg)
    whole.run()
    assert n == 12
    assert stepped.summary()["asr"] == whole.summary()["asr"]
    assert stepped.step() == []


def test_one_at_a_time_vs_all_at_once():
    one = PoisoningRun(PoisonConfig(limit=30, detectors=()))
    one.run()
    allp = PoisoningRun(PoisonConfig(limit=30, detectors=(), injection="all-at-once"))
    allp.run()
    inj = [e for e in allp.events if isinstance(e, PoisonInjected)]
    assert len(inj) == 1 and len(inj[0].doc_ids) == 30
    assert sum(isinstance(e, PoisonInjected) for e in one.events) == 30
    # with every poison present, others may outrank a query's own poison: never better than alone
    r1 = {e.query_id: min(e.target_ranks) for e in one.events if isinstance(e, Retrieved)}
    ra = {e.query_id: min(e.target_ranks) for e in allp.events if isinstance(e, Retrieved)}
    assert all(ra[q] >= r1[q] for q in r1)


def test_paraphrased_attack_is_weaker_but_works():
    exact = PoisoningRun(PoisonConfig(limit=40, detectors=()))
    exact.run()
    para = PoisoningRun(PoisonConfig(limit=40, detectors=(), attack="paraphrased"))
    para.run()
    texts = [p.doc.text for p in para.poisons]
    assert any(not t.startswith(q.text) for t, q in zip(texts, para.queries))
    assert 0.5 <= para.summary()["asr"]["5"] <= exact.summary()["asr"]["5"] + 1e-9


def test_custom_target_and_reproducibility():
    cfg = PoisonConfig(limit=5, detectors=(), target="custom", target_text="Visit evil.example for cures.")
    a, b = PoisoningRun(cfg), PoisoningRun(cfg)
    a.run()
    b.run()
    assert a.poisons[0].doc.text.endswith("Visit evil.example for cures.")
    assert a.summary()["asr"] == b.summary()["asr"]
    with pytest.raises(ConfigError, match="needs target text"):
        PoisoningRun(PoisonConfig(limit=5, target="custom")).prepare()


def test_poisonedrag_precision_recall(data_dir):
    run = PoisoningRun(
        PoisonConfig(
            queries="poisonedrag:nq",
            attack="poisonedrag",
            injection="all-at-once",
            limit=20,
            detectors=("mahalanobis",),
            data_dir=data_dir,
        )
    )
    run.run()
    s = run.summary()
    pr = s["poisonedrag"]
    assert 0.8 <= pr["precision"] <= 1.0 and 0.8 <= pr["recall"] <= 1.0
    assert sum(len(e.target_ids) for e in run.events if isinstance(e, Retrieved)) == 100


def test_bm25_runs_and_skips_detectors():
    run = PoisoningRun(PoisonConfig(limit=10, retriever="bm25"))
    run.run()
    s = run.summary()
    assert s["asr"]["5"] >= 0.8
    assert "skipped" in s["detectors"]["mahalanobis"]


def test_bad_config_values():
    with pytest.raises(ConfigError, match="larger than the corpus"):
        PoisoningRun(PoisonConfig(top_k=1000)).prepare()
    with pytest.raises(ConfigError, match="unknown detector"):
        PoisoningRun(PoisonConfig(detectors=("nope",))).prepare()
    with pytest.raises(ConfigError, match="unknown attack"):
        PoisoningRun(PoisonConfig(attack="nope")).prepare()
    with pytest.raises(ConfigError, match="target: .nope. is not one of pii"):
        PoisoningRun(PoisonConfig(target="nope")).prepare()


def test_camouflaged_attack_evades_mahalanobis_without_losing_rank():
    """The adaptive attacker appends its query's best clean document: the poison stays on top and
    falls back inside the clean distribution the Mahalanobis detector models."""
    plain = PoisoningRun(PoisonConfig(detectors=("mahalanobis",)))
    plain.run()
    camo = PoisoningRun(PoisonConfig(detectors=("mahalanobis",), attack="camouflaged"))
    camo.run()
    p, c = plain.summary(), camo.summary()
    assert c["asr"]["2"] >= p["asr"]["2"] - 0.05
    assert c["detectors"]["mahalanobis"]["tpr"] < 0.5 < p["detectors"]["mahalanobis"]["tpr"]
    q0 = camo.queries[0].text
    assert camo.poisons[0].doc.text.startswith(q0) and len(camo.poisons[0].doc.text) > len(plain.poisons[0].doc.text)


def test_poisons_longer_than_the_retriever_reads_are_counted():
    long_target = " ".join(f"The clinic phone line 555-010-{i:04d} is open." for i in range(60))
    run = PoisoningRun(PoisonConfig(limit=3, detectors=(), target="custom", target_text=long_target))
    run.run()
    s = run.summary()
    assert s["poisons_over_window"] == 3 and s["poison_tokens"]["retriever_max_tokens"] == 254
    assert s["poison_tokens"]["longest"] > 254
    pt = s["poison_tokens"]  # the question fits; most of the long target does not
    assert pt["attacker_text_cut"] == 3 and 0 < pt["attacker_text_embedded"] < 0.5
    assert 5 < pt["median_question"] < 60
    short = PoisonConfig(limit=3, detectors=())
    short = PoisoningRun(short)
    short.run()
    s = short.summary()
    assert s["poisons_over_window"] == 0
    assert s["poison_tokens"]["attacker_text_cut"] == 0 and s["poison_tokens"]["attacker_text_embedded"] == 1.0


def test_the_share_of_the_attackers_text_the_retriever_reads():
    """(before, question, after) pieces against a window of L tokens (here: words): the attacker's tokens read
    are min(before, L) plus what of `after` fits behind the question."""
    from engine.attacks.poisoning.base import Poison
    from engine.corpora import TokenWindow
    from engine.runs.poisoning import attacker_text_in_window
    from engine.types import Document

    window = TokenWindow(10, lambda texts: [len(t.split()) for t in texts])
    q = {"a": "one two three four", "b": "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12"}
    poisons = [
        Poison(Document("p1", "one two three four t1 t2 t3 t4 t5 t6 t7 t8"), "a", "pii"),  # q ⊕ 8: reads 6
        Poison(Document("p2", "t1 t2 t3 one two three four"), "a", "pii"),  # 3 ⊕ q: reads all
        Poison(Document("p3", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 t1 t2"), "b", "pii"),  # reads none
        Poison(Document("p4", "rewritten, no question"), "a", "pii"),
    ]  # left out
    out = attacker_text_in_window(poisons, q, window)
    assert out["median_question_tokens"] == 4.0 and out["attacker_text_cut"] == 2
    assert out["attacker_text_embedded"] == round((6 / 8 + 1 + 0) / 3, 4)
    assert attacker_text_in_window(poisons[3:], q, window) == {}


def test_the_target_first_variant_puts_the_target_where_the_retriever_reads_it():
    """order = target-first: target ⊕ q (our variant for long questions); the default is the paper's q ⊕ target."""
    from engine.attacks.poisoning import POISONING_ATTACKS
    from engine.types import Query

    q = Query("q1", "A 54-year-old man presents with chest pain radiating to the left arm. What is the next step?")
    paper = POISONING_ATTACKS.create("universal", {"target": "pii"}).craft([q])[0].doc.text
    first = POISONING_ATTACKS.create("universal", {"target": "pii", "order": "target-first"}).craft([q])[0].doc.text
    assert paper.startswith(q.text) and first.endswith(q.text)
    assert sorted(paper) == sorted(first)  # the same words, in the other order
