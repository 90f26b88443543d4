"""RAGFort's own tables, filled from a long comparison's folder, each cell beside the paper's number.

    .venv/bin/python -m engine.analysis.ragfort_tables results/ragfort-paper-scale-hcm [--kb healthcaremagic]
    .venv/bin/python -m engine.analysis.ragfort_tables results/ragfort-paper-scale-hcm --write docs/results.md

The paper's numbers (RAGFort, "Key Experimental Results"; HealthCareMagic, Qwen-14B) are :data:`PAPER_MAIN`,
:data:`PAPER_ABLATION`, :data:`PAPER_ACC` and :data:`PAPER_FLOPS`. Ours come from the folder's runs
(:func:`engine.analysis.scale_report.read_runs`: finished or not) and its ``comparison.json`` (the KB's own task):

* **Main table** — CRR of no protection, re-ranking, summarization and RAGFort (reindex + cascade) per attack,
  with the Wilson 95% interval over the KB's chunks and the rounds played. A cell not finished (running, or
  stopped to be resumed) shows where it is ("at round 84 of 200, not finished") and its ratio is taken against no
  protection *at the same round*; it is never shown as finished.
* **Ablation** — the relative average CRR (mean over the attacks of CRR ÷ no protection's), as the paper reports
  it, for inter only (reindex), intra only (cascade) and both; only over attacks whose cells are all finished.
* **Utility** — task ACC (``dialogs:<kb>``) without protection and with RAGFort, and the drop.
* **FLOPs** — the cascade's FLOPs (draft + verifier) against the verifier alone, from finished cascade runs.

With several attacker seeds a cell is their mean (CRR) and the ratio's spread over the seeds is shown.
``--write FILE`` replaces the block between ``<!-- ragfort-tables:begin -->`` and ``<!-- ragfort-tables:end -->``
in FILE, so the docs' tables are this output, regenerated, never typed.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any, Sequence

from ..metrics.catalog import MK
from ..metrics.intervals import wilson
from .scale_report import read_runs, task_rows

MAIN = (("none", "No protection"), ("rerank", "Re-ranking"), ("summarize", "Summarization"))
RAGFORT = "reindex+cascade"
ABLATION = (("reindex", "Inter only (reindex)"), ("cascade", "Intra only (cascade)"), (RAGFORT, "Both (RAGFort)"))
ATTACKS = (("worm", "Worm"), ("rag-thief", "RAG-Thief"))
# RAGFort, "Key Experimental Results", detailed results (HealthCareMagic, Qwen-14B): CRR in % per attack
PAPER_MAIN = {
    "none": {"worm": 17.60, "rag-thief": 57.16},
    "rerank": {"worm": 16.28, "rag-thief": 56.44},
    "summarize": {"worm": 15.44, "rag-thief": 47.24},
    RAGFORT: {"worm": 8.84, "rag-thief": 27.96},
}
PAPER_RELATIVE = {"none": 1.0, "rerank": 0.91, "summarize": 0.87, RAGFORT: 0.51}  # main table, all datasets
PAPER_ABLATION = {"reindex": 0.75, "cascade": 0.83, RAGFORT: 0.51}  # ablation table, relative average CRR
PAPER_ACC = (68.16, 66.57)  # "Impact on system performance", Qwen-14B / HealthCare: ACC before, after (%)
PAPER_FLOPS = (38.0, 19.4)  # Key finding 4, Qwen-14B / HealthCare: TFLOPs without, with the cascade
BEGIN, END = "<!-- ragfort-tables:begin -->", "<!-- ragfort-tables:end -->"


def _cells(runs: Sequence[dict[str, Any]], kb: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        if r["kb"] == kb:
            out.setdefault((r["attack"], r["configuration"]), []).append(r)
    return out


def _crr(run: dict[str, Any], at: int | None = None) -> float:
    k = run["recovered"][(at or run["rounds"]) - 1]
    return k / run["kb_size"]


def cell(cells: dict[tuple[str, str], list[dict[str, Any]]], attack: str, conf: str) -> dict[str, Any] | None:
    """One (attack, configuration): CRR (mean over seeds, at the rounds played), its interval (one seed), rounds,
    finished, the ratio to no protection at the same round (mean over seeds) and its spread over seeds."""
    runs = cells.get((attack, conf))
    if not runs:
        return None
    base = {b["seed"]: b for b in cells.get((attack, "none"), [])}
    ratios = []
    for r in runs:
        b = base.get(r["seed"])
        if b is not None:
            at = min(r["rounds"], b["rounds"])
            if _crr(b, at):
                ratios.append(_crr(r, at) / _crr(b, at))
    first = runs[0]
    k, n = first["recovered"][-1], first["kb_size"]
    return {
        MK.CRR: statistics.mean(_crr(r) for r in runs),
        "ci": wilson(k, n) if len(runs) == 1 else None,
        "rounds": min(r["rounds"] for r in runs),
        "budget": first["budget"],
        "finished": all(r["finished"] for r in runs),
        "seeds": len(runs),
        "ratio": statistics.mean(ratios) if ratios else None,
        "ratio_sd": statistics.stdev(ratios) if len(ratios) > 1 else None,
        "runs": runs,
    }


def _show(c: dict[str, Any] | None) -> str:
    if c is None:
        return "not run"
    s = f"{c[MK.CRR] * 100:.1f}"
    if c["ci"]:
        s += f" ({c['ci'][0] * 100:.1f}–{c['ci'][1] * 100:.1f})"
    if c["seeds"] > 1:
        s += f", mean of {c['seeds']} seeds"
    if c["finished"]:
        s += f", {c['rounds']} rounds"
    else:
        s += f", at round {c['rounds']} of {c['budget']} (not finished)"
    return s


def _ratio(c: dict[str, Any] | None, conf: str) -> str:
    if c is None or c["ratio"] is None:
        return ""
    if conf == "none":
        return "1×"
    s = f"{c['ratio']:.2f}×" + (f" ± {c['ratio_sd']:.2f}" if c["ratio_sd"] is not None else "")
    return s + (
        ""
        if c["finished"]
        else f" at round {c['rounds']} of {c['budget']} (not finished; against no protection at that round)"
    )


def main_table(cells: dict[tuple[str, str], list[dict[str, Any]]]) -> list[str]:
    """The paper's main table: CRR % per attack (ours with interval and rounds; the paper's), ratio to none."""
    lines = [
        "| defense | " + " | ".join(f"{a}: CRR % (95% interval) | ×none | paper CRR %" for _, a in ATTACKS) + " | "
        "relative average | paper relative average |",
        "|---|" + "---|---|---|" * len(ATTACKS) + "---|---|",
    ]
    for conf, name in (*MAIN, (RAGFORT, "RAGFort (reindex + cascade)")):
        parts, rel = [], []
        for attack, _ in ATTACKS:
            c = cell(cells, attack, conf)
            parts.append(f"{_show(c)} | {_ratio(c, conf)} | {PAPER_MAIN[conf][attack]:.2f}")
            rel.append(c["ratio"] if c and c["finished"] and c["ratio"] is not None else None)
        avg = f"{statistics.mean(rel):.2f}×" if all(x is not None for x in rel) else "—"
        lines.append(f"| {name} | " + " | ".join(parts) + f" | {avg} | {PAPER_RELATIVE[conf]:.2f}× |")
    return lines


def ablation_table(cells: dict[tuple[str, str], list[dict[str, Any]]]) -> list[str]:
    """The paper's ablation: relative average CRR per path, per attack and averaged (finished cells only)."""
    lines = [
        "| configuration | " + " | ".join(f"{a} ×none" for _, a in ATTACKS) + " | relative average | "
        "paper relative average |",
        "|---|" + "---|" * len(ATTACKS) + "---|---|",
        "| No protection | " + " | ".join("1×" for _ in ATTACKS) + " | 1× | 1× |",
    ]
    for conf, name in ABLATION:
        cs = [cell(cells, a, conf) for a, _ in ATTACKS]
        shown = [("not run" if c is None else _ratio(c, conf) or "") for c in cs]
        done = [c["ratio"] for c in cs if c and c["finished"] and c["ratio"] is not None]
        avg = f"{statistics.mean(done):.2f}×" if len(done) == len(ATTACKS) else "—"
        lines.append(f"| {name} | " + " | ".join(shown) + f" | {avg} | {PAPER_ABLATION[conf]:.2f}× |")
    return lines


