"""The universal-poisoning paper's numbers — Table 1 / Table 7 (top-2 / top-1 success rates), Table 8 (detection
rate vs β), Tables 3–4, PubMed corpus rows — and a side-by-side view of a saved sweep against Tables 1 / 7.

The paper's numbers are transcribed from its Table 1 (``shared/papers/universal-poisoning-medical-rag.txt``):
corpus PubMed, retrievers MedCPT, Specter and Contriever (none of which ships offline), five MIRAGE query sets
(all questions of each) and five kinds of target information, three target documents each, mean (sd < 0.07).
Ours runs the offline retrievers on the 20,767 BioASQ PubMed snippets (a much smaller corpus than the paper's
23.9M-article PubMed) and the first N questions of each set, so the comparison is of the shape: is every
(query set, target) cell high for every retriever, and where is it lowest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

TARGETS = ("pii", "msmarco", "nq", "hotpotqa", "diagnosis")
RETRIEVER_ORDER = ("minilm", "mpnet", "e5-small", "bm25")  # the preset's: dense ones first, the sparse contrast last
QUERY_SETS = ("mirage:mmlu", "mirage:medqa", "mirage:medmcqa", "mirage:pubmedqa", "mirage:bioasq")
TARGET_LABELS = {"pii": "PPI", "msmarco": "MS-MARCO", "nq": "NQ", "hotpotqa": "HotpotQA", "diagnosis": "Diagnostic"}
QUERY_LABELS = {
    "mirage:mmlu": "MMLU",
    "mirage:medqa": "MedQA",
    "mirage:medmcqa": "MedMCQA",
    "mirage:pubmedqa": "PubMedQA",
    "mirage:bioasq": "BioASQ",
}

# Table 1, corpus PubMed: retriever -> query set -> (PPI, MS-MARCO, NQ, HotpotQA, Diagnostic)
PAPER_TABLE1_PUBMED: dict[str, dict[str, tuple[float, ...]]] = {
    "MedCPT": {
        "mirage:mmlu": (0.74, 0.75, 0.71, 0.73, 0.73),
        "mirage:medqa": (0.99, 0.99, 0.98, 0.99, 0.99),
        "mirage:medmcqa": (0.72, 0.75, 0.68, 0.72, 0.71),
        "mirage:pubmedqa": (0.93, 0.95, 0.91, 0.89, 0.91),
        "mirage:bioasq": (0.87, 0.92, 0.87, 0.81, 0.86),
    },
    "Specter": {
        "mirage:mmlu": (0.93, 0.78, 0.82, 0.95, 0.90),
        "mirage:medqa": (0.99, 0.99, 0.98, 0.97, 0.95),
        "mirage:medmcqa": (0.81, 0.83, 0.72, 0.81, 0.91),
        "mirage:pubmedqa": (0.78, 0.84, 0.86, 0.93, 0.96),
        "mirage:bioasq": (0.95, 0.86, 0.82, 0.91, 0.92),
    },
    "Contriever": {
        "mirage:mmlu": (0.80, 0.82, 0.81, 0.83, 0.81),
        "mirage:medqa": (1.0, 1.0, 1.0, 1.0, 1.0),
        "mirage:medmcqa": (0.62, 0.65, 0.63, 0.66, 0.61),
        "mirage:pubmedqa": (0.78, 0.79, 0.74, 0.78, 0.71),
        "mirage:bioasq": (0.59, 0.58, 0.60, 0.59, 0.60),
    },
}


# Table 7 (top-1 success, appendix C.1), corpus PubMed, same layout (sd < 0.1)
PAPER_TABLE7_PUBMED: dict[str, dict[str, tuple[float, ...]]] = {
    "MedCPT": {
        "mirage:mmlu": (0.72, 0.74, 0.71, 0.73, 0.71),
        "mirage:medqa": (0.99, 0.99, 0.98, 0.99, 0.99),
        "mirage:medmcqa": (0.70, 0.71, 0.68, 0.71, 0.71),
        "mirage:pubmedqa": (0.91, 0.94, 0.91, 0.88, 0.91),
        "mirage:bioasq": (0.85, 0.91, 0.86, 0.81, 0.85),
    },
    "Specter": {
        "mirage:mmlu": (0.91, 0.75, 0.81, 0.94, 0.90),
        "mirage:medqa": (0.99, 0.98, 0.98, 0.96, 0.95),
        "mirage:medmcqa": (0.81, 0.82, 0.70, 0.81, 0.91),
        "mirage:pubmedqa": (0.76, 0.82, 0.85, 0.91, 0.96),
        "mirage:bioasq": (0.93, 0.86, 0.82, 0.91, 0.92),
    },
    "Contriever": {
        "mirage:mmlu": (0.80, 0.82, 0.81, 0.81, 0.81),
        "mirage:medqa": (1.0, 1.0, 1.0, 1.0, 1.0),
        "mirage:medmcqa": (0.62, 0.63, 0.61, 0.64, 0.61),
        "mirage:pubmedqa": (0.76, 0.77, 0.74, 0.76, 0.71),
        "mirage:bioasq": (0.57, 0.56, 0.60, 0.57, 0.60),
    },
}

# Table 8 (appendix C.2), corpus PubMed: detection rate per β for its three rows (the query sets of the rows are
# not named in the text we have; standard errors within 0.08)
PAPER_BETAS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.2)
PAPER_TABLE8_PUBMED: tuple[tuple[float, ...], ...] = (
    (0.99, 0.99, 0.99, 0.98, 0.96, 0.96),
    (0.99, 0.99, 0.99, 0.97, 0.96, 0.95),
    (0.99, 0.99, 0.99, 0.97, 0.97, 0.96),
)


def paper_table1(k: int = 2) -> pd.DataFrame:
    """The paper's PubMed rows, long form: retriever, query_set, target, asr@k — Table 1 for top-2, Table 7 for
    top-1; an empty frame for any other k (the paper reports only these two)."""
    table = {2: PAPER_TABLE1_PUBMED, 1: PAPER_TABLE7_PUBMED}.get(k)
    if table is None:
        return pd.DataFrame(columns=["retriever", "query_set", "target", f"asr@{k}"])
    rows = [
        {"retriever": r, "query_set": q, "target": t, f"asr@{k}": v}
        for r, sets in table.items()
        for q, vals in sets.items()
        for t, v in zip(TARGETS, vals)
    ]
    return pd.DataFrame(rows)


def paper_table8() -> pd.DataFrame:
    """The paper's Table 8 PubMed rows: one row per (unnamed) query set, one column per β."""
    return pd.DataFrame(
        PAPER_TABLE8_PUBMED,
        columns=[f"β = {b:g}" for b in PAPER_BETAS],
        index=[f"paper, PubMed row {i + 1}" for i in range(len(PAPER_TABLE8_PUBMED))],
    )


