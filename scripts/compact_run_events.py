"""Rewrite a stopped extraction run's events with the attacker's state as deltas (a developer script):

    .venv/bin/python scripts/compact_run_events.py results/ragfort-paper-scale-hcm/runs/<run>

Runs written before ``engine.attacker_states`` stored the agent's whole state after every round, so their
events grew with the square of the rounds (a 200-round Worm run: 287 MB, 4.3 MB after this). This rewrites
``events.jsonl`` and/or ``events.jsonl.gz`` in the folder with the same events, every ``attacker_state`` as a
delta, after checking that every round's folded state is unchanged. Only for a run no process is writing: a run being
played appends to its file, and those appends would be lost.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.attacker_states import as_deltas, full_states  # noqa: E402
from engine.events import event_to_json, read_events  # noqa: E402


def compact(path: Path) -> tuple[int, int]:
    """Rewrite one events file in place; (bytes before, bytes after)."""
    events, dropped = read_events(path)
    if dropped:
        raise SystemExit(f"{path}: ends in a torn line ({dropped} bytes): resume the run first")
    compacted = as_deltas(events)
    if full_states(compacted) != full_states(events):
        raise SystemExit(f"{path}: the compacted states differ from the originals; nothing written")
    data = "".join(event_to_json(e) + "\n" for e in compacted).encode("utf-8")
    tmp = path.with_name(path.name + ".tmp")
    if path.suffix == ".gz":
        with gzip.open(tmp, "wb") as f:
            f.write(data)
    else:
        tmp.write_bytes(data)
    before = path.stat().st_size
    os.replace(tmp, path)
    return before, path.stat().st_size


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+", type=Path)
    args = ap.parse_args(argv)
    for d in args.run_dirs:
        files = [p for p in (d / "events.jsonl", d / "events.jsonl.gz") if p.is_file()]
        if not files:
            raise SystemExit(f"{d}: no events.jsonl(.gz): not a run folder")
        for p in files:
            before, after = compact(p)
            print(f"{p}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
