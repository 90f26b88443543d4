"""Poisoning lab: set up the attack, step through it live, inspect detectors and geometry."""

from __future__ import annotations

import streamlit as st

from components.lab import render_detectors, render_embedding_map, render_exports, render_live_metrics, render_round
from components.numbers import NumberFields
from components.params_form import changed_only, field_input, params_form, registry_forms
from components.poisoning_settings import build_poison_config, more_fields
from components.state import close_run, data_dir, follow, init_state, my_runs_dir, picked, progress_callback
from components.stepper import stepper
from components.text import md_escape, short
from engine.analysis.why import why_it_works
from engine.attacks.poisoning import POISONING_ATTACKS, TARGET_KINDS
from engine.config import INJECTION_MODES, PoisonConfig
from engine.corpora import corpus_from_documents, retriever_window
from engine.embedders import make_retriever
from engine.defenses import DEFENSES
from engine.detectors import DETECTORS
from engine.errors import EngineError
from engine.generators.models import MODELS
from engine.queries import available_query_sets, query_set_corpus
from engine.runs import PoisoningRun

ANSWER_MODEL = PoisonConfig(generate=True).answer_generator_params()["model"]
init_state()
st.title("Poisoning lab")
st.caption(
    "Corpus poisoning: the attacker plants a document crafted for a question it expects users to ask — in the "
    "universal attack the question with its own text appended (q ⊕ target), in jamming the question with a "
    "blocker that makes the assistant refuse — and watches whether retrieval puts it in the top-K and the "
    "answer follows it."
)
p, lab = st.session_state["pipeline"], st.session_state["lab"]
run = st.session_state["lab_run"]


def build_config() -> PoisonConfig:
    return build_poison_config(p, lab, data_dir(), ANSWER_MODEL)


def prepare() -> None:
    close_run()
    bar = st.progress(0.0, text="starting")
    try:
        cfg = build_config()
        corpus = None
        if p["corpus"] == "upload":
            corpus = corpus_from_documents(
                "upload",
                st.session_state["uploaded_docs"],
                chunk_size=p["chunk_size"],
                chunk_overlap=p["chunk_overlap"],
                window=retriever_window(make_retriever(p["retriever"])),
            )
        new = PoisoningRun(cfg, progress=progress_callback(bar), corpus=corpus, out_dir=my_runs_dir())
        new.prepare()
        new.progress = None  # the bar belongs to this script run; later steps run inside the fragment
        st.session_state["lab_run"] = new
    except EngineError as e:
        st.session_state["lab_error"] = str(e)  # shown after the rerun below
    except Exception as e:  # an engine bug: still a message, not a traceback
        st.session_state["lab_error"] = (
            f"unexpected error ({type(e).__name__}: {e}); try another configuration and please report this"
        )
    finally:
        bar.empty()


# Home's "Run the demo": prepared and playing at once — its progress at the top, the setup folded away (under an
# open form the bar sat below the fold, and a first start that embeds the corpus looked stuck)
autoprepare = st.session_state.pop("lab_autoprepare", False)
top = st.container()
with st.expander("Attack setup", expanded=run is None and not autoprepare):
    attacks = POISONING_ATTACKS.names()
    follow("lab_attack_pick", lab["attack"], attacks)
    attack = st.selectbox(
        "Attack",
        attacks,
        key="lab_attack_pick",
        format_func=lambda n: f"{n} — {short(POISONING_ATTACKS.describe(n), 90)}",
    )
    if attack != lab["attack"]:
        st.session_state["lab"] = lab = {**lab, "attack": attack, "attack_params": {}}
        picked("lab_attack_pick")
    number = NumberFields()
    with st.form("attack_setup"):
        c1, c2, c3 = st.columns(3)
        qsets = available_query_sets()
        queries = c1.selectbox(
            "Questions to attack", qsets, index=qsets.index(lab["queries"]) if lab["queries"] in qsets else 0
        )
        limit = number(c1, "How many (first N; 0 = all)", 0, None, int(lab["limit"] or 0))
        attack_cls = POISONING_ATTACKS.get(attack)
        c2.markdown(f"**{attack} parameters**")
        attack_params = changed_only(
            attack_cls.Params,
            params_form(
                attack_cls.Params,
                lab.get("attack_params"),
                skip=("target", "target_text"),
                container=c2,
                key=f"poisoning-attack.{attack}",
            ),
        )
        injection = c2.radio(
            "Injection",
            INJECTION_MODES,
            index=INJECTION_MODES.index(lab["injection"]),
            help="one-at-a-time: each question sees only its own poison (the paper); "
            "all-at-once: every poison is in the corpus together",
        )
        target, target_text = lab["target"], lab["target_text"]
        if attack_cls.takes_target():
            target = c3.selectbox(
                "Target information",
                TARGET_KINDS,
                index=TARGET_KINDS.index(lab["target"]),
                help="pii / diagnosis: generated fake records; nq / msmarco / hotpotqa: PoisonedRAG "
                "misinformation (data dir); custom: your text",
            )
            target_text = c3.text_area("Your target text (custom)", lab["target_text"], height=80)
        else:
            c3.caption(f"{attack} brings its own adversarial texts (no target information to choose).")
        detectors = st.multiselect(
            "Detectors",
            DETECTORS.names(),
            default=lab["detectors"],
            format_func=lambda n: f"{n} — {short(DETECTORS.describe(n), 60)}",
        )
        with st.expander("Detector parameters (used by the detectors chosen above)"):
            detector_params = registry_forms(DETECTORS, DETECTORS.names(), lab.get("detector_params"))
        usable = [n for n in DEFENSES.names() if DEFENSES.get(n).stage != "index"]
        defenses = st.multiselect(
            "Defenses between retrieval and the answer",
            usable,
            default=[d for d in lab.get("defenses") or () if d in usable],
            format_func=lambda n: f"{n} ({DEFENSES.get(n).stage}) — {short(DEFENSES.describe(n), 60)}",
            help="Query- and retrieval-stage defenses filter the top-K (ASR after defenses, "
            "TPR/FPR over retrieved chunks); context-, prompt- and generation-stage ones "
            "change the answer and need 'Answer each question'.",
        )
        with st.expander("Defense parameters (used by the defenses chosen above)"):
            defense_params = registry_forms(DEFENSES, usable, lab.get("defense_params"))
        g1, g2 = st.columns([1, 2])
        generate = g1.checkbox(
            "Answer each question",
            value=bool(lab.get("generate")),
            help="The assistant answers each attacked question from its top-K (the poison "
            "included where it ranked): see whether it repeats the attacker's information. "
            "About 2–5 s a question on 2 CPU cores.",
        )
        models = list(MODELS)
        gen_model = g2.selectbox(
            "Assistant model (offline)",
            models,
            index=models.index(lab.get("gen_model") or ANSWER_MODEL)
            if (lab.get("gen_model") or ANSWER_MODEL) in models
            else 0,
        )
        seed = field_input(PoisonConfig, "seed", int(lab["seed"]), label="Seed")
        with st.expander("More settings (detector anchors, answer prompt and length, judge)"):
            more = params_form(
                PoisonConfig, lab.get("more"), only=more_fields(), key="poison-more", mappings_as_json=True
            )
        submitted = st.form_submit_button("Prepare attack", type="primary")
    if submitted and number.problems:
        st.error(md_escape("; ".join(number.problems)) + " — the attack setup was not changed.")
    elif submitted:
        st.session_state["lab"] = lab = {
            "queries": queries,
            "attack": attack,
            "target": target,
            "target_text": target_text,
            "injection": injection,
            "limit": int(limit),
            "detectors": list(detectors),
            "seed": int(seed),
            "attack_params": attack_params,
            "detector_params": detector_params,
            "generate": bool(generate),
            "gen_model": gen_model,
            "defenses": list(defenses),
            "defense_params": defense_params,
            "more": more,
        }
        prepare()
        st.rerun()

