"""The plant journal: every document the audit plants in a target is written down before it is planted.

Poisoning needs write access to the system under audit, and a crash between planting and removing must not
leave attacker text in somebody's knowledge base. So each plant is a line in ``plants.jsonl`` (in the
audit's folder, flushed and fsynced) *before* the target is asked to store it, with the target's kind and
its secret-free parameters; its removal, and whether the target confirmed it gone, are lines too. What was
planned but never confirmed removed is *outstanding*: the next audit into the same folder removes it first,
and ``python -m engine audit cleanup`` removes it on its own (every journal with outstanding plants is also
listed in the cache folder, so cleanup without a folder finds them all). The report states how many
documents were planted, removed and verified gone.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import EngineError
from ..paths import cache_dir
from ..progress import Progress

JOURNAL = "plants.jsonl"
_lock = threading.Lock()


def _registry_entry(journal: Path) -> Path:
    return cache_dir("audit-journals") / (hashlib.sha1(str(journal.resolve()).encode()).hexdigest()[:16] + ".txt")


class PlantJournal:
    """The append-only record of one audit folder's plants (see the module docstring)."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / JOURNAL

    def _write(self, entry: Mapping[str, Any]) -> None:
        line = json.dumps({"t": round(time.time(), 3), **entry}, ensure_ascii=False)
        with _lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())

    def plan(self, cell: str, ids: Sequence[str], target: Mapping[str, Any], *, in_copy: bool = False) -> None:
        """Record ``ids`` as about to be planted in ``target`` (``{"kind", "params"}``, secret-free); ``in_copy``:
        the target plants into a scratch copy of its store that disappears with the process."""
        self._write({"op": "plan", "cell": cell, "ids": list(ids), "target": dict(target), "in_copy": in_copy})
        try:
            _registry_entry(self.path).write_text(str(self.path.resolve()))
        except OSError:
            pass

    def planted(self, cell: str, ids: Sequence[str], stored_ids: Sequence[str]) -> None:
        """Record the ids the target stored the documents under (a service may assign its own)."""
        self._write({"op": "planted", "cell": cell, "ids": list(ids), "stored": list(stored_ids)})

    def removed(self, cell: str, stored_ids: Sequence[str], verified: bool | None) -> None:
        """Record ``stored_ids`` as removed; ``verified``: the target confirmed them gone (None: it cannot tell)."""
        self._write({"op": "removed", "cell": cell, "stored": list(stored_ids), "verified": verified})
        if not self.outstanding():
            try:
                _registry_entry(self.path).unlink(missing_ok=True)
            except OSError:
                pass

    def entries(self) -> list[dict[str, Any]]:
        """Every line of the journal (a torn last line, left by a crash mid-write, is skipped)."""
        if not self.path.is_file():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict):
                out.append(d)
        return out

    def outstanding(self) -> list[dict[str, Any]]:
        """Plants not confirmed removed: ``{"cell", "target", "in_copy", "ids": stored ids}`` per plan, the stored
        ids where the target reported them (else the planned ids: the audit's own ids)."""
        plans: list[dict[str, Any]] = []
        stored: dict[str, str] = {}
        removed: set[str] = set()
        for e in self.entries():
            if e.get("op") == "plan":
                plans.append(e)
            elif e.get("op") == "planted":
                stored.update(zip(e.get("ids", []), e.get("stored", [])))
            elif e.get("op") == "removed":
                removed.update(e.get("stored", []))
        out = []
        for p in plans:
            ids = [stored.get(i, i) for i in p.get("ids", [])]
            left = [i for i in ids if i not in removed]
            if left:
                out.append(
                    {"cell": p.get("cell", ""), "target": p.get("target", {}), "in_copy": p.get("in_copy"), "ids": left}
                )
        return out

    def totals(self) -> dict[str, int]:
        """How many documents were planned, removed, and confirmed gone (the report's cleanup line)."""
        planned = sum(len(e.get("ids", [])) for e in self.entries() if e.get("op") == "plan")
        rem = [e for e in self.entries() if e.get("op") == "removed"]
        return {
            "planted": planned,
            "removed": sum(len(e.get("stored", [])) for e in rem),
            "verified": sum(len(e.get("stored", [])) for e in rem if e.get("verified") is True),
            "unverifiable": sum(len(e.get("stored", [])) for e in rem if e.get("verified") is None),
            "outstanding": sum(len(o["ids"]) for o in self.outstanding()),
        }


def cleanup(
    journal: PlantJournal,
    *,
    secrets: Mapping[str, str] | None = None,
    data_dir: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Remove every outstanding plant of ``journal`` (grouped by target) and check it is gone; returns
    ``{"removed", "verified", "unverifiable", "failed": [one line per target that could not be cleaned]}``."""
    from ..targets import make_target

    out: dict[str, Any] = {"removed": 0, "verified": 0, "unverifiable": 0, "failed": []}
    todo = journal.outstanding()
    for n, item in enumerate(todo):
        if progress:
            progress("removing planted documents", n, len(todo))
        spec = item["target"] or {}
        try:
            target = make_target(spec.get("kind", ""), spec.get("params") or {}, secrets=secrets, data_dir=data_dir)
            try:
                target.open()
                if not item.get("in_copy"):
                    target.remove(item["ids"])
                left = target.exists(item["ids"])
            finally:
                target.close()
        except EngineError as e:
            out["failed"].append(f"{spec.get('kind', '?')} ({item['cell']}): {e}")
            continue
        verified = None if left is None else not any(left)
        if verified is False:
            out["failed"].append(
                f"{spec.get('kind', '?')} ({item['cell']}): {sum(left)} planted document(s) still "
                f"there after removal: {', '.join(i for i, x in zip(item['ids'], left) if x)}"
            )
            continue
        journal.removed(item["cell"], item["ids"], verified)
        out["removed"] += len(item["ids"])
        out["verified" if verified else "unverifiable"] += len(item["ids"])
    if progress:
        progress("removing planted documents", len(todo), len(todo))
    return out


def open_journals() -> list[Path]:
    """Journals (anywhere on this machine) that the cache lists as holding outstanding plants."""
    folder = cache_dir("audit-journals")
    out = []
    for entry in sorted(folder.glob("*.txt")):
        try:
            p = Path(entry.read_text().strip())
        except OSError:
            continue
        if p.is_file() and PlantJournal(p.parent).outstanding():
            out.append(p)
        else:
            entry.unlink(missing_ok=True)
    return out


def describe_outstanding(items: Iterable[Mapping[str, Any]]) -> str:
    """One line: how many planted documents are outstanding, in which targets."""
    items = list(items)
    n = sum(len(i["ids"]) for i in items)
    kinds = sorted({str((i.get("target") or {}).get("kind", "?")) for i in items})
    return f"{n} planted document(s) not confirmed removed (target: {', '.join(kinds)})"
