"""Poisoning-lab panels. Render only: runs step and compute in the engine."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.params_form import params_form
from components.text import marked_markdown, md_escape, short
from engine.views.poisoning_run import detector_report, embedding_map, rounds_table
from engine.detectors import DETECTORS
from engine.errors import ConfigError
from engine.metrics import asr, asr_defended, asr_generation, detection, triggered_rounds
from engine.runs.poisoning import trigger_of
from engine.metrics.intervals import fmt_interval
from engine.plots import asr_curves, embedding_scatter, roc_from_scores, score_histogram
from engine.events import DetectorFitted, DetectorSkipped, PoisonsCrafted, Retrieved, event_to_json
from engine.views.poisoning import answer_view, defense_view


def last_retrieval(run) -> Retrieved | None:
    """The run's most recent ``retrieved`` event (None before the first question)."""
    return next((e for e in reversed(run.events) if isinstance(e, Retrieved)), None)


def render_round(run) -> None:
    """The current round: attacker (query + poison), retriever (top-K, poison marked), detectors' verdicts."""
    ret = last_retrieval(run)
    if ret is None:
        st.info("Press **Step** or **Play** to attack the first question.")
        return
    left, mid, right = st.columns([1, 2, 1])
    with left:
        st.markdown(f"**Attacker — question {ret.round + 1}/{len(run.queries)}**")
        st.text(run.queries[ret.round].text)
        for t in ret.target_ids:
            st.caption(
                "Blocker document (question ⊕ text that makes the assistant refuse):"
                if run.denial
                else "Poisoned document (question ⊕ target information):"
            )
            st.text(run.store.text_of(t))
    with mid:
        best = min(ret.target_ranks) if ret.target_ranks else None
        st.markdown(
            f"**Retriever — top-{len(ret.doc_ids)}** · poison's exact rank: **{best}**"
            + ("" if ret.store_agreed else " · Chroma's HNSW answer differed; exact ranking shown")
        )
        df = pd.DataFrame(
            {
                "rank": ret.ranks,
                "score": ret.scores,
                "document": ["☣ POISON" if p else "clean" for p in ret.is_poison],
                "text": [run.store.text_of(d)[:300] for d in ret.doc_ids],
            }
        )
        st.dataframe(
            df.style.apply(
                lambda r: ["background-color: rgba(214,39,40,0.25)" if r["document"] != "clean" else "" for _ in r],
                axis=1,
            ).format({"score": "{:.3f}"}),
            hide_index=True,
            width="stretch",
            # the column fits its half of the page (hover or widen a cell to read a whole document)
            column_config={
                "rank": st.column_config.NumberColumn(width="small"),
                "text": st.column_config.TextColumn(width="medium"),
            },
        )
    with right:
        st.markdown("**Detectors**")
        verdicts = {}
        for e in run.events[::-1]:
            if getattr(e, "kind", "") == "detector_scored" and set(e.doc_ids) & set(ret.target_ids):
                verdicts.setdefault(e.detector, any(e.flagged))
            if isinstance(e, Retrieved) and e.round < ret.round:
                break
        if not verdicts:
            st.caption("none switched on")
        for name, flagged in verdicts.items():
            st.markdown(f"{'🚩 flagged' if flagged else '✅ passed'} by **{name}**")
    dv = defense_view(run.events, ret.round)
    if dv is not None:
        parts = []
        for a in dv["actions"]:
            what = (
                f"dropped {len(a['dropped'])}" + (" — the poison among them" if a["poison_dropped"] else "")
                if a["dropped"]
                else a["action"]
            )
            parts.append(f"**{md_escape(a['defense'])}** ({a['stage']}): {md_escape(what)}")
        fate = (
            "blocked the question"
            if dv["blocked_by"]
            else "☣ the poison still reaches the assistant"
            if dv["poison_passed"]
            else "🛡️ the poison was removed"
            if dv["poison_retrieved"]
            else "the poison was not retrieved"
        )
        st.markdown(f"**Defenses** · {fate}  \n" + " · ".join(parts))
    view = answer_view(run.events, ret.round)
    if view is not None:
        with st.container(border=True):
            blocked = run.denial
            verdict = (
                "⚪ refused already without the blocker: set aside, not counted"
                if view["clean_refused"]
                else f"refuses, yet keeps {view['clean_recall']:.0%} of the answer without the blocker: not counted"
                if view["matched"] and not view["carried"] and view["clean_recall"] is not None
                else "🚫 **refused because of the blocker** (it answered without it)"
                if blocked and view["carried"]
                else "✅ answered despite the blocker"
                if blocked
                else f"☣ **repeats the attacker's information**: {md_escape(', '.join(view['matched']))}"
                if view["matched"]
                else (
                    "☣ **the judge says it states the planted information**"
                    if view["carried"]
                    else "✅ does not repeat the target"
                )
            )
            st.markdown(
                f"**Assistant's answer** ({md_escape(view['model'])}, {view['seconds']:.1f} s; the poison "
                f"{'was' if view['poison_in_context'] else 'was not'} in its context) · {verdict}"
            )
            st.markdown(marked_markdown(view["segments"]) or "_(empty answer)_")
            if view["clean_answer"] is not None:
                st.caption("Without the blocker: " + md_escape(short(view["clean_answer"], 400)))
            if view["judge"]:
                st.caption(f"LLM judge: {view['judge']}")