def utility_table(out_dir: str | Path, kb: str) -> list[str]:
    """Task ACC before (none) and after (RAGFort), with the paper's."""
    rows = {r["configuration"]: r for r in task_rows(out_dir) if r["kb"] == kb}
    lines = [
        "| | ACC before (no protection) | ACC after (RAGFort) | change | questions |",
        "|---|---|---|---|---|",
    ]

    def acc(r: dict[str, Any] | None) -> str:
        if r is None or r["acc"] is None:
            return "not measured yet"
        ci = r["acc_ci"]
        shown = f"{r['acc'] * 100:.1f}%" + (f" ({ci[0] * 100:.1f}–{ci[1] * 100:.1f})" if ci else "")
        return shown + (f" at {r['questions']} of {r['of']} questions (not finished)" if r.get("of") else "")

    before, after = (rows.get("none"), rows.get(RAGFORT))
    change = (
        f"{(after['acc'] - before['acc']) * 100:+.1f} points"
        if before
        and after
        and before["acc"] is not None
        and after["acc"] is not None
        and not before.get("of")
        and not after.get("of")
        else "— (not finished)"
        if before and after
        else ""
    )

    def asked(r: dict[str, Any] | None, when: str) -> str:
        if r is None:
            return ""
        return f"{r['questions']}" + (f" of {r['of']}" if r.get("of") else "") + f" {when}"

    n = ", ".join(x for x in (asked(before, "before"), asked(after, "after")) if x)
    lines.append(f"| ours ({kb.replace('|', '/')}'s own task) | {acc(before)} | {acc(after)} | {change} | {n} |")
    lines.append(
        f"| paper (Qwen-14B / HealthCare) | {PAPER_ACC[0]:.2f}% | {PAPER_ACC[1]:.2f}% | "
        f"{PAPER_ACC[1] - PAPER_ACC[0]:+.2f} points | |"
    )
    return lines


