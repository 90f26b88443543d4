"""Sweeps: the Table-1 grid (corpora × retrievers × query sets × targets) of ASR@K.

With an output folder a sweep writes every finished cell as it completes (``sweep_cells.csv`` plus
``sweep.json`` holding the configuration), so a fault or a kill loses at most the cell in flight, and
running the same sweep again into the same folder resumes: finished cells are read back and skipped.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pandas as pd

from .config import PoisonConfig, SweepConfig
from .corpora import load_corpus, retriever_window
from .embedders import make_retriever
from .paths import writable_dir
from .runs.poisoning import PoisoningRun

CellProgress = Callable[[int, int, dict], None]


@dataclass
class SweepResult:
    """A sweep's finished cells, one row per corpus × retriever × query set × target; ``complete`` is False when
    it was stopped before every cell ran."""

    cells: pd.DataFrame          # one row per (corpus, retriever, query set, target): ASR@1/2/5, n
    complete: bool

    def table1(self, k: int) -> pd.DataFrame:
        """Rows (corpus, retriever, query set), columns target, cells ASR@k — the paper's Table 1 layout."""
        if self.cells.empty:
            return pd.DataFrame()
        return self.cells.pivot_table(index=["corpus", "retriever", "query_set"], columns="target",
                                      values=f"asr@{k}", aggfunc="mean", sort=False)


def grid(cfg: SweepConfig) -> list[dict]:
    """Every cell of the sweep in run order, as dicts of ``corpus``, ``retriever``, ``query_set`` and ``target``."""
    return [dict(corpus=c, retriever=r, query_set=q, target=t) for c, r, q, t in
            itertools.product(cfg.corpora, cfg.retrievers, cfg.query_sets, cfg.targets)]


CELL_KEYS = ("corpus", "retriever", "query_set", "target")


def _same_sweep(a: dict, b: dict) -> bool:
    strip = lambda d: {k: v for k, v in d.items() if k != "data_dir"}  # noqa: E731
    return json.dumps(strip(a), sort_keys=True, default=str) == json.dumps(strip(b), sort_keys=True, default=str)


def finished_cells(cfg: SweepConfig, out_dir: str | Path | None) -> list[dict]:
    """Rows of cells a previous run of the same sweep wrote into ``out_dir`` (empty when none, or when the
    folder holds a different sweep)."""
    if not out_dir:
        return []
    out = Path(out_dir)
    meta, cells = out / "sweep.json", out / "sweep_cells.csv"
    if not meta.is_file() or not cells.is_file():
        return []
    try:
        saved = json.loads(meta.read_text())
        if not _same_sweep(saved.get("config") or {}, cfg.to_dict()):
            return []
        return pd.read_csv(cells).to_dict(orient="records")
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return []


def run_sweep(cfg: SweepConfig, *, progress: Optional[CellProgress] = None,
              should_stop: Callable[[], bool] = lambda: False, out_dir: str | Path | None = None) -> SweepResult:
    """Run every cell (averaging ``variants`` target documents); stops early when asked. With ``out_dir``
    each finished cell is written at once and the cells a previous run finished are skipped."""
    cells = grid(cfg)
    if not cells:
        from .errors import ConfigError
        raise ConfigError("the sweep has no cells: give at least one corpus, retriever, query set and target")
    rows = finished_cells(cfg, out_dir)
    done = {tuple(str(r[k]) for k in CELL_KEYS) for r in rows}
    if out_dir:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "sweep.json").write_text(json.dumps({"config": cfg.to_dict(), "cells": len(cells)}, indent=2,
                                                   default=str))
    corpora: dict[str, object] = {}
    complete = True
    for i, cell in enumerate(cells):
        if tuple(str(cell[k]) for k in CELL_KEYS) in done:
            continue
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
        n = over = 0
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
            over = max(over, int(s.get("poisons_over_window") or 0))
            for k in accum:
                from .metrics import asr
                accum[k].append(asr(run.events, k).value)
            for name, d in s["detectors"].items():
                if "tpr" in d:
                    det.setdefault(name, []).append((d["tpr"], d["fpr"], d["auroc"]))
        row = {**cell, **{f"asr@{k}": sum(v) / len(v) for k, v in accum.items()}, "n_queries": n,
               "variants": cfg.variants, "poisons_over_window": over}
        for name, vals in det.items():
            row[f"{name}_tpr"] = sum(v[0] for v in vals) / len(vals)
            row[f"{name}_fpr"] = sum(v[1] for v in vals) / len(vals)
            row[f"{name}_auroc"] = sum(v[2] for v in vals) / len(vals)
        rows.append(row)
        if out_dir:   # now, so a later fault or a kill loses at most the next cell
            pd.DataFrame(rows).to_csv(Path(out_dir) / "sweep_cells.csv", index=False)
        if progress:
            progress(i + 1, len(cells), row)
    return SweepResult(pd.DataFrame(rows), complete)


def write_sweep(result: SweepResult, out_dir: str | Path, k: int) -> dict[str, str]:
    """Write the long CSV, the Table-1 CSV and a plotly HTML heat map; returns their paths."""
    from .plots import table1_heatmap

    out = writable_dir(out_dir)
    paths = {"cells": out / "sweep_cells.csv", "table1": out / f"table1_asr@{k}.csv", "heatmap": out / "heatmap.html"}
    result.cells.to_csv(paths["cells"], index=False)
    t1 = result.table1(k)
    t1.to_csv(paths["table1"])
    table1_heatmap(t1, k).write_html(paths["heatmap"], include_plotlyjs=True)
    return {k2: str(v) for k2, v in paths.items()}
