"""The membership table: knowledge bases × attacks × defense configurations, one resumable membership run per
cell, against the real pipeline (SmolLM2-135M, MiniLM, Chroma); stopped in a cell, continued by the same call;
another configuration in the same folder refused; the Markdown table; the bundled held-out clinic records."""

from __future__ import annotations

import json

import pytest

from engine.config import MembershipTableConfig, load_preset
from engine.corpora import load_corpus
from engine.errors import ConfigError
from engine.generators import GENERATORS
from engine.membership_table import cells_of, markdown_table, run_order, run_table
from engine.progress import stop_flag
from helpers import run_cli

TINY = {
    "base": {"members": 2, "non_members": 2, "max_tokens": 8, "top_k": 1, "attack_params": {"max_chars": 300}},
    "attacks": ["direct"],
    "configurations": ["none", "detect-and-hide"],
    "non_member_kbs": {"clinic_records": "clinic_records_heldout"},
}


@pytest.fixture(scope="module")
def smol():
    """SmolLM2-135M: the real pipeline at a quarter of Qwen2.5-0.5B's time; what is recorded, scored and resumed
    is checked here, not how well a model answers (docs/results.md has the measured tables)."""
    return GENERATORS.create("local", {"model": "smollm2-135m"})


def test_a_table_stops_in_a_cell_continues_and_reads_back(tmp_path, smol):
    cfg = MembershipTableConfig.from_dict(TINY)
    assert cells_of(cfg) == [("clinic_records", "direct", "none"), ("clinic_records", "direct", "detect-and-hide")]
    seen = []

    def progress(index, stage, done, total):
        seen.append((index, done, total))

    probed = iter(range(100))
    rows = run_table(cfg, tmp_path, progress=progress, stop=stop_flag(lambda: next(probed) >= 3), generator=smol)
    assert [r["decisions"] for r in rows] == [2, 0] and not rows[0]["complete"], rows
    partial = markdown_table(rows)
    assert "(of 4: not finished)" in partial and "not run (0 of 4)" in partial
    rows = run_table(cfg, tmp_path, progress=progress, generator=smol)
    assert [r["decisions"] for r in rows] == [4, 4] and all(r["complete"] for r in rows)
    assert seen[-1] == (1, 4, 4) and (0, 4, 4) in seen
    for r in rows:
        summary = json.loads((tmp_path / r["run_dir"] / "summary.json").read_text())
        assert r["auroc"] == summary["auroc"] and r["n_members"] == 2 and r["n_non_members"] == 2
    split = [json.loads(line) for line in open(f"{rows[0]['run_dir']}/events.jsonl") if "membership_split" in line][0]
    assert all(i.startswith("rec-0") and int(i[4:]) > 320 for i in split["non_members"]), "held-out records"
    text = markdown_table(rows)
    assert text.count("\n") == 3 and "| clinic_records | direct | detect-and-hide | 2 + 2 |" in text
    again = run_table(cfg, tmp_path, generator=smol)  # finished: nothing runs again
    assert [r["run_dir"] for r in again] == [r["run_dir"] for r in rows]
    # utility beside: asked for later, it is measured once per configuration and the finished cells are kept
    useful = MembershipTableConfig.from_dict({**TINY, "utility_limit": 2})
    with_utility = run_table(useful, tmp_path, generator=smol)
    assert [r["run_dir"] for r in with_utility] == [r["run_dir"] for r in rows]
    for r in with_utility:
        assert r["utility_n"] == 2 and 0.0 <= r["utility_acc"] <= 1.0 and len(r["utility_acc_ci"]) == 2
    assert "(2) |" in markdown_table(with_utility)
    kept = {p.name: p.read_text() for p in (tmp_path / "utility").iterdir()}
    run_table(MembershipTableConfig.from_dict({**TINY, "utility_limit": 2, "order": "baselines-first"}), tmp_path)
    assert {p.name: p.read_text() for p in (tmp_path / "utility").iterdir()} == kept, "another order: kept"
    # the order the cells run in is not part of a cell's result: the same folder takes another
    reordered = run_table(MembershipTableConfig.from_dict({**TINY, "order": "baselines-first"}), tmp_path)
    assert [r["run_dir"] for r in reordered] == [r["run_dir"] for r in rows]
    with pytest.raises(ConfigError, match="another configuration .*base"):
        run_table(MembershipTableConfig.from_dict({**TINY, "base": {**TINY["base"], "seed": 5}}), tmp_path)
    # a cell an earlier version split by chunk (a non-member could keep a sibling chunk indexed) is set aside and
    # runs again; the others are kept
    events = tmp_path / rows[0]["run_dir"] / "events.jsonl"
    lines = events.read_text().splitlines()
    events.write_text("\n".join(x.replace('"unit": "record"', '"unit": "chunk"') for x in lines) + "\n")
    redone = run_table(cfg, tmp_path, generator=smol)
    assert redone[0]["run_dir"] != rows[0]["run_dir"] and redone[0]["complete"]
    assert redone[1]["run_dir"] == rows[1]["run_dir"]
    aside = tmp_path / "cells" / "clinic_records--direct--none.split-by-chunk"
    assert (aside / events.parent.name / "events.jsonl").is_file(), "kept aside, never read into the table"


