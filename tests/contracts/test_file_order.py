"""The order in which the test workers take the files (tests/file_times.py): longest first, nothing lost."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from file_times import TABLE, FileTimeRecorder, load_times, longest_files_first

REPO = Path(__file__).resolve().parents[2]


def _items(*nodeids: str) -> list:
    return [SimpleNamespace(nodeid=n) for n in nodeids]


def test_files_go_longest_first_whole_and_unknown_files_at_the_median():
    items = _items("t/a.py::x", "t/b.py::x", "t/a.py::y", "t/new.py::x", "t/c.py::x", "t/b.py::y")
    times = {"t/a.py": 10.0, "t/b.py": 300.0, "t/c.py": 50.0}
    out = [i.nodeid for i in longest_files_first(items, times)]
    # b (300), then the unknown file at the median (50) before c (50: a tie keeps the collection order), then a
    assert out == ["t/b.py::x", "t/b.py::y", "t/new.py::x", "t/c.py::x", "t/a.py::x", "t/a.py::y"]
    assert sorted(out) == sorted(i.nodeid for i in items)
    assert [i.nodeid for i in longest_files_first(items, {})][:3] == ["t/a.py::x", "t/a.py::y", "t/b.py::x"]


def test_a_partial_recording_updates_its_files_and_keeps_the_others(tmp_path):
    table = tmp_path / "times.json"
    table.write_text(json.dumps({"t/a.py": 5.0, "t/b.py": 7.0}))
    rec = FileTimeRecorder(table)
    for nodeid, d in (("t/b.py::x", 1.25), ("t/b.py::x", 2.0), ("t/c.py::y[1]", 0.5)):
        rec.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=d))
    rec.pytest_sessionfinish(None)
    assert load_times(table) == {"t/a.py": 5.0, "t/b.py": 3.2, "t/c.py": 0.5}


def test_the_committed_table_names_only_test_files_that_exist():
    times = load_times(TABLE)
    assert times, "tests/file_times.json is missing or empty"
    gone = [f for f in times if not (REPO / f).is_file()]
    assert not gone, f"tests/file_times.json names files that no longer exist: {gone}"
