"""The universal-poisoning reproductions as Markdown, from the saved runs, beside the paper's numbers.

    .venv/bin/python -m engine.analysis.poisoning_report results [--k 2]

Reads ``<results>/table1-bioasq`` (the Table-1 sweep), ``<results>/table8`` (β-sweep summaries), every sweep
with detectors under ``<results>`` (Figures 3–9) and ``<results>/tables34`` (``analyze --save``); prints one
Markdown table per reproduction, skipping (with a line saying so) any that has no saved runs yet. The docs'
tables are this output.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import ConfigError
from .paper_tables import (
    PAPER_TABLE1_PUBMED,
    QUERY_LABELS,
    QUERY_SETS,
    RETRIEVER_ORDER,
    TARGET_LABELS,
    TARGETS,
    paper_table1,
    paper_table8,
    read_sweep,
    summary,
)
from .reproduce import detection_table, read_beta_sweeps, read_detection, read_tables34, table8

RETRIEVER_LABELS = {"minilm": "MiniLM", "mpnet": "MPNet", "e5-small": "E5-small", "bm25": "BM25"}


def markdown(df: pd.DataFrame, index: bool = False) -> str:
    """A frame as a GitHub Markdown table (no extra dependency)."""
    frame = df.reset_index() if index else df
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join("" if pd.isna(v) else str(v) for v in row.tolist()) + " |")
    return "\n".join(lines)


def _retrievers(cells: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(cells["retriever"]))
    return [r for r in RETRIEVER_ORDER if r in present] + [r for r in present if r not in RETRIEVER_ORDER]


def table1_markdown(cells: pd.DataFrame, k: int = 2) -> str:
    """One row per query set: the five targets' ASR@k (PPI / MS-MARCO / NQ / HotpotQA / Diagnostic) for each of
    our retrievers, then the paper's PubMed rows (Table 1 for k = 2, Table 7 for k = 1); a mean row last."""
    col = f"asr@{k}"
    cells = cells[cells["query_set"].isin(QUERY_SETS) & cells["target"].isin(TARGETS)]
    ours = _retrievers(cells)
    paper = paper_table1(k)
    header = (
        ["query set"]
        + [f"ours · {RETRIEVER_LABELS.get(r, r)}" for r in ours]
        + ([f"paper · {r}" for r in PAPER_TABLE1_PUBMED] if not paper.empty else [])
    )

    def five(values: Sequence[float]) -> str:
        vals = [f"{v:.2f}" for v in values]
        return f"{vals[0]} × 5" if len(set(vals)) == 1 and len(vals) == 5 else " / ".join(vals)

    rows = []
    for q in QUERY_SETS:
        row = [QUERY_LABELS[q]]
        for r in ours:
            c = cells[(cells["retriever"] == r) & (cells["query_set"] == q)].set_index("target")
            row.append(five([c.loc[t, col] for t in TARGETS]) if all(t in c.index for t in TARGETS) else "")
        if not paper.empty:
            for r in PAPER_TABLE1_PUBMED:
                p = paper[(paper["retriever"] == r) & (paper["query_set"] == q)].set_index("target")
                row.append(five([p.loc[t, col] for t in TARGETS]))
        rows.append(row)
    s = summary(cells, k)
    mean = ["mean (lowest)"]
    for r in ours:
        v = s["ours"].get(r)
        mean.append(f"{v['mean']:.2f} ({v['min']:.2f}, {v['lowest']})" if v else "")
    if not paper.empty:
        for r in PAPER_TABLE1_PUBMED:
            v = s["paper"][r]
            mean.append(f"{v['mean']:.2f} ({v['min']:.2f}, {v['lowest']})")
    rows.append(mean)
    return markdown(pd.DataFrame(rows, columns=header))


def _section(title: str, body) -> str:
    try:
        return f"### {title}\n\n{body()}\n"
    except ConfigError as e:
        return f"### {title}\n\n(no saved runs: {e})\n"


def report(results: str | Path, k: int = 2) -> str:
    """Every reproduction found under ``results`` as Markdown sections."""
    root = Path(results)
    out = [
        _section(
            f"Table {1 if k == 2 else 7}: top-{k} success (targets: {' / '.join(TARGET_LABELS[t] for t in TARGETS)})",
            lambda: table1_markdown(read_sweep(root / "table1-bioasq"), k),
        )
    ]
    out.append(
        _section(
            "Table 8: detection rate / FPR vs β",
            lambda: markdown(table8(read_beta_sweeps(root / "table8"))) + "\n\n" + markdown(paper_table8(), index=True),
        )
    )
    for det in ("mahalanobis", "l2"):
        out.append(
            _section(
                f"Figures 3–9: {det} TPR (ASR@2) per setup",
                lambda det=det: markdown(detection_table(read_detection(root), det)),
            )
        )

    def t34() -> str:
        parts = []
        for ret, tables in read_tables34(root / "tables34").items():
            for name, df in tables.items():
                parts.append(f"**{ret} — {name}**\n\n{markdown(df, index=True)}")
        return "\n\n".join(parts)

    out.append(_section("Tables 3–4", t34))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report of the saved poisoning runs in a results folder (Tables 1 / 7 at the chosen K)."""
    ap = argparse.ArgumentParser(prog="python -m engine.analysis.poisoning_report", description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="?", default="results", help="the folder holding the saved runs")
    ap.add_argument("--k", type=int, default=2, choices=(1, 2), help="top-k of Tables 1 (2) / 7 (1)")
    args = ap.parse_args(argv)
    print(report(args.results, args.k))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
