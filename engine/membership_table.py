"""A table of membership experiments: knowledge bases × attacks × defense configurations, one resumable run per
cell (:class:`~engine.config.MembershipTableConfig`).

A table folder holds ``table.json`` (the configuration) and ``cells/<kb>--<attack>--<configuration>/<run id>/``,
each an ordinary membership run (events, manifest, summary). Running the same table into the same folder again
continues it: a finished cell is kept, a cell cut short resumes after its last probed record
(:meth:`~engine.runs.membership.MembershipRun.resume`), a cell not started starts. A folder holding a table of
another configuration is refused, never overwritten. Long grids (200 + 200 records a cell on 2 CPU cores: an hour
or more each) are run a chunk at a time; :func:`table_rows` reads whatever has finished, and marks the rest.
"""

from __future__ import annotations

import json
import shutil
import re
from pathlib import Path
from typing import Any

from .config import MembershipTableConfig, differences
from .errors import ConfigError
from .events import MembershipSplit, RunEnded, read_events
from .files import atomic_write, replace_block
from .metrics.catalog import MK
from .metrics.intervals import fmt_interval, wilson
from .progress import CellProgress, StopToken, stopped

STATE = "table.json"
# measured per configuration (the task: per KB and configuration), beside the cells, or the order the cells run in:
# may change in a table's folder (no cell's result depends on them)
UTILITY = ("utility_corpus", "utility_queries", "utility_limit", "task_limit", "order")  # not part of a cell
UTILITY_SETTINGS = ("utility_corpus", "utility_queries", "utility_limit")  # what a utility measurement depends on


def cells_of(cfg: MembershipTableConfig) -> list[tuple[str, str, str]]:
    """Every cell (kb, attack, configuration) in the table's reading order: by knowledge base, then attack, then
    configuration."""
    return [(kb, a, c) for kb in cfg.kbs for a in cfg.attacks for c in cfg.configurations]


def run_order(cfg: MembershipTableConfig) -> list[tuple[str, str, str]]:
    """The cells in the order they run (``cfg.order``): the table's, or per knowledge base each configuration across
    every attack, "none" first (``baselines-first``: the first cells of a table cut short give each attack's
    baseline)."""
    if cfg.order != "baselines-first":
        return cells_of(cfg)
    confs = sorted(cfg.configurations, key=lambda c: c != "none")  # stable: the others keep their order
    return [(kb, a, c) for kb in cfg.kbs for c in confs for a in cfg.attacks]


def cell_dir(out: Path, kb: str, attack: str, configuration: str) -> Path:
    """The folder of one cell's run."""
    slug = "--".join(re.sub(r"[^A-Za-z0-9+_.-]+", "-", x).strip("-") for x in (Path(kb).stem, attack, configuration))
    return out / "cells" / slug


def _run_dir(folder: Path) -> Path | None:
    runs = sorted(p for p in folder.glob("*/") if (p / "events.jsonl").is_file())
    return runs[-1] if runs else None


def _complete(run_dir: Path) -> bool:
    events, _ = read_events(run_dir / "events.jsonl")
    return any(isinstance(e, RunEnded) and e.status == "completed" for e in events)


def _split_by_chunk(run_dir: Path) -> bool:
    """Whether the run split its members and non-members by chunk (runs before December 2026: a non-member could
    keep a sibling chunk in the index), not by record."""
    events, _ = read_events(run_dir / "events.jsonl")
    split = next((e for e in events if isinstance(e, MembershipSplit)), None)
    return split is not None and split.unit != "record"


def _set_aside(folder: Path) -> None:
    """Move a cell split by chunk to ``<cell>.split-by-chunk`` (kept, never read into the table): it runs again."""
    aside = folder.with_name(folder.name + ".split-by-chunk")
    if aside.exists():
        shutil.rmtree(aside)
    folder.rename(aside)


def _open(out: Path, cfg: MembershipTableConfig) -> None:
    path = out / STATE
    if path.is_file():
        try:
            prev = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise ConfigError(f"{path} is damaged; choose another --out (or delete the folder)") from None
        diff = differences(prev.get("config") or {}, cfg.to_dict(), skip=UTILITY)  # "none": only the data dir
        if diff != "none":
            raise ConfigError(
                f"{out} holds a membership table of another configuration ({diff}); choose another --out — its "
                "results are kept, never overwritten"
            )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"schema": "rag-playground/membership-table", "config": cfg.to_dict()}, indent=2))


