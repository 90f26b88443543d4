"""Drawing a defense comparison (live or reopened from disk): curves, table, trade-off, ablation, clusters."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components.text import md_escape
from engine.views.comparison import LEAK_METRICS, UTILITY_METRICS, comparison_table, uses_reindex
from engine.compare import ABLATION, ablation_direction, average_ablation_direction
from engine.errors import EngineError
from engine.plots.defenses import cluster_view, comparison_curves, ratio_bars, tradeoff_scatter
from engine.metrics.catalog import MK, help_text


SUFFIXES = {
    "_ratio": " — ÷ the same metric without protection (same attack)",
    "_std": " — standard deviation over the runs (seeds)",
    "_ci": " — 95% interval",
    "_drop": " — without protection minus with it",
}


def column_help(columns: Any) -> dict[str, Any]:
    """Each column's meaning as a header tooltip (from the metric catalog; ``*_ratio``, ``*_std``, ``*_ci`` and
    ``*_drop`` say what they add to their metric); the row's names stay pinned at the left while the rest scrolls."""
    out: dict[str, Any] = {}
    for c in columns:
        if c in ("kb", "attack", "configuration"):
            out[c] = st.column_config.Column(pinned=True)
            continue
        base, extra = c, ""
        for suffix, text in SUFFIXES.items():
            if c.endswith(suffix) and help_text(c) == "":
                base, extra = c[: -len(suffix)], text
                break
        text = (help_text(base) or "") + extra
        if text:
            out[c] = st.column_config.Column(help=text)
    return out


def render_live_rows(rows: list[dict[str, Any]], planned: int) -> None:
    """A running comparison's runs finished so far, one row each as it ends (a repeated cell's seeds each their own
    row: the final table averages them; columns no finished run has a value for yet are left out)."""
    if not rows:
        return
    table = comparison_table(list(rows)).dropna(axis=1, how="all")
    if "seed" not in table.columns and len({r.get("seed") for r in rows}) > 1:
        table.insert(list(table.columns).index("configuration") + 1, "seed", [r.get("seed") for r in rows])
    st.dataframe(
        table.round(4), hide_index=True, width="stretch", key="cmp_live_table", column_config=column_help(table.columns)
    )
    st.caption(
        f"Finished so far: {len(rows)} of {planned} runs, each row as its run ends. The ratios to no protection and "
        "the charts come with the whole comparison."
    )


