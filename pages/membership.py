"""Membership inference: can an attacker tell whether a given record is in the knowledge base?"""

from __future__ import annotations

import streamlit as st

from components.job_panel import follow_running, job_panel, stage_share
from components.membership import LIVE_FOLDER, membership_dir, render_live, render_membership, table_section
from components.params_form import params_form, registry_forms
from components.runtime_notice import local_runtime_notice
from components.state import data_dir, init_state, owner
from components.text import md_escape
from engine.attacks.membership import MEMBERSHIP_ATTACKS
from engine.config import MembershipConfig
from engine.defenses import DEFENSES
from engine.errors import EngineError
from engine.generators import packaged_generator
from engine.generators.models import MODELS as MODELS_REGISTRY
from engine.jobs import Job
from engine.runs.base import new_run_id
from engine.runs.membership import load_membership, membership_config_of, resume_membership, run_membership
from engine.saved import list_runs, state_suffix

FORM_FIELDS = (
    "kb",
    "members",
    "non_members",
    "top_k",
    "max_tokens",
    "seed",
    "canaries",
    "tenants",
    "identity",
    "tenant_filter",
)
LEFT_FIELDS = 5  # the experiment's size in the left column; the model, seed, canaries and tenants in the right
DEFAULT_MODEL = "qwen2.5-0.5b"  # the smallest model that answers the continuation prompt at all

init_state()
st.title("Membership inference")
st.caption(
    "A patient, or anyone who owns a record, asks: is my record in this assistant's knowledge base? The attacker "
    "holds the record and may only ask questions. The experiment keeps some records in the knowledge base "
    "(members), holds others out (non-members), asks about each, and measures how well the answers tell them "
    "apart: AUROC 0.5 is a coin flip, 1.0 a perfect test."
)
local_runtime_notice()
job: Job | None = follow_running("mia_job", "membership", what="experiment")
base = MembershipConfig()

a1, a2 = st.columns(2)
attack = a1.selectbox(  # outside the form: the attack's parameters and the model it needs follow the choice
    "Attack",
    MEMBERSHIP_ATTACKS.names(),
    index=MEMBERSHIP_ATTACKS.names().index(base.attack),
    help=" ".join(f"**{a}**: {MEMBERSHIP_ATTACKS.describe(a)}" for a in MEMBERSHIP_ATTACKS.names()),
)
suggested = MEMBERSHIP_ATTACKS.get(attack).suggested_model
if suggested:
    a1.caption(f"This attack needs a model that follows its request: {suggested} is preselected below.")
# outside the form too: each chosen defense's parameters appear below at once, not after a run
defenses = a2.multiselect(
    "Defenses", DEFENSES.names(), help="Any subset; none = the undefended assistant", key="mia_defenses"
)

with st.form("mia_setup", enter_to_submit=False):  # an experiment starts only from its button
    c1, c2 = st.columns(2)
    defaults = {"members": 10, "non_members": 10, "max_tokens": 64}
    values = params_form(MembershipConfig, defaults, only=FORM_FIELDS[:LEFT_FIELDS], container=c1)
    models = tuple(MODELS_REGISTRY)
    wanted = suggested if suggested in models else DEFAULT_MODEL
    model = c2.selectbox("Generator model", models, index=models.index(wanted) if wanted in models else 0)
    values.update(params_form(MembershipConfig, defaults, only=FORM_FIELDS[LEFT_FIELDS:], container=c2))
    with st.expander("Attack and defense parameters"):
        attack_params = registry_forms(MEMBERSHIP_ATTACKS, [attack])
        defense_params = registry_forms(DEFENSES, defenses) if defenses else {}
    start = st.form_submit_button("Run experiment", type="primary", disabled=bool(job and job.running))


def start_experiment(cfg: MembershipConfig) -> None:
    """Run ``cfg`` in the background into a new folder of the membership runs (shown live as it fills), and
    redraw."""
    folder, run_id = membership_dir(), new_run_id()
    st.session_state.pop("mia_view", None)
    st.session_state["mia_job_resumed"] = None
    st.session_state["mia_job"] = Job(
        "membership",
        lambda progress, stop: run_membership(
            cfg, out_dir=folder, progress=lambda stage, d, t: progress(d, t, stage), stop=stop, run_id=run_id
        ),
        owner=owner(),
        state={LIVE_FOLDER: str(folder / run_id)},
    ).start()
    st.rerun()


