"""A knowledge base's own task (``dialogs:<kb>``): multiple choice built from HealthCareMagic's real dialogs,
answered by a real RAG system with a real model, resumable from its record, and measured per configuration by a
comparison (``task_limit``) beside CRR."""

import json
from pathlib import Path

import pytest

from engine.dialog_task import reply_option, split_dialog
from engine.errors import CorpusError
from engine.queries import load_queries


def _dialog_kb(data_dir: str, path: Path, n: int = 12) -> Path:
    """The first ``n`` HealthCareMagic dialogs as the user's own KB file."""
    src = Path(data_dir) / "kb" / "healthcaremagic_1k.jsonl"
    path.write_text("".join(src.read_text().splitlines(keepends=True)[:n]))
    return path


def test_each_dialog_becomes_a_question_with_its_own_reply_among_similar_ones(data_dir):
    qs = load_queries("dialogs:healthcaremagic", data_dir=data_dir)
    assert len(qs) == 1000  # every HealthCareMagic record is a Patient / Doctor dialog
    records = {
        r["id"]: r["text"]
        for r in map(json.loads, (Path(data_dir) / "kb" / "healthcaremagic_1k.jsonl").read_text().splitlines())
    }
    for q in qs[:50]:
        (rid,) = q.metadata["gold_ids"]
        question, reply = split_dialog(records[rid])
        opts = q.metadata["options"]
        assert q.text == question and set(opts) == set("ABCD") and len(set(opts.values())) == 4
        assert opts[q.metadata["answer"]] == reply_option(reply)  # the record's own reply is the gold option
        # each distractor is the reply of another record
        others = {reply_option(split_dialog(t)[1]) for i, t in records.items() if i != rid}
        assert all(v in others for k, v in opts.items() if k != q.metadata["answer"])
    assert load_queries("dialogs:healthcaremagic", data_dir=data_dir) == qs  # no randomness left unseeded
    letters = [q.metadata["answer"] for q in qs]
    assert all(letters.count(x) > 150 for x in "ABCD")  # the gold letter is spread over the options


def test_an_option_is_the_replys_opening_after_its_greetings():
    reply = "Hi. Thanks for your query on Chat Doctor. Your homocysteine is normal. " + "Eat well. " * 30
    assert reply_option(reply, words=6) == "Your homocysteine is normal. Eat well. …"
    assert reply_option("Hello, your scan shows no enlarged node.") == "Hello, your scan shows no enlarged node."
    assert split_dialog("Patient: Is 12.3 normal?  Doctor: Yes.") == ("Is 12.3 normal?", "Yes.")
    assert split_dialog("An e-mail with no speakers.") is None


def test_a_kb_without_dialogs_or_with_no_name_is_one_clear_line():
    with pytest.raises(CorpusError, match=r"clinic_handbook: 0 dialog record\(s\).*Patient: … Doctor: …"):
        load_queries("dialogs:clinic_handbook")
    with pytest.raises(CorpusError, match="name the knowledge base"):
        load_queries("dialogs:")


def test_a_utility_evaluation_stopped_halfway_resumes_from_its_record(data_dir, tmp_path, minilm):
    """Stopped after its first question, then run again with the same record: only the others are asked, and
    the result equals an uninterrupted evaluation's."""
    from engine.corpora import load_corpus, retriever_window
    from engine.generators import GENERATORS
    from engine.rag import RagSystem, evaluate_utility

    kb = _dialog_kb(data_dir, tmp_path / "dialogs.jsonl")
    queries = load_queries(f"dialogs:{kb}")
    system = RagSystem(
        load_corpus(str(kb), window=retriever_window(minilm)),
        minilm,
        GENERATORS.create("local", {"model": "smollm2-135m"}),
        [],
        top_k=2,
    )
    system.build()
    asked: list[str] = []
    answer = system.answer
    system.answer = lambda q, **kw: asked.append(q) or answer(q, **kw)  # type: ignore[method-assign]
    try:
        whole = evaluate_utility(system, queries, limit=3, max_tokens=8)
        record = tmp_path / "record.jsonl"
        half = evaluate_utility(system, queries, limit=3, max_tokens=8, record=record, stop=lambda: len(asked) >= 4)
        assert half["stopped"] and half["n"] == 1 and len(record.read_text().splitlines()) == 1
        with record.open("a") as f:  # a line cut short by a kill: skipped, that question asked again
            f.write('{"query_id": "task-hcm-1", "quest')
        asked.clear()
        resumed = evaluate_utility(system, queries, limit=3, max_tokens=8, record=record)
    finally:
        system.close()
    assert asked == [q.text for q in queries[1:3]]  # the recorded question is not asked again
    assert not resumed["stopped"] and resumed["items"] == whole["items"]
    assert resumed["acc"] == whole["acc"] and resumed["acc_ci"][0] <= resumed["acc"] <= resumed["acc_ci"][1]