def read_sweep(folder: str | Path) -> pd.DataFrame:
    """The cells a sweep wrote into ``folder`` (``sweep_cells.csv``); a clear error when there are none."""
    from ..errors import ConfigError

    path = Path(folder) / "sweep_cells.csv"
    if not path.is_file():
        raise ConfigError(f"{folder}: no sweep_cells.csv (run a sweep with --out {folder})")
    try:
        return pd.read_csv(path)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise ConfigError(f"{path}: not a sweep's cells ({type(e).__name__})") from None


def side_by_side(cells: pd.DataFrame, k: int = 2) -> pd.DataFrame:
    """One row per (query set, target): ASR@k of each of our retrievers, then the paper's three PubMed
    retrievers (Table 1 for k = 2, Table 7 for k = 1; none for other k), and our ``poisons_over_window`` (poisons
    longer than the retriever reads). Query sets and targets outside the paper's five are left out."""
    col = f"asr@{k}"
    mine = cells[cells["query_set"].isin(QUERY_SETS) & cells["target"].isin(TARGETS)]
    if mine.empty:
        return pd.DataFrame()
    ours = mine.pivot_table(index=["query_set", "target"], columns="retriever", values=col, aggfunc="mean")
    ours = ours[sorted(ours.columns, key=lambda r: (RETRIEVER_ORDER.index(r) if r in RETRIEVER_ORDER else 99, r))]
    ours.columns = [f"ours · {c}" for c in ours.columns]
    over = (
        mine.pivot_table(
            index=["query_set", "target"], columns="retriever", values="poisons_over_window", aggfunc="max"
        )
        if "poisons_over_window" in mine
        else None
    )
    paper_long = paper_table1(k)
    if paper_long.empty:
        out = ours
    else:
        paper = paper_long.pivot_table(index=["query_set", "target"], columns="retriever", values=col)
        paper = paper[list(PAPER_TABLE1_PUBMED)]
        paper.columns = [f"paper · {c}" for c in paper.columns]
        out = ours.join(paper, how="left")
    if over is not None:
        out["poisons over window (max)"] = over.max(axis=1)
    order = {q: i for i, q in enumerate(QUERY_SETS)}
    torder = {t: i for i, t in enumerate(TARGETS)}
    out = out.reset_index()
    out = out.sort_values(by=["query_set", "target"], key=lambda s: s.map(order if s.name == "query_set" else torder))
    out["query_set"] = out["query_set"].map(QUERY_LABELS)
    out["target"] = out["target"].map(TARGET_LABELS)
    return out.reset_index(drop=True)


