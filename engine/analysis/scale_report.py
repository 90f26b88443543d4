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
from pathlib import Path
from typing import Any, Sequence

from ..events import LeakScored, RunStarted, read_jsonl
from ..metrics.intervals import wilson


def _cells(out_dir: Path) -> list[dict[str, Any]]:
    """One dict per run folder: kb, attack, configuration, seed, rounds played, finished, the CRR curve."""
    from ..runs.extraction import events_file

    cells = []
    for d in sorted((out_dir / "runs").glob("*")):
        path = events_file(d) if d.is_dir() else None      # unpacks a gzipped copy kept in git
        if path is None:
            continue
        events = read_jsonl(path)
        started = next((e for e in events if isinstance(e, RunStarted)), None)
        scored = [e for e in events if isinstance(e, LeakScored)]
        if started is None or not scored:
            continue
        cfg = dict(started.config)
        cells.append({"kb": cfg.get("kb"), "attack": cfg.get("attack"),
                      "configuration": "+".join(cfg.get("defenses") or ()) or "none", "seed": cfg.get("seed"),
                      "budget": int(cfg.get("rounds") or 0), "rounds": len(scored),
                      "finished": (d / "summary.json").is_file(), "kb_size": int(scored[-1].metrics.get("kb_size", 0)),
                      "recovered": [int(e.metrics.get("recovered", 0)) for e in scored],
                      "last": dict(scored[-1].metrics)})
    return cells


def report_markdown(out_dir: str | Path, checkpoints: Sequence[int] = (25, 50, 100, 150, 200)) -> str:
    """A Markdown table of every run under ``out_dir/runs``: CRR at each reached checkpoint and now (Wilson 95%
    interval), stage shares and PII."""
    out = Path(out_dir)
    cells = _cells(out)
    if not cells:
        return f"(no runs under {out}/runs yet)"
    cps = [c for c in checkpoints if any(x["rounds"] >= c for x in cells)]
    head = ("| KB | attack | configuration | seed | rounds | " + " | ".join(f"CRR @ {c}" for c in cps)
            + " | CRR now (95% interval) | reached the context | reproduced of that | rounds finding a new chunk | PII |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in sorted(cells, key=lambda x: (str(x["kb"]), str(x["attack"]), x["configuration"] != "none",
                                          x["configuration"], x["seed"] or 0)):
        n = c["kb_size"]
        at = [f"{c['recovered'][cp - 1] / n:.4f}" if c["rounds"] >= cp else "" for cp in cps]
        k = c["recovered"][-1]
        lo, hi = wilson(k, n)
        m = c["last"]
        status = f"{c['rounds']}/{c['budget']}" + ("" if c["finished"] else " (running)")
        lines.append(f"| {c['kb']} | {c['attack']} | {c['configuration']} | {c['seed']} | {status} | "
                     + " | ".join(at) + f" | {k / n:.4f} ({k} of {n}; {lo:.4f}–{hi:.4f}) | "
                     f"{m.get('ee_retrieval', 0):.4f} | {m.get('ee_generation', 0):.2f} | "
                     f"{m.get('exploration', 0):.0%} | {int(m.get('pii_leaked', 0))} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: print the report of ``out_dir`` and, when ``comparison.json`` exists, its finished cells."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--checkpoints", default="25,50,100,150,200")
    args = ap.parse_args(argv)
    print(report_markdown(args.out_dir, [int(x) for x in args.checkpoints.split(",") if x.strip()]))
    comp = Path(args.out_dir) / "comparison.json"
    if comp.is_file():
        data = json.loads(comp.read_text())
        print(f"\n{len(data.get('runs', []))} finished cell(s); complete: {data.get('complete')}")


if __name__ == "__main__":
    main()
