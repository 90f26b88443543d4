"""Defense comparison: one attack (or several) against several defense configurations (on one
knowledge base or several).

For every (kb, attack, configuration) it runs an extraction (leakage) and, once per configuration,
the utility evaluation (ACC, faithfulness) of the same defended system on a question set. The
table reports each metric and its ratio to the undefended configuration (``none``) — RAGFort's
ablation shape: CRR(reindex+cascade) < min(CRR(reindex), CRR(cascade)) < CRR(none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from .config import ComparisonConfig, ExtractionConfig, defense_set, differences
from .errors import ConfigError
from .files import atomic_write
from .executors import ExecutorConfig
from .metrics.catalog import LEAKAGE, MK, STAGE
from .metrics.intervals import overlap, wilson
from .rag.utility import defended_utility
from .progress import Progress, StopToken, stopped
from .events import jsonable
from .runs.extraction import ExtractionRun, events_file
from .summaries import ComparisonRow

LEAK_KEYS = LEAKAGE
STAGE_KEYS = STAGE  # leakage by stage (see metrics.leakage)


UTILITY_KEYS = ("acc", "faithfulness", "n", "n_graded", "blocked")  # what a comparison row keeps of utility_of
# what a comparison row keeps of membership_of, flat as membership_<key> (MK.MEMBERSHIP_AUROC = membership_auroc)
MEMBERSHIP_KEYS = ("auroc", "auroc_ci", "tpr_at_5fpr", "decisions", "queries", "blocked", "attack")


def utility_of(cfg: ComparisonConfig, configuration: str, *, progress: Progress | None = None) -> dict[str, Any]:
    """ACC and faithfulness of the system defended by ``configuration`` on the utility question set."""
    base = cfg.extraction_config("zeng", configuration)
    return defended_utility(base, cfg.utility_corpus, cfg.utility_queries, cfg.utility_limit, progress=progress)


def membership_of(
    cfg: ComparisonConfig, configuration: str, kb: str | None = None, *, progress: Progress | None = None
) -> dict[str, Any]:
    """The membership experiment of ``configuration`` (:meth:`ComparisonConfig.membership_config`): AUROC with
    its bootstrap interval, TPR at 5% FPR, decisions, queries, blocked questions and the attack's name."""
    from .runs.membership import MembershipRun

    mcfg = cfg.membership_config(configuration, kb=kb)
    run = MembershipRun(mcfg, progress=progress)
    try:
        run.prepare()
        run.run()
    finally:
        run.close()
    s = run.summary()
    return {
        "auroc": s.auroc,
        "auroc_ci": list(s.auroc_ci) if s.auroc_ci else None,
        "tpr_at_5fpr": s.tpr_at_5fpr,
        "decisions": s.decisions,
        "queries": s.queries,
        "blocked": s.blocked,
        "attack": mcfg.attack,
    }


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two configurations equal but for the data dir (a run may resume from another checkout)."""

    def norm(d: Mapping[str, Any]) -> str:
        d = json.loads(json.dumps(jsonable(dict(d)), default=str))
        d.pop("data_dir", None)
        if isinstance(d.get("base"), dict):
            d["base"].pop("data_dir", None)
        return json.dumps(d, sort_keys=True)

    return norm(a) == norm(b)


# what a grown (or narrowed) comparison may change: which cells it asks, and how many task questions (the task's
# answers are kept per question, so a longer task extends the shorter one)
GRID_AXES = ("configurations", "attacks", "kbs", "repeats", "task_limit")


def _same_but_grid(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two comparison configurations equal but for which cells they ask (:data:`GRID_AXES`) and the data dir:
    a recorded run of a cell both ask, and a configuration's utility, carry over from one to the other."""
    return _same({k: v for k, v in a.items() if k not in GRID_AXES}, {k: v for k, v in b.items() if k not in GRID_AXES})