if autoprepare:
    with top:
        st.caption("Preparing the demo: loading the models and embedding the corpus (the first time, up to 2 min)…")
        prepare()
    st.session_state["lab_playing"] = st.session_state["lab_run"] is not None
    st.rerun()

if err := st.session_state.pop("lab_error", None):
    st.error(f"{md_escape(err)} — change the attack setup above and prepare again.")
home = query_set_corpus(lab["queries"])
if home is not None and home != p["corpus"]:
    st.caption(
        md_escape(
            f"The questions were written about {home}; the pipeline indexes {p['corpus']}. Retrieval ranks the "
            "poison all the same, but the clean answers have no relevant document to draw on (the jamming "
            f"comparison then reads poorly) — choose {home} on the Pipeline page for a like-for-like setup."
        )
    )
run = st.session_state["lab_run"]
if run is None:
    st.info("Set up the attack above and press **Prepare attack**.")


def step_once() -> None:
    r = st.session_state["lab_run"]
    if r is None or r.done:
        return
    try:
        r.step()
        if r.done:
            r.finish()
    except Exception as e:  # keep the app usable: stop playing and say what happened
        st.session_state["lab_playing"] = False
        st.session_state["lab_error"] = f"the step failed ({type(e).__name__}: {e}); press Reset to start over"


def reset() -> None:
    cfg, corpus = st.session_state["lab_run"].config, st.session_state["lab_run"].store.base.corpus
    close_run()
    new = PoisoningRun(cfg, corpus=corpus, out_dir=my_runs_dir())
    new.prepare()
    st.session_state["lab_run"] = new


def render_lab(run: PoisoningRun) -> None:
    def status(r, word: str) -> None:
        st.caption(
            f"{r.rounds_done}/{len(r.queries)} questions attacked · corpus {len(r.store.base.corpus):,} "
            f"documents · {word}"
        )

    def body(r) -> None:
        render_round(r)
        render_live_metrics(r)

    stepper(
        "lab",
        "",
        step_once=step_once,
        reset=reset,
        status=status,
        body=body,
        speed_label="Seconds per step while playing",
        speed_range=(0.2, 3.0),
    )

    tabs = st.tabs(["Detectors", "Why does it work?", "Embedding map", "Exports"])
    with tabs[0]:
        render_detectors(run)
    with tabs[1]:
        st.caption(
            "Paper §4. Table 3: appending an unrelated text p to q moves f(q) mostly *perpendicular* "
            "to f(q), so the poison keeps the question's similarity. "
            "Table 4: clean documents are far from their questions."
        )
        key = f"why-{run.config.config_hash()}"
        if st.button("Compute for this configuration", key="why_btn"):
            try:
                with st.spinner("embedding questions, targets and concatenations"):
                    st.session_state[key] = why_it_works(run.config.replace(limit=min(len(run.queries), 50)))
            except EngineError as e:
                st.error(md_escape(e))
        if key in st.session_state:
            for name, df in st.session_state[key].items():
                st.markdown(f"**{name.replace('_', ' ')}**")
                st.dataframe(df, width="stretch")
    with tabs[2]:
        render_embedding_map(run)
    with tabs[3]:
        render_exports(run)


if run is not None:
    render_lab(run)
