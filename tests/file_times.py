"""The order in which the two test workers take the test files: the longest first.

pytest-xdist (``--dist loadfile``) hands out whole files in collection order; by default it puts the files with the
most tests first, so a file of three long tests (the paper reproduction, whose cold fixture embeds 20,767 snippets:
694 s) was handed out near the end (at 48.5 of 61 min in a measured run), where it could leave one worker alone for up
to its whole length. Ordering the files by their measured time, longest first, is the classic longest-processing-time
rule: the short files fill in at the end on whichever worker frees first.

The times come from ``tests/file_times.json``: seconds per file from a whole run on a fresh machine (empty model
and embedding caches, what CI faces), written by ``pytest --record-file-times tests/file_times.json`` (setup, call
and teardown of every test of the file). A file not listed counts as the median; the order only moves work
between the workers, so a stale table costs minutes of wall time, never a test.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

TABLE = Path(__file__).with_name("file_times.json")


def file_of(nodeid: str) -> str:
    """``tests/engine/test_cli.py`` for ``tests/engine/test_cli.py::test_x[param]``."""
    return nodeid.split("::", 1)[0]


def load_times(path: Path = TABLE) -> dict[str, float]:
    """The table of seconds per file ({} when the file is missing)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {str(k): float(v) for k, v in data.items()}


def longest_files_first(items: list, times: dict[str, float]) -> list:
    """``items`` regrouped by file, the files in decreasing measured time (unknown files at the median; ties and
    the tests inside a file keep their collection order)."""
    by_file: dict[str, list] = defaultdict(list)
    for item in items:
        by_file[file_of(item.nodeid)].append(item)
    default = statistics.median(times.values()) if times else 0.0
    order = sorted(by_file, key=lambda f: -times.get(f, default))  # sorted() is stable: ties keep their order
    return [item for f in order for item in by_file[f]]


class FileTimeRecorder:
    """Adds up each file's test time from the reports (in the controller under xdist) and writes the table."""

    def __init__(self, path: Path):
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[file_of(report.nodeid)] += float(report.duration)

    def pytest_sessionfinish(self, session) -> None:
        if not self.seconds:
            return
        table = load_times(self.path)  # a partial run updates its own files and keeps the others
        table.update({f: round(s, 1) for f, s in self.seconds.items()})
        table = dict(sorted(table.items()))
        self.path.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
