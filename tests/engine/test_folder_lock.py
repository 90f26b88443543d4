"""One writer per output folder: a second sweep or comparison into a folder in use stops at once, with a clear
error, and the first one's files stay as they were."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.folder_lock import FolderBusyError, exclusive_folder, is_busy

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_writer_in_this_process_is_refused_until_the_first_ends(tmp_path):
    assert not is_busy(tmp_path / "out")
    with exclusive_folder(tmp_path / "out", "this sweep") as held:
        assert held.is_dir() and is_busy(tmp_path / "out")
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
        assert is_busy(tmp_path), "another process's writer is seen without taking its lock"
        with pytest.raises(FolderBusyError, match="another session or process"):
            with exclusive_folder(tmp_path, "this comparison"):
                pass
    finally:
        p.kill()
        p.wait()
    assert not is_busy(tmp_path)
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


def test_the_saved_runs_list_tells_a_run_being_written_from_one_that_stopped(tmp_path):
    """A run still written by a session whose browser tab closed (or by another process) is listed as being
    written, not as unfinished; once its writer lets go it reads unfinished."""
    import json

    from engine.folder_lock import run_lock
    from engine.saved import list_runs, state_suffix

    folder = tmp_path / "20261206-000000-abcdef12"
    folder.mkdir()
    first = {
        "type": "run_started",
        "config": {"kb": "clinic_records", "attack": "s2mia"},
        "manifest": {"kind": "membership"},
    }
    (folder / "events.jsonl").write_text(json.dumps(first) + "\n", encoding="utf-8")
    lock = run_lock(folder, folder.name)
    lock.acquire()
    try:
        (row,) = list_runs(tmp_path)
        assert row["being written"] and state_suffix(row) == " · being written"
    finally:
        lock.release()
    (row,) = list_runs(tmp_path)
    assert not row["being written"] and state_suffix(row) == " · unfinished"


def test_a_writer_nobody_references_any_more_is_not_busy_once_collected(tmp_path, monkeypatch):
    """A closed browser session's run, left in a reference cycle: the saved-runs list read "being written" until
    Python happened to collect it; is_busy now collects (at most every COLLECT_EVERY_S) and sees it gone, while a
    writer still referenced stays busy."""
    import gc

    import engine.folder_lock as fl
    from engine.folder_lock import run_lock

    class Session:  # what a session's state holds: a run that refers back to it
        pass

    gc.disable()  # keep the cycle until is_busy collects it
    try:
        s = Session()
        s.lock = run_lock(tmp_path / "gone", "r1")
        s.lock.acquire()
        s.self = s
        kept = run_lock(tmp_path / "kept", "r2")
        kept.acquire()
        del s
        monkeypatch.setattr(fl, "_collected_at", 0.0)
        assert not is_busy(tmp_path / "gone")
        assert is_busy(tmp_path / "kept")
        monkeypatch.setattr(fl, "_collected_at", __import__("time").monotonic())  # collected just now: not again
        s2 = Session()
        s2.lock = run_lock(tmp_path / "again", "r3")
        s2.lock.acquire()
        s2.self = s2
        del s2
        assert is_busy(tmp_path / "again")  # within the interval: read as held, as before
        kept.release()
    finally:
        gc.enable()
        gc.collect()