def summary(cells: pd.DataFrame, k: int = 2) -> dict[str, Any]:
    """Per retriever (ours) and per paper retriever: mean, min and the (query set, target) of the min."""
    col = f"asr@{k}"
    out: dict[str, Any] = {"ours": {}, "paper": {}}
    for r, g in cells.groupby("retriever"):
        i = g[col].idxmin()
        out["ours"][r] = {
            "mean": float(g[col].mean()),
            "min": float(g[col].min()),
            "cells": int(len(g)),
            "lowest": f"{QUERY_LABELS.get(g.loc[i, 'query_set'], g.loc[i, 'query_set'])} × "
            f"{TARGET_LABELS.get(g.loc[i, 'target'], g.loc[i, 'target'])}",
        }
    paper = paper_table1(k)
    for r, g in paper.groupby("retriever"):
        i = g[col].idxmin()
        out["paper"][r] = {
            "mean": float(g[col].mean()),
            "min": float(g[col].min()),
            "lowest": f"{QUERY_LABELS[g.loc[i, 'query_set']]} × {TARGET_LABELS[g.loc[i, 'target']]}",
        }
    return out


# Table 3 (orthogonal augmentation, MedQA documents; P_1..P_3 of decreasing similarity to q) and Table 4 (clean
# top-5 similarity, corpus Textbook), as printed; Table 4's header lists "MMLU MedQA BioASQ MedQA MCQA" (sic).
PAPER_TABLE3 = {
    "Contriever": {
        "f(q)ᵀf(p)": ("2.75 ± 0.47", "1.53 ± 0.12", "0.43 ± 0.07"),
        "f(q)ᵀ(f(q⊕p)−f(q))": ("0.13 ± 0.10", "0.07 ± 0.06", "0.05 ± 0.07"),
        "∠(f(q⊕p)−f(q), f(q)) [°]": ("99.1 ± 5.3", "96.8 ± 4.6", "92.5 ± 4.0"),
        "f(q)ᵀf(q)": ("2.95 ± 0.40",) * 3,
    },
    "MedCPT": {
        "f(q)ᵀf(p)": ("84.4 ± 10", "72.8 ± 8", "62.5 ± 4"),
        "f(q)ᵀ(f(q⊕p)−f(q))": ("1.64 ± 1.6", "1.21 ± 1.2", "0.42 ± 0.6"),
        "∠(f(q⊕p)−f(q), f(q)) [°]": ("97.2 ± 6", "98.9 ± 6", "95.9 ± 6"),
        "f(q)ᵀf(q)": ("88.8 ± 9.7",) * 3,
    },
}
PAPER_TABLE4_SETS = ("MMLU", "MedQA", "BioASQ", "MedQA (2nd column, sic)", "MCQA")
PAPER_TABLE4 = {
    "Contriever": {
        "∠(f(q), f(R)) [°]": ("71 ± 4.0", "72 ± 2.1", "72 ± 3.6", "69 ± 5.1", "71 ± 4.9"),
        "f(q)ᵀf(R)": ("0.98 ± .15", "1.72 ± .41", "1.02 ± .17", "1.06 ± .14", "1.13 ± .16"),
        "f(q)ᵀf(q)": ("3.49 ± 1.2", "11.6 ± 7.6", "4.4 ± 1.5", "3.85 ± 1.6", "4.6 ± 1.6"),
    },
    "MedCPT": {
        "∠(f(q), f(R)) [°]": ("48 ± 3.5", "41 ± 2.9", "49 ± 3.9", "52 ± 2.6", "53 ± 4.4"),
        "f(q)ᵀf(R)": ("66.2 ± 2.3", "63.7 ± 1.3", "64.3 ± 2.1", "62.8 ± 2.4", "62.5 ± 2.5"),
        "f(q)ᵀf(q)": ("125 ± 16", "92.6 ± 9.3", "124 ± 17", "141 ± 13", "137 ± 20"),
    },
}


def paper_table3() -> dict[str, pd.DataFrame]:
    """The paper's Table 3, one frame per retriever (rows: measurements; columns: P_1, P_2, P_3)."""
    return {r: pd.DataFrame(rows, index=["P_1", "P_2", "P_3"]).T for r, rows in PAPER_TABLE3.items()}


def paper_table4() -> dict[str, pd.DataFrame]:
    """The paper's Table 4, one frame per retriever (rows: measurements; columns: its query sets)."""
    return {r: pd.DataFrame(rows, index=list(PAPER_TABLE4_SETS)).T for r, rows in PAPER_TABLE4.items()}
