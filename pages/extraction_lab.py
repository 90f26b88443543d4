"""Extraction lab: an attacker agent tries to extract a private knowledge base through a defended RAG system."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from components.extraction import (
    ATTACKER_NONE,
    KB_HELP,
    KBS,
    LITELLM,
    LOCAL_MODELS,
    build_config,
    close_extract_run,
    corpus_for,
    extract_presets,
    kb_texts,
    load_extract_preset,
    render_charts,
    render_exports,
    render_internals,
    render_metrics,
    render_round,
    resume_run,
    saved_extraction_runs,
    start_run,
    stream_round,
)
from components.answer_budget import answer_budget_input
from components.extraction_settings import LOCAL, PRIVACY_FIELDS, more_fields
from components.params_form import changed_only, field_input, params_form, registry_forms
from components.state import data_dir, follow, init_state, picked
from components.stepper import stepper
from components.text import md_code, md_escape, short
from components.runtime_notice import local_runtime_notice
from engine.attacks.extraction import EXTRACTION_ATTACKS
from engine.config import ExtractionConfig
from engine.defenses import DEFENSES
from engine.embedders import offline_retrievers
from engine.generators import GENERATORS, plugin_generators
from engine.errors import EngineError
from engine.saved import describe_run, is_busy
from engine.secrets import scrub
from engine.views.extraction import config_summary, rounds_played, run_config, run_status
from engine.events import read_events

LOCAL_GENERATOR = GENERATORS.get(LOCAL).Params
OTHER_GENERATORS = plugin_generators()  # generators beyond the packaged-model and the hosted one
OFFLINE_RETRIEVERS = offline_retrievers()  # the retrievers whose weights come with their package
init_state()
st.title("Extraction lab")
st.caption(
    "A black-box attacker queries the RAG system round by round and tries to make it repeat its private "
    "knowledge base. Switch defenses on and watch what still leaks."
)
local_runtime_notice()
ss = st.session_state


def api_key() -> str:
    return ss.get("llm_api_key") or ""


def friendly(e: BaseException) -> str:
    if isinstance(e, EngineError):
        return scrub(e)
    return scrub(f"unexpected error ({type(e).__name__}: {e}); try another configuration and please report this")


def prepare(cfg=None, corpus=None) -> None:
    """Close the current run and prepare a new one (from the settings, or the given config: Reset)."""
    close_extract_run()
    ss["extract_view"] = None
    try:
        if cfg is None:
            cfg = build_config(ss["extract"], data_dir())
            corpus = corpus_for(cfg)
        ss["extract_run"] = start_run(cfg, corpus, api_key())
        ss["extract_source"] = {"config": cfg, "corpus": corpus}
    except Exception as e:  # noqa: BLE001 - shown as a message, never a traceback
        ss["extract_error"] = friendly(e)


# ------------------------------------------------------------------------------ presets & saved runs
run = ss["extract_run"]
top = st.columns([3, 1.3, 4, 1], vertical_alignment="bottom")
preset_info = {p["name"]: p.get("description", "") for p in extract_presets()}
presets = list(preset_info)
preset = top[0].selectbox(
    "Preset",
    presets,
    index=presets.index("quick-extraction-demo") if "quick-extraction-demo" in presets else 0,
    key="extract_preset",
    help="Fill the attack setup below from a preset",
)
if top[1].button("Load preset", key="btn_extract_preset") and preset:
    if load_extract_preset(preset):
        st.rerun()
if preset_info.get(preset) and run is None:
    st.caption(md_escape(" ".join(str(preset_info[preset]).split())))
saved = saved_extraction_runs()
labels = {r["folder"]: describe_run(r) for r in saved}
chosen = top[2].selectbox(
    "Reopen a saved run",
    list(labels),
    index=None,
    format_func=labels.get,
    placeholder="choose a run folder" if saved else "no extraction run saved yet",
    key="extract_reopen_choice",
)
if top[3].button("Reopen", key="btn_extract_reopen", disabled=chosen is None):
    close_extract_run()
    ss["extract_view"] = chosen
    st.rerun()

# ------------------------------------------------------------------------------ setup
s = ss["extract"]
with st.expander("Attack setup", expanded=run is None and not ss["extract_view"]):
    attacks = EXTRACTION_ATTACKS.names()
    top_attack, top_generator = st.columns(2)
    follow("extract_attack_pick", s["attack"], attacks)
    attack = top_attack.selectbox(
        "Attack",
        attacks,
        key="extract_attack_pick",
        format_func=lambda n: f"{n} — {short(EXTRACTION_ATTACKS.describe(n), 80)}",
    )
    if attack != s["attack"]:
        ss["extract"] = s = {**s, "attack": attack, "attack_params": {}}
        picked("extract_attack_pick")
    gens = LOCAL_MODELS + [LITELLM] + OTHER_GENERATORS
    # outside the form, as the attack: the fields below follow the choice (a litellm model's name and server
    # only for litellm, the local model's parameters only for a local one)
    follow("extract_generator_pick", s["generator"], gens)
    generator = top_generator.selectbox(
        "Generator",
        gens,
        key="extract_generator_pick",
        format_func=lambda g: (
            "litellm provider (hosted / OpenAI-compatible server)"
            if g == LITELLM
            else (f"{g} — {GENERATORS.describe(g)[:50]}" if g in OTHER_GENERATORS else f"{g} (offline, local)")
        ),
        help="The model that answers the attacker (the target's generator): a bundled offline model, a litellm "
        "provider (its key in the sidebar) or a generator plugin.",
    )
    if generator != s["generator"]:
        ss["extract"] = s = {**s, "generator": generator}
        picked("extract_generator_pick")
    with st.form("extract_setup"):
        c1, c2, c3 = st.columns(3)
        kb = c1.selectbox("Knowledge base", KBS, index=KBS.index(s["kb"]) if s["kb"] in KBS else 0, help=KB_HELP)
        litellm_model, api_base = s["litellm_model"], s["api_base"]
        if generator == LITELLM:
            litellm_model = c1.text_input(
                "litellm model",
                s["litellm_model"],
                help="A provider string such as openai/gpt-4o-mini. The API key goes in the sidebar.",
            )
            api_base = c1.text_input(
                "API base (optional)", s["api_base"], help="Base URL of an OpenAI-compatible server"
            )
        answer_budget = answer_budget_input(c1, s.get("answer_budget", "context"))
        max_tokens = field_input(
            ExtractionConfig, "max_tokens", int(s["max_tokens"]), label="Tokens per answer (minimum)", container=c1
        )
        c2.markdown(f"**{attack} parameters**")
        attack_params = params_form(
            EXTRACTION_ATTACKS.get(attack).Params,
            s["attack_params"],
            skip=("budget",),
            container=c2,
            key=f"extraction-attack.{attack}",
        )
        attackers = [ATTACKER_NONE] + LOCAL_MODELS
        attacker_llm = c2.selectbox(
            "Attacker's own LLM",
            attackers,
            index=attackers.index(s["attacker_llm"]) if s["attacker_llm"] in attackers else 0,
            format_func=lambda a: "none — rule-based continuation (first / last sentence)" if a == ATTACKER_NONE else a,
            help="RAG-Thief's reflections (continuations of what it extracted); without an "
            "LLM the continuation is the stolen chunk's first and last sentence. "
            "the others use none",
            disabled=not EXTRACTION_ATTACKS.get(attack).can_use("attacker_llm"),
        )
        rounds = field_input(ExtractionConfig, "rounds", int(s["rounds"]), label="Rounds (query budget)", container=c3)
        top_k = field_input(ExtractionConfig, "top_k", int(s["top_k"]), label="Top-k", container=c3)
        seed = field_input(ExtractionConfig, "seed", int(s["seed"]), label="Seed", container=c3)
        st.markdown("**Defenses**")
        dcols = st.columns(4)
        defenses = [
            d
            for i, d in enumerate(DEFENSES.names())
            if dcols[i % 4].toggle(d, value=d in s["defenses"], help=DEFENSES.describe(d))
        ]
        with st.expander("Defense parameters (used by the defenses switched on)"):
            defense_params = registry_forms(DEFENSES, DEFENSES.names(), s.get("defense_params"))
        local_params = dict(s.get("generator_params") or {})
        if generator in LOCAL_MODELS:
            with st.expander("Local generator parameters"):
                local_params = changed_only(
                    LOCAL_GENERATOR,
                    params_form(
                        LOCAL_GENERATOR, s.get("generator_params"), skip=("model", "max_tokens"), key="generator.local"
                    ),
                )
        # tenancy and canaries in their own expander, open when the settings use them (the tenant demo asks to
        # switch the filter: it must not hide among the retriever's settings)
        privacy = tuple(f for f in more_fields() if f in PRIVACY_FIELDS)
        in_use = any((s.get("more") or {}).get(f) for f in ("tenants", "canaries", "canary_codes"))
        with st.expander("Tenants and canaries (multi-tenant knowledge base, honeytokens)", expanded=in_use):
            more = params_form(
                ExtractionConfig, s.get("more"), only=privacy, key="extract-privacy", mappings_as_json=True
            )
        with st.expander("More settings (retriever, chunking, scoring, prompt)"):
            more.update(
                params_form(
                    ExtractionConfig,
                    s.get("more"),
                    only=tuple(f for f in more_fields() if f not in privacy),
                    key="extract-more",
                    mappings_as_json=True,
                    choices={"retriever": OFFLINE_RETRIEVERS},
                )
            )
        other_params = dict(s.get("other_generator_params") or {})
        if generator in OTHER_GENERATORS:
            with st.expander(f"{generator} parameters"):
                other_params[generator] = registry_forms(
                    GENERATORS, [generator], s.get("other_generator_params"), skip=("max_tokens",)
                ).get(generator, {})
        submitted = st.form_submit_button("Prepare attack", type="primary")
    if submitted:
        ss["extract"] = {
            "kb": kb,
            "generator": generator,
            "litellm_model": litellm_model,
            "api_base": api_base,
            "attack": attack,
            "attack_params": attack_params,
            "attacker_llm": attacker_llm
            if EXTRACTION_ATTACKS.get(attack).can_use("attacker_llm")
            else s["attacker_llm"],
            "rounds": int(rounds),
            "top_k": int(top_k),
            "max_tokens": int(max_tokens),
            "answer_budget": answer_budget,
            "defenses": defenses,
            "seed": int(seed),
            "defense_params": defense_params,
            "generator_params": local_params,
            "other_generator_params": other_params,
            "more": more,
        }
        prepare()
        st.rerun()

if err := ss.pop("extract_error", None):
    st.error(f"{md_escape(err)} — change the attack setup above and prepare again.")
run = ss["extract_run"]


# ------------------------------------------------------------------------------ live run
def step_once() -> None:
    r = ss["extract_run"]
    if r is None or r.done or run_status(r.events) == "failed":
        return
    try:
        stream_round(r)
    except Exception as e:  # noqa: BLE001 - keep the app usable: stop playing and say what happened
        ss["extract_playing"] = False
        ss["extract_error"] = (
            f"the round failed: {friendly(e)}. Finished rounds are saved; press Resume to retry "
            "from the last one, or Reset to start over"
        )


def reset() -> None:
    src = ss.get("extract_source") or {}
    cfg = src.get("config") or ss["extract_run"].config
    prepare(cfg, src.get("corpus"))


def resume(folder) -> None:
    close_extract_run()
    try:
        ss["extract_run"] = resume_run(folder, api_key())
        ss["extract_source"] = {"config": ss["extract_run"].config, "corpus": None}
        ss["extract_view"] = None
    except Exception as e:  # noqa: BLE001
        ss["extract_error"] = friendly(e)


def render_live(run) -> None:
    texts = {d.id: d.text for d in run.corpus.documents}
    ids = list(run.corpus.ids)

    def status(r, word: str) -> None:
        st.caption(
            f"{r.rounds_done}/{r.config.rounds} rounds · {word} · KB {len(r.corpus):,} chunks · "
            f"run `{r.run_id}`  \n" + md_escape(config_summary(r.config.to_dict()))
        )

    def body(r) -> None:
        events = list(r.events)
        render_metrics(events)
        render_charts(events, ids, len(ids), key="live")
        render_round(events, texts)

    def resume_button(r, col) -> None:
        if (
            run_status(r.events) == "failed"
            and r.out_dir is not None
            and col.button("Resume", key="btn_extract_resume_live")
        ):
            resume(r.out_dir)
            st.rerun()

    stepper(
        "extract",
        "extract_",
        step_once=step_once,
        reset=reset,
        status=status,
        body=body,
        speed_label="Seconds between rounds while playing",
        speed_range=(0.2, 5.0),
        blocked=lambda r: run_status(r.events) == "failed",
        extra=resume_button,
    )
    tabs = st.tabs(["Attacker internals", "Exports"])
    with tabs[0]:
        render_internals(list(run.events), list(run.config.defenses), key="live")
    with tabs[1]:
        render_exports(list(run.events), run.run_id)


def render_saved(folder: str) -> None:
    path = Path(folder) / "events.jsonl"
    if not path.is_file():
        st.warning("That run folder is gone.")
        ss["extract_view"] = None
        return
    try:
        events, dropped = read_events(path)
    except EngineError as e:
        st.error(f"This run cannot be shown: {md_escape(scrub(e))}")
        if st.button("Close", key="btn_extract_close_damaged"):
            ss["extract_view"] = None
            st.rerun()
        return
    if dropped:
        st.caption(
            f"The last line of this run's file was cut off (a crash while writing): {dropped} bytes dropped, "
            "every complete round is shown."
        )
    cfg = run_config(events)
    status = run_status(events)
    shown = status
    if status == "in progress":  # no end recorded: held by a session now, or stopped before its end (the list's words)
        shown = "being written" if is_busy(folder) else "unfinished"
    done, total = rounds_played(events), cfg.get("rounds", 0)
    ids, texts = kb_texts(cfg, folder)
    c = st.columns([6, 1, 1], vertical_alignment="center")
    c[0].markdown(
        f"**Saved run {md_code(Path(folder).name)}** · {md_escape(cfg.get('attack'))} on "
        f"{md_escape(cfg.get('kb'))} vs {md_escape('+'.join(cfg.get('defenses') or []) or 'no defense')} · "
        f"{done}/{total} rounds · {shown}"
    )
    if status != "completed" and c[1].button("Resume", type="primary", key="btn_extract_resume"):
        resume(folder)
        st.rerun()
    if c[2].button("Close", key="btn_extract_close_view"):
        ss["extract_view"] = None
        st.rerun()
    if status != "completed" and cfg.get("generator") == LITELLM and not api_key():
        st.caption(
            "This run used a litellm generator: type its API key in the sidebar before resuming "
            "(unless the key is in the environment)."
        )
    kb_size = next((int(e.metrics.get("kb_size", 0)) for e in reversed(events) if e.kind == "leak_scored"), None)
    render_metrics(events)
    render_charts(events, ids, kb_size, key="saved")
    render_round(events, texts)
    tabs = st.tabs(["Attacker internals", "Exports"])
    with tabs[0]:
        render_internals(events, list(cfg.get("defenses") or []), key="saved")
    with tabs[1]:
        render_exports(events, Path(folder).name)


if run is not None:
    render_live(run)
elif ss["extract_view"]:
    render_saved(ss["extract_view"])
else:
    st.info("Set up the attack above and press **Prepare attack**, or reopen a saved run.")
