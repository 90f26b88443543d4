"""A long comparison's results as Markdown: CRR at round checkpoints with intervals, finished or not.

    .venv/bin/python -m engine.analysis.scale_report results/ragfort-paper-scale-hcm [--checkpoints 25,50,100,200]

Reads ``comparison.json`` (finished cells) and the events of unfinished runs under ``runs/`` (a cell still in
progress, or cut short by the end of a session), so a resumable experiment can be reported while it runs.
The interval is Wilson's 95% score interval of CRR as a proportion of the KB's chunks: the sampling noise of
*which* chunks a trajectory reaches, not the spread over attacker seeds (that needs ``--repeats``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any, Sequence

from ..errors import RunFileError
from ..events import LeakScored, RoundEnded, RunStarted, read_jsonl
from ..metrics.intervals import wilson
from ..metrics.catalog import MK


class NoRunsError(RunFileError):
    """The folder holds no extraction run with a finished round (yet)."""


def read_runs(out_dir: str | Path) -> list[dict[str, Any]]:
    """One dict per run folder under ``out_dir/runs`` (finished or not): kb, attack, configuration, seed, round
    budget, rounds played, finished, KB size, chunks recovered after each round and the last round's metrics.
    A folder without runs is one clear error (:class:`NoRunsError`); a damaged events file is its own
    (:class:`~engine.errors.RunFileError`)."""
    out = Path(out_dir).expanduser()
    runs = []
    for d in sorted((out / "runs").glob("*")):
        finished = _finished(d)
        if finished is not None:  # its summary holds the whole curve: no need for (uncommitted) events
            runs.append(finished)
            continue
        path = _events_path(d)
        if path is None:
            continue
        events = read_jsonl(path)
        started = next((e for e in events if isinstance(e, RunStarted)), None)
        scored = [e for e in events if isinstance(e, LeakScored)]
        if started is None or not scored:
            continue
        runs.append(
            _entry(
                d,
                dict(started.config),
                [int(e.metrics.get("recovered", 0)) for e in scored],
                int(scored[-1].metrics.get("kb_size", 0)),
                dict(scored[-1].metrics),
                _round_seconds(events),
                0.0,
            )
        )
    if not runs:
        raise NoRunsError(
            f"no extraction runs with a finished round under {out}/runs: a long comparison writes "
            f"them there (python -m engine compare --preset ragfort-paper-scale --out {out})"
        )
    return sorted(
        runs,
        key=lambda x: (
            str(x["kb"]),
            str(x["attack"]),
            x["configuration"] != "none",
            x["configuration"],
            x["seed"] or 0,
        ),
    )


def _finished(d: Path) -> dict[str, Any] | None:
    """A finished run's entry from its ``summary.json`` (CRR after every round under ``curves``) and
    ``manifest.json``; None when the folder holds no readable pair. The seconds of each round come from the summary
    (``round_seconds``), else from the run's events when the folder keeps them, else only their total is known."""
    try:
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        cfg = json.loads((d / "manifest.json").read_text(encoding="utf-8"))["config"]
        n, crr = int(summary["kb_size"]), list(summary["curves"][MK.CRR])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not crr or n <= 0:
        return None
    per_round = [float(x) for x in summary.get("round_seconds") or ()]
    if not per_round:
        path = _events_path(d)
        per_round = _round_seconds(read_jsonl(path)) if path else []
    total = sum(float(v) for v in (summary.get("seconds") or {}).values())
    return _entry(d, cfg, [round(x * n) for x in crr], n, summary, per_round, total)


def _events_path(d: Path) -> Path | None:
    """A run folder's events: ``events.jsonl``, else the copy kept gzipped in git, read as it is (the folder may
    be read-only, so nothing is unpacked beside it); None when it has neither."""
    return next((p for p in (d / "events.jsonl", d / "events.jsonl.gz") if p.is_file()), None)


def _round_seconds(events: Sequence[Any]) -> list[float]:
    """The wall seconds of each round (all stages), from a run's events."""
    return [float(sum(e.timings.values())) for e in events if isinstance(e, RoundEnded)]


def _entry(
    d: Path,
    cfg: dict[str, Any],
    recovered: list[int],
    kb_size: int,
    last: dict[str, Any],
    round_seconds: list[float],
    total: float,
) -> dict[str, Any]:
    """One run of :func:`read_runs`, from its config, chunks recovered after each round, last metrics and the
    seconds its rounds took (all stages): each round's, else (``round_seconds`` empty) only their ``total``."""
    return {
        "run_id": d.name,
        "kb": cfg.get("kb"),
        "attack": cfg.get("attack"),
        "configuration": "+".join(cfg.get("defenses") or ()) or "none",
        "seed": cfg.get("seed"),
        "budget": int(cfg.get("rounds") or 0),
        "rounds": len(recovered),
        "finished": (d / "summary.json").is_file(),
        "kb_size": kb_size,
        "recovered": recovered,
        "last": last,
        "seconds": float(sum(round_seconds) if round_seconds else total),
        "round_seconds": list(round_seconds),
    }