def run_table(
    cfg: MembershipTableConfig,
    out: str | Path,
    *,
    progress: CellProgress | None = None,
    stop: StopToken | None = None,
    generator: Any = None,
) -> list[dict[str, Any]]:
    """Run (or continue) every cell into ``out``; returns :func:`table_rows`. ``progress(index, stage, done,
    total)`` is called after each probed record (:data:`~engine.progress.CellProgress`); ``stop`` ends the table
    between two records (the cell in flight resumes next time). ``generator``: one loaded model for every cell."""
    from .runs.membership import MembershipRun

    out = Path(out)
    _open(out, cfg)
    if cfg.utility_limit:
        for conf in cfg.configurations:
            if stopped(stop):
                return table_rows(out)
            _utility(cfg, out, conf)
    tasks = _task_kbs(cfg)
    for index, (kb, attack, conf) in enumerate(run_order(cfg)):
        if stopped(stop):
            break
        if kb in tasks:  # the KB's own task, once per configuration, before its first cell
            tasks.discard(kb)
            for c in cfg.configurations:
                if not _task(cfg, out, kb, c, stop):
                    return table_rows(out)
        folder = cell_dir(out, kb, attack, conf)
        prev = _run_dir(folder) if folder.is_dir() else None
        if prev is not None and _split_by_chunk(prev):
            _set_aside(folder)
            prev = None
        if prev is not None and _complete(prev):
            continue
        run = (
            MembershipRun.resume(prev, generator=generator)
            if prev is not None
            else MembershipRun(cfg.cell_config(kb, attack, conf), out_dir=folder, generator=generator)
        )
        try:
            run.prepare()
            total = run.planned_rounds()
            while not run.done and not stopped(stop):
                run.step()
                if progress is not None:
                    progress(index, f"{kb} × {attack} × {conf}", run.rounds_done, total)
        finally:
            run.close()
    return table_rows(out)


def _utility_file(out: Path, configuration: str) -> Path:
    return out / "utility" / f"{re.sub(r'[^A-Za-z0-9+_.-]+', '-', configuration)}.json"


def _utility(cfg: MembershipTableConfig, out: Path, configuration: str) -> None:
    """ACC and faithfulness of ``configuration`` (the base's generator and RAG settings, the configuration's
    defenses) on the utility questions, once: kept while the utility settings stay the same."""
    from .rag.utility import defended_utility

    path = _utility_file(out, configuration)
    how = {k: getattr(cfg, k) for k in UTILITY_SETTINGS}
    if path.is_file():
        kept = json.loads(path.read_text(encoding="utf-8")).get("settings") or {}
        if {k: kept.get(k) for k in UTILITY_SETTINGS} == how:  # a new order or task limit changes no utility
            return
    c = cfg.cell_config(cfg.kbs[0], cfg.attacks[0], configuration)
    u = defended_utility(c, cfg.utility_corpus, cfg.utility_queries, cfg.utility_limit)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"settings": how, "configuration": configuration, **u}, indent=2))


def _task_kbs(cfg: MembershipTableConfig) -> set[str]:
    """The table's KBs that have an own task to measure (``task_limit`` > 0 and dialog records)."""
    if not cfg.task_limit:
        return set()
    from .compare_task import task_kbs

    return set(task_kbs(cfg.kbs, dict(cfg.base or {}).get("data_dir"))[0])


def _task_file(out: Path, kb: str, configuration: str) -> Path:
    name = "--".join(re.sub(r"[^A-Za-z0-9+_.-]+", "-", x) for x in (Path(kb).stem, configuration))
    return out / "task" / f"{name}.json"


def _task(cfg: MembershipTableConfig, out: Path, kb: str, configuration: str, stop: StopToken | None) -> bool:
    """Task ACC of ``configuration`` on ``kb``'s own task (the base's generator and RAG settings, the
    configuration's defenses), kept in ``task/`` with its graded questions (a stop resumes mid-way); False
    when ``stop`` ended it."""
    from .compare_task import task_accuracy

    path = _task_file(out, kb, configuration)
    if path.is_file() and json.loads(path.read_text(encoding="utf-8")).get("limit") == cfg.task_limit:
        return True
    c = cfg.cell_config(kb, cfg.attacks[0], configuration)
    u = task_accuracy(c, kb, configuration, cfg.task_limit, out=out, stop=stop)
    if u is None:
        return False
    atomic_write(path, json.dumps({"kb": kb, "configuration": configuration, **u}, indent=2))
    return True