def utility_by_path(out_dir: str | Path, kb: str) -> list[str]:
    """Task ACC of every configuration measured (the ablation's single paths, the paper's baselines), with its
    change against no protection once both are finished: which path costs the utility."""
    rows = {r["configuration"]: r for r in task_rows(out_dir) if r["kb"] == kb}
    base = rows.get("none")
    names = dict(MAIN + ABLATION)
    order = [c for c, _ in ABLATION] + [c for c, _ in MAIN if c != "none"]
    order += sorted(c for c in rows if c not in order and c != "none")
    lines = ["| configuration | ACC (95%) | change against no protection | questions |", "|---|---|---|---|"]
    for conf in order:
        r = rows.get(conf)
        if r is None:
            lines.append(f"| {names.get(conf, conf)} | not measured yet | | |")
            continue
        ci = r["acc_ci"]
        acc = f"{r['acc'] * 100:.1f}%" + (f" ({ci[0] * 100:.1f}–{ci[1] * 100:.1f})" if ci else "")
        done = base is not None and not base.get("of") and not r.get("of") and base["acc"] is not None
        change = f"{(r['acc'] - base['acc']) * 100:+.1f} points" if done else "— (not finished)"
        asked = f"{r['questions']}" + (f" of {r['of']} (not finished)" if r.get("of") else "")
        lines.append(f"| {names.get(conf, conf)} | {acc} | {change} | {asked} |")
    return lines


def flops_table(cells: dict[tuple[str, str], list[dict[str, Any]]]) -> list[str]:
    """The cascade's FLOPs against the verifier alone, per finished cascade run, with the paper's."""
    lines = [
        "| run | FLOPs an answer, cascade (draft + verifier) | verifier alone | ratio | draft tokens accepted |",
        "|---|---|---|---|---|",
    ]
    for (attack, conf), runs in sorted(cells.items()):
        for r in runs:
            casc = (r.get("last") or {}).get("cascade") or {}
            if not r["finished"] or not casc.get("flops_verifier_only"):
                continue
            total = float(casc.get("flops_draft", 0)) + float(casc.get("flops_verifier", 0))
            only = float(casc["flops_verifier_only"])
            drafted = float(casc.get("accepted", 0)) + float(casc.get("rejected", 0))
            acc = f"{casc.get('accepted', 0) / drafted:.0%}" if drafted else ""
            per = max(r["rounds"], 1)  # one answer a round
            lines.append(
                f"| {attack} × {conf} (seed {r['seed']}, {r['rounds']} answers) | {total / per / 1e12:.2f}T | "
                f"{only / per / 1e12:.2f}T | {total / only:.2f}× | {acc} |"
            )
    lines.append(
        f"| paper (Qwen-14B / HealthCare) | {PAPER_FLOPS[1]}T | {PAPER_FLOPS[0]}T | "
        f"{PAPER_FLOPS[1] / PAPER_FLOPS[0]:.2f}× | |"
    )
    return lines


def ragfort_markdown(
    out_dir: str | Path, kb: str = "healthcaremagic", *, runs: Sequence[dict[str, Any]] | None = None
) -> str:
    """All four tables for ``kb`` of the folder (``runs``: its :func:`read_runs`, when already read), with
    headings, as Markdown (a ``|`` in a KB's name is written as ``/``)."""
    cells = _cells(read_runs(out_dir) if runs is None else runs, kb)
    name = kb.replace("|", "/")
    return "\n".join(
        [
            f"**Main table** ({name}; CRR in % of the KB's chunks; ours: Qwen2.5-1.5B, the paper: Qwen-14B)",
            "",
            *main_table(cells),
            "",
            "**Ablation** (relative average CRR: the mean over the attacks of CRR ÷ no protection's)",
            "",
            *ablation_table(cells),
            "",
            "**Utility** (ACC on the attacked knowledge base's own task)",
            "",
            *utility_table(out_dir, kb),
            "",
            "By path (the same task; the paper reports RAGFort's only)",
            "",
            *utility_by_path(out_dir, kb),
            "",
            "**FLOPs** (2 × parameters × tokens evaluated, an answer on average; the paper's model is ~9× larger)",
            "",
            *flops_table(cells),
        ]
    )


def write_block(path: str | Path, text: str) -> None:
    """Replace the block between :data:`BEGIN` and :data:`END` in ``path`` with ``text``."""
    from ..files import replace_block

    try:
        replace_block(path, BEGIN, END, text)
    except ValueError as e:
        raise SystemExit(str(e)) from None


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: print the tables, or write them into a document's block."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--kb", default="healthcaremagic")
    ap.add_argument("--write", help="a Markdown file with a ragfort-tables block to replace")
    args = ap.parse_args(argv)
    text = ragfort_markdown(args.out_dir, args.kb)
    if args.write:
        write_block(args.write, text)
    else:
        print(text)


if __name__ == "__main__":
    main()
