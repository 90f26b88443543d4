"""Render a poisoning run's results; computation stays in the engine."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from engine.plots import asr_curves, detector_histogram, roc_figure
from engine.runs.events import Retrieved, event_to_json


def render_summary(summary: dict) -> None:
    cols = st.columns(4)
    for col, k in zip(cols, ("1", "2", "5")):
        col.metric(f"ASR@{k}", f"{summary['asr'][k]:.2f}")
    cols[3].metric("mean poison rank", f"{summary['mean_poison_rank']:.2f}")
    st.caption(f"{summary['n_queries']} queries against {summary['corpus_size']} documents; "
               f"retriever {summary['retriever']}, target {summary['target']}, {summary['injection']} injection. "
               f"Chroma's top-K equalled exact search on {summary['store_agreement']:.0%} of searches.")
    rows = []
    for name, d in summary["detectors"].items():
        if "skipped" in d:
            rows.append({"detector": name, "note": d["skipped"]})
        else:
            rows.append({"detector": name, "TPR": d["tpr"], "FPR (out-of-fold)": d["fpr"],
                         "FPR (in-sample)": d["fpr_in_sample"], "AUROC": d["auroc"], "β": d.get("beta"),
                         "anchors": d["n_anchors"], "held-out clean": d["n_clean_held_out"]})
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def render_figures(events: list, detectors: list[str]) -> None:
    st.plotly_chart(asr_curves(events), width="stretch")
    st.caption("Running attack success rate as more queries are attacked.")
    for d in detectors:
        st.plotly_chart(detector_histogram(events, d), width="stretch")
        st.caption(f"{d}: score of held-out clean documents vs poisons; dashed line = flagging threshold.")
    if detectors:
        st.plotly_chart(roc_figure(events, detectors), width="stretch")


def render_last_retrieval(events: list, text_of) -> None:
    last = next((e for e in reversed(events) if isinstance(e, Retrieved)), None)
    if last is None:
        return
    st.markdown("**Last query's top-K** (poisoned documents marked)")
    df = pd.DataFrame({"rank": last.ranks, "score": last.scores, "poison": last.is_poison,
                       "text": [text_of(d) for d in last.doc_ids]})
    st.dataframe(df, hide_index=True, width="stretch")  # plain cells: corpus text is never rendered as HTML


def events_jsonl(events: list) -> str:
    return "\n".join(event_to_json(e) for e in events) + "\n"
