"""Sweeps and comparisons on a real Ray cluster (local, and two nodes on this machine) give the serial results;
a failing cell is retried, then recorded while the others finish; Stop starts nothing new; no Ray is one
clear error."""

from __future__ import annotations

import json
import sys
import time

import pytest

from helpers import run_cli

ray = pytest.importorskip("ray", reason="Ray comes from requirements-scale.txt, which scripts/test.sh installs")

from engine.config import ComparisonConfig, SweepConfig  # noqa: E402
from engine.executors import ExecutorConfig, run_cells  # noqa: E402
from engine.progress import stop_flag  # noqa: E402
from engine.sweep import grid, run_sweep  # noqa: E402

SWEEP = SweepConfig(retrievers=("minilm", "bm25"), targets=("pii", "diagnosis"), limit=10)
RAY2 = ExecutorConfig(executor="ray", workers=2)
VOLATILE = {"run_id", "run_ids", "seconds"}  # what differs between any two runs of the same cell


@pytest.mark.slow
def test_a_sweep_on_ray_equals_the_serial_sweep(tmp_path):
    serial = run_sweep(SWEEP)
    seen: list[tuple] = []
    on_ray = run_sweep(
        SWEEP,
        executor=RAY2,
        out_dir=tmp_path,
        cell_progress=lambda i, stage, d, t: seen.append((grid(SWEEP)[i]["target"], stage)),  # engine.progress
    )
    assert on_ray.complete and not on_ray.failed
    assert on_ray.cells.equals(serial.cells)  # same rows, in grid order, whatever order they finished in
    assert seen and all(stage == "target documents" for _, stage in seen)
    assert {target for target, _ in seen} == {"pii", "diagnosis"}  # the index names the cell of the grid
    placement = json.loads((tmp_path / "placement.json").read_text())
    assert len(placement) == 4 and all(p["status"] == "finished" and p["node"] for p in placement)


@pytest.mark.slow
def test_a_comparison_on_ray_equals_the_serial_comparison(tmp_path):
    base = {
        "generator": "local",
        "generator_params": {"model": "smollm2-135m", "max_tokens": 48},
        "attacker_llm": "",
        "max_tokens": 48,
        "answer_budget": "fixed",
        "attack": "zeng",
        "rounds": 2,
        "top_k": 2,
        "data_dir": "",
    }
    cfg = ComparisonConfig.from_dict(
        {"base": base, "attacks": ["zeng"], "configurations": ["none", "system-prompt"], "utility_limit": 1}
    )
    from engine.compare import run_comparison

    serial = run_comparison(cfg, out_dir=tmp_path / "serial")
    stages: list[str] = []
    on_ray = run_comparison(cfg, out_dir=tmp_path / "ray", executor=RAY2, progress=lambda s, d, t: stages.append(s))
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k not in VOLATILE}  # noqa: E731
    assert [strip(r) for r in on_ray] == [strip(r) for r in serial]
    assert any("[1/2] zeng vs none: attacking" in s for s in stages)
    assert any("[2/2] zeng vs system-prompt" in s for s in stages)  # live progress from both cells
    saved = json.loads((tmp_path / "ray" / "comparison.json").read_text())
    assert saved["complete"] and {p["status"] for p in saved["placement"]} == {"finished"}
    assert all(r["utility_acc"] is not None for r in saved["runs"])  # once per configuration, on every run
    # resumed: nothing left to run, nothing changes
    again = run_comparison(cfg, out_dir=tmp_path / "ray", executor=RAY2)
    assert [strip(r) for r in again] == [strip(r) for r in on_ray]


def test_a_failing_cell_is_retried_once_then_recorded_and_the_others_finish(tmp_path):
    marks = tmp_path / "attempts"

    def cell(item, reporter):  # a closure: Ray ships it by value
        with open(marks, "a") as f:
            f.write(f"{item}\n")
        if item == "bad":
            raise RuntimeError("this cell always fails")
        return item.upper()

    got = run_cells(
        cell, [(0, "a"), (1, "bad"), (2, "c")], executor=ExecutorConfig(executor="ray", workers=2, retries=1)
    )
    by = {o.index: o for o in got}
    assert by[0].result == "A" and by[2].result == "C" and by[1].result is None
    assert "RuntimeError: this cell always fails" in by[1].error
    assert marks.read_text().split().count("bad") == 2  # the first try and one retry


