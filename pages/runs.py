"""Saved runs: reopen any run from disk, compare two side by side, export a self-contained HTML report."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.state import init_state, my_runs_dir
from components.text import md_escape
from engine.plots import asr_compare
from engine.plots.runs import leakage_compare
from engine.report import load_run, run_kind, run_report_html, summary_table
from engine.saved import list_runs
from engine.metrics.catalog import MK, label

init_state()
st.title("Saved runs")
st.caption(
    "Every attack prepared in the poisoning or extraction lab, and every membership experiment, is written to disk "
    "as it happens (events.jsonl), so it survives a browser refresh or an app restart. Reopen runs here, compare "
    "them, export a report. (The teaching levels are short exercises and are not kept.)"
)
runs = list_runs(my_runs_dir()) + list_runs(my_runs_dir() / "membership")
KINDS = {"poison": "poisoning", "extract": "extraction", "membership": "membership inference"}
if not runs:
    st.info("No saved runs yet: prepare and step an attack in the Poisoning or Extraction lab.")
else:
    kinds = sorted({r["kind"] for r in runs})
    kind = st.radio("Kind", kinds, horizontal=True, format_func=KINDS.get) if len(kinds) > 1 else kinds[0]
    runs = [r for r in runs if r["kind"] == kind]
    listed = pd.DataFrame(runs).drop(columns=["path", "folder"]).dropna(axis=1, how="all")
    if "tenant filter" in listed:  # a one-owner run has no tenant filter at all: "—", never a "None" read as "none"
        listed["tenant filter"] = listed["tenant filter"].fillna("—")
    st.dataframe(
        listed.round(3),
        hide_index=True,
        width="stretch",
        column_config={
            "round budget": st.column_config.NumberColumn(help="Rounds the run was given (played: open it)"),
            "tenant filter": st.column_config.TextColumn(
                width="medium", help="Multi-tenant runs: where the tenant filter sits, and whom the attacker asks as"
            ),
            "corpus": st.column_config.TextColumn(width="medium"),
            "defenses": st.column_config.TextColumn(width="medium"),
        },
    )
if runs and kind == "membership":
    st.caption(
        "Membership experiments open, with their ROC and every record's score, on the Membership inference page "
        "(Saved experiments)."
    )
    if st.button("Open the Membership inference page", key="runs_to_membership"):
        st.switch_page("pages/membership.py")
elif runs:
    ids = [r["run_id"] for r in runs]
    chosen = st.multiselect("Open (one to inspect, two or more to compare)", ids, default=ids[:1], max_selections=4)
    if chosen:
        try:
            loaded = {rid: load_run(next(r["path"] for r in runs if r["run_id"] == rid)) for rid in chosen}
            table = summary_table(loaded)
            st.dataframe(  # the row names (metrics) are the index: wide enough to read whole; every row shown
                table,
                width="stretch",
                height=35 * (len(table) + 1) + 3,
                column_config={"_index": st.column_config.Column(width="medium")},
            )
            if all(run_kind(ev) == "extract" for ev in loaded.values()):
                metric = st.radio(
                    "Metric",
                    [
                        MK.CRR,
                        MK.RETRIEVED_COVERAGE,
                        MK.SEMANTIC_LEAK,
                        MK.PII_LEAKED,
                        MK.REPEAT_CONTEXTS,
                        MK.ROUGE_CONTEXTS,
                    ],
                    horizontal=True,
                    format_func=label,
                )
                rows = {r["run_id"]: r for r in runs}
                named = {  # the legend says what differs: the defenses, or a multi-tenant run's filter
                    f"{rid} · {rows[rid].get('tenant filter') or rows[rid]['defenses']}": ev
                    for rid, ev in loaded.items()
                }
                st.plotly_chart(leakage_compare(named, metric), width="stretch", key="cmp_x")
                st.caption("Leakage of each run round by round: where the curves part, the configurations differ.")
            else:
                k = st.radio("K", [1, 2, 5], index=1, horizontal=True)
                st.plotly_chart(asr_compare(loaded, k), width="stretch", key="cmp")
                st.caption("Running attack success of each run: where the curves part, the configurations differ.")
            for rid, events in loaded.items():
                st.download_button(
                    f"HTML report of {rid}",
                    lambda ev=events, r=rid: run_report_html(ev, f"Run {r}"),
                    file_name=f"{rid}-report.html",
                    mime="text/html",
                    on_click="ignore",
                    key=f"rep_{rid}",
                )
        except Exception as e:  # a damaged file on disk must not break the page
            st.error(f"Could not read a saved run: {md_escape(type(e).__name__)}: {md_escape(e)}")
