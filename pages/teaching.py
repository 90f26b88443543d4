"""Teaching mode: four small guided experiments — poison, extract, defend, find the misconfiguration — each with a
goal checked by the engine."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.job_panel import follow_running, job_panel, stage_share
from components.state import init_state, owner
from components.text import marked_markdown, md_code, md_escape
from engine.views.comparison import comparison_table
from engine.analysis.teaching import (
    DEPLOYMENTS,
    LEVEL1_ATTACK,
    LEVEL2_ATTACK,
    LEVEL3_DEFENSES,
    LEVELS,
    RUNNERS,
    metric_text,
)
from engine.metrics.catalog import MK, labels
from engine.tenancy import FILTER_SENTENCES, FILTER_WORDS, TENANT_FILTERS
from engine.attacks.extraction import EXTRACTION_ATTACKS
from engine.attacks.poisoning import POISONING_ATTACKS, TARGET_KINDS
from engine.defenses import DEFENSES
from engine.views.extraction import marked_segments
from engine.jobs import Job

init_state()
ss = st.session_state
ss.setdefault("teach", {"met": [], "results": {}})
progress_state = ss["teach"]
st.title("Teaching mode")
st.caption(
    "Four short levels: plant a poison, steal patient data, defend the system without breaking it, then find "
    "the deployment whose tenant filter is misconfigured. "
    "Each level runs a tiny real experiment (clinic data, a few rounds, small offline models) and the engine "
    "checks whether you reached the goal."
)
job: Job | None = follow_running("teach_job", "teach", what="level")

# a finished level's job: record its result once
if job is not None and not job.running and ss.get("teach_recorded") is not job:
    lvl = ss["teach_job_level"]
    errors = progress_state.setdefault("errors", {})
    if job.error:
        errors[lvl] = job.error  # beside the level's last result, which is kept
    elif job.result is not None:
        errors.pop(lvl, None)
        progress_state["results"][lvl] = job.result
        if job.result.get("met") and lvl not in progress_state["met"]:
            progress_state["met"].append(lvl)
    ss["teach_recorded"] = job

n_met = len(progress_state["met"])
st.progress(n_met / len(LEVELS), text=f"{n_met}/{len(LEVELS)} levels completed")
if n_met == len(LEVELS):
    st.success(
        "All four levels completed: you planted a poison, stole patient data, defended the system at a cost you "
        "measured, and found a tenant filter that was not there. The labs hold the same experiments at full size."
    )


def start(level: int, **kwargs) -> None:
    state = {"teach_job_level": level}  # a reload or another tab follows the level (engine.jobs)
    ss.update(state)
    ss["teach_job"] = Job(
        "teach",
        lambda progress, stop: RUNNERS[level](progress=lambda stage, d, t: progress(d, t, stage), stop=stop, **kwargs),
        owner=owner(),
        state=state,
    ).start()


def controls(level: int, busy: bool) -> None:
    k = f"teach{level}"
    if level == 1:
        c1, c2, c3 = st.columns(3)
        names = [a for a in POISONING_ATTACKS.names() if POISONING_ATTACKS.get(a).takes_target()]
        attack = c1.selectbox(
            "Attack",
            names,
            index=names.index(LEVEL1_ATTACK) if LEVEL1_ATTACK in names else 0,
            key=f"{k}_attack",
        )
        target = c2.selectbox("Target", [t for t in TARGET_KINDS if t != "custom"], key=f"{k}_target")
        limit = c3.number_input("Questions attacked", 1, 10, 3, key=f"{k}_limit")
        args = {"attack": attack, "target": target, "limit": int(limit)}
    elif level == 2:
        c1, c2 = st.columns(2)
        names = EXTRACTION_ATTACKS.names()
        attack = c1.selectbox(
            "Attack", names, index=names.index(LEVEL2_ATTACK) if LEVEL2_ATTACK in names else 0, key=f"{k}_attack"
        )
        rounds = c2.number_input("Rounds", 1, 5, 3, key=f"{k}_rounds")
        args = {"attack": attack, "rounds": int(rounds)}
    elif level == 3:
        c1, c2 = st.columns(2)
        defenses = c1.multiselect(
            "Defenses",
            [d for d in DEFENSES.names()],
            default=list(LEVEL3_DEFENSES),
            key=f"{k}_defenses",
            help="All selected defenses are switched on together. reindex fine-tunes the "
            "encoder and cascade runs the Qwen pair: both are slow on CPU.",
        )
        tol = c2.slider("ACC drop tolerated", 0.0, 1.0, 0.34, 0.01, key=f"{k}_tol")
        args = {"defenses": list(defenses), "tolerance": float(tol)}
        if not [d for d in defenses if d != "none"]:
            st.caption("Choose at least one defense to compare with the undefended system.")
            busy = True
    elif level == 4:
        c1, c2 = st.columns(2)
        deployment = c1.radio("Deployment", list(DEPLOYMENTS), horizontal=True, key=f"{k}_deployment")
        guess = c2.radio(
            "It filters by tenant …",
            TENANT_FILTERS,
            format_func=FILTER_WORDS.get,
            key=f"{k}_guess",
        )
        args = {"deployment": deployment, "guess": guess}
    if st.button(f"Run level {level}", key=f"{k}_run", type="primary", disabled=busy):
        start(level, **args)
        st.rerun()


def show_result(level: int) -> None:
    error = progress_state.get("errors", {}).get(level)
    res = progress_state["results"].get(level)
    if error:
        st.error(f"The experiment failed: {md_escape(error)}" + (" (your last result is kept below)" if res else ""))
    if res is None or "error" in res:
        return
    if res.get("met"):
        st.success(
            f"Goal met — level {level} completed."
            + (f" This deployment {FILTER_SENTENCES[res['mode']]}." if res.get("mode") in FILTER_SENTENCES else "")
        )
    elif res.get("identified"):
        st.info(md_escape(res.get("reason") or ""))
    else:
        st.warning(
            "Not yet. " + md_escape(res.get("reason") or "The goal was not reached: change the settings and try again.")
        )
    metrics = list((k, v) for k, v in res.get("metrics", {}).items() if v is not None)
    for start in range(0, len(metrics), 4):  # four a row: labels stay on one line
        cols = st.columns(4)
        for c, (name, v) in zip(cols, metrics[start : start + 4]):
            c.metric(name, metric_text(name, v))
    if res.get("pii"):
        st.markdown("**Leaked personal data** (fake, from the synthetic records)")
        st.dataframe(pd.DataFrame({"item": res["pii"]}), hide_index=True, width="stretch")
    for leak in res.get("leaks", [])[:3]:
        with st.container(border=True):
            rec = leak.get("recall")
            st.markdown(
                f"Round {leak['round']} leaked {md_code(leak['chunk'])}"
                + (f" · ROUGE-L recall {rec:.2f}" if rec is not None else "")
                + " · copied spans highlighted"
            )
            a, b = st.columns(2)
            a.caption("Private record (source)")
            a.markdown(marked_markdown(marked_segments(leak["source"], leak["answer"])))
            b.caption("The assistant's answer")
            b.markdown(marked_markdown(marked_segments(leak["answer"], leak["source"])))
    if res.get("evidence"):
        st.dataframe(pd.DataFrame(res["evidence"]), hide_index=True, width="stretch")
    if res.get("rows"):
        table = comparison_table(res["rows"])
        keep = [k for k in ("configuration", MK.CRR, MK.PII_LEAKED, MK.UTILITY_ACC) if k in table.columns]
        st.dataframe(
            table[keep].rename(columns={"configuration": "defenses", **labels(keep[1:])}).round(3),
            hide_index=True,
            width="stretch",
        )


def level_progress(j: Job) -> tuple[float, str]:
    stage = f"{j.last}: {j.done_count:,}/{j.total:,}" if j.last else "starting"
    return stage_share(j.last, j.done_count, j.total), f"Level {ss['teach_job_level']} running · {stage}"


busy = bool(job and job.running)
running_level = ss.get("teach_job_level") if job is not None else None
for lv in LEVELS:
    done = lv.number in progress_state["met"]
    here = running_level == lv.number
    with st.expander(
        f"{'✅' if done else '⬜'} Level {lv.number}: {lv.title}",
        # the next level to play opens; so does the level running or just run (its progress, its feedback)
        expanded=(not done and all(n in progress_state["met"] for n in range(1, lv.number)) and not busy)
        or (here and (busy or lv.number in progress_state["results"])),
    ):
        st.markdown(f"**Goal.** {lv.goal}")
        st.markdown(f"**Settings.** {lv.settings}")
        controls(lv.number, busy)
        if here:  # the level's progress and stop button inside it, where the player looks
            job_panel(
                "teach_job",
                what="level",
                progress=level_progress,
                stop_label="Stop",
                stop_key="teach_stop",
                drawn=ss.get("teach_recorded") is job,
                show_error=False,
            )
        show_result(lv.number)
        if lv.number in progress_state["results"]:
            st.info(f"**What to notice.** {lv.notice}")

if st.button("Start over", key="teach_reset", disabled=busy):
    ss["teach"] = {"met": [], "results": {}, "errors": {}}
    st.rerun()
