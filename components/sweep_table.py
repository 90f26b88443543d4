"""The sweep's cells table as the Sweeps page shows it (finished or still running): short headers, one decimal
form, and "—" where a retriever has no value (the CSV download keeps the engine's column names and empty fields)."""

from __future__ import annotations

from typing import Any, Iterable

import pandas as pd
import streamlit as st

DENSE_ONLY = " Dense retrievers only: BM25 reads whole words with no token window, so its cells read —."
NAMES = {"query_set": "query set", "n_queries": "questions", "poisons_over_window": "over window"}


def cell_column_labels(columns: Iterable[str]) -> dict[str, Any]:
    """Headers for the cells table: ASR@k, each detector's TPR / FPR / AUROC, the counts in words; the two token
    columns with what they measure."""
    out: dict[str, Any] = {}
    for c in columns:
        if c in NAMES:
            out[c] = NAMES[c]
        elif c.startswith("asr@"):
            out[c] = "ASR@" + c[4:].replace("_by_variant", " by variant")
        elif c.endswith(("_tpr", "_fpr", "_auroc")):
            det, _, m = c.rpartition("_")
            out[c] = f"{det} {m.upper()}"
    out["question_tokens"] = st.column_config.TextColumn(
        "question tokens",
        help="Median length of the attacked questions in the retriever's tokens." + DENSE_ONLY,
        alignment="right",
    )
    out["target_embedded"] = st.column_config.TextColumn(
        "target read",
        help="Mean share of the attacker's text (around the question) that the retriever's window reads." + DENSE_ONLY,
        alignment="right",
    )
    return out


def sweep_cells_table(cells: pd.DataFrame) -> None:
    """Draw a sweep's cells; a column with one value in every cell of a multi-cell grid (the variant count) is
    left out — the form says it."""
    constant = [c for c in ("variants",) if c in cells.columns and len(cells) > 1 and cells[c].nunique() <= 1]
    shown = cells.drop(columns=constant).copy()
    # the two dense-only columns as text: the browser draws a number column's empty cell as a grey "None" whatever
    # the Styler says, and a token count reads "11", not "11.000"
    for col, fmt in (("question_tokens", lambda v: f"{round(v, 1):g}"), ("target_embedded", lambda v: f"{v:.3f}")):
        if col in shown.columns:
            shown[col] = [fmt(float(v)) if pd.notna(v) else "—" for v in shown[col]]
    st.dataframe(
        # a cell a retriever has no value for (BM25's token columns) reads "—", not a grey "None"
        shown.style.format(precision=3, na_rep="—"),
        hide_index=True,
        width="stretch",
        column_config=cell_column_labels(shown.columns),
    )


def live_cells(cfg: Any, folder: str | None) -> None:
    """A running sweep's cells finished so far (read from its folder, as a resume reads them), each as it ends."""
    from engine.sweep import finished_cells, grid

    rows = finished_cells(cfg, folder)
    if rows:
        sweep_cells_table(pd.DataFrame(rows))
        st.caption(
            f"Finished so far: {len(rows)} of {len(grid(cfg))} cells, each row as its cell ends. The heat map and "
            "the paper's table beside it come with the whole sweep."
        )