def table_rows(out: str | Path) -> list[dict[str, Any]]:
    """One row per cell of the table in ``out``, from its run's events: the cell, records probed of those planned
    (``complete``), AUROC with its interval, TPR at 1% and 5% FPR with theirs, questions per decision, the share of
    members whose record was retrieved, questions refused, seconds. A cell not started has ``decisions`` 0."""
    from .runs.membership import summarize_membership

    out = Path(out)
    try:
        cfg = MembershipTableConfig.from_dict(json.loads((out / STATE).read_text(encoding="utf-8"))["config"])
    except (OSError, ValueError, KeyError):
        raise ConfigError(f"{out} holds no membership table (no readable {STATE})") from None
    rows = []
    for kb, attack, conf in cells_of(cfg):
        row: dict[str, Any] = {"kb": kb, "attack": attack, "configuration": conf, "decisions": 0, "complete": False}
        c = cfg.cell_config(kb, attack, conf)
        row["planned"] = c.members + c.non_members
        ufile = _utility_file(out, conf)
        if ufile.is_file():
            u = json.loads(ufile.read_text(encoding="utf-8"))
            graded = int(u.get("n_graded") or 0)
            row[MK.UTILITY_ACC] = u.get("acc")
            row[MK.UTILITY_ACC + "_ci"] = (
                list(wilson(round((u.get("acc") or 0.0) * graded), graded)) if graded else None
            )
            row["utility_n"] = graded
        tfile = _task_file(out, kb, conf)
        if tfile.is_file():
            t = json.loads(tfile.read_text(encoding="utf-8"))
            row[MK.TASK_ACC], row[MK.TASK_ACC + "_ci"], row["task_n"] = t.get("acc"), t.get("acc_ci"), t.get("n_graded")
        run = _run_dir(cell_dir(out, kb, attack, conf)) if cell_dir(out, kb, attack, conf).is_dir() else None
        if run is not None:
            events, _ = read_events(run / "events.jsonl")
            s = summarize_membership(events).to_dict()
            row.update(
                {
                    k: s.get(k)
                    for k in (
                        "auroc",
                        "auroc_ci",
                        "tpr_at_1fpr",
                        "tpr_at_1fpr_ci",
                        "tpr_at_5fpr",
                        "tpr_at_5fpr_ci",
                        "queries_per_decision",
                        "members_retrieved",
                        "blocked",
                        "decisions",
                        "n_members",
                        "n_non_members",
                        "seconds",
                    )
                }  # fmt: skip
            )
            row["complete"] = any(isinstance(e, RunEnded) and e.status == "completed" for e in events)
            row["run_dir"] = str(run)
        rows.append(row)
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The rows as the Markdown table the results page shows (a cell cut short says how far it got)."""
    head = (
        "| knowledge base | attack | defenses | members + non-members | AUROC [95% bootstrap] | TPR at 1% FPR | "
        "TPR at 5% FPR | questions / decision | members retrieved | time | utility ACC (questions) | "
        "task ACC (questions) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        if not r["decisions"]:
            lines.append(f"| {r['kb']} | {r['attack']} | {r['configuration']} | not run (0 of {r['planned']}) |"
                         + " |" * 6 + f" {_acc(r)} | {_task_acc(r)} |")  # fmt: skip
            continue
        n = f"{r['n_members']} + {r['n_non_members']}" + (
            "" if r["complete"] else f" (of {r['planned']}: not finished)"
        )
        auc = "n/a" if r["auroc"] is None else f"{r['auroc']:.2f} {fmt_interval(r['auroc_ci'], 2)}"
        seen = "" if r["members_retrieved"] is None else f"{r['members_retrieved']:.0%}"
        lines.append(
            f"| {r['kb']} | {r['attack']} | {r['configuration']} | {n} | {auc} | "
            f"{r['tpr_at_1fpr']:.2f} {fmt_interval(r['tpr_at_1fpr_ci'], 2)} | "
            f"{r['tpr_at_5fpr']:.2f} {fmt_interval(r['tpr_at_5fpr_ci'], 2)} | {r['queries_per_decision']:.1f} | "
            f"{seen} | {r['seconds'] / 60:.0f} min | {_acc(r)} | {_task_acc(r)} |"
        )
    return "\n".join(lines)


def _acc(r: dict[str, Any]) -> str:
    if r.get(MK.UTILITY_ACC) is None:
        return ""
    return f"{r[MK.UTILITY_ACC]:.2f} {fmt_interval(r.get(MK.UTILITY_ACC + '_ci'), 2)} ({r['utility_n']})"


def _task_acc(r: dict[str, Any]) -> str:
    if r.get(MK.TASK_ACC) is None:
        return ""
    return f"{r[MK.TASK_ACC]:.2f} {fmt_interval(r.get(MK.TASK_ACC + '_ci'), 2)} ({r['task_n']})"


BEGIN, END = "<!-- membership-table:begin -->", "<!-- membership-table:end -->"


def readme_markdown(out: str | Path) -> str:
    """The README's block: how many cells have finished and how many are under way, then the finished cells' rows
    (a cell under way is not reported until it ends: its numbers are not a result)."""
    rows = table_rows(out)
    done = [r for r in rows if r["complete"]]
    going = sum(bool(r["decisions"]) and not r["complete"] for r in rows)
    return (
        f"{len(done)} of {len(rows)} cells finished"
        + (f", {going} under way" if going else "")
        + f"; the other {len(rows) - len(done) - going} are queued in the same folder (the app's Membership page → "
        "*Long experiments* lists them all, progress included).\n\n" + markdown_table(done)
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m engine.membership_table DIR [--write FILE]``: print a table folder's Markdown table, or write the
    README's block (its finished and running cells) into FILE between :data:`BEGIN` and :data:`END`."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    target = None
    if len(args) == 3 and args[1] == "--write":
        target = Path(args[2])
        args = args[:1]
    if len(args) != 1:
        print("usage: python -m engine.membership_table TABLE_FOLDER [--write README.md]", file=sys.stderr)
        return 2
    try:
        if target is None:
            print(markdown_table(table_rows(args[0])))
            return 0
        replace_block(target, BEGIN, END, readme_markdown(args[0]))
    except (ConfigError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
