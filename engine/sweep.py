"""Sweeps: the Table-1 grid (corpora × retrievers × query sets × targets) of ASR@K."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pandas as pd

from .config import PoisonConfig, SweepConfig
from .corpora import load_corpus, retriever_window
from .embedders import make_retriever
from .runs.poisoning import PoisoningRun

CellProgress = Callable[[int, int, dict], None]


@dataclass
class SweepResult:
    cells: pd.DataFrame          # one row per (corpus, retriever, query set, target): ASR@1/2/5, n
    complete: bool

    def table1(self, k: int) -> pd.DataFrame:
        """Rows (corpus, retriever, query set), columns target, cells ASR@k — the paper's Table 1 layout."""
        if self.cells.empty:
            return pd.DataFrame()
        return self.cells.pivot_table(index=["corpus", "retriever", "query_set"], columns="target",
                                      values=f"asr@{k}", aggfunc="mean", sort=False)


def grid(cfg: SweepConfig) -> list[dict]:
    return [dict(corpus=c, retriever=r, query_set=q, target=t) for c, r, q, t in
            itertools.product(cfg.corpora, cfg.retrievers, cfg.query_sets, cfg.targets)]


def run_sweep(cfg: SweepConfig, *, progress: Optional[CellProgress] = None,
              should_stop: Callable[[], bool] = lambda: False) -> SweepResult:
    """Run every cell (averaging ``variants`` target documents); stops early when asked."""
    cells = grid(cfg)
    rows = []
    corpora: dict[str, object] = {}
    complete = True
    for i, cell in enumerate(cells):
        if should_stop():
            complete = False
            break
        key = (cell["corpus"], cell["retriever"])   # chunks are measured in each retriever's own tokens
        if key not in corpora:
            corpora[key] = load_corpus(cell["corpus"], data_dir=cfg.data_dir or None, chunk_size=cfg.chunk_size,
                                       chunk_overlap=cfg.chunk_overlap,
                                       window=retriever_window(make_retriever(cell["retriever"])))
        accum = {1: [], 2: [], 5: [], cfg.k: []}
        det: dict[str, list] = {}
        n = 0
        for v in range(cfg.variants):
            pc = PoisonConfig(corpus=cell["corpus"], queries=cell["query_set"], retriever=cell["retriever"],
                              attack=cfg.attack, target=cell["target"], attack_params={"variant": v}
                              if cfg.attack != "poisonedrag" else None,
                              injection=cfg.injection, limit=cfg.limit, top_k=max(5, cfg.k), detectors=cfg.detectors,
                              chunk_size=cfg.chunk_size, chunk_overlap=cfg.chunk_overlap, seed=cfg.seed,
                              data_dir=cfg.data_dir)
            run = PoisoningRun(pc, corpus=corpora[key])
            run.run()
            s = run.summary()
            n = s["n_queries"]
            for k in accum:
                from .metrics import asr
                accum[k].append(asr(run.events, k).value)
            for name, d in s["detectors"].items():
                if "tpr" in d:
                    det.setdefault(name, []).append((d["tpr"], d["fpr"], d["auroc"]))
        row = {**cell, **{f"asr@{k}": sum(v) / len(v) for k, v in accum.items()}, "n_queries": n,
               "variants": cfg.variants}
        for name, vals in det.items():
            row[f"{name}_tpr"] = sum(v[0] for v in vals) / len(vals)
            row[f"{name}_fpr"] = sum(v[1] for v in vals) / len(vals)
            row[f"{name}_auroc"] = sum(v[2] for v in vals) / len(vals)
        rows.append(row)
        if progress:
            progress(i + 1, len(cells), row)
    return SweepResult(pd.DataFrame(rows), complete)


def write_sweep(result: SweepResult, out_dir: str | Path, k: int) -> dict[str, str]:
    """Write the long CSV, the Table-1 CSV and a plotly HTML heat map; returns their paths."""
    from .plots import table1_heatmap

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"cells": out / "sweep_cells.csv", "table1": out / f"table1_asr@{k}.csv", "heatmap": out / "heatmap.html"}
    result.cells.to_csv(paths["cells"], index=False)
    t1 = result.table1(k)
    t1.to_csv(paths["table1"])
    table1_heatmap(t1, k).write_html(paths["heatmap"], include_plotlyjs=True)
    return {k2: str(v) for k2, v in paths.items()}
