"""Task utility in comparisons and membership tables: each knowledge base's own task (``dialogs:<kb>``,
:mod:`engine.dialog_task`) answered by every defense configuration — the ACC before / after that RAGFort's table
reports, on the attacked KB rather than on a separate question set.

It is measured per (KB, configuration), not per attack or seed: the defended system answering honest questions
does not depend on who attacks it. Each evaluation keeps a record of its graded questions under
``<out>/task/`` (named after the defended system's settings, so a record is only read back by the same system),
so a stopped comparison or table resumes mid-evaluation. KBs without dialog records (say Enron's e-mails) have
no such task and are skipped (see :func:`task_kbs`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from .config import ComparisonConfig, config_digest
from .dialog_task import PREFIX
from .errors import CorpusError
from .progress import Progress, StopToken, stopped

# kept per (KB, configuration), with the question count asked ("limit")
TASK_KEYS = ("acc", "acc_ci", "faithfulness", "n", "n_graded", "blocked")


def task_kbs(kbs: Sequence[str], data_dir: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """``({kb: question-set spec}, {kb: why it has no task})`` for ``kbs``: a KB has a task when its records are
    dialogs (read now, so a KB without them is named before any cell starts)."""
    from .queries import load_queries

    have: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for kb in kbs:
        spec = f"{PREFIX}{kb}"
        try:
            load_queries(spec, data_dir=data_dir or None, limit=1)
        except CorpusError as e:
            skipped[kb] = str(e)
        else:
            have[kb] = spec
    return have, skipped


def task_record(out: Path, system: Mapping[str, Any], kb: str, configuration: str) -> Path:
    """Where the graded questions of (``kb``, ``configuration``) are kept: named after the defended system's
    settings (``system``: its run config as a dict; the data dir does not count) and the question set."""
    base = dict(system)
    base.pop("data_dir", None)
    digest = config_digest({**base, "queries": f"{PREFIX}{kb}"})
    return out / "task" / f"{_record_stem(kb, configuration)}--{digest[:10]}.jsonl"


def _record_stem(kb: str, configuration: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{Path(kb).stem}--{configuration}")


def latest_record(out: Path, kb: str, configuration: str) -> Path | None:
    """The newest record of (``kb``, ``configuration``) under ``out/task/`` whatever system wrote it (a report
    of a task still under way reads it), or None."""
    found = sorted((out / "task").glob(f"{_record_stem(kb, configuration)}--*.jsonl"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def task_accuracy(
    c: Any,
    kb: str,
    configuration: str,
    limit: int,
    *,
    out: Path | None = None,
    progress: Progress | None = None,
    stop: Optional[StopToken] = None,
) -> dict[str, Any] | None:
    """ACC (with its Wilson interval) and faithfulness of the defended system a run config ``c`` describes (an
    extraction or membership config: its generator, retriever, defenses …) on ``kb``'s own task, its first
    ``limit`` questions, with ``limit`` under ``"limit"``; the graded questions are kept under ``out/task/``
    when ``out`` is given. None when ``stop`` ended it (its answers are in the record)."""
    from .rag.utility import defended_utility

    u = defended_utility(
        c,
        kb,
        f"{PREFIX}{kb}",
        limit,
        progress=progress,
        record=task_record(out, c.to_dict(), kb, configuration) if out is not None else None,
        stop=(lambda: stopped(stop)) if stop is not None else None,
    )
    if u.get("stopped"):
        return None
    return {**{k: u[k] for k in TASK_KEYS}, "limit": limit}


def task_of(
    cfg: ComparisonConfig,
    kb: str,
    configuration: str,
    *,
    out: Path | None = None,
    progress: Progress | None = None,
    stop: Optional[StopToken] = None,
) -> dict[str, Any] | None:
    """:func:`task_accuracy` of a comparison's ``configuration`` on ``kb`` (its base's system, the configuration's
    defenses), ``cfg.task_limit`` questions."""
    c = cfg.extraction_config("zeng", configuration, kb=kb)
    return task_accuracy(c, kb, configuration, cfg.task_limit, out=out, progress=progress, stop=stop)


def measure_tasks(
    cfg: ComparisonConfig,
    kbs: tuple[str, ...],
    task: dict[tuple[str, str], dict[str, Any]],
    *,
    out: Path | None,
    save: Callable[[], None],
    progress: Progress | None = None,
    stop: Optional[StopToken] = None,
) -> dict[str, str]:
    """Fill ``task`` for every (KB with dialogs, configuration) it lacks (or holds for another question count),
    calling ``save`` after each; returns the skipped KBs with the reason."""
    have, skipped = task_kbs(kbs, dict(cfg.base or {}).get("data_dir"))
    for kb in have:
        for conf in cfg.configurations:
            if stopped(stop):
                return skipped
            if (task.get((kb, conf)) or {}).get("limit") == cfg.task_limit:
                continue
            tick: Progress | None = None
            if progress is not None:
                p = progress

                def tick(stage: str, d: int, t: int, kb: str = kb, conf: str = conf) -> None:
                    p(f"task utility of {conf} on {kb}: {stage}", d, t)

            u = task_of(cfg, kb, conf, out=out, progress=tick, stop=stop)
            if u is None:
                return skipped
            task[(kb, conf)] = u
            save()
    return skipped