def render_results(
    config: dict[str, Any], rows: list[dict[str, Any]], *, complete: bool = True, key: str = "cmp"
) -> None:
    """The finished comparison: the leakage table with ratios to no defense, the leakage-vs-utility chart and the
    ablation checks (a note when the grid is not complete yet); ``key`` keeps two renderings' widgets apart."""
    if not rows:
        st.info("No configuration finished, so there is nothing to show yet.")
        return
    expected = len(config.get("attacks") or ()) * len(config.get("configurations") or ())
    if not complete or (expected and len(rows) < expected):
        st.warning(f"Stopped early: {len(rows)} of {expected} attack × configuration runs finished.")
    names = list(LEAK_METRICS)
    metric = st.selectbox(
        "Leakage metric",
        names,
        format_func=LEAK_METRICS.get,
        key=f"{key}_metric",
        help="CRR: share of the knowledge-base chunks the attacker recovered (ROUGE-L recall ≥ τ)",
    )
    st.subheader("Leakage round by round")
    st.plotly_chart(comparison_curves(rows, metric), width="stretch", key=f"{key}_curves")
    st.caption("One line per defense configuration: how the leak grows as the attacker spends its query budget.")

    st.subheader("Final metrics")
    table = comparison_table(rows)
    st.dataframe(
        table.round(4), hide_index=True, width="stretch", key=f"{key}_table", column_config=column_help(table.columns)
    )
    st.caption(
        "`*_ratio` = value ÷ value without protection (same attack); empty when the undefended value is 0. "
        "`utility_acc_drop` = ACC without protection − ACC with it."
        + (
            " `membership_auroc`: how well the membership attack tells this configuration's members from "
            "non-members (0.5 = chance; bootstrap 95% interval beside it) — a defense can stop copying (CRR) "
            "and not membership, or the reverse."
            if MK.MEMBERSHIP_AUROC in table.columns
            else ""
        )
        + (
            " `task_acc`: accuracy on the attacked knowledge base's own task (each dialog record's question, its "
            "own reply among the replies of the three most similar questions), with its Wilson interval; "
            "`task_acc_drop` = task ACC without protection − with it."
            if MK.TASK_ACC in table.columns
            else ""
        )
    )
    n_runs = max((r.get("n_runs", 1) for r in rows), default=1)
    if n_runs > 1:
        st.caption(
            f"Each value is the mean over {n_runs} runs with different attacker seeds (`*_std`: their "
            "standard deviation; ratios are ratios of the means). A difference smaller than the spread "
            "is not a finding."
        )
    if any(r.get(f"{metric}_ratio") is not None for r in rows):
        st.plotly_chart(ratio_bars(rows, metric), width="stretch", key=f"{key}_ratios")
        if metric == MK.CRR and any(r.get(MK.CRR_VS_NONE) == "not distinguishable" for r in rows):
            st.caption(
                "Faded bars marked *tie*: their CRR interval overlaps no protection's — at this budget the two "
                "cannot be ranked, whatever the ratio says (more rounds or repetitions narrow the intervals)."
            )

    has_utility = any(r.get(MK.UTILITY_ACC) is not None for r in rows)
    st.subheader("Security vs utility")
    if has_utility:
        x = st.radio(
            "Utility axis", list(UTILITY_METRICS), format_func=UTILITY_METRICS.get, horizontal=True, key=f"{key}_x"
        )
        st.plotly_chart(tradeoff_scatter(rows, x, metric), width="stretch", key=f"{key}_tradeoff")
        st.caption(
            "Bottom right is best: little leakage, useful answers. A defense that moves a point down "
            "without moving it left is worth having."
        )
    else:
        st.info("This comparison ran without the utility evaluation, so there is no trade-off to draw.")

    kbs = list(dict.fromkeys(r.get("kb") for r in rows))
    for kb, attack in dict.fromkeys((r.get("kb"), r["attack"]) for r in rows):
        check = ablation_direction(rows, attack, metric, kb=kb if len(kbs) > 1 else None)
        if check["holds"] is None:
            continue
        v = check["values"]
        line = f"{LEAK_METRICS[metric]}: " + " · ".join(f"{c} {v[c]:.3g}" for c in reversed(ABLATION))
        who = f"{attack} on {kb}" if len(kbs) > 1 else attack
        msg = f"RAGFort ablation direction for {md_escape(who)} (both < min(single paths) < none): "
        if check["holds"] and check["not_below_none"]:
            st.warning(
                msg
                + "**holds**, but "
                + " and ".join(check["not_below_none"])
                + " alone leaks no less than no protection. "
                + line
            )
        elif check["holds"]:
            st.success(msg + "**holds**. " + line)
        else:
            st.warning(msg + "**does not hold** here. " + line)

    avg = average_ablation_direction(rows, metric)
    if avg["holds"] is not None and avg["attacks"] > 1:
        rr = avg["ratios"]
        line = " · ".join(f"{c} {rr[c]:.2f}×" for c in reversed(ABLATION))
        msg = (
            f"RAGFort ablation on the relative {LEAK_METRICS[metric]} averaged over {avg['attacks']} attacks "
            "(the paper's ablation table): "
        )
        if avg["holds"] and avg["not_below_none"]:
            st.warning(
                msg
                + "**holds**, but "
                + " and ".join(avg["not_below_none"])
                + " alone leaks no less than no protection. "
                + line
            )
        else:
            (st.success if avg["holds"] else st.warning)(
                msg + ("**holds**. " if avg["holds"] else "**does not hold** here. ") + line
            )

    if uses_reindex(rows):
        _cluster_panel(config, key)
    st.download_button(
        "Final metrics (CSV)",
        table.to_csv(index=False),
        file_name="defense_comparison.csv",
        mime="text/csv",
        on_click="ignore",
        key=f"{key}_csv",
    )


def _cluster_panel(config: dict[str, Any], key: str) -> None:
    st.subheader("Contrastive reindexing: the knowledge base before and after")
    if not st.toggle(
        "Show the cluster view",
        value=True,
        key=f"{key}_clusters",
        help="Reuses the reindexing cached on disk by the run; recomputing it without the cache "
        "fine-tunes the encoder again (minutes on CPU).",
    ):
        return
    from engine.views.reindex import reindex_view_for

    base = dict(config.get("base") or {})
    cache_key = repr(sorted(base.items()))
    views = st.session_state.setdefault("reindex_views", {})
    try:
        if cache_key not in views:
            with st.spinner("Loading the reindexed knowledge base…"):
                views[cache_key] = reindex_view_for(base)
        res = views[cache_key]
    except EngineError as e:
        st.error(f"Cannot show the cluster view: {md_escape(e)}")
        return
    st.plotly_chart(cluster_view(res), width="stretch", key=f"{key}_cluster_fig")
    sb, sa = res.separation_before, res.separation_after
    st.caption(
        f"{res.n_clusters} HDBSCAN clusters, {res.n_noise} noise chunks. Intra − inter cluster cosine gap: "
        f"{sb.get('gap', float('nan')):.3f} before, {sa.get('gap', float('nan')):.3f} after. Each panel has "
        "its own 2-D PCA axes: compare how tight and apart the colours are, not the positions."
    )


def _stamp(folder: str) -> tuple:
    """What changes when a long run advances or ends: its events and summary files' names, sizes and times."""
    from pathlib import Path

    files = sorted(Path(folder).expanduser().glob("runs/*/*.json*"))
    return tuple((str(p), p.stat().st_size, p.stat().st_mtime) for p in files if p.is_file())


@st.cache_data(max_entries=4, show_spinner=False)
def _long_runs(folder: str, stamp: tuple) -> list[dict[str, Any]]:  # stamp: re-read when a run advanced
    from engine.analysis.scale_report import read_runs

    return read_runs(folder)