def report_rows(
    runs: Sequence[dict[str, Any]], checkpoints: Sequence[int] = (25, 50, 100, 150, 200)
) -> list[dict[str, Any]]:
    """One row per run: CRR at each checkpoint some run reached (None where this one has not), CRR now with its
    Wilson 95% interval over the KB's chunks, the stage shares, exploration, PII and the median and mean seconds a
    round (all stages; other work on the machine counts too; the median None when only the total is known)."""
    cps = [c for c in checkpoints if any(x["rounds"] >= c for x in runs)]
    rows = []
    for c in runs:
        n, k, m = c["kb_size"], c["recovered"][-1], c["last"]
        lo, hi = wilson(k, n)
        rows.append(
            {
                "kb": c["kb"],
                "attack": c["attack"],
                "configuration": c["configuration"],
                "seed": c["seed"],
                "rounds": f"{c['rounds']}/{c['budget']}" + ("" if c["finished"] else " (not finished)"),
                **{f"crr@{cp}": (c["recovered"][cp - 1] / n if c["rounds"] >= cp else None) for cp in cps},
                MK.CRR: k / n,
                "recovered": k,
                "kb_size": n,
                "crr_low": lo,
                "crr_high": hi,
                MK.EE_RETRIEVAL: m.get(MK.EE_RETRIEVAL, 0.0),
                MK.EE_GENERATION: m.get(MK.EE_GENERATION, 0.0),
                MK.EXPLORATION: m.get(MK.EXPLORATION, 0.0),
                MK.PII_LEAKED: int(m.get(MK.PII_LEAKED, 0)),
                "seconds_per_round": c["seconds"] / c["rounds"] if c["rounds"] else 0.0,
                "seconds_median": statistics.median(c["round_seconds"]) if c["round_seconds"] else None,
            }
        )
    return rows