def test_a_sweep_cell_that_fails_keeps_the_others_and_is_retried_by_the_next_run(tmp_path):
    cfg = SweepConfig(retrievers=("bm25", "no-such-retriever"), targets=("pii",), limit=5)
    result = run_sweep(cfg, executor=ExecutorConfig(executor="ray", workers=2, retries=0), out_dir=tmp_path)
    assert not result.complete and len(result.cells) == 1 and result.cells.iloc[0]["retriever"] == "bm25"
    assert result.failed[0]["retriever"] == "no-such-retriever" and "no-such-retriever" in result.failed[0]["error"]
    assert json.loads((tmp_path / "sweep_failed.json").read_text())[0]["retriever"] == "no-such-retriever"
    r = run_cli(
        "sweep",
        "--retrievers",
        "bm25,no-such-retriever",
        "--targets",
        "pii",
        "--limit",
        "5",
        "--executor",
        "ray",
        "--workers",
        "2",
        "--out",
        str(tmp_path),
        "--json",
        "-q",
    )
    assert r.returncode == 1 and "failed" in r.stderr and "no-such-retriever" in r.stderr
    assert "resuming the sweep" not in r.stderr  # quiet; but the finished cell was not run again:
    assert len(json.loads(r.stdout.strip().splitlines()[-1])["cells"]) == 1


def test_stop_starts_no_new_cell_and_keeps_the_finished_ones():
    done: list = []

    def slow(item, reporter):
        time.sleep(1.0)
        return item

    got = run_cells(
        slow,
        [(i, i) for i in range(4)],
        executor=ExecutorConfig(executor="ray", workers=1),
        on_done=done.append,
        stop=stop_flag(lambda: bool(done)),
    )
    assert [o.result for o in got] == [0]


@pytest.mark.slow
def test_cells_land_on_both_nodes_of_a_two_node_cluster(tmp_path):
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        cfg = SweepConfig(retrievers=("bm25",), targets=("pii", "diagnosis", "nq", "msmarco"), limit=5)
        ex = ExecutorConfig(executor="ray", ray_address=cluster.address, workers=2)
        result = run_sweep(cfg, executor=ex, out_dir=tmp_path)
        assert result.complete and result.cells.equals(run_sweep(cfg).cells)
        nodes = {p["node"] for p in json.loads((tmp_path / "placement.json").read_text())}
        assert len(nodes) == 2, nodes
    finally:
        cluster.shutdown()


def test_without_ray_the_ray_executor_is_one_clear_error(tmp_path):
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from engine.cli import main\n"
        f"sys.exit(main(['sweep', '--executor', 'ray', '--limit', '2', '--out', {str(tmp_path)!r}]))"
    )
    import subprocess
    from engine.paths import REPO_ROOT

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert r.returncode == 2 and "requirements-scale.txt" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "sweep_cells.csv").exists()


def test_a_preset_can_name_its_executor(tmp_path):
    from engine.config import load_preset
    from engine.errors import ConfigError

    p = tmp_path / "grid.yaml"
    p.write_text("kind: sweep\nretrievers: [bm25]\ntargets: [pii]\nlimit: 3\nexecutor: {executor: ray, workers: 2}\n")
    kind, cfg, meta = load_preset(str(p))
    assert kind == "sweep" and meta["executor"] == ExecutorConfig(executor="ray", workers=2)
    r = run_cli("run", str(p), "--out", str(tmp_path / "out"))
    assert r.returncode == 0 and (tmp_path / "out" / "sweep_cells.csv").is_file(), r.stderr[-2000:]
    assert "Token authentication" not in r.stderr  # Ray's warning on every local start is not the user's
    p.write_text("kind: sweep\nexecutor: {executor: spark}\n")
    with pytest.raises(ConfigError, match="executor"):
        load_preset(str(p))
    p.write_text("kind: poison\nexecutor: {executor: ray}\n")
    with pytest.raises(ConfigError, match="only sweep and compare"):
        load_preset(str(p))