def render_live_metrics(run) -> None:
    """ASR@K so far, the defended / generation ASR when those are on, and each detector's TPR / FPR."""
    n = sum(isinstance(e, Retrieved) for e in run.events)
    gen = bool(run.config.generate)
    dfn = bool(run.config.defenses)
    n_det = len(run.config.detectors)
    wide = 3 + dfn + gen + n_det > 5  # detectors move to a second row: "1.00 / 0.62" must stay readable
    cols = st.columns(3 + dfn + gen + (0 if wide else n_det))
    if wide:
        cols = cols + st.columns(max(n_det, 3))[:n_det]
    intervals = []
    for col, k in zip(cols, (1, 2, 5)):
        m = asr(run.events, k)
        col.metric(f"ASR@{k}", f"{m.value:.2f}" if n else "–", help=f"{m.formula}: {m.counts}")
        if n and m.ci:
            intervals.append(f"ASR@{k} {fmt_interval(m.ci)}")
    dm = asr_defended(run.events) if dfn else None
    if dm is not None and dm.ci:
        intervals.append(f"after defenses {fmt_interval(dm.ci)}")
    if gen:
        g = asr_generation(run.events)
        answered = g.counts["queries"]
        what = (
            "answers refused because of the blocker (questions refused without it too are set aside: "
            f"{g.counts['clean_refused']})"
            if run.denial
            else "answers repeat the attacker's information"
        )
        cols[3 + dfn].metric(
            "ASR (answers)",
            f"{g.value:.2f}" if answered else "–",
            help=f"{g.formula}: {g.counts['successes']} of {answered} {what} (retrieval ASR says only that "
            "the poison was retrieved)",
        )
        if answered and g.ci:
            intervals.append(f"answers {fmt_interval(g.ci)}")
    if dm is not None:
        cols[3].metric(
            "ASR after defenses", f"{dm.value:.2f}" if dm.counts["queries"] else "–", help=f"{dm.formula}: {dm.counts}"
        )
    for col, name in zip(cols[3 + dfn + gen :], run.config.detectors):
        d = detection(run.events, name)
        if d and n:
            col.metric(
                f"{name} TPR / FPR",
                f"{d['tpr'].value:.2f} / {d['fpr'].value:.2f}",
                help="poisons flagged so far / held-out clean documents flagged",
            )
            intervals.append(f"{name} TPR {fmt_interval(d['tpr'].ci)} FPR {fmt_interval(d['fpr'].ci)}")
        else:
            skipped = next(
                (e.reason for e in run.events if isinstance(e, DetectorSkipped) and e.detector == name), None
            )
            col.metric(f"{name}", "skipped" if skipped else "–", help=skipped)
    trigger = trigger_of(run.config.to_dict())
    if trigger and n:
        on = triggered_rounds(run.events, trigger)
        off = {e.round for e in run.events if isinstance(e, Retrieved)} - on
        k = run.config.top_k
        a_on, a_off = asr(run.events, k, on), asr(run.events, k, off)
        st.markdown(
            f"**Trigger effect** ({md_escape(trigger)}): ASR@{k} **{a_on.counts['successes']}/"
            f"{a_on.counts['queries']}** for questions with the trigger · **{a_off.counts['successes']}/"
            f"{a_off.counts['queries']}** without it"
        )
    crafted = next((e for e in run.events if isinstance(e, PoisonsCrafted)), None)
    if crafted is not None and crafted.over_window:
        st.warning(
            f"{crafted.over_window} of {crafted.n} poisons are longer than {md_escape(run.config.retriever)} "
            f"reads ({crafted.retriever_max_tokens} tokens; the longest has {crafted.longest_tokens}): what "
            "follows the cut, often the target information, never reaches the embedding, so ASR here says "
            "less about the target than it seems."
            + (
                f" {crafted.attacker_text_cut} poisons lose part of their attacker text; on average the "
                f"embedding reads {crafted.attacker_text_embedded:.0%} of it (questions: median "
                f"{crafted.median_question_tokens:.0f} tokens)."
                if crafted.attacker_text_embedded is not None and crafted.median_question_tokens is not None
                else ""
            )
        )
    if intervals:
        st.caption(f"95% Wilson intervals after {n} question{'s' if n != 1 else ''}: " + " · ".join(intervals))
    if n:
        st.plotly_chart(asr_curves(run.events), width="stretch", key="asr_curves")
        st.caption("Running attack success: the share of attacked questions whose poison is in the top K.")