def report_markdown(out_dir: str | Path, checkpoints: Sequence[int] = (25, 50, 100, 150, 200)) -> str:
    """A Markdown table of every run under ``out_dir/runs``: CRR at each reached checkpoint and now (Wilson 95%
    interval), stage shares, PII and the median / mean seconds a round; then each defended run against the
    undefended one at the same round."""
    try:
        runs = read_runs(out_dir)
    except NoRunsError:
        return f"(no runs under {Path(out_dir)}/runs yet)"
    rows = report_rows(runs, checkpoints)
    cps = [k[4:] for k in rows[0] if k.startswith("crr@")]
    head = (
        "| KB | attack | configuration | seed | rounds | "
        + " | ".join(f"CRR @ {c}" for c in cps)
        + " | CRR now (95% interval) | reached the context | reproduced of that | rounds finding a new chunk | PII "
        "| s a round (median / mean) |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        at = ["" if r[f"crr@{cp}"] is None else f"{r[f'crr@{cp}']:.4f}" for cp in cps]
        lines.append(
            f"| {r['kb']} | {r['attack']} | {r['configuration']} | {r['seed']} | {r['rounds']} | "
            + " | ".join(at)
            + f" | {r[MK.CRR]:.4f} ({r['recovered']} of {r['kb_size']}; "
            f"{r['crr_low']:.4f}–{r['crr_high']:.4f}) | {r[MK.EE_RETRIEVAL]:.4f} | {r[MK.EE_GENERATION]:.2f} | "
            f"{r[MK.EXPLORATION]:.0%} | {r[MK.PII_LEAKED]} | {_secs(r)} |"
        )
    return "\n".join(lines + same_round_lines(runs))


def _secs(row: dict[str, Any]) -> str:
    """Median / mean seconds a round, or the mean alone when the rounds' own times are not kept."""
    mean = f"{row['seconds_per_round']:.0f}"
    return mean + " (mean)" if row["seconds_median"] is None else f"{row['seconds_median']:.0f} / {mean}"


def same_round_lines(runs: Sequence[dict[str, Any]]) -> list[str]:
    """For every defended run, a line comparing its CRR with the undefended run of the same KB, attack and seed
    at the round the shorter of the two reached (a running cell is compared where it is, not at 200)."""
    out = []
    for r in runs:
        if r["configuration"] == "none":
            continue
        base = next(
            (
                b
                for b in runs
                if b["configuration"] == "none"
                and (b["kb"], b["attack"], b["seed"]) == (r["kb"], r["attack"], r["seed"])
            ),
            None,
        )
        if base is None:
            continue
        at = min(r["rounds"], base["rounds"])
        (k, n), (kb_, nb) = (r["recovered"][at - 1], r["kb_size"]), (base["recovered"][at - 1], base["kb_size"])
        lo, hi = wilson(k, n)
        blo, bhi = wilson(kb_, nb)
        verdict = (
            "lower, intervals apart" if hi < blo else "higher, intervals apart" if lo > bhi else "intervals overlap"
        )
        out.append(
            f"\n{r['attack']} on {r['kb']} (seed {r['seed']}) at round {at}: {r['configuration']} CRR "
            f"{k / n:.4f} ({lo:.4f}–{hi:.4f}) vs none {kb_ / nb:.4f} ({blo:.4f}–{bhi:.4f}); "
            f"ratio {(k / n) / (kb_ / nb) if kb_ else float('nan'):.2f} — {verdict}"
        )
    return out


def task_rows(out_dir: str | Path) -> list[dict[str, Any]]:
    """The KBs' own task per configuration (``task`` of ``comparison.json``, a comparison with ``task_limit``):
    KB, configuration, ACC, its Wilson 95% interval, questions graded and the change against no protection on the
    same KB (points of ACC); empty when none was measured. RAGFort reports this as "ACC before / after".
    A configuration whose task is not finished (running, or stopped to resume) comes from its record of graded
    questions so far, with ``of`` (the questions asked for) set; it claims no change."""
    comp = Path(out_dir).expanduser() / "comparison.json"
    try:
        saved = json.loads(comp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    task = saved.get("task") or []
    none = {t["kb"]: t["acc"] for t in task if t.get("configuration") == "none" and t.get("acc") is not None}
    rows = [
        {
            "kb": t["kb"],
            "configuration": t["configuration"],
            "acc": t.get("acc"),
            "acc_ci": t.get("acc_ci"),
            "questions": t.get("n_graded"),
            "of": None,
            "change": (t["acc"] - none[t["kb"]]) * 100
            if t["configuration"] != "none" and t.get("acc") is not None and t["kb"] in none
            else None,
        }
        for t in task
    ]
    limit = int((saved.get("config") or {}).get("task_limit") or 0)
    done = {(Path(r["kb"]).stem, r["configuration"]) for r in rows}  # a record is named after the KB's stem
    out = Path(out_dir).expanduser()
    # records are named <kb>--<configuration>--<digest>.jsonl (compare_task.task_record)
    started = sorted({tuple(p.stem.rsplit("--", 1)[0].split("--", 1)) for p in out.glob("task/*--*--*.jsonl")})
    for kb, conf in started:
        if limit and (kb, conf) not in done:
            partial = _task_so_far(out, kb, conf, limit)
            if partial is not None:
                rows.append(partial)
    return rows


def _task_so_far(out: Path, kb: str, configuration: str, limit: int) -> dict[str, Any] | None:
    """A task evaluation not finished: ACC over the questions its record holds so far; None before the first."""
    from ..compare_task import latest_record
    from ..rag.utility import read_record

    record = latest_record(out, kb, configuration)
    graded = [it.predicted == it.gold for it in read_record(record).values() if it.gold is not None]
    if not graded:
        return None
    k, n = sum(graded), len(graded)
    return {
        "kb": kb,
        "configuration": configuration,
        "acc": k / n,
        "acc_ci": list(wilson(k, n)),
        "questions": n,
        "of": limit,
        "change": None,
    }


def task_lines(out_dir: str | Path) -> list[str]:
    """:func:`task_rows` as a Markdown table (empty when none was measured)."""
    rows = task_rows(out_dir)
    if not rows:
        return []
    lines = [
        "",
        "| KB | configuration | task ACC (95% interval) | questions | change against none |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        acc, ci = r["acc"], r["acc_ci"]
        shown = "" if acc is None else f"{acc:.3f}" + (f" ({ci[0]:.3f}–{ci[1]:.3f})" if ci else "")
        change = "" if r["change"] is None else f"{r['change']:+.1f} points"
        asked = f"{r['questions']}" + (f" of {r['of']} (not finished)" if r["of"] else "")
        lines.append(f"| {r['kb']} | {r['configuration']} | {shown} | {asked} | {change} |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: print the report of ``out_dir`` and, when ``comparison.json`` exists, its finished cells."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--checkpoints", default="25,50,100,150,200")
    args = ap.parse_args(argv)
    print(report_markdown(args.out_dir, [int(x) for x in args.checkpoints.split(",") if x.strip()]))
    for line in task_lines(args.out_dir):
        print(line)
    comp = Path(args.out_dir) / "comparison.json"
    if comp.is_file():
        data = json.loads(comp.read_text())
        print(f"\n{len(data.get('runs', []))} finished cell(s); complete: {data.get('complete')}")


if __name__ == "__main__":
    main()
