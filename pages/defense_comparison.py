"""Defense comparison: extraction attacks against several defense configurations, leakage vs utility."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import streamlit as st

from components.answer_budget import answer_budget_input
from components.comparison import long_run_section, render_live_rows, render_results
from components.executor import executor_config, executor_section
from components.job_panel import follow_running, job_panel
from components.numbers import NumberFields
from components.params_form import registry_forms
from components.state import data_dir, init_state, my_comparisons_dir, owner
from components.text import md_escape
from components.runtime_notice import local_runtime_notice
from engine.views.comparison import (
    PRESET_CONFIGURATIONS,
    QUICK_CONFIGURATIONS,
    load_comparison,
    new_comparison_dir,
    parse_configurations,
    supports_adaptive,
)
from engine.analysis.teaching import DEMO_SYSTEM, LEVEL2_ATTACK
from engine.attacks.extraction import EXTRACTION_ATTACKS
from engine.attacks.membership import MEMBERSHIP_ATTACKS
from engine.compare import run_comparison
from engine.config import ComparisonConfig
from engine.corpora import available_corpora
from engine.defenses import DEFENSES
from engine.errors import EngineError
from engine.generators.models import MODELS as MODELS_REGISTRY
from engine.generators import packaged_generator
from engine.jobs import Job
from engine.queries import available_query_sets
from engine.saved import comparison_state, list_comparisons

KBS = ("clinic_records", "healthcaremagic", "enron")
NEEDS_DATA = ("healthcaremagic", "enron")
ATTACKS = tuple(EXTRACTION_ATTACKS.names())
# the first try leaks visibly: the extraction demo's attack and model (engine.analysis.teaching.DEMO_SYSTEM)
DEMO_ATTACK, DEMO_MODEL = LEVEL2_ATTACK, str(DEMO_SYSTEM["generator_params"]["model"])
MODELS = tuple(MODELS_REGISTRY)

init_state()
st.title("Defense comparison")
st.caption(
    "Point extraction attacks at the same private knowledge base defended in several ways, and compare how "
    "much leaks (CRR, PII, …) with what each defense costs in answer quality (ACC, faithfulness on honest "
    "questions). It runs in the background: you can switch pages and come back, or stop it."
)
local_runtime_notice()
job: Job | None = follow_running("cmp_job", "compare", what="comparison")
adaptive_ok = any(supports_adaptive(a) for a in ATTACKS)

number = NumberFields()
with st.form("cmp_setup", enter_to_submit=False):  # a comparison starts only from its button
    c1, c2, c3 = st.columns(3)
    kb = c1.selectbox(
        "Knowledge base",
        KBS,
        help="clinic_records is bundled (synthetic patients with fake PII); "
        "healthcaremagic and enron need the benchmark data dir (RAG_PLAYGROUND_DATA_DIR)",
    )
    attacks = c1.multiselect(
        "Attacks",
        ATTACKS,
        default=[DEMO_ATTACK] if DEMO_ATTACK in ATTACKS else [ATTACKS[0]],
        format_func=lambda a: f"{a} — {EXTRACTION_ATTACKS.describe(a)[:60]}",
    )
    rounds = number(c1, "Rounds (attacker queries)", 1, 500, 3)
    repeats = number(
        c1,
        "Repetitions (attacker seeds)",
        1,
        20,
        1,
        help="Run every attack × configuration this many times with different attacker "
        "seeds; the table shows the means and their spread. One run of a few rounds "
        "is often decided by a single chunk.",
    )
    adaptive = c1.toggle(
        "Adaptive attacker",
        value=False,
        disabled=not adaptive_ok,
        help="The attacker knows which defenses are on and reshapes its queries to get past them"
        if adaptive_ok
        else "Not available: the attacks have no adaptive mode in this version",
    )
    model = c2.selectbox(
        "Generator model",
        MODELS,
        index=MODELS.index(DEMO_MODEL) if DEMO_MODEL in MODELS else 0,
        help="Local offline models; the larger Qwen models are slower (SmolLM2-135M rarely repeats its context, "
        "so little leaks with it)",
    )
    answer_budget = answer_budget_input(c2)
    max_tokens = number(
        c2,
        "Tokens per answer",
        8,
        1024,
        96,
        help="The answer length when the budget is fixed, the shortest answer when it covers the context; longer "
        "answers can leak more, and take longer",
    )
    presets = c2.multiselect(
        "Defense configurations",
        PRESET_CONFIGURATIONS,
        default=list(QUICK_CONFIGURATIONS),
        help="Keep 'none' for the ratios to no protection. cascade answers with the Qwen2.5 "
        "0.5B draft + 1.5B verifier pair whatever the generator — slow on CPU (minutes per "
        "answer); reindex fine-tunes the encoder once per knowledge base (cached).",
    )
    custom = c2.text_input(
        "Custom configurations",
        placeholder="threshold+system-prompt, intent-block+summarize",
        help="Comma-separated; each a '+'-joined set of defense names",
    )
    corpora = available_corpora()
    ucorpus = c3.selectbox(
        "Utility corpus",
        corpora,
        index=corpora.index("clinic_handbook"),
        help="The documents the honest questions are answered from",
    )
    qsets = available_query_sets()
    uqueries = c3.selectbox("Utility question set", qsets, index=qsets.index("clinic_handbook"))
    ulimit = number(c3, "Utility questions (first N)", 1, 1000, 5)
    task_limit = number(
        c3,
        "Questions of the KB's own task (0: none)",
        0,
        1000,
        0,
        help="For a knowledge base of dialogs (HealthCareMagic, or your own 'Patient: … Doctor: …' records): each "
        "record's question with its own reply among the replies of the three most similar questions, answered "
        "by every configuration — the utility RAGFort reports, on the attacked KB itself",
    )
    membership_attack = c3.selectbox(
        "Membership attack (optional)",
        ["", *MEMBERSHIP_ATTACKS.names()],
        format_func=lambda a: f"{a} — {MEMBERSHIP_ATTACKS.describe(a)[:50]}" if a else "none",
        help="Also ask, per configuration, whether records are in the knowledge base: the table then shows the "
        "membership AUROC beside CRR — which defenses stop copying but not membership, and the reverse",
    )
    membership_records = number(
        c3,
        "Records probed (members, and as many non-members)",
        2,
        500,
        10,
        help="Per configuration; each record costs the attack's questions (one for direct / s2mia / mba)",
    )
    with st.expander("Defense parameters (used by the configurations that switch a defense on)"):
        defense_params = registry_forms(DEFENSES, DEFENSES.names(), st.session_state.get("cmp_defense_params"))
    executor_values = executor_section("cmp")
    start = st.form_submit_button("Start comparison", type="primary", disabled=bool(job and job.running))


def start_comparison(
    cfg: ComparisonConfig, out: Path, executor=None, finished: Sequence[dict] = (), resumed: str | None = None
) -> None:
    """Run (or resume) ``cfg`` into ``out`` in the background; ``finished``: the runs a resumed comparison kept
    (counted in the progress bar); ``resumed``: what the panel names while it runs (a resumed comparison)."""
    live: list[dict] = list(finished)
    failed: list[dict] = []
    state = {"cmp_cfg": cfg, "cmp_dir": str(out), "cmp_live": live, "cmp_failed": failed, "cmp_job_resumed": resumed}
    st.session_state.update(state)
    st.session_state.pop("cmp_view", None)
    st.session_state["cmp_job"] = Job(
        "compare",
        lambda progress, stop: run_comparison(
            cfg,
            out_dir=out,
            progress=lambda stage, d, t: progress(d, t, stage),
            stop=stop,
            on_row=live.append,
            executor=executor,
            failed=failed,
        ),
        owner=owner(),
        state=state,
    ).start()


if start:
    try:
        number.check()
        configurations = parse_configurations(presets, custom)
        if not attacks:
            raise EngineError("choose at least one attack")
        if kb in NEEDS_DATA and not data_dir():
            raise EngineError(
                f"{kb} needs the benchmark data dir: set RAG_PLAYGROUND_DATA_DIR (e.g. to "
                "../shared/corpora) and restart, or use clinic_records"
            )
        unsupported = [a for a in attacks if adaptive and not supports_adaptive(a)]
        if unsupported:
            raise EngineError(f"the adaptive mode is not available for {', '.join(unsupported)}")
        local = packaged_generator()
        base = {
            "kb": kb,
            "rounds": int(rounds),
            "generator": local,
            "generator_params": {"model": model},
            "attacker_llm": local,
            "attacker_llm_params": {"model": model},
            "max_tokens": int(max_tokens),
            "answer_budget": answer_budget,
            "data_dir": data_dir(),
            **({"attack_params": {"adaptive": True}} if adaptive else {}),
            **({"defense_params": defense_params} if defense_params else {}),
        }
        st.session_state["cmp_defense_params"] = defense_params
        cfg = ComparisonConfig.from_dict(
            {
                "base": base,
                "configurations": list(configurations),
                "attacks": list(attacks),
                "utility_corpus": ucorpus,
                "utility_queries": uqueries,
                "utility_limit": int(ulimit),
                "repeats": int(repeats),
                "membership_attack": membership_attack,
                "membership_records": int(membership_records),
                "task_limit": int(task_limit),
            }
        )
        start_comparison(cfg, new_comparison_dir(owner()), executor_config("cmp", executor_values))
        st.rerun()
    except EngineError as e:
        st.error(md_escape(e))


def planned_runs(cfg: ComparisonConfig) -> int:
    """Attack × configuration × seed × knowledge-base runs of the comparison."""
    return len(cfg.attacks) * len(cfg.configurations) * cfg.repeats * len(cfg.knowledge_bases())


def comparison_progress(j: Job) -> tuple[float, str]:
    n = planned_runs(st.session_state["cmp_cfg"])
    done = len(st.session_state.get("cmp_live", []))
    stage = f" · {j.last}: {j.done_count:,}/{j.total:,}" if j.last else ""
    return done / max(n, 1), f"{done}/{n} runs{stage}"


job_panel(
    "cmp_job",
    what="comparison",
    progress=comparison_progress,
    stop_label="Stop after this run",
    stop_key="cmp_stop",
    drawn=job is not None and not job.running,
    live=lambda j: render_live_rows(st.session_state.get("cmp_live") or [], planned_runs(st.session_state["cmp_cfg"])),
)
if job is not None and not job.running:
    for f in st.session_state.get("cmp_failed", []):  # the other runs are kept; running it again retries these
        st.error(
            md_escape(f"{f['attack']} vs {f['configuration']} on {f['kb']} (seed {f['seed']}) failed: {f['error']}")
        )

if job is not None and not job.running and job.result is not None and st.session_state.get("cmp_view_job") is not job:
    cfg = st.session_state["cmp_cfg"]
    st.session_state["cmp_view"] = {
        "config": cfg.to_dict(),
        "rows": job.result,
        "dir": st.session_state["cmp_dir"],
        "complete": not job.stopped,
    }
    st.session_state["cmp_view_job"] = job

with st.expander("Saved comparisons"):
    saved = list_comparisons(my_comparisons_dir())
    if not saved:
        st.caption("None yet: every comparison you run here is saved and can be reopened.")
    else:
        ids = [s["id"] for s in saved]
        pick = st.selectbox(
            "Comparison",
            ids,
            format_func=lambda i: next(
                f"{s['id']}{comparison_state(s)}"
                if s.get("damaged")
                else f"{s['id']} · {s['kb']} · {s['attacks']} · {s['configurations']}{comparison_state(s)}"
                for s in saved
                if s["id"] == i
            ),
        )
        chosen = next(s for s in saved if s["id"] == pick)
        b1, b2 = st.columns([1, 4])
        if b1.button("Open", key="cmp_open"):
            try:
                conf, rows = load_comparison(chosen["path"])
                folder = str(Path(chosen["path"]).parent)  # where it lies, as a fresh run's caption says
                st.session_state["cmp_view"] = {
                    "config": conf,
                    "rows": rows,
                    "dir": folder,
                    "complete": chosen["complete"],
                }
            except EngineError as e:
                st.error(md_escape(e))
        resumable = not chosen["complete"] and not chosen["being written"] and not (job and job.running)
        if resumable and b2.button(
            "Resume this comparison",
            key="cmp_resume",
            help="Continue it in its folder with its settings: the finished runs are kept, a run cut short continues "
            "from its last finished round (as `python -m engine compare --out FOLDER` does)",
        ):
            try:
                conf, _ = load_comparison(chosen["path"])
                kept = json.loads(Path(chosen["path"]).read_text(encoding="utf-8")).get("runs") or []
                start_comparison(
                    ComparisonConfig.from_dict(conf),
                    Path(chosen["path"]).parent,
                    finished=kept,
                    resumed=f"comparison {chosen['id']}",
                )
                st.rerun()
            except (EngineError, OSError, ValueError) as e:
                st.error(f"Cannot resume it: {md_escape(e)}")

view = st.session_state.get("cmp_view")
if view is not None:
    st.caption(f"Results saved in {md_escape(view['dir'])}")
    render_results(view["config"], view["rows"], complete=view.get("complete", True))
elif job is None:
    st.info(
        "Choose the attacks and defense configurations and press **Start comparison**. The defaults are a first "
        f"try that leaks: {DEMO_ATTACK} against {DEMO_MODEL} on clinic_records, 3 rounds, none vs system-prompt."
    )

with st.expander("Long experiments (a results folder)"):  # below the page's own results
    long_run_section()