def test_a_comparison_measures_each_configurations_task_accuracy_once(data_dir, tmp_path, monkeypatch):
    """``task_limit``: the KB's own task per configuration, beside CRR, in comparison.json, resumed without
    asking again; a longer task extends the folder's record instead of being refused."""
    import engine.compare as compare
    import engine.compare_task as compare_task
    from engine.config import ComparisonConfig
    from engine.metrics.catalog import MK

    kb = str(_dialog_kb(data_dir, tmp_path / "dialogs.jsonl"))
    values = {
        "base": {
            "kb": kb,
            "rounds": 1,
            "max_tokens": 16,
            "answer_budget": "fixed",  # the task's answers are what is measured here, not an extraction's copy
            "attacker_llm": "",
            "generator_params": {"model": "smollm2-135m"},
            "top_k": 2,
        },
        "configurations": ["none", "system-prompt"],
        "attacks": ["zeng"],
        "utility_limit": 1,
        "task_limit": 2,
    }
    out = tmp_path / "cmp"
    rows = compare.run_comparison(ComparisonConfig.from_dict(values), out_dir=out)
    for r in rows:
        assert r.task["n"] == r.task["n_graded"] == 2 and r[MK.TASK_ACC] == r.task["acc"]
        assert r.task["acc_ci"][0] <= r.task["acc"] <= r.task["acc_ci"][1]
    assert rows[1]["task_acc_drop"] == pytest.approx(rows[0][MK.TASK_ACC] - rows[1][MK.TASK_ACC])
    from engine.views.comparison import comparison_table

    cols = list(comparison_table([r.to_dict() for r in rows]).columns)  # the page's table, after the utility
    assert cols[cols.index("utility_acc_drop") + 1 : cols.index("utility_acc_drop") + 4] == [
        MK.TASK_ACC,
        "task_acc_ci",
        "task_acc_drop",
    ]
    saved = json.loads((out / "comparison.json").read_text())
    assert [(t["kb"], t["configuration"], t["limit"]) for t in saved["task"]] == [
        (kb, "none", 2),
        (kb, "system-prompt", 2),
    ]
    assert len(list((out / "task").glob("*.jsonl"))) == 2

    def no_rerun(*a, **k):
        raise AssertionError("task re-run on resume")

    monkeypatch.setattr(compare_task, "task_of", no_rerun)
    again = compare.run_comparison(ComparisonConfig.from_dict(values), out_dir=out)
    assert [r.task for r in again] == [r.task for r in rows]
    monkeypatch.undo()
    records = {p.name: p.read_text() for p in (out / "task").glob("*.jsonl")}
    longer = compare.run_comparison(ComparisonConfig.from_dict({**values, "task_limit": 3}), out_dir=out)
    assert [r.task["n"] for r in longer] == [3, 3]
    for name, before in records.items():  # extended by one question each, the first two kept as they were
        after = (out / "task" / name).read_text()
        assert after.startswith(before) and len(after.splitlines()) == 3
    assert [r.run_id for r in longer] == [r.run_id for r in rows]  # not a round more
    assert "task_limit" not in ComparisonConfig().to_dict()  # the record of comparisons without it


def test_a_comparison_skips_the_task_of_a_kb_without_dialogs():
    from engine.compare_task import task_kbs

    have, skipped = task_kbs(("clinic_handbook",), None)
    assert have == {} and "0 dialog record(s)" in skipped["clinic_handbook"]


def test_the_ragfort_utility_row_shows_a_task_still_running_as_running(tmp_path):
    """RAGFort's utility table: a configuration whose task evaluation is under way shows its ACC so far, how many
    of its questions, and "(not finished)"; no change against none is claimed from it."""
    from engine.analysis.ragfort_tables import utility_by_path, utility_table

    (tmp_path / "comparison.json").write_text(
        json.dumps(
            {
                "config": {"task_limit": 4},
                "task": [{"kb": "k", "configuration": "none", "acc": 0.75, "acc_ci": [0.3, 0.95], "n_graded": 4}],
            }
        )
    )
    (tmp_path / "task").mkdir()
    lines = [  # graded questions as evaluate_utility records them
        {"query_id": f"task-{i}", "question": "q", "options": {}, "gold": g, "predicted": p, "answer": p,
         "faithfulness": 1.0, "blocked": False}
        for i, (g, p) in enumerate((("A", "A"), ("B", "C")))
    ]  # fmt: skip
    (tmp_path / "task" / "k--reindex+cascade--0123456789.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines) + '{"gold": "A", "pre'
    )
    row = utility_table(tmp_path, "k")[2]
    assert "75.0% (30.0–95.0)" in row and "50.0% (" in row and "at 2 of 4 questions (not finished)" in row
    assert "points" not in row
    by_path = utility_by_path(tmp_path, "k")  # every path's own row: the unfinished one claims no change either
    ragfort = next(x for x in by_path if x.startswith("| Both (RAGFort) |"))
    assert "50.0% (" in ragfort and "— (not finished)" in ragfort and "2 of 4 (not finished)" in ragfort
    assert "| Inter only (reindex) | not measured yet | | |" in by_path
