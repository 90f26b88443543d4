"""Saved runs read back into the universal-poisoning paper's table shapes, beside its numbers.

The commands write plain files (``poison --beta-sweep paper --json`` one summary per query set, ``sweep
--detectors l2,mahalanobis --out DIR`` a ``sweep_cells.csv``, ``analyze --out FILE`` the Tables 3–4 JSON); these
functions turn them into the frames the Sweeps page's "Reproduce" section and the docs (docs/results.md) show:

- :func:`read_beta_sweeps` / :func:`table8` — the paper's Table 8 (detection rate vs the shrinkage β);
- :func:`read_detection` / :func:`detection_table` — its Figures 3–9 (ℓ2-norm vs Mahalanobis per setup);
- :func:`read_tables34` — its Tables 3–4 (orthogonal augmentation, clean top-5 angle) per retriever.

Every reader raises :class:`~engine.errors.ConfigError` with the command to run when a folder holds nothing it
can read, and skips (never guesses) files of another kind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError
from .paper_tables import QUERY_LABELS, TARGET_LABELS, TARGETS


def _json_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.json") if p.is_file())


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def read_beta_sweeps(folder: str | Path) -> pd.DataFrame:
    """Every poisoning summary with a ``beta_sweep`` under ``folder`` (recursively), long form: retriever,
    query_set, target, beta, tpr, fpr, auroc, n_anchors, cv_beta (the β the run's cross-validation chose).
    A summary without its query set (written before summaries carried one) is named by its file's stem."""
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(
            f"{folder}: no such folder (save `python -m engine poison ... --detectors mahalanobis "
            f"--beta-sweep paper --json --quiet > {folder}/<set>.json`)"
        )
    rows: list[dict[str, Any]] = []
    for path in _json_files(root):
        d = _load(path)
        if not isinstance(d, dict) or not isinstance(d.get("beta_sweep"), list):
            continue
        qs = d.get("queries") or f"mirage:{path.stem}"
        cv = ((d.get("detectors") or {}).get("mahalanobis") or {}).get("beta")
        for r in d["beta_sweep"]:
            rows.append(
                {
                    "retriever": d.get("retriever", "?"),
                    "query_set": qs,
                    "target": d.get("target", "?"),
                    "beta": float(r["beta"]),
                    "tpr": float(r["tpr"]),
                    "fpr": float(r["fpr"]),
                    "auroc": float(r.get("auroc", float("nan"))),
                    "n_anchors": int(r.get("n_anchors", 0)),
                    "cv_beta": cv,
                    "file": str(path.relative_to(root)),
                }
            )
    if not rows:
        raise ConfigError(
            f"{folder}: no poisoning summary with a β sweep (run `python -m engine poison ... "
            f"--detectors mahalanobis --beta-sweep paper --json --quiet > {folder}/<set>.json`)"
        )
    return pd.DataFrame(rows)


def table8(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 8's shape: one row per (retriever, query set), one column per β holding "TPR / FPR", then the best
    β by TPR and the β cross-validation chose."""
    out = []
    for (ret, qs), g in frame.groupby(["retriever", "query_set"], sort=False):
        g = g.sort_values("beta")
        row: dict[str, Any] = {
            "retriever": ret,
            "query set": QUERY_LABELS.get(qs, qs),
            "anchors": int(g["n_anchors"].max()),
        }
        for _, r in g.iterrows():
            row[f"β = {r['beta']:g}"] = f"{r['tpr']:.2f} / {r['fpr']:.2f}"
        best = g.loc[g["tpr"].idxmax()]
        row["best β (TPR)"] = f"{best['beta']:g} ({best['tpr']:.2f})"
        cv = g["cv_beta"].iloc[0]
        row["β by CV"] = "" if cv is None or pd.isna(cv) else f"{float(cv):g}"
        out.append(row)
    return pd.DataFrame(out)


def read_detection(folder: str | Path) -> pd.DataFrame:
    """The cells of every sweep that ran detectors (``sweep_cells.csv`` with ``<detector>_tpr`` columns) in
    ``folder`` or its immediate subfolders (e.g. ``results/``, holding one detection sweep per retriever),
    concatenated; sweeps without detector columns are skipped."""
    root = Path(folder)
    candidates = [root, *sorted(p for p in root.iterdir() if p.is_dir())] if root.is_dir() else []
    frames = []
    for f in candidates:
        path = Path(f) / "sweep_cells.csv"
        if not path.is_file():
            continue
        try:
            cells = pd.read_csv(path)
        except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
            continue
        if any(c.endswith("_tpr") for c in cells.columns):
            frames.append(cells)
    if not frames:
        raise ConfigError(
            f"{folder}: no sweep with detectors there or in its subfolders "
            "(run `python -m engine sweep --preset "
            "universal-poisoning-table1 --retrievers minilm --variants 1 --limit 200 --detectors "
            "l2,mahalanobis --out results/detection-bioasq-minilm`)"
        )
    return pd.concat(frames, ignore_index=True)


PAPER_DETECTORS = ("mahalanobis", "l2")  # the two detectors the paper's Figures 3–9 compare (§5)


def detection_table(cells: pd.DataFrame, detector: str = "mahalanobis", k: int = 2) -> pd.DataFrame:
    """Figures 3–9 as a table: one row per (retriever, query set — with that detector's FPR, and, for sweeps
    that measured them, the questions' median length in the retriever's tokens and the mean share of the target
    the embedding reads), one column per target holding "TPR (ASR@k)"."""
    tpr, fpr, asr = f"{detector}_tpr", f"{detector}_fpr", f"asr@{k}"
    if tpr not in cells.columns:
        raise ConfigError(
            f"these sweeps did not run the {detector!r} detector "
            f"(detectors run: {sorted(c[:-4] for c in cells.columns if c.endswith('_tpr'))})"
        )
    order = {q: i for i, q in enumerate(QUERY_LABELS)}
    rows = []
    for (ret, qs), g in sorted(
        cells.groupby(["retriever", "query_set"]), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99))
    ):
        row: dict[str, Any] = {
            "retriever": ret,
            "query set": QUERY_LABELS.get(qs, qs),
            "FPR": round(float(g[fpr].mean()), 3) if fpr in g else None,
        }
        if "question_tokens" in g and g["question_tokens"].notna().any():
            row["question tokens (median)"] = round(float(g["question_tokens"].mean()))
        if "target_embedded" in g and g["target_embedded"].notna().any():
            row["target read (mean share)"] = round(float(g["target_embedded"].mean()), 2)
        for t in TARGETS:
            c = g[g["target"] == t]
            if not c.empty:
                row[TARGET_LABELS[t]] = f"{c[tpr].mean():.2f} ({c[asr].mean():.2f})"
        rows.append(row)
    return pd.DataFrame(rows)


def read_tables34(path: str | Path) -> dict[str, dict[str, pd.DataFrame]]:
    """``analyze --save FILE`` read back: "<retriever> · target <target>" -> {"table3_orthogonal_augmentation":
    frame, "table4_clean_retrieval": frame}. ``path`` may be the JSON file or a folder of them (all merged)."""
    p = Path(path)
    files = [p] if p.is_file() else (_json_files(p) if p.is_dir() else [])
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for f in files:
        d = _load(f)
        if not isinstance(d, dict) or not isinstance(d.get("retrievers"), dict):
            continue
        target = (d.get("setup") or {}).get("target")
        for ret, tables in d["retrievers"].items():  # one file per target: keep each apart
            out[f"{ret} · target {target}" if target else ret] = {name: pd.DataFrame(t) for name, t in tables.items()}
    if not out:
        raise ConfigError(
            f"{path}: no Tables 3–4 saved there (run `python -m engine analyze --corpus bioasq "
            f"--queries mirage:medqa,mirage:mmlu --retrievers minilm "
            f"--save {p if p.suffix else p / 'tables34.json'}`)"
        )
    return out
