"""The CLI as a practitioner uses it: real subprocesses, one JSON line, clear one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli

REPO = Path(__file__).resolve().parents[2]


def test_poison_json_last_line(tmp_path):
    p = run_cli(
        "poison",
        "--corpus",
        "clinic_handbook",
        "--queries",
        "clinic_handbook",
        "--retriever",
        "minilm",
        "--target",
        "pii",
        "--limit",
        "20",
        "--top-k",
        "5",
        "--detectors",
        "l2,mahalanobis",
        "--json",
        "--out",
        str(tmp_path),
    )
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


@pytest.mark.slow
def test_compare_repeats_each_cell_over_seeds_and_reports_means(tmp_path):
    p = run_cli(
        "compare",
        "--kb",
        "clinic_records",
        "--attacks",
        "zeng",
        "--configurations",
        "none,system-prompt",
        "--rounds",
        "1",
        "--repeats",
        "2",
        "--utility-limit",
        "1",
        "--answer-budget",
        "fixed",
        "--max-tokens",
        "32",
        "--json",
        "--out",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    rows = out["rows"]
    assert [(r["configuration"], r["n_runs"], r["seeds"]) for r in rows] == [
        ("none", 2, [0, 1]),
        ("system-prompt", 2, [0, 1]),
    ]
    assert all(len(r["crr_ci"]) == 2 for r in rows) and rows[1]["crr_vs_none"] in (
        "less",
        "more",
        "not distinguishable",
    )
    assert "CRR 95% interval" in p.stdout
    saved = json.loads((tmp_path / "comparison.json").read_text())
    runs = saved["runs"]
    assert saved["complete"] and len(runs) == 4 and [r["seed"] for r in runs] == [0, 0, 1, 1]
    for row in rows:
        mine = [r for r in runs if r["configuration"] == row["configuration"]]
        assert row["crr"] == pytest.approx(sum(r["crr"] for r in mine) / 2)
        assert row["crr_std"] is not None and row["utility_acc"] == mine[0]["utility_acc"]
    assert len({r["run_id"] for r in runs}) == 4  # four separate runs on disk
    assert "mean of 2 runs (seeds 0, 1)" in p.stdout


def test_sweep_writes_table_and_heatmap(tmp_path):
    p = run_cli(
        "sweep",
        "--corpora",
        "clinic_handbook",
        "--retrievers",
        "minilm,bm25",
        "--query-sets",
        "clinic_handbook",
        "--targets",
        "pii,diagnosis",
        "--limit",
        "8",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(out["cells"]) == 4 and out["complete"]
    table = (tmp_path / "table1_asr@2.csv").read_text()
    assert "pii" in table and "diagnosis" in table
    assert (tmp_path / "heatmap.html").stat().st_size > 10_000
    assert "sweep cells" in p.stderr  # progress bar


def test_a_beta_sweep_refits_the_detector_on_the_same_anchors(tmp_path):
    """The paper's Table 8 shape: one row per β, the same anchors and poisons; at the run's own β the row
    equals the run's detector. The saved summary reads back into Table 8 (the Reproduce section's reader)."""
    p = run_cli(
        "poison",
        "--limit",
        "8",
        "--detectors",
        "mahalanobis",
        "--beta",
        "0.2",
        "--beta-sweep",
        "0.01,0.2",
        "--json",
        "-q",
    )
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout.strip().splitlines()[-1])
    rows = {r["beta"]: r for r in s["beta_sweep"]}
    assert set(rows) == {0.01, 0.2} and all(
        r["n_anchors"] == s["detectors"]["mahalanobis"]["n_anchors"] for r in rows.values()
    )
    assert rows[0.2]["tpr"] == s["detectors"]["mahalanobis"]["tpr"]
    assert rows[0.2]["fpr"] == s["detectors"]["mahalanobis"]["fpr"]
    assert s["queries"] == "clinic_handbook" and s["corpus"] == "clinic_handbook"

    from engine.analysis.reproduce import read_beta_sweeps, table8

    (tmp_path / "minilm").mkdir()
    (tmp_path / "minilm" / "handbook.json").write_text(p.stdout.strip().splitlines()[-1])
    (tmp_path / "notes.json").write_text('{"something": "else"}')  # other files are skipped
    t = table8(read_beta_sweeps(tmp_path))
    assert len(t) == 1 and t.iloc[0]["query set"] == "clinic_handbook" and t.iloc[0]["β by CV"] == "0.2"
    assert t.iloc[0]["β = 0.2"] == f"{rows[0.2]['tpr']:.2f} / {rows[0.2]['fpr']:.2f}"
    assert t.iloc[0]["anchors"] == s["detectors"]["mahalanobis"]["n_anchors"]


def test_analyze_prints_tables_3_and_4_for_each_retriever_beside_the_paper(tmp_path):
    dest = tmp_path / "tables34" / "handbook.json"
    p = run_cli(
        "analyze",
        "--retrievers",
        "minilm,bm25",
        "--queries",
        "clinic_handbook",
        "--limit",
        "6",
        "--json",
        "--save",
        str(dest),
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert list(out["retrievers"]) == ["minilm"] and "bm25: skipped" in p.stderr  # sparse: no embedding
    assert "table3_orthogonal_augmentation" in out  # the first one, as before
    assert set(out["paper"]["table4_clean_retrieval"]) == {"Contriever", "MedCPT"}
    assert "table3_orthogonal_augmentation — paper, MedCPT" in p.stdout
    from engine.analysis.reproduce import read_tables34

    saved = read_tables34(dest.parent)  # the folder the Reproduce section reads
    t3 = saved["minilm · target pii"]["table3_orthogonal_augmentation"]
    assert t3.to_dict() == out["retrievers"]["minilm"]["table3_orthogonal_augmentation"]
    assert "∠(f(q⊕p)−f(q), f(q)) [°]" in t3.index


def test_the_table1_command_smoke_two_cells(tmp_path, data_dir):
    """The results page's Table-1 command (the universal-poisoning-table1 preset), cut to 2 cells: BM25 × PubMedQA ×
    {PII, NQ} on the 20,767 BioASQ snippets, 5 questions, 3 target documents each; then the side-by-side view
    reads the folder."""
    p = run_cli(
        "sweep",
        "--preset",
        "universal-poisoning-table1",
        "--retrievers",
        "bm25",
        "--query-sets",
        "mirage:pubmedqa",
        "--targets",
        "pii,nq",
        "--limit",
        "5",
        "--data-dir",
        data_dir,
        "--out",
        str(tmp_path),
        "--json",
        "-q",
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(out["cells"]) == 2 and all(c["variants"] == 3 and c["corpus"] == "bioasq" for c in out["cells"])
    from engine.analysis.paper_tables import read_sweep, side_by_side

    table = side_by_side(read_sweep(tmp_path))
    assert list(table["target"]) == ["PPI", "NQ"] and "paper · MedCPT" in table and "ours · bm25" in table
    top1 = side_by_side(read_sweep(tmp_path), 1)  # Table 7: the paper's top-1 rows
    assert list(top1["paper · Contriever"]) == [0.76, 0.74]
    assert list(top1["ours · bm25"]) == [c["asr@1"] for c in out["cells"]]
    for c in out["cells"]:  # each target document's own success, beside the mean of the three
        for k in (1, 2):
            each = [float(x) for x in c[f"asr@{k}_by_variant"].split()]
            assert len(each) == 3 and sum(each) / 3 == pytest.approx(c[f"asr@{k}"], abs=2e-3)


def _run_folder(tmp_path, name, lines):
    d = tmp_path / name
    d.mkdir()
    (d / "events.jsonl").write_bytes(lines if isinstance(lines, bytes) else "\n".join(lines).encode() + b"\n")
    return str(d)


STARTED = json.dumps(
    {"kind": "run_started", "seq": 0, "run_id": "r", "config": {"attack": "zeng"}, "manifest": {"kind": "extract"}}
)
POISON_STARTED = json.dumps(
    {"kind": "run_started", "seq": 0, "run_id": "p", "config": {"anchor_fraction": 0.5}, "manifest": {"kind": "poison"}}
)


def _bad(tmp_path):
    """Hostile or careless input, by family: (arguments, what the one error line must say). Every case must
    exit 2 with exactly one ``error:`` line and no traceback (exit 1 is left for engine bugs)."""
    files = {
        "bin.txt": b"\x00\x01\x02",
        "latin.txt": "caf\xe9".encode("latin-1"),
        "bad.jsonl": b'{"text": "fine"}\n{"text": "fine"}\n{oops\n',
        "empty.jsonl": b"",
        "bad.yaml": b"corpus: [unclosed\n",
        "unknown.yaml": b"kind: poison\ncorpus: clinic_handbook\ncolour: red\n",
        "bin.yaml": b"kind: poison\x00\x01",
        "latin.yaml": "kind: poison\ncorpus: caf\xe9\n".encode("latin-1"),
        "list.yaml": b"kind: extract\ngenerator_params: [1, 2]\n",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    bin_file, latin, bad_jsonl, empty, bad_yaml, unknown_key, bin_yaml, latin_yaml, list_params = (
        tmp_path / n for n in files
    )
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    out_file = ["--out", str(a_file)]
    not_writable = ["--out", "/proc/1/rag-playground-out"]
    zeng = ["--attacks", "zeng", "--configurations", "none"]
    return {
        # corpora
        "missing corpus": (["poison", "--corpus", str(tmp_path / "none.jsonl")], "not found"),
        "empty corpus": (["poison", "--corpus", str(empty)], "empty"),
        "binary corpus": (["poison", "--corpus", str(bin_file)], "binary"),
        "non-UTF-8 corpus": (["poison", "--corpus", str(latin)], "not valid UTF-8"),
        "malformed JSONL": (["poison", "--corpus", str(bad_jsonl)], "line 3"),
        "missing data dir": (["poison", "--corpus", "bioasq", "--data-dir", str(tmp_path / "nope")], "does not exist"),
        "missing KB": (["extract", "--kb", str(tmp_path / "none.jsonl"), "--rounds", "1"], "not found"),
        "unknown KB in --kbs": (
            ["compare", *zeng, "--kbs", "clinic_records,nope", "--rounds", "1"],
            "'nope' not found",
        ),
        # names
        "unknown retriever": (["poison", "--retriever", "nope"], "unknown retriever 'nope'"),
        "unknown target": (["poison", "--target", "nope"], "not one of pii"),
        "unknown query set": (["poison", "--queries", "nope"], "unknown query set 'nope'"),
        "unknown detector": (["poison", "--detectors", "nope"], "unknown detector 'nope'"),
        "unknown extraction attack": (["extract", "--attack", "nope"], "'nope'"),
        "unknown defense": (["extract", "--defenses", "nope"], "'nope'"),
        "unknown local model": (
            ["extract", "--generator", "local:nope", "--rounds", "1"],
            "unknown local model 'nope'",
        ),
        "missing .gguf": (["extract", "--generator", str(tmp_path / "none.gguf"), "--rounds", "1"], "not found"),
        "hub retriever offline": (["poison", "--retriever", "facebook/contriever"], "cannot be reached"),
        # values
        "K larger than corpus": (["poison", "--top-k", "999"], "larger than the corpus"),
        "zero rounds": (["compare", *zeng, "--rounds", "0"], "rounds: 0 is below the minimum 1"),
        "zero repeats": (["compare", *zeng, "--repeats", "0"], "repeats: 0 is below the minimum 1"),
        "beta sweep out of range": (["poison", "--beta-sweep", "0.1,2"], "--beta-sweep: give comma-separated numbers"),
        "attack params not JSON": (["poison", "--attack-params", "{order"], "--attack-params is not valid JSON"),
        "unknown poison order": (["poison", "--attack-params", '{"order": "sideways"}'], "not one of query-first"),
        "negative workers": (["sweep", "--workers", "-1"], "workers: -1 is below the minimum 0"),
        "unknown executor": (["sweep", "--executor", "spark"], "not one of local, ray"),
        "unreachable Ray cluster": (
            ["sweep", "--executor", "ray", "--ray-address", "127.0.0.1:1", "--limit", "1"],
            "cannot reach the Ray cluster",
        ),
        "zero utility questions": (
            ["compare", *zeng, "--utility-limit", "0"],
            "utility_limit: 0 is below the minimum 1",
        ),
        "utility limit 0": (["utility", "--limit", "0"], "--limit must be at least 1"),
        "utility limit negative": (["utility", "--limit", "-4"], "--limit must be at least 1"),
        "analyze limit 0": (["analyze", "--limit", "0"], "--limit must be at least 1"),
        "empty corpora list": (["sweep", "--corpora", ",", "--limit", "2"], "--corpora is empty"),
        "empty attack list": (["compare", "--attacks", ",", "--rounds", "1"], "--attacks is empty"),
        # presets
        "invalid YAML": (["run", str(bad_yaml)], "invalid YAML at line"),
        "unknown preset key": (["run", str(unknown_key)], "unknown parameter 'colour'"),
        "unknown preset": (["run", "no-such-preset"], "not found"),
        "binary preset": (["run", str(bin_yaml)], "binary data"),
        "non-UTF-8 preset": (["run", str(latin_yaml)], "not valid UTF-8"),
        "a list for a mapping": (["run", str(list_params)], "generator_params: expected a mapping"),
        # output folders: checked before any work
        "--out is a file (poison)": (["poison", "--limit", "2", *out_file], "is a file, not a folder"),
        "--out is a file (extract)": (["extract", "--rounds", "1", *out_file], "is a file, not a folder"),
        "--out is a file (compare)": (["compare", *zeng, "--rounds", "1", *out_file], "is a file, not a folder"),
        "--out is a file (sweep)": (
            ["sweep", "--limit", "2", "--targets", "pii", *out_file],
            "is a file, not a folder",
        ),
        "--out is a file (run)": (["run", "quick-demo", "--limit", "2", *out_file], "is a file, not a folder"),
        "--out not writable": (["poison", "--limit", "2", *not_writable], "cannot be written"),
        # resuming
        "resume a folder that is no run": (["extract", "--resume", str(tmp_path)], "holds no events.jsonl"),
        "resume a poisoning run": (
            ["extract", "--resume", _run_folder(tmp_path, "p", [POISON_STARTED])],
            "holds a poisoning run",
        ),
        "resume: unknown event kind": (
            [
                "extract",
                "--resume",
                _run_folder(tmp_path, "k", [STARTED, json.dumps({"kind": "bogus", "seq": 1, "run_id": "r"}), STARTED]),
            ],
            "unknown event kind 'bogus'",
        ),
        "resume: binary events": (
            ["extract", "--resume", _run_folder(tmp_path, "b", b"\x00\x01\x02\x03")],
            "binary data",
        ),
        "resume: damaged middle line": (
            ["extract", "--resume", _run_folder(tmp_path, "d", [STARTED, '{"kind": "round_sta', STARTED])],
            "line 2 is damaged",
        ),
    }


@pytest.mark.parametrize("case", list(_bad(Path(__import__("tempfile").mkdtemp())).keys()))
def test_bad_input_is_one_clear_line(tmp_path, case):
    args, message = _bad(tmp_path)[case]
    p = (
        run_cli(*args, "--limit", "3", timeout=300)
        if args[0] == "poison" and "--limit" not in args
        else run_cli(*args, timeout=300)
    )
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, p.stderr
    assert message in lines[0], lines[0]
    if case in NAMED_BEFORE_ANY_MODEL:  # a wrong name or path costs no model load (seconds) before its line
        assert "Loading weights" not in p.stderr, p.stderr


# bad names and paths refused before the retriever or the generator loads
NAMED_BEFORE_ANY_MODEL = {"missing corpus", "missing data dir", "unknown query set", "unknown detector",
                          "unknown target", "unknown defense", "unknown extraction attack", "missing KB"}  # fmt: skip


def test_a_folder_another_run_is_writing_is_one_clear_line(tmp_path):
    """The CLI on an --out another sweep or comparison holds (here: this test process) refuses at once."""
    from engine.folder_lock import exclusive_folder

    (tmp_path / "comparison.json").write_text("{}")
    with exclusive_folder(tmp_path, "a comparison"):
        for args in (
            ("compare", "--preset", "ragfort-paper-scale", "--rounds", "1"),
            ("sweep", "--corpora", "clinic_handbook", "--limit", "2"),
        ):
            p = run_cli(*args, "--out", str(tmp_path), timeout=300)
            assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
            assert [ln for ln in p.stderr.splitlines() if ln.startswith("error:")][0].endswith(
                "it resumes from the cells that one saved"
            ), p.stderr
    assert (tmp_path / "comparison.json").read_text() == "{}"


@pytest.mark.slow
def test_poison_and_extract_report_corpus_stats(tmp_path):
    p = run_cli(
        "poison",
        "--corpus",
        "clinic_handbook",
        "--queries",
        "clinic_handbook",
        "--limit",
        "5",
        "--detectors",
        "",
        "--json",
        "-q",
    )
    assert p.returncode == 0, p.stderr
    cs = json.loads(p.stdout.strip().splitlines()[-1])["corpus_stats"]
    assert cs["over_window"] == 0 and cs["retriever_max_tokens"] == 254 and cs["chunks"] >= 150
    p = run_cli(
        "extract",
        "--kb",
        "clinic_records",
        "--attack",
        "rag-thief",
        "--attacker-llm",
        "none",
        "--generator",
        "qwen2.5-0.5b",
        "--rounds",
        "2",
        "--top-k",
        "2",
        "--json",
        "--out",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert s["corpus_stats"] == {
        "chunks": s["kb_size"],
        "retriever_max_tokens": 254,
        "over_window": 0,
        "retriever": "minilm",
    }
    b = s["answer_budget"]
    assert b["mode"] == "context" and b["capped_rounds"] == 0 and b["recoverable_tokens"] == b["context_tokens"] > 0
    assert 0 < s["ee_retrieval"] <= 1 and 0 <= s["ee_generation"] <= 1 and 0 < s["exploration"] <= 1
    c = s["cost"]
    assert c["queries"] == 2 and c["generator_tokens"]["prompt"] > 0 and c["attacker_tokens"]["calls"] == 0
    assert c["usd"] is None  # local models have no price
    assert "by stage:" in p.stdout and "cost: 2 queries" in p.stdout


@pytest.mark.slow
def test_paper_scale_preset_smoke_and_resume(tmp_path):
    """CI runs a 1-round smoke of ragfort-paper-scale (HealthCareMagic, both attacks, no protection, its 1.5B
    generator; short answers, set by the base options over the preset's); running it again with the same --out
    resumes: every finished cell is kept, none is run twice. One question of HealthCareMagic's own task (the
    preset's task_limit, cut to 1) goes through the same command. (A round prefills ~1,500 tokens into the 1.5B model:
    ~15 s on 2 cores; the Enron half of the grid doubled the test's time for the same code path — Enron is read by
    the corpora tests and the zeng-enron preset.)"""
    args = (
        "compare",
        "--preset",
        "ragfort-paper-scale",
        "--kbs",
        "healthcaremagic",
        "--configurations",
        "none",
        "--rounds",
        "1",
        "--answer-budget",
        "fixed",
        "--max-tokens",
        "24",
        "--repeats",
        "1",
        "--utility-limit",
        "1",
        "--task-limit",
        "1",
        "--json",
        "--out",
        str(tmp_path),
    )
    p = run_cli(*args)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout.strip().splitlines()[-1])["rows"]
    assert sorted((r["kb"], r["attack"]) for r in rows) == [
        ("healthcaremagic", "rag-thief"),
        ("healthcaremagic", "worm"),
    ]
    for r in rows:
        assert r["rounds"] == 1 and r["ee_retrieval"] > 0 and r["ee_generation"] is not None
        assert r["task_n_graded"] == 1 and r["task_acc"] in (0.0, 1.0)  # HealthCareMagic's own task
    first = json.loads((tmp_path / "comparison.json").read_text())
    assert first["complete"]
    p = run_cli(*args)
    assert p.returncode == 0, p.stderr
    again = json.loads((tmp_path / "comparison.json").read_text())
    assert [r["run_id"] for r in again["runs"]] == [r["run_id"] for r in first["runs"]]
    assert len(list((tmp_path / "runs").iterdir())) == 2


def test_a_killed_sweep_resumes_and_loses_at_most_the_cell_in_flight(tmp_path):
    """Each finished cell is on disk at once; kill -9 the sweep, run it again: finished cells are kept."""
    import signal
    import time

    args = [
        sys.executable,
        "-m",
        "engine",
        "sweep",
        "--corpora",
        "clinic_handbook",
        "--retrievers",
        "minilm,bm25",
        "--query-sets",
        "clinic_handbook",
        "--targets",
        "pii,diagnosis",
        "--limit",
        "6",
        "--out",
        str(tmp_path),
    ]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cells = tmp_path / "sweep_cells.csv"
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if cells.is_file() and len(cells.read_text().strip().splitlines()) >= 2:  # header + one finished cell
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = len(cells.read_text().strip().splitlines()) - 1
    assert kept >= 1
    p = run_cli(*args[3:], "--json")
    assert p.returncode == 0, p.stderr
    if kept < 4:
        assert f"{kept} of 4 cells already done" in p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["complete"] and len(out["cells"]) == 4
    assert {(c["retriever"], c["target"]) for c in out["cells"]} == {
        (r, t) for r in ("minilm", "bm25") for t in ("pii", "diagnosis")
    }
    placed = json.loads((tmp_path / "placement.json").read_text())  # the earlier run's cells are kept
    assert sorted((p["retriever"], p["target"]) for p in placed) == sorted(
        (c["retriever"], c["target"]) for c in out["cells"]
    )


def test_a_torn_last_line_is_dropped_on_resume(tmp_path):
    """A crash mid-write leaves half a line: resume keeps every complete event and says what it dropped."""
    p = run_cli(
        "extract",
        "--kb",
        "clinic_records",
        "--attack",
        "zeng",
        "--attacker-llm",
        "none",
        "--rounds",
        "2",
        "--top-k",
        "2",
        "--max-tokens",
        "16",
        "--answer-budget",
        "fixed",
        "--json",
        "-q",
        "--out",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    run_dir = Path(json.loads(p.stdout.strip().splitlines()[-1])["out_dir"])
    path = run_dir / "events.jsonl"
    raw = path.read_bytes()
    cut = raw.index(b'{"kind": "leak_scored"', raw.index(b'"round": 2')) + 40  # half-way through round 2
    path.write_bytes(raw[:cut])
    (run_dir / "summary.json").unlink()
    p = run_cli("extract", "--resume", str(run_dir), "--json")
    assert p.returncode == 0, p.stderr
    assert "dropped a torn last line (40 bytes)" in p.stderr and "resuming run" in p.stderr
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert s["rounds"] == 2
    kinds = [json.loads(ln)["kind"] for ln in path.read_text().splitlines()]
    assert kinds.count("round_ended") == 2 and kinds.count("run_resumed") == 1 and kinds[-1] == "run_ended"


def test_a_remote_400_ends_the_run_cleanly_with_a_resume_hint(tmp_path):
    from helpers import RefusingServer

    server = RefusingServer(400, "This model's maximum context length is 2048 tokens; context too long")
    try:
        p = run_cli(
            "extract",
            "--kb",
            "clinic_records",
            "--attack",
            "zeng",
            "--generator",
            "openai/smol",
            "--api-base",
            server.url,
            "--rounds",
            "2",
            "--out",
            str(tmp_path),
        )
    finally:
        server.close()
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    line = next(ln for ln in p.stderr.splitlines() if ln.startswith("error:"))
    assert "context" in line and "resume with: python -m engine extract --resume" in line
    events = [json.loads(ln) for ln in next(tmp_path.glob("*/events.jsonl")).read_text().splitlines()]
    assert events[-1]["kind"] == "run_ended" and events[-1]["status"] == "failed"


def test_an_api_key_echoed_by_the_server_is_never_written(tmp_path):
    """A provider error that echoes the Authorization header: the key reaches neither stderr nor events."""
    from helpers import RefusingServer

    key = "sk-test-ECHO-0123456789abcdef"
    server = RefusingServer(500, "upstream error", echo_auth=True)
    try:
        p = run_cli(
            "extract",
            "--kb",
            "clinic_records",
            "--attack",
            "zeng",
            "--generator",
            "openai/smol",
            "--api-base",
            server.url,
            "--rounds",
            "1",
            "--out",
            str(tmp_path),
            env_extra={"OPENAI_API_KEY": key},
        )
        assert server.calls >= 1
        # in process too, with the key given to the generator (as the app does)
        from engine.errors import EngineError
        from engine.generators.litellm_gen import LiteLLMGenerator

        gen = LiteLLMGenerator(
            LiteLLMGenerator.Params(model="openai/smol", api_base=server.url, retries=0),
            api_key="sk-typed-in-the-app-987654321",
        )
        with pytest.raises(EngineError) as e:
            gen.chat([{"role": "user", "content": "hi"}], max_tokens=4)
        assert "987654321" not in str(e.value) and "[redacted]" in str(e.value)
    finally:
        server.close()
    assert p.returncode == 2, p.stderr
    assert "upstream rejected header" in p.stderr and key not in p.stderr and "ECHO" not in p.stderr
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert key.encode() not in f.read_bytes() and b"ECHO-0123" not in f.read_bytes(), f


def test_progress_into_a_log_has_a_line_per_stage_and_a_heartbeat_inside_long_ones(capsys):
    """A background job's log (stderr not a terminal): one line when a stage finishes, and inside a long stage a
    line every heartbeat, so ``tail`` shows where a 45-minute evaluation is."""
    from engine.cli.common import _progress_printer

    quiet = _progress_printer(True, heartbeat=3600)
    for i in range(1, 4):
        quiet("answering", i, 3)
    assert capsys.readouterr().err.splitlines() == ["answering: 3/3"]
    beating = _progress_printer(True, heartbeat=0)
    beating("answering", 1, 3)
    beating("answering", 3, 3)
    assert capsys.readouterr().err.splitlines() == ["answering: 1/3 …", "answering: 3/3"]