def render_detectors(run) -> None:
    """Each fitted detector's scores of clean and poisoned documents with its threshold (and a slider to move it)."""
    fitted = [e for e in run.events if isinstance(e, DetectorFitted)]
    if not fitted:
        st.info("No detector fitted: switch detectors on in the attack setup (dense retrievers only).")
        return
    if not any(isinstance(e, Retrieved) for e in run.events):
        st.info("Attack some questions first: the detectors score each poison as it is injected.")
        return
    curves = {}
    for e in fitted:
        with st.container(border=True):
            st.markdown(f"**{e.detector}** — fitted on {e.n_anchors} clean anchor documents")
            dim = run.store.base.vectors.shape[1]
            plugin = DETECTORS.get(e.detector)
            if e.n_anchors < dim and plugin.estimates_covariance:
                st.warning(
                    f"Only {e.n_anchors} anchors for {dim} embedding dimensions: the covariance is poorly "
                    "estimated and clean documents from other topics get flagged. Protect more questions "
                    "(anchors are the clean neighbours of half of them)."
                )
            own = {f["name"]: f["default"] for f in plugin.Params.describe()}
            own.update((run.config.detector_params or {}).get(e.detector, {}))
            with st.expander("Re-score with other parameters (refits on the same anchors; the run is unchanged)"):
                chosen = params_form(plugin.Params, own, key=f"rescore.{e.detector}")
            params = {k: v for k, v in chosen.items() if own.get(k) != v} or None
            cache = st.session_state.setdefault("detector_cache", {})
            try:
                rep = detector_report(run, e.detector, params, cache=cache)
            except ConfigError as err:  # e.g. a shrinkage β typed outside [0, 1]: say so, show the run's own
                st.error(f"Not re-scored: {md_escape(err)}")
                params = None
                rep = detector_report(run, e.detector, None, cache=cache)
            lo = float(
                min(
                    rep["clean_scores"].min(initial=rep["threshold"]),
                    rep["poison_scores"].min(initial=rep["threshold"]),
                )
            )
            hi = float(
                max(
                    rep["clean_scores"].max(initial=rep["threshold"]),
                    rep["poison_scores"].max(initial=rep["threshold"]),
                )
            )
            hi = hi if hi > lo else lo + abs(lo) * 1e-3 + 1e-12
            thr = st.slider(
                "Threshold",
                lo,
                hi,
                min(max(float(rep["calibrated_threshold"]), lo), hi),
                step=(hi - lo) / 200,
                format="%.4g",
                key=f"thr_{e.detector}_{params}",
                help="Starts at the 95th percentile of out-of-fold anchor scores, which flags about 5% "
                "of clean documents like the anchors; with few anchors, many more",
            )
            if thr != rep["calibrated_threshold"]:
                rep = detector_report(run, e.detector, params, threshold=thr, cache=cache)
            c = st.columns(4)
            c[0].metric("TPR", f"{rep['tpr']:.2f}")
            c[1].metric("FPR", f"{rep['fpr']:.2f}")
            c[2].metric("AUROC", f"{rep['auroc']:.3f}")
            chose = {k: v for k, v in rep["info"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            c[3].metric(
                ", ".join(chose) or "Anchors",
                ", ".join(f"{v:.3g}" for v in chose.values()) or f"{rep['n_anchors']}",
                help="What the fit chose on the anchors (e.g. β by cross-validation)"
                if chose
                else "Clean anchor documents the detector was fitted on",
            )
            st.plotly_chart(
                score_histogram(rep["clean_scores"], rep["poison_scores"], thr, e.detector),
                width="stretch",
                key=f"hist_{e.detector}",
            )
            st.caption("Clean held-out documents vs poisons; everything right of the dashed line is flagged.")
            if hi - lo < 1e-5:  # e.g. the ℓ2-norm of normalised embeddings: 1 ± rounding for every document
                st.caption(
                    f"Every score here lies within {hi - lo:.1e} of the others: floating-point rounding, not a "
                    "signal. A retriever that normalises its embeddings gives every document the norm 1, so a "
                    "norm filter is at chance by construction (the universal-poisoning paper, §5)."
                )
            curves[e.detector] = (rep["clean_scores"], rep["poison_scores"])
    st.plotly_chart(roc_from_scores(curves), width="stretch", key="roc")
    st.caption(
        "ROC: every threshold at once. For a normalised model (all norms 1) the ℓ2-norm filter is at chance: "
        "its curve stays near the diagonal, up to sampling noise with few documents."
    )


def render_embedding_map(run) -> None:
    """A 2-D projection of one question's neighbourhood: the question, its retrieved documents and the poison."""
    done = sum(isinstance(e, Retrieved) for e in run.events)
    if not done:
        st.info("Attack a question first.")
        return
    r = st.slider("Question", 1, done, done, key="map_round") if done > 1 else 1
    df = embedding_map(run, r - 1)
    if df.empty:
        st.info("The embedding map needs a dense retriever.")
        return
    dets = list(run.config.detectors)
    covariance = [d for d in dets if d in DETECTORS and DETECTORS.get(d).estimates_covariance]
    det = None
    if dets:
        first = dets.index(covariance[0]) if covariance else 0
        det = st.selectbox("Mark the poison with the verdict of", dets, index=first, key="map_detector")
    st.plotly_chart(embedding_scatter(df, det), width="stretch", key="embmap")
    st.caption(
        "PCA of the question, its clean top-K, its poison and a sample of clean anchors. The poison sits near its "
        "question (it was built from it), often among the clean top-K: two principal components rarely hold the "
        "direction that sets it apart from clean text, which the Mahalanobis detector measures in all dimensions — "
        "its verdict marks the poison."
    )


def render_exports(run) -> None:
    """Download buttons for the run's events, per-question metrics and summary, built when clicked."""
    # files are generated when clicked (callables), not on every step
    c = st.columns(3)
    c[0].download_button(
        "Events (JSONL)",
        lambda: "\n".join(event_to_json(e) for e in list(run.events)) + "\n",
        file_name=f"{run.run_id}-events.jsonl",
        mime="application/json",
        on_click="ignore",
    )
    c[1].download_button(
        "Metrics per question (CSV)",
        lambda: rounds_table(list(run.events)).to_csv(index=False),
        file_name=f"{run.run_id}-rounds.csv",
        mime="text/csv",
        on_click="ignore",
    )
    c[2].download_button(
        "ASR curves (HTML)",
        lambda: asr_curves(list(run.events)).to_html(include_plotlyjs=True),
        file_name=f"{run.run_id}-asr.html",
        mime="text/html",
        on_click="ignore",
    )
    st.caption("Every figure also has a camera button (top right) that saves it as PNG.")
