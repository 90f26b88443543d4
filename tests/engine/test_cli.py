"""The CLI as a practitioner uses it: real subprocesses, one JSON line, clear one-line errors."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args, env_extra=None, timeout=900):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_poison_json_last_line(tmp_path):
    p = run_cli("poison", "--corpus", "clinic_handbook", "--queries", "clinic_handbook", "--retriever", "minilm",
                "--target", "pii", "--limit", "20", "--top-k", "5", "--detectors", "l2,mahalanobis", "--json",
                "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert set(out["asr"]) == {"1", "2", "5"} and out["n_queries"] == 20 and out["corpus_size"] >= 150
    for name in ("l2", "mahalanobis"):
        assert {"tpr", "fpr", "fpr_in_sample", "auroc"} <= set(out["detectors"][name])
    assert "beta" in out["detectors"]["mahalanobis"]
    run_dir = Path(out["out_dir"])
    assert (run_dir / "events.jsonl").is_file() and (run_dir / "manifest.json").is_file()


def test_run_bundled_preset():
    p = run_cli("run", "quick-demo", "--limit", "10", "--json", "-q")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1])["n_queries"] == 10


def test_compare_repeats_each_cell_over_seeds_and_reports_means(tmp_path):
    p = run_cli("compare", "--kb", "clinic_records", "--attacks", "zeng", "--configurations", "none,system-prompt",
                "--rounds", "1", "--repeats", "2", "--utility-limit", "1", "--json", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    rows = out["rows"]
    assert [(r["configuration"], r["n_runs"], r["seeds"]) for r in rows] == [("none", 2, [0, 1]),
                                                                            ("system-prompt", 2, [0, 1])]
    saved = json.loads((tmp_path / "comparison.json").read_text())
    runs = saved["runs"]
    assert saved["complete"] and len(runs) == 4 and [r["seed"] for r in runs] == [0, 0, 1, 1]
    for row in rows:
        mine = [r for r in runs if r["configuration"] == row["configuration"]]
        assert row["crr"] == pytest.approx(sum(r["crr"] for r in mine) / 2)
        assert row["crr_std"] is not None and row["utility_acc"] == mine[0]["utility_acc"]
    assert len({r["run_id"] for r in runs}) == 4          # four separate runs on disk
    assert "mean of 2 runs (seeds 0, 1)" in p.stdout


def test_sweep_writes_table_and_heatmap(tmp_path):
    p = run_cli("sweep", "--corpora", "clinic_handbook", "--retrievers", "minilm,bm25", "--query-sets",
                "clinic_handbook", "--targets", "pii,diagnosis", "--limit", "8", "--out", str(tmp_path), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(out["cells"]) == 4 and out["complete"]
    table = (tmp_path / "table1_asr@2.csv").read_text()
    assert "pii" in table and "diagnosis" in table
    assert (tmp_path / "heatmap.html").stat().st_size > 10_000
    assert "sweep cells" in p.stderr  # progress bar


def _bad(tmp_path):
    bin_file = tmp_path / "bin.txt"
    bin_file.write_bytes(b"\x00\x01\x02")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    bad_jsonl = tmp_path / "bad.jsonl"
    bad_jsonl.write_text('{"text": "fine"}\n{"text": "fine"}\n{oops\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("corpus: [unclosed\n")
    unknown_key = tmp_path / "unknown.yaml"
    unknown_key.write_text("kind: poison\ncorpus: clinic_handbook\ncolour: red\n")
    return {
        "missing corpus": (["poison", "--corpus", str(tmp_path / "none.jsonl")], "not found"),
        "empty corpus": (["poison", "--corpus", str(empty)], "empty"),
        "binary corpus": (["poison", "--corpus", str(bin_file)], "binary"),
        "non-UTF-8 corpus": (["poison", "--corpus", str(latin)], "not valid UTF-8"),
        "malformed JSONL": (["poison", "--corpus", str(bad_jsonl)], "line 3"),
        "unknown retriever": (["poison", "--retriever", "nope"], "unknown retriever 'nope'"),
        "unknown target": (["poison", "--target", "nope"], "not one of pii"),
        "unknown query set": (["poison", "--queries", "nope"], "unknown query set 'nope'"),
        "unknown detector": (["poison", "--detectors", "nope"], "unknown detector 'nope'"),
        "K larger than corpus": (["poison", "--top-k", "999"], "larger than the corpus"),
        "invalid YAML": (["run", str(bad_yaml)], "invalid YAML at line"),
        "unknown preset key": (["run", str(unknown_key)], "unknown parameter 'colour'"),
        "unknown preset": (["run", "no-such-preset"], "not found"),
        "missing data dir": (["poison", "--corpus", "bioasq", "--data-dir", str(tmp_path / "nope")], "does not exist"),
        "zero rounds": (["compare", "--attacks", "zeng", "--configurations", "none", "--rounds", "0"],
                        "rounds: 0 is below the minimum 1"),
        "zero repeats": (["compare", "--attacks", "zeng", "--configurations", "none", "--repeats", "0"],
                         "repeats: 0 is below the minimum 1"),
        "zero utility questions": (["compare", "--attacks", "zeng", "--configurations", "none", "--utility-limit", "0"],
                                   "utility_limit: 0 is below the minimum 1"),
    }


@pytest.mark.parametrize("case", list(_bad(Path("/tmp")).keys()))
def test_bad_input_is_one_clear_line(tmp_path, case):
    args, message = _bad(tmp_path)[case]
    p = run_cli(*args, "--limit", "3", timeout=300) if args[0] == "poison" else run_cli(*args, timeout=300)
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, p.stderr
    assert message in lines[0], lines[0]


def test_poison_and_extract_report_corpus_stats(tmp_path):
    p = run_cli("poison", "--corpus", "clinic_handbook", "--queries", "clinic_handbook", "--limit", "5",
                "--detectors", "", "--json", "-q")
    assert p.returncode == 0, p.stderr
    cs = json.loads(p.stdout.strip().splitlines()[-1])["corpus_stats"]
    assert cs["over_window"] == 0 and cs["retriever_max_tokens"] == 254 and cs["chunks"] >= 150
    p = run_cli("extract", "--kb", "clinic_records", "--attack", "rag-thief", "--attacker-llm", "none",
                "--generator", "qwen2.5-0.5b", "--rounds", "2", "--top-k", "2", "--json", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert s["corpus_stats"] == {"chunks": s["kb_size"], "retriever_max_tokens": 254, "over_window": 0,
                                 "retriever": "minilm"}
    b = s["answer_budget"]
    assert b["mode"] == "context" and b["capped_rounds"] == 0 and b["recoverable_tokens"] == b["context_tokens"] > 0
    assert 0 < s["ee_retrieval"] <= 1 and 0 <= s["ee_generation"] <= 1 and 0 < s["exploration"] <= 1
    c = s["cost"]
    assert c["queries"] == 2 and c["generator_tokens"]["prompt"] > 0 and c["attacker_tokens"]["calls"] == 0
    assert c["usd"] is None                                    # local models have no price
    assert "by stage:" in p.stdout and "cost: 2 queries" in p.stdout


def test_paper_scale_preset_smoke_and_resume(tmp_path):
    """CI runs a 2-round smoke of ragfort-paper-scale (both KBs, both attacks, no protection); running it
    again with the same --out resumes: every finished cell is kept, none is run twice."""
    args = ("compare", "--preset", "ragfort-paper-scale", "--configurations", "none", "--rounds", "2",
            "--repeats", "1", "--utility-limit", "1", "--json", "--out", str(tmp_path))
    p = run_cli(*args)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout.strip().splitlines()[-1])["rows"]
    assert sorted((r["kb"], r["attack"]) for r in rows) == [("enron", "rag-thief"), ("enron", "worm"),
                                                           ("healthcaremagic", "rag-thief"), ("healthcaremagic", "worm")]
    for r in rows:
        assert r["rounds"] == 2 and r["ee_retrieval"] > 0 and r["ee_generation"] is not None
    first = json.loads((tmp_path / "comparison.json").read_text())
    assert first["complete"]
    p = run_cli(*args)
    assert p.returncode == 0, p.stderr
    again = json.loads((tmp_path / "comparison.json").read_text())
    assert [r["run_id"] for r in again["runs"]] == [r["run_id"] for r in first["runs"]]
    assert len(list((tmp_path / "runs").iterdir())) == 4
