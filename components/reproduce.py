"""The Sweeps page's "Reproduce" section: the universal-poisoning paper's tables read from saved runs, each
beside the paper's own numbers. It only reads files the commands wrote (``engine.analysis.reproduce``)."""

from __future__ import annotations

import streamlit as st

from components.folders import folder_input, subfolders_holding
from components.state import my_sweeps_dir
from components.text import md_escape
from engine.analysis.paper_tables import (
    QUERY_SETS,
    paper_table3,
    paper_table4,
    paper_table8,
    read_sweep,
    side_by_side,
    summary,
)
from engine.analysis.reproduce import (
    PAPER_DETECTORS,
    detection_table,
    read_beta_sweeps,
    read_detection,
    read_tables34,
    table8,
)
from engine.errors import EngineError
from engine.paths import REPO_ROOT

RESULTS = REPO_ROOT / "results"  # the runs committed with the repository


def _saved(reader, path):
    """``reader(path)``, or None after one line saying what is missing and which command writes it (or when no
    folder was chosen)."""
    if path is None:
        return None
    try:
        return reader(path)
    except EngineError as e:
        st.info(md_escape(e))
        return None


def _table1_tab() -> None:
    st.caption(
        "Reads the cells a sweep wrote to a folder (`python -m engine run universal-poisoning-table1 --out "
        "DIR`) and shows top-K success per query set × target for each of our retrievers beside the paper's "
        "PubMed rows (MedCPT, Specter, Contriever, which do not ship offline): Table 1 for top-2, Table 7 "
        "for top-1. Our corpus is the 20,767 BioASQ PubMed snippets and the first 300 questions of each "
        "set; the paper's is PubMed (23.9M articles) with all questions."
    )
    c = st.columns([3, 1])
    folder = folder_input(
        "Sweep folder",
        RESULTS / "table1-bioasq",
        key="t1_folder",
        container=c[0],
        choices=subfolders_holding([RESULTS, my_sweeps_dir()], "sweep_cells.csv"),
    )
    k = c[1].radio(
        "Top K", (2, 1), horizontal=True, key="t1_k", format_func=lambda v: f"top-{v} (Table {1 if v == 2 else 7})"
    )
    cells = _saved(read_sweep, folder)
    if cells is None:
        return
    table = side_by_side(cells, k)
    if table.empty:
        st.info("This sweep has no cell on the paper's query sets (MIRAGE) and targets.")
        return
    st.dataframe(table.round(3), hide_index=True, width="stretch")
    s = summary(cells[cells["query_set"].isin(QUERY_SETS)], k)
    st.caption(
        " · ".join(
            f"ours {md_escape(r)}: mean {v['mean']:.2f}, lowest {v['min']:.2f} "
            f"({md_escape(v['lowest'])}, {v['cells']} cells)"
            for r, v in s["ours"].items()
        )
        + " — paper: "
        + " · ".join(f"{r} mean {v['mean']:.2f}, lowest {v['min']:.2f} ({v['lowest']})" for r, v in s["paper"].items())
    )


def _table8_tab() -> None:
    st.caption(
        "Detection rate of the Mahalanobis filter for each shrinkage β, refitted on the same anchors with "
        "the out-of-fold 95th-percentile threshold: each cell is TPR / FPR on held-out clean documents. "
        "Reads every `poison ... --detectors mahalanobis --beta-sweep paper --json` summary saved under the "
        "folder (one per retriever × query set)."
    )
    folder = folder_input(
        "Folder of β-sweep summaries",
        RESULTS / "table8",
        key="t8_folder",
        choices=subfolders_holding([RESULTS], "*.json"),
    )
    frame = _saved(read_beta_sweeps, folder)
    if frame is None:
        return
    st.dataframe(table8(frame), hide_index=True, width="stretch")
    st.caption("The paper (PubMed corpus, its retrievers; query sets of the rows not named):")
    st.dataframe(paper_table8(), width="stretch")


def _detection_tab() -> None:
    st.caption(
        "The paper's Figures 3–9 as a table: per retriever × query set × target, the detector's TPR with "
        "the out-of-fold threshold and, in brackets, that setup's top-2 attack success; FPR per query set. "
        "Reads every sweep run with `--detectors` in the folder or its subfolders. The paper reports "
        "near-perfect Mahalanobis detection in every setup and the ℓ2-norm filter far below it."
    )
    c = st.columns([3, 1])
    folder = folder_input(
        "Folder of detection sweeps",
        RESULTS,
        key="det_folder",
        container=c[0],
        choices=[str(RESULTS), *subfolders_holding([RESULTS, my_sweeps_dir()], "sweep_cells.csv")],
    )
    detector = c[1].radio("Detector", PAPER_DETECTORS, horizontal=True, key="det_detector")
    table = _saved(lambda f: detection_table(read_detection(f), detector), folder)
    if table is not None:
        st.dataframe(table, hide_index=True, width="stretch")


def _tables34_tab() -> None:
    st.caption(
        "Why the poison wins. Table 3: appending any text P to a question q moves its embedding at about a "
        "right angle to q (orthogonal augmentation), so q ⊕ P stays near q. Table 4: the angle between a "
        "question and its clean top-5 documents — the margin a poison has to beat. Reads `python -m engine "
        "analyze ... --save FILE.json`."
    )
    path = folder_input(
        "Tables file or folder", RESULTS / "tables34", key="t34_path", choices=subfolders_holding([RESULTS], "*.json")
    )
    saved = _saved(read_tables34, path)
    if saved is None:
        return
    for ret, tables in saved.items():
        st.markdown(f"**{md_escape(ret)}**")
        c = st.columns(2)
        for col, name, title in (
            (c[0], "table3_orthogonal_augmentation", "Table 3"),
            (c[1], "table4_clean_retrieval", "Table 4"),
        ):
            if name in tables:
                col.caption(title)
                col.dataframe(tables[name], width="stretch")
    st.markdown(
        "**The paper** (its Table 3: MedQA documents P₁…P₃ of decreasing similarity to q; Table 4: Textbook corpus)"
    )
    c = st.columns(2)
    for r, df in paper_table3().items():
        c[0].caption(f"Table 3 — {r}")
        c[0].dataframe(df, width="stretch")
    for r, df in paper_table4().items():
        c[1].caption(f"Table 4 — {r}")
        c[1].dataframe(df, width="stretch")


def reproduce_section() -> None:
    """Tabs for Tables 1 / 7, Table 8, Figures 3–9 and Tables 3–4, each read from saved runs."""
    st.subheader("Reproduce: the paper's tables beside saved runs")
    tabs = st.tabs(
        [
            "Tables 1 / 7 · success",
            "Table 8 · detection vs β",
            "Figures 3–9 · detection per setup",
            "Tables 3–4 · why it works",
        ]
    )
    with tabs[0]:
        _table1_tab()
    with tabs[1]:
        _table8_tab()
    with tabs[2]:
        _detection_tab()
    with tabs[3]:
        _tables34_tab()