def test_baselines_first_runs_every_attacks_undefended_cell_before_any_defense():
    grid = {"attacks": ["direct", "s2mia"], "configurations": ["detect-and-hide", "none", "intent-block"]}
    table = MembershipTableConfig.from_dict(grid)
    first = MembershipTableConfig.from_dict({**grid, "order": "baselines-first"})
    assert run_order(table) == cells_of(table) == cells_of(first)  # the table reads the same either way
    assert [(a, c) for _, a, c in run_order(first)] == [
        ("direct", "none"),
        ("s2mia", "none"),
        ("direct", "detect-and-hide"),
        ("s2mia", "detect-and-hide"),
        ("direct", "intent-block"),
        ("s2mia", "intent-block"),
    ]
    with pytest.raises(ConfigError, match="order"):
        MembershipTableConfig.from_dict({**grid, "order": "random"})


def test_the_bundled_table_and_bad_tables_are_checked_before_any_cell():
    kind, cfg, _ = load_preset("membership-table")
    assert kind == "membership-table" and len(cells_of(cfg)) == 40 and cfg.order == "baselines-first"
    assert {"detect-and-hide", "intent-block"} <= set(cfg.configurations) and len(cfg.configurations) >= 5
    assert cfg.cell_config("clinic_records", "riddle", "none").generator_params == {"model": "qwen2.5-1.5b"}
    held = load_corpus("clinic_records_heldout", chunk_size=None)
    kb = load_corpus("clinic_records", chunk_size=None)
    assert len(held) == 280 and not {d.id for d in held.documents} & {d.id for d in kb.documents}
    for fields, why in (
        ({"configurations": ["nope"]}, "unknown defense 'nope'"),
        ({"attacks": []}, "at least one entry"),
        ({"non_member_kbs": {"enron": "x"}}, "not one of the grid's kbs"),
        ({"attack_generators": {"mba": {"model": "qwen2.5-1.5b"}}}, "not one of the grid's attacks"),
    ):
        with pytest.raises(ConfigError, match=why):
            MembershipTableConfig.from_dict(fields)
    r = run_cli("run", "membership-table")
    assert r.returncode == 2 and "needs --out" in r.stderr


def test_engine_run_runs_a_table_preset_and_prints_its_table(tmp_path):
    preset = tmp_path / "tiny.yaml"
    preset.write_text(
        "kind: membership-table\nbase: {members: 1, non_members: 1, max_tokens: 8, top_k: 1, generator_params: "
        "{model: smollm2-135m}, attack_params: {max_chars: 200}}\nattacks: [direct]\nconfigurations: [none]\n"
    )
    r = run_cli("run", preset, "--out", tmp_path / "t")
    assert r.returncode == 0, r.stderr
    assert "| clinic_records | direct | none | 1 + 1 |" in r.stdout
    again = run_cli("run", preset, "--out", tmp_path / "t", "--json", "-q")
    rows = json.loads(again.stdout.strip().splitlines()[-1])
    assert again.returncode == 0 and rows[0]["complete"] and rows[0]["decisions"] == 2


def test_a_dialog_kbs_own_task_is_measured_before_its_first_cell(tmp_path, data_dir):
    """``task_limit``: the task ACC of each configuration on a dialog KB (its records' questions, each with its own
    reply among similar ones), measured once before that KB's first cell and shown beside AUROC; a KB without
    dialogs has none; a longer task in the same folder extends the kept record."""
    from pathlib import Path

    src = Path(data_dir) / "kb" / "healthcaremagic_1k.jsonl"
    kb = tmp_path / "dialogs.jsonl"
    kb.write_text("".join(src.read_text().splitlines(keepends=True)[:10]))
    values = {
        "base": {"members": 1, "non_members": 1, "max_tokens": 8, "top_k": 1, "generator_params": {
            "model": "smollm2-135m"}, "attack_params": {"max_chars": 200}},
        "kbs": ["clinic_records", str(kb)],
        "attacks": ["direct"],
        "configurations": ["none"],
        "task_limit": 1,
    }  # fmt: skip
    out = tmp_path / "table"
    rows = run_table(MembershipTableConfig.from_dict(values), out)
    clinic, dialogs = rows
    assert clinic.get("task_acc") is None and dialogs["task_n"] == 1 and dialogs["task_acc"] in (0.0, 1.0)
    assert all(r["complete"] for r in rows)
    assert markdown_table(rows).splitlines()[-1].endswith("(1) |")
    longer = run_table(MembershipTableConfig.from_dict({**values, "task_limit": 2}), out)
    assert longer[1]["task_n"] == 2 and [r["run_dir"] for r in longer] == [r["run_dir"] for r in rows]
    (record,) = (out / "task").glob("*.jsonl")
    assert len(record.read_text().splitlines()) == 2


def test_the_readme_block_is_written_between_its_markers_and_a_file_without_them_is_one_line(tmp_path, capsys):
    from pathlib import Path

    from engine.membership_table import BEGIN, END, main, readme_markdown

    folder = Path(__file__).resolve().parents[2] / "results" / "membership-table"
    doc = tmp_path / "README.md"
    doc.write_text(f"# x\n{BEGIN}\nSTALE-BLOCK\n{END}\ntail\n", encoding="utf-8")
    assert main([str(folder), "--write", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith(f"# x\n{BEGIN}\n") and text.endswith(f"{END}\ntail\n") and "STALE-BLOCK" not in text
    assert readme_markdown(folder) in text and " cells finished" in text
    bare = tmp_path / "bare.md"
    bare.write_text("no block\n", encoding="utf-8")
    assert main([str(folder), "--write", str(bare)]) == 2
    assert "no <!-- membership-table:begin -->" in capsys.readouterr().err and bare.read_text() == "no block\n"
