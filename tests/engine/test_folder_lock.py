"""One writer per output folder: a second sweep or comparison into a folder in use stops at once, with a clear
error, and the first one's files stay as they were."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.folder_lock import FolderBusyError, exclusive_folder

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_writer_in_this_process_is_refused_until_the_first_ends(tmp_path):
    with exclusive_folder(tmp_path / "out", "this sweep") as held:
        assert held.is_dir()
        with pytest.raises(FolderBusyError, match="this sweep is already running into"):
            with exclusive_folder(tmp_path / "out", "this sweep"):
                pass
        with exclusive_folder(tmp_path / "other", "this sweep"):  # another folder is free
            pass
    with exclusive_folder(tmp_path / "out", "this sweep"):  # released
        pass


def test_a_second_writer_in_another_process_is_refused_and_a_dead_one_leaves_nothing_stale(tmp_path):
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from engine.folder_lock import exclusive_folder
        with exclusive_folder({str(tmp_path)!r}, "x"):
            print("held", flush=True)
            time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "held"
        with pytest.raises(FolderBusyError, match="another session or process"):
            with exclusive_folder(tmp_path, "this comparison"):
                pass
    finally:
        p.kill()
        p.wait()
    with exclusive_folder(tmp_path, "this comparison"):  # killed: the lock went with it
        pass


def test_a_folder_that_cannot_be_written_is_one_clear_error(tmp_path):
    (tmp_path / "f").write_text("a file")
    with pytest.raises(EngineError, match="is a file, not a folder"):
        with exclusive_folder(tmp_path / "f", "this sweep"):
            pass


def test_a_sweep_or_comparison_into_a_busy_folder_stops_before_touching_it(tmp_path):
    from engine.compare import run_comparison
    from engine.config import ComparisonConfig, SweepConfig
    from engine.sweep import run_sweep

    (tmp_path / "sweep_cells.csv").write_text("the first run's cells\n")
    (tmp_path / "comparison.json").write_text('{"the first run": true}')
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with exclusive_folder(tmp_path, "a sweep"):
        with pytest.raises(FolderBusyError, match="this sweep is already running"):
            run_sweep(SweepConfig(targets=("pii",), limit=2), out_dir=tmp_path)
        cfg = ComparisonConfig.from_dict(
            {"base": {"attack": "zeng", "rounds": 1}, "attacks": ["zeng"], "configurations": ["none"]}
        )
        with pytest.raises(FolderBusyError, match="this comparison is already running"):
            run_comparison(cfg, out_dir=tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != ".running.lock"} == before
