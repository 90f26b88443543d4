"""Sweeps: the Table-1 grid (corpora × retrievers × query sets × targets) of ASR@K.

With an output folder a sweep writes every finished cell as it completes (``sweep_cells.csv`` plus
``sweep.json`` holding the configuration), so a fault or a kill loses at most the cell in flight, and
running the same sweep again into the same folder resumes: finished cells are read back and skipped.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import pandas as pd

from .config import PoisonConfig, SweepConfig
from .files import atomic_write
from .corpora import load_corpus, retriever_window
from .embedders import make_retriever
from .executors import ExecutorConfig
from .paths import writable_dir
from .progress import CellProgress, ItemProgress, StopToken
from .runs.poisoning import PoisoningRun


@dataclass
class SweepResult:
    """A sweep's finished cells, one row per corpus × retriever × query set × target; ``complete`` is False when
    it was stopped before every cell ran."""

    cells: pd.DataFrame  # one row per (corpus, retriever, query set, target): ASR@1/2/5, n
    complete: bool
    failed: list = field(default_factory=list)  # cells that failed on Ray: the cell and its error
    damaged: int = 0  # lines of a saved sweep_cells.csv that could not be read as a cell of this grid

    def table1(self, k: int) -> pd.DataFrame:
        """Rows (corpus, retriever, query set), columns target, cells ASR@k — the paper's Table 1 layout."""
        if self.cells.empty:
            return pd.DataFrame()
        return self.cells.pivot_table(
            index=["corpus", "retriever", "query_set"], columns="target", values=f"asr@{k}", aggfunc="mean", sort=False
        )


def grid(cfg: SweepConfig) -> list[dict]:
    """Every cell of the sweep in run order, as dicts of ``corpus``, ``retriever``, ``query_set`` and ``target``."""
    return [
        dict(corpus=c, retriever=r, query_set=q, target=t)
        for c, r, q, t in itertools.product(cfg.corpora, cfg.retrievers, cfg.query_sets, cfg.targets)
    ]


CELL_KEYS = ("corpus", "retriever", "query_set", "target")


_WHERE = ("data_dir", "store", "chroma_host", "chroma_port")  # where things are, not what is measured
# the fields of December 2026: always part of a sweep's key, so the folders of the sweeps saved since keep their
# names; a field added later enters the key only when set away from its default (the same grid, the same folder)
_KEYED_2026 = ("corpora", "retrievers", "query_sets", "targets", "attack", "injection", "variants", "limit", "k")
_KEYED_2026 += ("detectors", "chunk_size", "chunk_overlap", "seed")


def _measured(d: dict) -> str:
    """The sweep's identity: its config without where things are (data dir, store), as sorted JSON. A record
    written before a field existed reads as that field at its default (so it still matches the same grid)."""
    try:
        d = SweepConfig.from_dict({k: v for k, v in d.items() if k not in _WHERE}).to_dict()
    except (ValueError, TypeError):  # a config this version cannot read: compared as written (never equal)
        pass
    return json.dumps({k: v for k, v in d.items() if k not in _WHERE}, sort_keys=True, default=str)


def _same_sweep(a: dict, b: dict) -> bool:
    return _measured(a) == _measured(b)