def long_run_section() -> None:
    """A long comparison's folder (e.g. the committed ``results/ragfort-paper-scale-hcm``, or any ``compare --out``
    folder, finished or still running): CRR after every round with its interval, the checkpoint table and the
    defended runs against no protection at the same round."""
    from engine.analysis.ragfort_tables import ragfort_markdown
    from engine.analysis.scale_report import report_rows, same_round_lines, task_rows
    from engine.paths import REPO_ROOT
    from engine.plots.defenses import crr_with_intervals

    st.caption(
        "Reads the run folders of a comparison run with `--out` (the CLI's long experiments, e.g. "
        "`compare --preset ragfort-paper-scale`), including a cell still running or cut short: CRR after "
        "every round, with Wilson's 95% interval over the KB's chunks (which chunks one trajectory reaches; "
        "the spread over attacker seeds needs `--repeats`)."
    )
    from components.folders import folder_input, subfolders_holding
    from components.state import my_comparisons_dir

    folder = folder_input(
        "Comparison folder",
        REPO_ROOT / "results" / "ragfort-paper-scale-hcm",
        key="long_folder",
        choices=subfolders_holding([REPO_ROOT / "results", my_comparisons_dir()], "comparison.json"),
    )
    if folder is None:
        return
    try:
        with st.spinner("Reading the runs' events…"):
            runs = _long_runs(folder, _stamp(folder))
    except EngineError as e:
        st.info(md_escape(e))
        return
    st.plotly_chart(crr_with_intervals(runs), width="stretch", key="long_curves")
    rows = report_rows(runs)
    table = [
        {
            "KB": r["kb"],
            "attack": r["attack"],
            "configuration": r["configuration"],
            "seed": r["seed"],
            "rounds": r["rounds"],  # a checkpoint this run has not reached yet reads "not yet", not a grey None
            **{f"CRR @ {k[4:]}": "not yet" if r[k] is None else f"{r[k]:.3f}" for k in r if k.startswith("crr@")},
            "CRR now [95%]": f"{r[MK.CRR]:.3f} [{r['crr_low']:.3f}, {r['crr_high']:.3f}]",
            "chunks": f"{r['recovered']} of {r['kb_size']}",
            "reached": r[MK.EE_RETRIEVAL],
            "reproduced": r[MK.EE_GENERATION],
            "new-chunk rounds": round(r[MK.EXPLORATION], 2),  # whole percents (56%, not 56.04%)
            "PII": r[MK.PII_LEAKED],
            "s / round": ("" if r["seconds_median"] is None else f"{r['seconds_median']:.0f} / ")
            + f"{r['seconds_per_round']:.0f}",
        }
        for r in rows
    ]
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        key="long_table",
        column_config={
            "KB": st.column_config.TextColumn(pinned=True),
            "attack": st.column_config.TextColumn(pinned=True),
            "configuration": st.column_config.TextColumn(pinned=True),
            "reached": st.column_config.NumberColumn(format="%.3f"),
            "reproduced": st.column_config.NumberColumn(format="%.3f"),
            "new-chunk rounds": st.column_config.NumberColumn(format="percent"),
        },
    )
    st.caption(
        "CRR now: the chunks recovered so far over the KB's, with Wilson's 95% interval. Reached: share of the KB "
        "that some answer was built from (retrieval stage); reproduced: share of those chunks the answers gave "
        "back (generation stage); CRR ≈ their product. New-chunk rounds: rounds that recovered a chunk not seen "
        "before. s / round: median / mean wall time of a round, all stages, including whatever else the machine "
        "was doing (the median is the typical round; the mean is what the rest of a run would cost)."
    )
    for line in same_round_lines(runs):  # a running cell against no protection where it is now
        st.markdown("**Against no protection at the same round** — " + md_escape(line.strip()))
    kbs = sorted({str(r["kb"]) for r in runs if r["configuration"] != "none"})
    for kb in kbs:  # the paper's own tables for each KB the folder defends
        with st.expander(f"RAGFort's tables on {kb}, beside the paper's numbers", expanded=False):
            st.markdown(ragfort_markdown(folder, kb, runs=runs))
    task = task_rows(folder)
    if task:
        st.markdown("**Utility on the attacked knowledge base's own task** (RAGFort's ACC before / after)")
        st.dataframe(
            [
                {
                    "KB": r["kb"],
                    "configuration": r["configuration"],
                    "task ACC": "—" if r["acc"] is None else f"{r['acc']:.1%}",
                    "95% interval": "" if not r["acc_ci"] else f"{r['acc_ci'][0]:.1%}–{r['acc_ci'][1]:.1%}",
                    "questions": f"{r['questions']}" + (f" of {r['of']} (not finished)" if r["of"] else ""),
                    "change against none": "—" if r["change"] is None else f"{r['change']:+.1f} points",
                }
                for r in task
            ],
            hide_index=True,
            width="stretch",
            key="long_task",
        )
        st.caption(
            "Each question is a record's patient message with four replies to choose from: the record's own and "
            "those of the three most similar questions (`dialogs:<kb>`). Measured per configuration, whatever "
            "the attack. A configuration not finished shows its questions so far and claims no change."
        )
