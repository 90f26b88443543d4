"""The membership page's results: headline figures with their intervals, the ROC curve, scores by class, and one
row per probed record (all computed by the engine from the run's events; this only draws them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd
import streamlit as st

from components.charts import narrow_chart
from components.state import my_runs_dir
from engine.events import Event
from engine.plots.membership import roc_figure, score_figure
from components.text import md_escape
from engine.views.membership import record_rows, tenancy_lines


LIVE_FOLDER = "mia_live"  # the experiment job's state key: the folder its events are written to while it runs


@st.cache_data(max_entries=4, show_spinner=False)
def _live(folder: str, stamp: tuple) -> tuple[dict[str, Any], dict[str, Any], Any, Any] | None:
    """A running experiment's summary, latest record and two figures, computed again only when its events file
    changed (``stamp``: its size and time; a file of 400 records takes about a second to summarize)."""
    from engine.errors import EngineError
    from engine.runs.membership import load_membership

    try:
        summary, events, _ = load_membership(folder)
    except EngineError:  # no events written yet: still preparing
        return None
    rows = record_rows(events, width=600)
    if not rows:
        return None
    return summary, rows[-1], roc_figure(summary), score_figure(events)


def render_live(folder: str | None) -> None:
    """A running experiment so far, read from its folder's events (a reopened experiment reads the same): the
    latest record's question, answer and score, then the ROC curve and the scores by class of the records probed so
    far. Nothing before its first record is scored (the bar says what it prepares)."""
    path = Path(folder) / "events.jsonl" if folder else None
    try:
        stamp = (path.stat().st_size, path.stat().st_mtime_ns) if path else None
    except OSError:
        return
    live = _live(str(folder), stamp) if stamp else None
    if live is None:
        return
    summary, last, roc, scores = live
    box = st.container(border=True)
    box.markdown(
        f"**Latest: record {last['#']}** · {md_escape(last['record'])} · **{last['in the KB']}** · score "
        f"{last['score']:.3f}"
        + (" · its own record was retrieved" if last["own record retrieved"] else "")
        + (f" · {last['refused']} question(s) refused" if last["refused"] else "")
    )
    q, a = box.columns(2)
    q.caption("The attacker's question")
    q.text(last["question"])
    a.caption("The assistant's answer")
    a.text(last["answer"] or "(no answer)")
    auc = summary.get("auroc")
    st.caption(
        f"So far: {summary['decisions']} record(s), {summary['n_members']} member(s) and {summary['n_non_members']} "
        "non-member(s) · AUROC "
        + ("n/a until both kinds are scored" if auc is None else f"{auc:.2f} {_ci(summary.get('auroc_ci'))}")
    )
    f1, f2 = st.columns(2)
    narrow_chart(f1, roc, key="mia_live_roc")
    narrow_chart(f2, scores, key="mia_live_scores")


def membership_dir() -> Path:
    """This session's folder of membership experiments (beside, not among, the lab runs the Saved-runs page
    lists)."""
    return my_runs_dir() / "membership"


def _ci(ci: Sequence[float] | None) -> str:
    return f"95% interval [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""


def render_membership(summary: Mapping[str, Any], events: Sequence[Event], *, complete: bool = True) -> None:
    """Headline metrics, the two figures and the per-record table of one experiment."""
    run_id = next((e.run_id for e in events), "")
    st.subheader(
        md_escape(
            f"{summary.get('attack')} on {summary.get('kb')} · defenses: "
            f"{', '.join(summary.get('defenses') or ()) or 'none'}"
        ),
        help="The experiment shown below (the form above holds the settings of the next one)",
    )
    st.caption(f"experiment {md_escape(run_id)}" if run_id else "")
    if not summary.get("decisions"):
        st.info(
            "No record was probed before this experiment stopped: nothing to show yet. **Resume this experiment** "
            "under Saved experiments continues it (or `python -m engine membership --resume FOLDER`), or run it "
            "again above."
        )
        return
    if not complete:
        st.warning(
            f"Not finished (still running, stopped or interrupted): the figures cover the {summary['decisions']} "
            "records probed so far. A stopped experiment continues with **Resume this experiment** under Saved "
            "experiments (or `python -m engine membership --resume FOLDER`)."
        )
    c1, c2, c3, c4 = st.columns(4)
    auc = summary.get("auroc")
    c1.metric("AUROC", "n/a" if auc is None else f"{auc:.2f}", help="0.5 = chance, 1.0 = every member told apart")
    c1.caption(_ci(summary.get("auroc_ci")))
    for col, key, label in ((c2, "tpr_at_1fpr", "TPR at 1% FPR"), (c3, "tpr_at_5fpr", "TPR at 5% FPR")):
        col.metric(label, f"{summary[key]:.2f}", help="Share of members found while wrongly accusing at most this "
                   "share of non-members")  # fmt: skip
        col.caption(_ci(summary.get(f"{key}_ci")))
    c4.metric("Queries / record", f"{summary['queries_per_decision']:.1f}", help="Questions one decision cost")
    seen = summary.get("members_retrieved")
    c4.caption(
        f"{summary['n_members']} member{'' if summary['n_members'] == 1 else 's'} · "
        f"{summary['n_non_members']} non-member{'' if summary['n_non_members'] == 1 else 's'}"
        + (f" · {seen:.0%} of members retrieved" if seen is not None else "")
    )
    res = summary.get("fpr_resolution")
    if res and res > 0.01:
        st.caption(
            f"With {summary['n_non_members']} non-members one false positive is an FPR of {res:.2f}: the 1% column "
            "means no non-member may be called a member."
        )
    if summary.get("canaries_planted"):
        st.caption(
            f"Canaries: {summary['canaries_leaked']} of {summary['canaries_planted']} leaked "
            f"{_ci(summary.get('canaries_ci'))} · {summary['canary_members_found']} of {summary['canary_members']} "
            "canaried members proven by their own canary in an answer (no false positive possible)."
        )
        if not summary.get("canary_members"):
            st.warning(
                "None of the probed members carries a canary, so no member can be proven by one: the canaries sit "
                "in chunks this experiment did not ask about. Raise the canary share (1.0 canaries every chunk) or "
                "the number of members."
            )
    lines = tenancy_lines(dict(summary))
    if lines:
        st.info("  \n".join(md_escape(line) for line in lines))
    f1, f2 = st.columns(2)
    narrow_chart(f1, roc_figure(summary), key="mia_roc")
    narrow_chart(f2, score_figure(events), key="mia_scores")
    rows = record_rows(events)
    if rows:
        st.dataframe(
            pd.DataFrame(rows),
            hide_index=True,
            width="stretch",
            height=min(35 * (len(rows) + 1) + 3, 960),  # rows of 35 px + header, no blank row below
            column_config={
                "record": st.column_config.TextColumn(width="medium"),
                "score": st.column_config.NumberColumn(format="%.3f"),
                "answer": st.column_config.TextColumn(width="large"),
                "question": st.column_config.TextColumn(width="medium"),
            },
        )


@st.cache_data(max_entries=4, show_spinner=False)
def _table(folder: str, stamp: tuple) -> list[dict[str, Any]]:  # stamp: re-read when a cell advanced
    from engine.membership_table import table_rows

    return table_rows(folder)


def table_section() -> None:
    """A membership table's folder (``python -m engine run membership-table --out DIR``, finished or still
    running): one row per knowledge base × attack × defense configuration, with the utility beside."""
    from engine.errors import EngineError
    from engine.metrics.catalog import MK
    from engine.metrics.intervals import fmt_interval
    from engine.paths import REPO_ROOT

    from components.folders import folder_input, subfolders_holding

    st.caption(
        "Reads a table of membership experiments run from the command line (`python -m engine run "
        "membership-table --out DIR`: knowledge bases × attacks × defense configurations, one resumable run a "
        "cell), including cells still running or not started."
    )
    folder = folder_input(
        "Table folder",
        REPO_ROOT / "results" / "membership-table",
        key="mia_table_folder",
        choices=subfolders_holding([REPO_ROOT / "results"], "table.json"),
    )
    if folder is None:
        return
    files = (
        sorted(Path(folder).expanduser().glob("cells/*/*/events.jsonl"))
        + sorted(Path(folder).expanduser().glob("utility/*.json"))
        + sorted(Path(folder).expanduser().glob("task/*.json"))
    )
    try:
        rows = _table(folder, tuple((str(p), p.stat().st_size, p.stat().st_mtime) for p in files))
    except EngineError as e:
        st.info(md_escape(e))
        return

    def with_ci(r: Mapping[str, Any], key: str, digits: int = 2) -> str:
        v = r.get(key)
        return "" if v is None else f"{v:.{digits}f} {fmt_interval(r.get(key + '_ci'), 2)}".strip()

    started = [r for r in rows if r["decisions"]]
    has_task = any(r.get(MK.TASK_ACC) is not None for r in rows)
    waiting = len(rows) - len(started)
    if st.session_state.get("mia_table_all_for") != str(folder):  # another folder: its own default
        st.session_state["mia_table_all_for"] = str(folder)
        st.session_state["mia_table_all"] = not started
    show_all = bool(waiting) and st.checkbox(f"Also list the {waiting} cell(s) not started", key="mia_table_all")
    table = [
        {
            "KB": r["kb"],
            "attack": r["attack"],
            "defenses": r["configuration"],
            "probed": f"{r['decisions']}/{r['planned']}" + ("" if r["complete"] else " so far")
            if r["decisions"]
            else f"0/{r['planned']}",
            "AUROC": with_ci(r, "auroc", 3) if r["decisions"] else "—",
            "TPR at 1% FPR": with_ci(r, "tpr_at_1fpr") if r["decisions"] else "—",
            "TPR at 5% FPR": with_ci(r, "tpr_at_5fpr") if r["decisions"] else "—",
            "in top-K": "—" if r.get("members_retrieved") is None else f"{r['members_retrieved']:.0%}",
            "utility ACC": with_ci(r, MK.UTILITY_ACC) or "—",
            **({"task ACC": with_ci(r, MK.TASK_ACC) or "—"} if has_task else {}),
        }
        for r in (rows if show_all else started)
    ]
    if table:
        st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch", key="mia_table")
    else:
        st.info("No cell of this table has started yet.")
    done = sum(r["complete"] for r in rows)
    st.caption(
        f"{done} of {len(rows)} cells finished. In brackets: 95% intervals. AUROC 0.5 is chance; its interval is a "
        "stratified bootstrap. In top-K: the share of members whose own record was retrieved for its question. "
        "Utility ACC: the defended assistant's accuracy on the clinic handbook's questions (one measurement per "
        "defense configuration, beside every attack)."
        + (
            " Task ACC: the same on the knowledge base's own task (a dialog record's question, its own reply "
            "among the replies of the three most similar questions)."
            if has_task
            else ""
        )
    )