def _earlier_run(runs_dir: Path, ecfg: ExtractionConfig) -> tuple[Path, dict[str, Any] | None] | None:
    """A run of exactly ``ecfg`` already under ``runs_dir``, in one pass over the folder (newest first):
    ``(folder, summary)`` for one that played all its rounds but was never recorded in ``comparison.json`` (the
    process ended during the utility evaluation that follows the rounds: its rounds are not played again), else
    ``(folder, None)`` for an unfinished one (a cell cut short by a stop, a crash or the end of a session: it
    resumes), else None. The config is read from ``manifest.json`` (from the events' ``run_started`` when the
    manifest is missing), so a long log is not parsed to recognise its run."""
    if not runs_dir.is_dir():
        return None
    from .events import RunStarted, read_jsonl

    want, half = ecfg.to_dict(), None
    for d in sorted((p for p in runs_dir.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            config = json.loads((d / "manifest.json").read_text(encoding="utf-8"))["config"]
        except (OSError, ValueError, KeyError, TypeError):
            path = events_file(d)
            try:
                started = next((e for e in read_jsonl(path) if isinstance(e, RunStarted)), None) if path else None
            except (ValueError, KeyError, OSError):
                started = None
            config = started.config if started is not None else None
        if config is None or not _same(config, want):
            continue
        try:
            summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            if half is None and events_file(d) is not None:
                half = d
            continue
        except (OSError, ValueError):
            continue
        if summary.get("rounds") == ecfg.rounds:
            return d, summary
    return (half, None) if half is not None else None


def compare_cell(item: tuple, reporter=None) -> dict[str, Any] | None:
    """One cell of a comparison: ``item`` = (config dict, repeat, kb, attack, configuration, output folder or
    None, resume, with utility, with membership). Runs (or resumes) the extraction and, when asked, the
    configuration's utility evaluation and its membership experiment on this KB; returns the cell's row (those
    under ``"utility"`` and ``"membership"``), or None when ``reporter`` asked it to stop (its finished rounds
    are on disk and the next call resumes them). The same function runs in this process and as a Ray task
    (:mod:`engine.executors`)."""
    cfg_dict, rep, kb, attack, conf, out_dir, resume, with_utility, with_membership = item
    cfg = ComparisonConfig.from_dict(cfg_dict)
    ecfg = cfg.extraction_config(attack, conf, rep, kb=kb)
    out = Path(out_dir) if out_dir else None

    def tick(stage: str, d: int, t: int) -> None:
        if reporter is not None:
            reporter.progress(stage, d, t)

    def stopping() -> bool:
        return stopped(reporter)

    earlier = _earlier_run(out / "runs", ecfg) if out and resume else None
    if earlier is not None and earlier[1] is not None:  # all its rounds played; only its record is missing
        run_id, s = earlier[0].name, earlier[1]
    else:
        half = earlier[0] if earlier is not None else None
        if half is not None:
            run = ExtractionRun.resume(half, progress=tick)
        else:
            run = ExtractionRun(ecfg, out_dir=out / "runs" if out else None, progress=tick)
        try:
            if half is None:
                run.prepare()
            while not run.done:
                if stopping():
                    break
                run.step()
                tick("attacking", run.rounds_done, ecfg.rounds)
            if not run.done:
                return None  # stopped mid-cell: its rounds are on disk, the next call resumes it
            run.finish()
        finally:
            run.close()
        run_id, s = run.run_id, run.summary()
    row = {
        "kb": kb,
        "attack": attack,
        "configuration": conf,
        "defenses": list(defense_set(conf)),
        "run_id": run_id,
        "seed": ecfg.seed,
        **{k: s[k] for k in LEAK_KEYS},
        "rounds": s["rounds"],
        "kb_size": s["kb_size"],
        "blocked": s["blocked"],
        "curves": s["curves"],
        "seconds": s["seconds"],
        **{k: s.get(k) for k in STAGE_KEYS},
        **({"cascade": s["cascade"]} if "cascade" in s else {}),
    }
    if with_utility:
        row["utility"] = utility_of(cfg, conf, progress=tick)
    if with_membership:  # per (KB, configuration): the first cell of each measures it
        row["membership"] = membership_of(cfg, conf, kb, progress=tick)
    return row


def run_comparison(
    cfg: ComparisonConfig,
    *,
    out_dir: str | Path | None = None,
    progress: Progress | None = None,
    stop: Optional[StopToken] = None,
    on_row: Callable[[dict], None] | None = None,
    resume: bool = True,
    executor: ExecutorConfig | None = None,
    failed: list[dict[str, Any]] | None = None,
    overwrite: bool = False,
) -> list[ComparisonRow]:
    """:class:`~engine.summaries.ComparisonRow` s of (kb, attack, configuration, leakage metrics, utility, ratios
    to 'none'); ``stop`` ends early.

    With ``cfg.repeats`` > 1 every (attack, configuration) runs once per seed (base seed, base seed
    + 1, …), repetition by repetition, so a stopped comparison holds whole repetitions; the rows
    returned are :func:`aggregate_runs` of the runs (mean and standard deviation per metric) and
    ``on_row`` is called with each run's own row as it finishes.

    Resumable cell by cell (``resume``, with ``out_dir``): when ``out_dir/comparison.json`` holds runs of
    the same configuration, finished cells are kept and skipped, and a cell whose run stopped half-way
    continues from its last finished round (``ExtractionRun.resume``). The grid may change between calls (more
    configurations, attacks, KBs or seeds, or fewer; everything else equal): the recorded cells the new grid asks
    for are kept with their configurations' utility, and ``comparison.json`` becomes the new grid's record. A cell
    whose run already played all its rounds in ``out_dir/runs`` is recorded without a round more either way.

    ``executor`` says where cells run (:mod:`engine.executors`: here one after another, or as Ray tasks, the
    same numbers either way; on Ray the output folder must be on storage every node sees). Utility is
    evaluated once per configuration, by its first cell (or, when that cell failed on Ray, here after the
    others). A cell that failed on Ray is listed under
    ``failed`` in ``comparison.json`` (and appended to the ``failed`` list, when given) and retried by the
    next call. A folder holding a comparison with other settings (say another round count) is refused with one
    line naming the difference, unless ``overwrite``: finished results are never dropped silently.
    """
    from contextlib import nullcontext

    from .folder_lock import exclusive_folder

    # one writer per folder: a second comparison into it would overwrite this one's cells
    with exclusive_folder(out_dir, "this comparison") if out_dir else nullcontext():
        return _run_comparison(
            cfg,
            out_dir=out_dir,
            progress=progress,
            stop=stop,
            on_row=on_row,
            resume=resume,
            executor=executor,
            failed=failed,
            overwrite=overwrite,
        )


def _run_comparison(
    cfg: ComparisonConfig,
    *,
    out_dir: str | Path | None,
    progress: Progress | None,
    stop: Optional[StopToken],
    on_row: Callable[[dict], None] | None,
    resume: bool,
    executor: ExecutorConfig | None,
    failed: list[dict[str, Any]] | None,
    overwrite: bool = False,
) -> list[ComparisonRow]:
    """:func:`run_comparison`'s body, with its output folder held."""
    from .executors import run_cells

    runs: list[dict[str, Any]] = []
    utility: dict[str, dict] = {}
    membership: dict[tuple, dict] = {}  # per (kb, configuration) (comparisons with a membership_attack)
    task: dict[tuple, dict] = {}  # per (kb, configuration): the KB's own task (task_limit)
    task_skipped: dict[str, str] = {}
    kbs = cfg.knowledge_bases()
    from .corpora import check_corpus_spec

    for kb in kbs:  # every knowledge base now, not when its first cell comes (maybe hours later)
        check_corpus_spec(kb, dict(cfg.base or {}).get("data_dir") or None)
    if out_dir:
        from .paths import writable_dir

        writable_dir(out_dir)
    cells = [
        (rep, kb, a, c) for rep in range(cfg.repeats) for kb in kbs for a in cfg.attacks for c in cfg.configurations
    ]
    seeds = {rep: cfg.extraction_config(a, c, rep, kb=kb).seed for rep, kb, a, c in cells}
    out = Path(out_dir) if out_dir else None
    regridded = False  # the record holds another grid of the same comparison: rewritten for this one below
    if out and resume and (out / "comparison.json").is_file():
        try:
            prev = json.loads((out / "comparison.json").read_text())
        except (OSError, json.JSONDecodeError):
            prev = {}
        if prev.get("runs") and not overwrite and not _same_but_grid(prev.get("config") or {}, cfg.to_dict()):
            diff = differences(prev.get("config") or {}, cfg.to_dict(), skip=GRID_AXES)
            raise ConfigError(
                f"{out} holds a comparison with other settings ({diff}); choose another --out, or pass "
                f"--overwrite to replace it (its {len(prev['runs'])} recorded run(s) are then dropped)"
            )
        if _same_but_grid(prev.get("config") or {}, cfg.to_dict()):
            # the same comparison, or one grown by configurations, attacks, KBs or seeds (or narrowed): its
            # recorded cells that the grid still asks for, and their configurations' utility, are kept
            wanted = {(seeds[rep], kb, a, c) for rep, kb, a, c in cells}
            runs = [
                r
                for r in prev.get("runs") or []
                if (r.get("seed"), r.get("kb"), r.get("attack"), r.get("configuration")) in wanted
            ]
            regridded = not _same(prev.get("config") or {}, cfg.to_dict())
            for t in prev.get("task") or []:
                if isinstance(t, dict) and t.get("configuration") in cfg.configurations:
                    task[(t.get("kb"), t["configuration"])] = {
                        k: v for k, v in t.items() if k not in ("kb", "configuration")
                    }
            for r in runs:
                if any(k.startswith("utility_") for k in r):
                    utility.setdefault(r["configuration"], {k[8:]: v for k, v in r.items() if k.startswith("utility_")})
                if any(k.startswith("membership_") for k in r):
                    membership.setdefault(
                        (r.get("kb"), r["configuration"]),
                        {k[11:]: v for k, v in r.items() if k.startswith("membership_")},
                    )
    done = {(r.get("seed"), r.get("kb"), r["attack"], r["configuration"]) for r in runs}
    order = {(seeds[rep], kb, a, c): i for i, (rep, kb, a, c) in enumerate(cells)}
    todo: list[tuple[int, tuple]] = []
    asked: set[str] = set(utility) if cfg.utility_limit != 0 else set(cfg.configurations)
    asked_m: set[tuple] = (
        set(membership) if cfg.membership_attack else {(kb, c) for kb in kbs for c in cfg.configurations}
    )
    cfg_dict = cfg.to_dict()
    for i, (rep, kb, attack, conf) in enumerate(cells):
        if (seeds[rep], kb, attack, conf) in done:
            continue
        with_m = (kb, conf) not in asked_m
        todo.append(
            (i, (cfg_dict, rep, kb, attack, conf, str(out) if out else None, resume, conf not in asked, with_m))
        )
        asked.add(conf)
        asked_m.add((kb, conf))
    failed = failed if failed is not None else []
    placement: list[dict[str, Any]] = []

    def label(i: int) -> str:
        rep, kb, attack, conf = cells[i]
        return (
            f"{attack} vs {conf}"
            + (f" on {kb}" if len(kbs) > 1 else "")
            + (f" (seed {rep + 1}/{cfg.repeats})" if cfg.repeats > 1 else "")
        )

    def cell_progress(i: int, stage: str, d: int, t: int) -> None:
        if progress:
            progress(f"[{i + 1}/{len(cells)}] {label(i)}: {stage}", d, t)

    def save() -> None:
        for r in runs:  # utility (and membership) per configuration: every run of it shows the same figures
            r.update({f"utility_{k}": v for k, v in utility.get(r["configuration"], {}).items()})
            r.update({f"membership_{k}": v for k, v in membership.get((r.get("kb"), r["configuration"]), {}).items()})
            r.update(
                {f"task_{k}": v for k, v in task.get((r.get("kb"), r["configuration"]), {}).items() if k != "limit"}
            )
        runs.sort(key=lambda r: order.get((r.get("seed"), r.get("kb"), r["attack"], r["configuration"]), len(order)))
        if out:  # after every cell, so a stopped or killed comparison keeps what it finished
            rows = aggregate_runs(runs)
            add_ratios(rows)
            out.mkdir(parents=True, exist_ok=True)
            atomic_write(
                out / "comparison.json",
                json.dumps(
                    {
                        "config": cfg.to_dict(),
                        "rows": rows,
                        "runs": runs,
                        "complete": len(runs) == len(cells),
                        **({"failed": failed} if failed else {}),
                        **({"placement": placement} if placement else {}),
                        **(
                            {"task": [{"kb": kb, "configuration": c, **v} for (kb, c), v in task.items()]}
                            if task
                            else {}
                        ),
                        **({"task_skipped": task_skipped} if task_skipped else {}),
                    },
                    indent=2,
                    default=str,
                ),
            )

    def on_done(o) -> None:
        rep, kb, attack, conf = cells[o.index]
        placement.append({"cell": label(o.index), **o.to_dict()})
        if o.error:
            failed.append({"kb": kb, "attack": attack, "configuration": conf, "seed": seeds[rep], "error": o.error})
        elif o.result is not None:
            row = dict(o.result)
            u = row.pop("utility", None)
            if u is not None:
                utility[conf] = {k: u[k] for k in UTILITY_KEYS}
            m = row.pop("membership", None)
            if m is not None:
                membership[(kb, conf)] = {k: m[k] for k in MEMBERSHIP_KEYS}
            runs.append(row)
        save()  # also gives the row its configuration's utility
        if o.error is None and o.result is not None and on_row:
            on_row(row)

    if out and not (out / "comparison.json").is_file():
        save()  # a record from the start: a comparison killed in its first cell is listed, and resumes from it
    if cfg.task_limit:  # the KBs' own tasks first: minutes a configuration, where a cell may take hours
        from .compare_task import measure_tasks

        task_skipped.update(measure_tasks(cfg, kbs, task, out=out, save=save, progress=progress, stop=stop))
    run_cells(compare_cell, todo, executor=executor, on_done=on_done, progress=cell_progress, stop=stop)
    if regridded and not todo:
        save()  # nothing to play (a narrowed grid): the record still becomes this grid's
    if cfg.utility_limit != 0 and not stopped(stop):
        # a configuration whose utility cell failed (on Ray, after its retries) while its other cells finished:
        # nothing left would evaluate it, so it is evaluated here, once
        for conf in dict.fromkeys(r["configuration"] for r in runs):
            if conf not in utility:
                u = utility_of(
                    cfg,
                    conf,
                    progress=(lambda s, d, t, c=conf: progress(f"utility of {c}: {s}", d, t)) if progress else None,
                )
                utility[conf] = {k: u[k] for k in UTILITY_KEYS}
                save()

    if cfg.membership_attack and not stopped(stop):  # likewise a (kb, configuration) whose first cell failed
        for kb, conf in dict.fromkeys((r.get("kb"), r["configuration"]) for r in runs):
            if (kb, conf) not in membership:
                m = membership_of(cfg, conf, kb, progress=progress)
                membership[(kb, conf)] = {k: m[k] for k in MEMBERSHIP_KEYS}
                save()
    rows = aggregate_runs(runs)
    add_ratios(rows)
    return [ComparisonRow.from_dict(r) for r in rows]


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def aggregate_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (attack, configuration), in first-run order: each leakage metric is the mean over
    the runs (seeds), with ``<metric>_std`` (sample standard deviation; None for a single run),
    ``n_runs`` and ``seeds``; curves are averaged round by round (over the rounds all runs reached),
    stage seconds averaged, cascade counts summed (their ratios stay valid); utility is per
    configuration and the same in every run."""
    groups: dict[tuple[Any, str, str], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r.get("kb"), r["attack"], r["configuration"]), []).append(r)
    rows = []
    for (kb, attack, conf), rs in groups.items():
        first = rs[0]
        if len(rs) == 1:  # one run: its own row, unchanged
            rows.append(
                {
                    **first,
                    "run_ids": [first["run_id"]],
                    "seeds": [first.get("seed")],
                    "n_runs": 1,
                    **{f"{k}_std": None for k in LEAK_KEYS},
                }
            )
            continue
        row = {k: v for k, v in first.items() if k.startswith(("utility_", "membership_", "task_"))}
        row.update(
            kb=kb,
            attack=attack,
            configuration=conf,
            defenses=list(first["defenses"]),
            run_id=first["run_id"],
            run_ids=[r["run_id"] for r in rs],
            seeds=[r.get("seed") for r in rs],
            n_runs=len(rs),
            kb_size=first["kb_size"],
            rounds=_mean([r["rounds"] for r in rs]),
            blocked=_mean([r["blocked"] for r in rs]),
        )
        for k in LEAK_KEYS:
            xs = [float(r[k]) for r in rs]
            m = _mean(xs)
            row[k] = m
            row[f"{k}_std"] = (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5
        for k in STAGE_KEYS:
            xs = [float(r[k]) for r in rs if r.get(k) is not None]
            row[k] = _mean(xs) if xs else None
        curves: dict[str, list[float]] = {}
        for key in first.get("curves", {}):
            series = [r["curves"][key] for r in rs if key in r.get("curves", {})]
            n = min(len(c) for c in series)
            curves[key] = [_mean([c[j] for c in series]) for j in range(n)]
        row["curves"] = curves
        secs = [r.get("seconds") or {} for r in rs]
        row["seconds"] = {k: _mean([x.get(k, 0.0) for x in secs]) for k in secs[0]}
        casc = [r["cascade"] for r in rs if "cascade" in r]
        if casc:
            row["cascade"] = {
                k: sum(c.get(k, 0) for c in casc)
                for k in casc[0]
                if all(isinstance(c.get(k, 0), (int, float)) for c in casc)
            }
        rows.append(row)
    return rows


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """``<metric>_ratio`` = value / value of the 'none' configuration of the same attack (with
    repeats: mean / mean, the ratio of the means over the seeds); ``crr_ci``, the 95% Wilson interval of
    CRR over the KB's chunks (pooled over the runs), and ``crr_vs_none``: ``less`` / ``more`` when the
    intervals of this configuration and no protection do not overlap, else ``not distinguishable`` (at
    this budget, the two cannot be ranked)."""
    base = {(r.get("kb"), r["attack"]): r for r in rows if r["configuration"] == "none"}
    for r in rows:  # CRR is a share of the KB's chunks: Wilson's interval over chunks (× runs, pooled)
        n = int(r.get("kb_size") or 0) * int(r.get("n_runs") or 1)
        r[MK.CRR_CI] = list(wilson(int(round(float(r[MK.CRR]) * n)), n)) if n else None
    for r in rows:
        b = base.get((r.get("kb"), r["attack"]))
        for k in LEAK_KEYS:
            r[f"{k}_ratio"] = (r[k] / b[k]) if b and b[k] else None
        if b is not None and b is not r and r.get(MK.CRR_CI) and b.get(MK.CRR_CI):
            r[MK.CRR_VS_NONE] = (
                "not distinguishable"
                if overlap(r[MK.CRR_CI], b[MK.CRR_CI])
                else "less"
                if r[MK.CRR] < b[MK.CRR]
                else "more"
            )
        if b and r.get(MK.UTILITY_ACC) is not None and b.get(MK.UTILITY_ACC) is not None:
            r["utility_acc_drop"] = b[MK.UTILITY_ACC] - r[MK.UTILITY_ACC]
        if b and r.get(MK.TASK_ACC) is not None and b.get(MK.TASK_ACC) is not None:
            r["task_acc_drop"] = b[MK.TASK_ACC] - r[MK.TASK_ACC]


ABLATION = ("none", "reindex", "cascade", "reindex+cascade")


def _direction_holds(v: dict[str, float]) -> bool:
    return v["reindex+cascade"] < min(v["reindex"], v["cascade"]) < v["none"]


def _not_below_none(v: dict[str, float]) -> list[str]:
    """Single paths that do not leak less than no protection: the formula can hold without them
    (only the smaller single path has to be below none), which a verdict must not hide."""
    return [k for k in ("reindex", "cascade") if not v[k] < v["none"]]


def ablation_direction(
    rows: list[dict[str, Any]], attack: str, metric: str = MK.CRR, kb: str | None = None
) -> dict[str, Any]:
    """RAGFort's claim on one attack (on one kb, when a comparison has several): both < min(single
    paths) < none."""
    mine = [r for r in rows if r["attack"] == attack and (kb is None or r.get("kb") == kb)]
    v = {r["configuration"]: r[metric] for r in mine}
    if not all(k in v for k in ABLATION):
        return {"holds": None, "values": v}
    ci = {r["configuration"]: r.get(f"{metric}_ci") for r in mine}
    # the direction compares point estimates; say when its steps are within each other's intervals
    close = [
        f"{a} vs {b}"
        for a, b in (
            ("reindex+cascade", "reindex"),
            ("reindex+cascade", "cascade"),
            ("reindex", "none"),
            ("cascade", "none"),
        )
        if ci.get(a) and ci.get(b) and overlap(ci[a], ci[b])
    ]
    return {
        "holds": _direction_holds(v),
        "values": v,
        "not_below_none": _not_below_none(v),
        "not_distinguishable": close,
    }


def average_ablation_direction(rows: list[dict[str, Any]], metric: str = MK.CRR) -> dict[str, Any]:
    """RAGFort's claim on the *relative average* (the paper's ablation table, "Relative Average CRR"):
    per configuration, the mean over attacks of ``metric`` ÷ its value without protection (same
    attack); attacks that leaked nothing undefended are left out (no ratio). Then: both < min(single
    paths) < none (= 1)."""
    by_attack: dict[tuple[Any, str], dict[str, float]] = {}
    for r in rows:  # one entry per (kb, attack): the paper averages over attacks and datasets
        by_attack.setdefault((r.get("kb"), r["attack"]), {})[r["configuration"]] = r[metric]
    usable = [v for v in by_attack.values() if all(k in v for k in ABLATION) and v["none"]]
    if not usable:
        return {"holds": None, "ratios": {}, "attacks": 0}
    ratios = {k: sum(v[k] / v["none"] for v in usable) / len(usable) for k in ABLATION}
    return {
        "holds": _direction_holds(ratios),
        "ratios": ratios,
        "attacks": len(usable),
        "not_below_none": _not_below_none(ratios),
    }