def sweep_key(cfg: SweepConfig) -> str:
    """16 hex digits naming what a sweep measures: the same grid gets the same key (and folder, so running it
    again resumes), wherever its data and store are."""
    import hashlib

    default = SweepConfig().to_dict()
    d = {k: v for k, v in cfg.to_dict().items() if k not in _WHERE and (k in _KEYED_2026 or v != default[k])}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _refuse_another_sweep(cfg: SweepConfig, out: Path) -> None:
    """One ConfigError when ``out`` holds finished cells of a sweep with other settings (never dropped silently)."""
    from .config import differences
    from .errors import ConfigError

    meta, cells = out / "sweep.json", out / "sweep_cells.csv"
    if not meta.is_file() or not cells.is_file():
        return
    try:
        saved = json.loads(meta.read_text()).get("config") or {}
        n = len(pd.read_csv(cells))
    except (OSError, ValueError, AttributeError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return
    if n and not _same_sweep(saved, cfg.to_dict()):
        diff = differences(saved, cfg.to_dict(), skip=("data_dir", "store", "chroma_host", "chroma_port"))
        raise ConfigError(
            f"{out} holds a sweep with other settings ({diff}); "
            f"choose another --out, or pass --overwrite to replace it (its {n} finished cell(s) are "
            f"then dropped)"
        )


def finished_cells(cfg: SweepConfig, out_dir: str | Path | None) -> list[dict]:
    """Rows of cells a previous run of the same sweep wrote into ``out_dir`` (empty when none, or when the
    folder holds a different sweep). A damaged file gives what can be read of it: a torn or malformed line, a row
    of no cell of this grid, a cell written twice (the first kept) or a row without its ASR are left out — and run
    again on resume (the file as it was is kept beside, :func:`_keep_damaged`)."""
    return _readable_cells(cfg, out_dir)[0]


def _readable_cells(cfg: SweepConfig, out_dir: str | Path | None) -> tuple[list[dict], int]:
    """(:func:`finished_cells`, how many lines of ``sweep_cells.csv`` were left out as damaged)."""
    if not out_dir:
        return [], 0
    out = Path(out_dir)
    meta, cells = out / "sweep.json", out / "sweep_cells.csv"
    if not meta.is_file() or not cells.is_file():
        return [], 0
    try:
        saved = json.loads(meta.read_text())
        if not isinstance(saved, dict) or not _same_sweep(saved.get("config") or {}, cfg.to_dict()):
            return [], 0
        lines = max(0, len(cells.read_text(encoding="utf-8").splitlines()) - 1)
        table = pd.read_csv(cells, on_bad_lines="skip")
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return [], 0
    wanted = {_cell_key(c) for c in grid(cfg)}
    rows, seen = [], set()
    if all(k in table.columns for k in (*CELL_KEYS, "asr@1")):
        for r in table.to_dict(orient="records"):
            key = tuple(str(r[k]) for k in CELL_KEYS)
            if key in wanted and key not in seen and pd.notna(r["asr@1"]):
                seen.add(key)
                rows.append(r)
    return rows, lines - len(rows)


def _keep_damaged(out: Path) -> None:
    """Copy a damaged ``sweep_cells.csv`` to ``sweep_cells.damaged.csv`` (once) before the sweep rewrites it with
    the rows it could read: nothing on disk is dropped without a copy."""
    src, dst = out / "sweep_cells.csv", out / "sweep_cells.damaged.csv"
    if src.is_file() and not dst.exists():
        atomic_write(dst, src.read_text(encoding="utf-8", errors="replace"))


def load_sweep(folder: str | Path) -> tuple[SweepConfig, SweepResult]:
    """A saved sweep's configuration and its finished cells (``complete`` when every cell of its grid finished);
    one ConfigError when the folder holds no sweep."""
    from .errors import ConfigError

    out = Path(folder)
    try:
        cfg = SweepConfig.from_dict(json.loads((out / "sweep.json").read_text(encoding="utf-8"))["config"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{out} holds no readable sweep (sweep.json): {e}") from None
    rows, damaged = _readable_cells(cfg, out)
    failed_path = out / "sweep_failed.json"
    try:
        failed = json.loads(failed_path.read_text(encoding="utf-8")) if failed_path.is_file() else []
    except (OSError, ValueError):
        failed = []
    done = {_cell_key(r) for r in rows}
    failed = [  # those not finished since (a resumed sweep retries them)
        f for f in failed if isinstance(f, dict) and all(k in f for k in CELL_KEYS) and _cell_key(f) not in done
    ]
    return cfg, SweepResult(pd.DataFrame(rows), len(rows) == len(grid(cfg)), failed, damaged)


def list_sweeps(root: Path | None = None) -> list[dict[str, Any]]:
    """The app's sweeps under ``root`` (newest first), one folder per grid: id, folder, the grid's axes as text,
    finished and total cells (counted as Open reads them: :func:`load_sweep`), whether it finished,
    whether a writer holds it now, and ``damaged`` (why it cannot be read) for a folder whose record is damaged —
    listed, not hidden, so its files are not forgotten."""
    from .errors import ConfigError
    from .folder_lock import is_busy
    from .saved import sweeps_dir

    root = root or sweeps_dir()
    out = []
    for p in sorted(root.glob("*/sweep.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        row: dict[str, Any] = {"id": p.parent.name, "folder": str(p.parent), "being written": is_busy(p.parent)}
        try:
            cfg, result = load_sweep(p.parent)
        except ConfigError as e:
            out.append(
                {**row, "grid": p.parent.name, "label": p.parent.name, "done": 0, "cells": 0, "complete": True}
                | {"damaged": str(e)}
            )
            continue
        axes = (cfg.corpora, cfg.retrievers, cfg.query_sets, cfg.targets)
        grid_text = " × ".join(", ".join(map(str, a)) for a in axes)
        out.append(
            {
                **row,
                "grid": grid_text,
                # unique: grids may differ in one number only (a list of equal labels cannot be chosen from)
                "label": f"{grid_text} · first {cfg.limit} questions · top-{cfg.k} · {p.parent.name[:8]}",
                "done": len(result.cells),
                "cells": len(grid(cfg)),
                "complete": result.complete,
            }
        )
    return out


def sweep_state(row: dict[str, Any]) -> str:
    """' · being written', ' · damaged (…)', ' · unfinished (k of n cells)' or '' (finished), for a listed sweep."""
    if row.get("being written"):
        return " · being written"
    if row.get("damaged"):
        return " · damaged: Open says why"
    return "" if row["complete"] else f" · unfinished ({row['done']} of {row['cells']} cells)"


_WORKER_CORPORA: dict[tuple, object] = {}  # a Ray worker's corpora, kept for its next cells (at most 2)


def sweep_cell(item: tuple[dict, dict], reporter=None, corpora: dict | None = None) -> dict | None:
    """One cell of a sweep: ``item`` = (the sweep's config as a dict, the cell); returns its row (ASR@1/2/5/K,
    detector rates averaged over the ``variants`` target documents), or None when ``reporter`` asked it to
    stop. The same function runs in this process and as a Ray task (:mod:`engine.executors`)."""
    from .metrics import asr

    cfg_dict, cell = item
    cfg = SweepConfig.from_dict(cfg_dict)
    if corpora is None:
        corpora = _WORKER_CORPORA
    key = (cell["corpus"], cell["retriever"], cfg.chunk_size, cfg.chunk_overlap, cfg.data_dir)
    if key not in corpora:  # chunks are measured in each retriever's own tokens
        while corpora is _WORKER_CORPORA and len(corpora) >= 2:
            corpora.pop(next(iter(corpora)))
        corpora[key] = load_corpus(
            cell["corpus"],
            data_dir=cfg.data_dir or None,
            chunk_size=cfg.chunk_size,
            chunk_overlap=cfg.chunk_overlap,
            window=retriever_window(make_retriever(cell["retriever"])),
        )
    accum: dict[int, list[float]] = {1: [], 2: [], 5: [], cfg.k: []}
    det: dict[str, list] = {}
    n = over = 0
    qtok: list[float] = []
    embedded: list[float] = []
    for v in range(cfg.variants):
        if reporter is not None:
            if reporter.is_set():
                return None
            reporter.progress("target documents", v, cfg.variants)
        pc = PoisonConfig(
            corpus=cell["corpus"],
            queries=cell["query_set"],
            retriever=cell["retriever"],
            attack=cfg.attack,
            target=cell["target"],
            attack_params={"variant": v} if cfg.attack != "poisonedrag" else None,
            injection=cfg.injection,
            limit=cfg.limit,
            top_k=max(5, cfg.k),
            detectors=cfg.detectors,
            chunk_size=cfg.chunk_size,
            chunk_overlap=cfg.chunk_overlap,
            seed=cfg.seed,
            data_dir=cfg.data_dir,
            store=cfg.store,
            chroma_host=cfg.chroma_host,
            chroma_port=cfg.chroma_port,
        )
        run = PoisoningRun(pc, corpus=corpora[key])
        run.run()
        s = run.summary()
        n = s["n_queries"]
        over = max(over, int(s.get("poisons_over_window") or 0))
        pt = s.get("poison_tokens") or {}
        if pt.get("median_question") is not None:
            qtok.append(pt["median_question"])
        if pt.get("attacker_text_embedded") is not None:
            embedded.append(pt["attacker_text_embedded"])
        for k in accum:
            accum[k].append(asr(run.events, k).value)
        for name, d in s["detectors"].items():
            if "tpr" in d:
                det.setdefault(name, []).append((d["tpr"], d["fpr"], d["auroc"]))
    row = {
        **cell,
        **{f"asr@{k}": sum(v) / len(v) for k, v in accum.items()},
        "n_queries": n,
        "variants": cfg.variants,
        "poisons_over_window": over,
    }
    if cfg.variants > 1:  # which target document carries the mean (space-separated, in variant order)
        for k in sorted({1, cfg.k}):
            row[f"asr@{k}_by_variant"] = " ".join(f"{x:.3f}" for x in accum[k])
    if qtok:  # dense retrievers: the questions' length and how much of the target the embedding reads
        row["question_tokens"] = sum(qtok) / len(qtok)
    if embedded:
        row["target_embedded"] = round(sum(embedded) / len(embedded), 4)
    for name, vals in det.items():
        row[f"{name}_tpr"] = sum(v[0] for v in vals) / len(vals)
        row[f"{name}_fpr"] = sum(v[1] for v in vals) / len(vals)
        row[f"{name}_auroc"] = sum(v[2] for v in vals) / len(vals)
    return row


def _cell_key(cell: Mapping) -> tuple[str, ...]:
    return tuple(str(cell[k]) for k in CELL_KEYS)


def run_sweep(
    cfg: SweepConfig,
    *,
    progress: Optional[ItemProgress] = None,
    stop: Optional[StopToken] = None,
    out_dir: str | Path | None = None,
    executor: ExecutorConfig | None = None,
    cell_progress: Optional[CellProgress] = None,
    overwrite: bool = False,
) -> SweepResult:
    """Run every cell (averaging ``variants`` target documents); stops early when ``stop`` (a stop token) is
    set. With ``out_dir`` each finished cell is written at once (rows in grid order, whatever order they
    finished in) and the cells a previous run finished are skipped. ``executor`` says where cells run (here, or
    as Ray tasks: the same rows either way); ``progress(done, total, row)`` reports each finished cell,
    ``cell_progress(index, stage, done, total)`` work inside cell ``index`` of :func:`grid`. A cell that failed
    on Ray is listed in ``result.failed`` (and ``sweep_failed.json``), not in the rows; running the sweep again
    retries it."""
    from contextlib import nullcontext

    from .folder_lock import exclusive_folder

    # one writer per folder: a second sweep into it would overwrite this one's cells
    with exclusive_folder(out_dir, "this sweep") if out_dir else nullcontext():
        return _run_sweep(cfg, progress, stop, out_dir, executor, cell_progress, overwrite)


def _run_sweep(
    cfg: SweepConfig,
    progress: Optional[ItemProgress],
    stop: Optional[StopToken],
    out_dir: str | Path | None,
    executor: ExecutorConfig | None,
    cell_progress: Optional[CellProgress],
    overwrite: bool = False,
) -> SweepResult:
    """:func:`run_sweep`'s body, with its output folder held (a folder holding another sweep's finished cells is
    refused unless ``overwrite``)."""
    from .executors import run_cells

    cells = grid(cfg)
    if not cells:
        from .errors import ConfigError

        raise ConfigError("the sweep has no cells: give at least one corpus, retriever, query set and target")
    order = {_cell_key(c): i for i, c in enumerate(cells)}
    if out_dir and not overwrite:
        _refuse_another_sweep(cfg, Path(out_dir))
    rows, damaged = _readable_cells(cfg, out_dir)
    done = {_cell_key(r) for r in rows}
    out = Path(out_dir) if out_dir else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
        if damaged:
            _keep_damaged(out)
        atomic_write(
            out / "sweep.json", json.dumps({"config": cfg.to_dict(), "cells": len(cells)}, indent=2, default=str)
        )
    failed: list[dict] = []
    placement: list[dict] = _earlier_placement(out, done)  # a resumed sweep keeps where its earlier cells ran
    corpora: dict[tuple, object] = {}
    cfg_dict = cfg.to_dict()
    todo = [(i, (cfg_dict, c)) for i, c in enumerate(cells) if _cell_key(c) not in done]

    def on_done(o) -> None:
        cell = cells[o.index]
        placement.append({**cell, **o.to_dict()})
        if o.error:
            failed.append({**cell, "error": o.error})
        elif o.result is not None:
            rows.append(o.result)
            rows.sort(key=lambda r: order.get(_cell_key(r), len(order)))
            if out:  # now, so a later fault or a kill loses at most the cells in flight
                atomic_write(out / "sweep_cells.csv", pd.DataFrame(rows).to_csv(index=False))
            if progress:
                progress(len(rows), len(cells), o.result)
        if out:
            atomic_write(out / "placement.json", json.dumps(placement, indent=2, default=str))
            if failed:
                atomic_write(out / "sweep_failed.json", json.dumps(failed, indent=2, default=str))

    local = executor is None or executor.executor == "local"
    fn = (lambda item, rep: sweep_cell(item, rep, corpora)) if local else sweep_cell
    run_cells(fn, todo, executor=executor, on_done=on_done, progress=cell_progress, stop=stop)
    complete = len(rows) == len(cells)
    return SweepResult(pd.DataFrame(rows), complete, failed)


def _earlier_placement(out: Path | None, done: set) -> list[dict]:
    """The placement records of the cells an earlier run of this sweep finished (read from ``placement.json``;
    empty when there is none or it cannot be read)."""
    path = out / "placement.json" if out else None
    if path is None or not path.is_file():
        return []
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [p for p in earlier if isinstance(p, dict) and all(k in p for k in CELL_KEYS) and _cell_key(p) in done]


def write_sweep(result: SweepResult, out_dir: str | Path, k: int) -> dict[str, str]:
    """Write the long CSV, the Table-1 CSV and a plotly HTML heat map; returns their paths."""
    from .plots import table1_heatmap

    out = writable_dir(out_dir)
    paths = {"cells": out / "sweep_cells.csv", "table1": out / f"table1_asr@{k}.csv", "heatmap": out / "heatmap.html"}
    atomic_write(paths["cells"], result.cells.to_csv(index=False))
    t1 = result.table1(k)
    atomic_write(paths["table1"], t1.to_csv())
    atomic_write(paths["heatmap"], table1_heatmap(t1, k).to_html(include_plotlyjs=True))
    return {k2: str(v) for k2, v in paths.items()}
