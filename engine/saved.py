"""What is saved on disk, listed: runs (poisoning and extraction) and comparisons, newest first.

One place reads the folders the labs, the comparison page, the CLI and long experiments write, so every page
lists the same things the same way. Reading is cheap: a run's first line (or its ``manifest.json``), a
comparison's ``comparison.json``; a folder that cannot be read is skipped, never an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .folder_lock import is_busy
from .paths import owner_dir


def runs_dir(owner: str | None = None) -> Path:
    """Where runs are written: ``<cache>/runs``, or ``<cache>/runs/owners/<owner>`` for one owner of a shared
    deployment (each browser session lists and reopens only its own folder)."""
    return owner_dir("runs", owner)


def sweeps_dir(owner: str | None = None) -> Path:
    """The app's sweeps, one folder per grid (:func:`engine.sweep.sweep_key`): ``<cache>/sweeps``, or one
    owner's folder on a shared deployment."""
    return owner_dir("sweeps", owner)


def comparisons_dir(owner: str | None = None) -> Path:
    """Saved comparisons: ``<cache>/comparisons``, or one owner's folder on a shared deployment."""
    return owner_dir("comparisons", owner)


def audits_dir(owner: str | None = None) -> Path:
    """The app's audits, one folder each: ``<cache>/audits``, or one owner's folder on a shared deployment."""
    return owner_dir("audits", owner)


def list_audits(root: Path | None = None) -> list[dict[str, Any]]:
    """Audit folders under ``root`` that hold a ``report.json`` (newest first): id, folder, target kind and
    endpoint, status and severity counts."""
    root = root or audits_dir()
    out = []
    for p in sorted(root.glob("*/report.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            r = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(r, dict) or "findings" not in r:
            continue
        t = r.get("target") or {}
        out.append(
            {
                "id": p.parent.name,
                "folder": str(p.parent),
                "path": str(p),
                "kind": t.get("kind", ""),
                "endpoint": t.get("endpoint", ""),
                "status": r.get("status", ""),
                "severity_counts": r.get("severity_counts") or {},
            }
        )
    return out


def _first_event(path: Path) -> dict[str, Any] | None:
    try:
        with path.open(encoding="utf-8") as f:
            first = json.loads(f.readline())
    except (OSError, ValueError):
        return None
    return first if isinstance(first, dict) else None


def list_runs(root: Path | None = None, kind: str | None = None) -> list[dict[str, Any]]:
    """Runs under ``root`` (newest first), optionally of one ``kind`` (``poison`` / ``extract``): id, folder,
    events path, kind, whether it finished, and the configuration's headline (``defenses`` as text)."""
    root = root or runs_dir()
    out = []
    for d in sorted(root.glob("*/events.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True):
        first = _first_event(d)
        cfg, manifest = (first.get("config"), first.get("manifest")) if first is not None else (None, None)
        if not isinstance(cfg, dict) or not isinstance(manifest or {}, dict):
            continue  # not a run's first event (a damaged or foreign file)
        k = (manifest or {}).get("kind", "poison")
        if kind and k != kind:
            continue
        row = {
            "run_id": d.parent.name,
            "kind": k,
            "path": str(d),
            "folder": str(d.parent),
            "finished": (d.parent / "summary.json").is_file(),
            "being written": is_busy(d.parent),
            "retriever": cfg.get("retriever"),
            "attack": cfg.get("attack"),
        }
        if k in ("extract", "membership"):
            row.update(
                corpus=cfg.get("kb"),
                defenses=", ".join(cfg.get("defenses") or ()) or "none",
                **{"round budget": cfg.get("rounds")},
            )
            if cfg.get("tenants"):  # multi-tenant runs differ by their filter, not their defenses
                row["tenant filter"] = f"{cfg.get('tenant_filter', 'inside')} (as {cfg.get('identity') or 'tenant-1'})"
            if k == "membership" and row["finished"]:  # the headline, from the summary written at the end
                try:
                    s = json.loads((d.parent / "summary.json").read_text(encoding="utf-8"))
                    row.update(members=s.get("n_members"), auroc=s.get("auroc"), tpr_at_1fpr=s.get("tpr_at_1fpr"))
                except (OSError, ValueError, AttributeError):  # a damaged summary: listed without its headline
                    pass
        else:
            row.update(
                corpus=cfg.get("corpus"),
                queries=cfg.get("queries"),
                target=cfg.get("target"),
                injection=cfg.get("injection"),
            )
        out.append(row)
    return out


def describe_run(row: dict[str, Any]) -> str:
    """One line naming a listed extraction run: id, attack, KB, defenses, rounds, and its state."""
    return (
        f"{row['run_id']} · {row['attack']} on {row['corpus']} · {row['defenses']} · {row['round budget']} rounds"
        + (state_suffix(row))
    )


def state_suffix(row: dict[str, Any]) -> str:
    """' · being written' for a listed run a session or process holds now (e.g. an experiment still running
    after its browser tab closed), ' · unfinished' for one stopped before its end, '' for a finished one."""
    if row.get("being written"):
        return " · being written"
    return "" if row["finished"] else " · unfinished"


def list_comparisons(root: Path | None = None) -> list[dict[str, Any]]:
    """Saved comparisons (newest first) with their headline configuration, finished and total runs; a record that
    cannot be read is listed with ``damaged`` (why) — not hidden, so its folder of runs is not forgotten."""
    root = root or comparisons_dir()
    out = []
    for p in sorted(root.glob("*/comparison.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        row: dict[str, Any] = {"id": p.parent.name, "path": str(p), "being written": is_busy(p.parent)}
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("config") or {}, dict):
                raise ValueError("not a comparison record (no config object)")
            cfg = data.get("config") or {}
            base = cfg.get("base") or {}
            kbs = list(cfg.get("kbs") or []) or [base.get("kb") if isinstance(base, dict) else None]
            repeats = cfg.get("repeats") or 1  # settings this version refuses say so at Resume, not here
            cells = len(kbs) * len(cfg.get("attacks") or []) * len(cfg.get("configurations") or [])
            cells = cells * repeats if isinstance(repeats, int) else None
            row.update(
                kb=", ".join(str(k) for k in kbs if k),
                attacks=", ".join(map(str, cfg.get("attacks") or [])),
                configurations=", ".join(map(str, cfg.get("configurations") or [])),
                rows=len(data.get("rows") or []),
                runs_done=len(data.get("runs") or data.get("rows") or []),
                cells=cells,
                # a record written before "complete" existed was written once, at the end
                complete=bool(data.get("complete", True)),
            )
        except (OSError, ValueError, TypeError, AttributeError) as e:
            row.update(kb="?", attacks="?", configurations="?", rows=0, runs_done=0, cells=0, complete=True)
            row["damaged"] = f"{type(e).__name__}: {e}"
        out.append(row)
    return out


def comparison_state(row: dict[str, Any]) -> str:
    """' · being written' for a listed comparison a session or process runs now, ' · unfinished (k of n runs)' for
    one stopped or killed before its end (the app's Resume, or the CLI's ``compare --out`` on its folder, continues
    it), '' for a finished one."""
    if row.get("being written"):
        return " · being written"
    if row.get("damaged"):
        return " · damaged: Open says why"
    if row.get("complete", True):
        return ""
    return f" · unfinished ({row.get('runs_done', 0)} of {row.get('cells') or '?'} runs)"