if start:
    try:
        cfg = MembershipConfig.from_dict(
            {
                **values,
                "attack": attack,
                "attack_params": attack_params.get(attack) or None,
                "defenses": list(defenses),
                "defense_params": defense_params or None,
                "generator": packaged_generator(),
                "generator_params": {"model": model},
                "data_dir": data_dir(),
            },
            where="membership",
        )
        start_experiment(cfg)
    except EngineError as e:
        st.error(md_escape(e))


def mia_progress(j: Job) -> tuple[float, str]:
    if not j.last:
        return 0.0, "starting…"
    step = "records probed" if j.last == "probing" else f"preparing · {j.last}"  # embedding, indexing the KB
    return stage_share(j.last, j.done_count, j.total), f"{step}: {j.done_count:,}/{j.total:,}"


job_panel(
    "mia_job",
    what="experiment",
    progress=mia_progress,
    stop_label="Stop after this record",
    stop_key="mia_stop",
    drawn=job is not None and not job.running,
    live=lambda j: render_live(j.state.get(LIVE_FOLDER)),
)
if job is not None and not job.running and job.result is not None and st.session_state.get("mia_view_job") is not job:
    run = job.result
    st.session_state["mia_view"] = {"summary": dict(run.summary()), "events": run.events, "complete": run.finished}
    st.session_state["mia_view_job"] = job

with st.expander("Saved experiments"):
    saved = [r for r in list_runs(membership_dir()) if r["kind"] == "membership"] if membership_dir().is_dir() else []
    if not saved:
        st.caption("None yet: every experiment you run here is saved and can be reopened.")
    else:
        pick = st.selectbox(
            "Experiment",
            [r["folder"] for r in saved],
            format_func=lambda f: next(
                f"{r['run_id']} · {r['attack']} on {r['corpus']} · defenses: {r['defenses']}" + state_suffix(r)
                for r in saved
                if r["folder"] == f
            ),
        )
        chosen = next(r for r in saved if r["folder"] == pick)
        row = st.container(horizontal=True)
        opened = row.button("Open", key="mia_open")
        resumable = not chosen["finished"] and not chosen["being written"] and not (job and job.running)
        resumed = resumable and row.button(
            "Resume this experiment",
            key="mia_resume",
            help="Continue it in its folder with its settings, after its last probed record (as `python -m engine "
            "membership --resume FOLDER` does)",
        )
        again = row.button(
            "Run again with its settings",
            key="mia_again",
            disabled=bool(job and job.running),
            help="A new experiment with this one's settings, in a folder of its own (this one stays as it is): "
            "for a finished experiment, or one that cannot resume because its knowledge base changed",
        )
        if opened:
            try:
                summary, events, complete = load_membership(pick)
                st.session_state["mia_view"] = {"summary": summary, "events": events, "complete": complete}
            except EngineError as e:
                st.error(md_escape(e))
        if again:
            try:
                start_experiment(membership_config_of(pick))
            except EngineError as e:
                st.error(md_escape(e))
        if resumed:
            st.session_state.pop("mia_view", None)
            state = {"mia_job_resumed": f"experiment {chosen['run_id']}", LIVE_FOLDER: pick}
            st.session_state.update(state)
            st.session_state["mia_job"] = Job(
                "membership",
                lambda progress, stop: resume_membership(
                    pick, progress=lambda stage, d, t: progress(d, t, stage), stop=stop
                ),
                owner=owner(),
                state=state,
            ).start()
            st.rerun()

view = st.session_state.get("mia_view")
if view is not None:
    render_membership(view["summary"], view["events"], complete=view["complete"])
elif job is None:
    st.info(
        "Press **Run experiment**: the direct question on 10 + 10 clinic records takes about 4 minutes here with "
        "Qwen2.5-0.5B on 2 cores (measured: 247 s from the click to the results, the browser sharing the cores; "
        "85 s from the command line; a busy machine takes longer). "
        "Then switch **detect-and-hide** on and run it again: does the AUROC fall toward 0.5? Then try S²MIA."
    )

with st.expander("Long experiments (a membership table folder)"):
    table_section()
