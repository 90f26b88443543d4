"""Extraction-lab panels and glue. Render only: the engine runs the attack, engine.views.extraction shapes the data.

Attacker-controlled text (the KB's chunks, the model's answers, the attacker's queries and memory) is
never rendered as HTML: it goes through st.text / st.code / st.dataframe, or through st.markdown only
after md_escape, with copied spans wrapped in Markdown highlighting.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import streamlit as st

from components.params_form import new_form_generation
from components.presets import preset_config
from components.state import my_runs_dir, progress_callback
from components.stepper import HeldRerun
from components.extraction_settings import ATTACKER_NONE, LITELLM, LOCAL, more_fields, settings_from_config
from components.charts import narrow_chart
from components.text import marked_markdown, md_code, md_escape
from engine.config import ExtractionConfig, list_presets
from engine.corpora import corpus_from_documents, load_corpus, retriever_window
from engine.defenses import DEFENSES
from engine.embedders import make_retriever
from engine.errors import EngineError
from engine.attacks.extraction import EXTRACTION_ATTACKS
from engine.generators import GENERATORS
from engine.events import Event, event_to_json, jsonable, read_jsonl
from engine.saved import list_runs
from engine.tenancy import filter_label
from engine.generators.litellm_gen import LiteLLMGenerator
from engine.generators.llama_local import on_model_wait
from engine.generators.models import MODELS
from engine.metrics.catalog import MK, help_text
from engine.metrics.intervals import fmt_interval
from engine.plots.extraction import cascade_bars, coverage_map, leakage_curves, worm_drift
from engine.views.extraction import (
    attacker_state,
    budget_note,
    canary_line,
    cascade_rows,
    LEAK_KINDS,
    cost_line,
    leak_kinds,
    marked_segments,
    metrics_rows,
    round_view,
    rouge_of,
    rounds_played,
    run_config,
    tenancy_line,
    tenant_label,
)
from engine.runs.extraction import ExtractionRun, summarize_extraction
from engine.runs.kb_snapshot import KB_FILE, load_kb

KBS = ["clinic_records", "healthcaremagic", "enron", "upload"]
KB_HELP = (
    "clinic_records: bundled synthetic patient notes with fake PII; healthcaremagic / enron: benchmark "
    "data (needs the data dir); upload: the documents uploaded on the Pipeline page"
)
LOCAL_MODELS = list(MODELS)


# ------------------------------------------------------------------------------ settings ↔ config
def extract_presets() -> list[dict]:
    """The bundled and user presets of kind ``extract`` (name, description, …), for the preset menu."""
    return [p for p in list_presets() if p["kind"] == "extract"]


def load_extract_preset(name: str) -> bool:
    """Load an extraction preset into the lab's settings."""
    cfg = preset_config(name, "extract", ExtractionConfig)
    if cfg is None:
        return False
    st.session_state["extract"] = settings_from_config(cfg)
    new_form_generation()
    return True


def build_config(s: Mapping[str, Any], data_dir: str) -> ExtractionConfig:
    """The ExtractionConfig of the lab's settings. Never holds an API key."""
    if s["generator"] == LITELLM:
        gen, gp = LITELLM, {"model": s["litellm_model"].strip(), "max_tokens": int(s["max_tokens"])}
        if s.get("api_base", "").strip():
            gp["api_base"] = s["api_base"].strip()
    elif s["generator"] in GENERATORS and s["generator"] not in (LOCAL, LITELLM):  # a generator plugin
        gen, gp = s["generator"], dict(dict(s.get("other_generator_params") or {}).get(s["generator"]) or {})
        if any(f["name"] == "max_tokens" for f in GENERATORS.get(gen).Params.describe()):
            gp["max_tokens"] = int(s["max_tokens"])
    else:
        gen, gp = (
            LOCAL,
            {**dict(s.get("generator_params") or {}), "model": s["generator"], "max_tokens": int(s["max_tokens"])},
        )
    uses_llm = (
        EXTRACTION_ATTACKS.get(s["attack"]).can_use("attacker_llm")
        and s.get("attacker_llm", ATTACKER_NONE) != ATTACKER_NONE
    )
    return ExtractionConfig.from_dict(
        {
            "kb": s["kb"],
            "attack": s["attack"],
            "attack_params": dict(s.get("attack_params") or {}),
            "rounds": int(s["rounds"]),
            "generator": gen,
            "generator_params": gp,
            "attacker_llm": LOCAL if uses_llm else "",
            "attacker_llm_params": {"model": s["attacker_llm"]} if uses_llm else None,
            "defenses": list(s.get("defenses") or ()),
            "top_k": int(s["top_k"]),
            "max_tokens": int(s["max_tokens"]),
            "defense_params": {
                d: p for d, p in dict(s.get("defense_params") or {}).items() if d in (s.get("defenses") or ())
            }
            or None,
            "answer_budget": s.get("answer_budget", "context"),
            "seed": int(s["seed"]),
            "data_dir": data_dir,
            **{k: v for k, v in dict(s.get("more") or {}).items() if k in more_fields()},
        },
        where="extraction setup",
    )


def make_generator(cfg: ExtractionConfig, api_key: str) -> Any:
    """For a litellm generator, the generator object carrying the session's key (never in the config);
    None for local models (the run builds those from the config)."""
    if not GENERATORS.get(cfg.generator).hosted:
        return None
    return LiteLLMGenerator(
        LiteLLMGenerator.Params.from_dict(dict(cfg.generator_params or {})), api_key=api_key or None
    )


def window_of(retriever: str, params: Mapping[str, Any] | None = None) -> Any:
    """The retriever's token window: chunks are cut in its tokens, as the run itself cuts them."""
    return retriever_window(make_retriever(retriever, dict(params or {})))


def corpus_for(cfg: ExtractionConfig) -> Any:
    """The uploaded documents as a corpus for kb 'upload'; None otherwise (the run loads the KB)."""
    if cfg.kb != "upload":
        return None
    return corpus_from_documents(
        "upload",
        st.session_state.get("uploaded_docs") or [],
        chunk_size=cfg.chunk_size,
        chunk_overlap=cfg.chunk_overlap,
        window=window_of(cfg.retriever),
    )


def _warm_models(run: ExtractionRun, tick) -> None:
    """Load the local model(s) now, under the progress bar, instead of in the first Step."""
    gens = [
        ("generator", run.system.generator if run.system else None),
        ("attacker's LLM", run.agent.ctx.attacker_llm if run.agent else None),
    ]
    for i, (what, g) in enumerate(gens):
        if g is not None:
            tick(f"loading the {what} model", i, len(gens))
            g.load()


def start_run(cfg: ExtractionConfig, corpus: Any, api_key: str) -> ExtractionRun:
    """Prepare a new run (progress bar: knowledge base, indexing, reindex training, model loading)."""
    bar = st.progress(0.0, text="starting")
    tick = progress_callback(bar)
    run = ExtractionRun(
        cfg, out_dir=my_runs_dir(), progress=tick, corpus=corpus, generator=make_generator(cfg, api_key)
    )
    try:
        run.prepare()
        _warm_models(run, tick)
    except BaseException:
        run.close()
        raise
    finally:
        run.progress = None  # the bar belongs to this script run
        bar.empty()
    return run


def resume_run(folder: str | Path, api_key: str) -> ExtractionRun:
    """Reopen the run in ``folder`` to continue it (progress bar while the models load); a litellm run gets the
    session's ``api_key``."""
    bar = st.progress(0.0, text="reopening")
    tick = progress_callback(bar)
    try:
        cfg = ExtractionConfig.from_dict(run_config(read_jsonl(Path(folder) / "events.jsonl")), where=str(folder))
        run = ExtractionRun.resume(folder, progress=tick, generator=make_generator(cfg, api_key))
        _warm_models(run, tick)
        run.progress = None
        return run
    finally:
        bar.empty()


def close_extract_run() -> None:
    """Close the session's extraction run (its models stay cached for the next one) and stop playing."""
    run = st.session_state.get("extract_run")
    if run is not None:
        run.close()
    st.session_state["extract_run"] = None
    st.session_state["extract_playing"] = False


# ------------------------------------------------------------------------------ saved runs
def saved_extraction_runs(root: Path | None = None) -> list[dict[str, Any]]:
    """This session's extraction runs on disk, newest first (see :func:`engine.saved.list_runs`)."""
    return list_runs(root or my_runs_dir(), kind="extract")


def kb_texts(cfg: Mapping[str, Any], folder: str | Path | None = None) -> tuple[list[str], dict[str, str]]:
    """(chunk ids in KB order, id → text) of a saved run's KB: the copy in its folder (uploads), else
    reloaded from its config ([] / {} if that fails)."""
    saved = folder is not None and (Path(folder) / KB_FILE).is_file()
    key = (
        "extract_kb_texts",
        str(folder) if saved else None,
        cfg.get("kb"),
        cfg.get("chunk_size"),
        cfg.get("chunk_overlap"),
        cfg.get("data_dir"),
    )
    cache = st.session_state.setdefault("extract_kb_cache", {})
    if key not in cache:
        try:
            if saved:
                c = load_kb(folder, str(cfg.get("kb")))
            elif cfg.get("kb") == "upload":
                raise EngineError("the uploaded documents of this run are not in its folder")
            else:
                c = load_corpus(
                    cfg["kb"],
                    data_dir=cfg.get("data_dir") or None,
                    chunk_size=cfg.get("chunk_size"),
                    chunk_overlap=cfg.get("chunk_overlap", 0),
                    window=window_of(cfg.get("retriever") or ExtractionConfig().retriever, cfg.get("retriever_params")),
                )
            cache.clear()
            cache[key] = (list(c.ids), {d.id: d.text for d in c.documents})
        except (EngineError, OSError, KeyError):
            cache[key] = ([], {})
    return cache[key]


# ------------------------------------------------------------------------------ rendering
def render_metrics(events: list[Event]) -> None:
    """The headline leakage numbers after the last scored round (CRR, context reached, reproduced, semantic leak,
    PII, blocked), with their catalog help."""
    rows = metrics_rows(events)
    m = rows[-1] if rows else {}
    c = st.columns(6)
    c[0].metric("CRR", f"{m.get(MK.CRR, 0.0):.4f}" if rows else "–", help=help_text(MK.CRR))
    c[1].metric(
        "Reached the context",
        f"{m.get(MK.EE_RETRIEVAL, m.get(MK.RETRIEVED_COVERAGE, 0.0)):.4f}" if rows else "–",
        help=help_text(MK.EE_RETRIEVAL),
    )
    c[2].metric(
        "Reproduced of that", f"{m.get(MK.EE_GENERATION, 0.0):.2f}" if rows else "–", help=help_text(MK.EE_GENERATION)
    )
    c[3].metric(
        "Repeat contexts", f"{int(m.get(MK.REPEAT_CONTEXTS, 0))}" if rows else "–", help=help_text(MK.REPEAT_CONTEXTS)
    )
    c[4].metric(
        "ROUGE contexts", f"{int(m.get(MK.ROUGE_CONTEXTS, 0))}" if rows else "–", help=help_text(MK.ROUGE_CONTEXTS)
    )
    c[5].metric(
        "PII leaked",
        f"{int(m.get(MK.PII_LEAKED, 0))} / {int(m.get('pii_total', 0))}" if rows else "–",
        help=help_text(MK.PII_LEAKED),
    )
    if rows:
        s = summarize_extraction(events)
        ci = [f"CRR {fmt_interval(s.crr_ci, 4)}"] if s.crr_ci else []
        ci += [f"PII share {fmt_interval(s.pii_ci, 3)}"] if s.pii_ci else []
        st.caption(md_escape(cost_line(s)) + (" · 95% Wilson intervals: " + " · ".join(ci) if ci else ""))
        line, crossed = tenancy_line(s)
        if line:
            (st.error if crossed else st.success)(md_escape(line))
        line, hit = canary_line(s)
        if line:
            (st.error if hit else st.info)(md_escape(line))


def stream_round(run: ExtractionRun) -> None:
    """Play one round live: the attacker's query as soon as it is chosen, then the answer as it is
    generated (plain text, never HTML). A full rerun afterwards draws the finished round.

    A click while the round streams (Step again, Pause, a slider) makes Streamlit stop this script at its next
    drawing call. The round is not cut for it: the live view stops drawing, the round finishes, and the held
    rerun is raised after it — so every click is answered and no round is half played."""
    import time

    draw = HeldRerun()
    box = st.container(border=True)
    head, query_box, answer_box = box.empty(), box.empty(), box.empty()
    head.markdown(f"**Round {run.rounds_done + 1} — the attacker is choosing its query…**")
    pieces: list[str] = []
    shown = [0.0]

    def on_query(r: int, text: str) -> None:
        draw(lambda: head.markdown(f"**Round {r} — attacker's query**"))
        draw(lambda: query_box.text(text))
        draw(lambda: answer_box.caption("retrieving and reading the context… the answer streams here"))

    def on_text(piece: str) -> None:
        pieces.append(piece)
        now = time.monotonic()
        if now - shown[0] >= 0.08:  # ~12 updates a second
            draw(lambda: answer_box.text("Answer (streaming): " + "".join(pieces)))
            shown[0] = now

    def on_wait(ahead: int) -> None:
        draw(
            lambda: answer_box.caption(
                f"waiting for the model: another session is using it ({ahead} ahead of this one); "
                "answers are generated one at a time per model"
            )
        )

    with on_model_wait(on_wait):
        run.step(on_query=on_query, on_text=on_text)
    draw.release()


def render_round(events: list[Event], texts: Mapping[str, str], rnd: int | None = None, key: str = "live") -> None:
    """One round of the run: the attacker's query, the retrieved chunks and the answer with copied spans marked;
    ``rnd`` None shows a slider over the rounds played, ``texts`` maps chunk ids to their text."""
    done = rounds_played(events)
    if not done:
        st.info("Press **Step** or **Play** to play the first round.")
        return
    if rnd is None:
        rnd = st.slider("Round", 1, done, done, key=None) if done > 1 else 1
    v = round_view(events, rnd)
    if v is None:
        st.warning(f"Round {rnd} has no query on record.")
        return
    # a multi-tenant run's table has a column more (whose chunk each is): the middle gets the room
    left, mid, right = st.columns([2, 3, 1] if v["tenancy"] else [2, 2, 1])
    with left:
        st.markdown(f"**Attacker — round {rnd}/{done}**")
        st.text(v["query"])
    with mid:
        ten = v["tenancy"]
        cut = list(ten["dropped"]) if ten else []
        n_ret = len(v["retrieved"])
        st.markdown(
            f"**Retrieved — {n_ret} of the top-{n_ret + len(cut)}**, the rest cut by the tenant filter"
            if cut
            else f"**Retrieved — top-{n_ret}**"
        )
        leaked = set(v["leaked"])
        table = {
            "chunk": [d for d, _ in v["retrieved"]],
            "score": [f"{s:.3f}" for _, s in v["retrieved"]],
            "in context": [d in v["context_ids"] for d, _ in v["retrieved"]],
            # the strongest reason only (recovered > verbatim > ROUGE-L): the cell stays narrow; all of them below
            "leaked": ["⚠ " + leak_kinds(v, d)[0] if d in leaked else "" for d, _ in v["retrieved"]],
        }
        if ten:  # a multi-tenant run: whose chunk each is, and what a filter after the top-K cut
            owner = ten["owner"]
            table["tenant"] = [tenant_label(owner.get(d, ""), ten["identity"]) for d, _ in v["retrieved"]]
            for d in cut:  # ranked in the top-K, then removed: no score shown, never in the context
                table["chunk"].append(d)
                table["score"].append("cut")
                table["in context"].append(False)
                table["leaked"].append("")
                table["tenant"].append(tenant_label(owner.get(d, ""), ten["identity"]))
        frame = pd.DataFrame(table)
        if ten:  # whose chunk it is, right after its id: the column that matters in a tenant demo
            frame = frame[["chunk", "tenant", "score", "in context", "leaked"]]
        st.dataframe(
            frame,
            hide_index=True,
            width="stretch",
            # narrow columns for the short values, so "leaked" and its reason stay in view in this third of the page
            column_config={
                "score": st.column_config.TextColumn(width=60),
                "in context": st.column_config.CheckboxColumn(width=75),
                "tenant": st.column_config.TextColumn(width=95),
            },
        )
        if ten:
            st.caption(
                md_escape(
                    f"querying as {ten['identity']} (🟢 own: its chunks) · tenant filter: {filter_label(ten['mode'])}"
                )
                + (f" · {len(cut)} result(s) cut after the top-K (score 'cut')" if cut else "")
            )
    with right:
        st.markdown("**Defenses this round**")
        if not v["actions"]:
            st.caption("no defense acted")
        for a in v["actions"]:
            what = "" if a["action"] in ("", a["defense"]) else f": {md_escape(a['action'])}"  # no "x (prompt): x"
            st.markdown(f"{md_code(a['defense'])} ({md_escape(a['stage'])}){what}")
            if a["detail"]:
                st.caption(md_escape(json.dumps(jsonable(a["detail"]), default=str)[:300]))
    st.markdown("**Generator's answer**" + (f" — blocked by {md_code(v['blocked_by'])}" if v["blocked_by"] else ""))
    st.text(v["answer"] or "(empty)")
    note, capped = budget_note(v)
    if note:
        (st.warning if capped else st.caption)(md_escape(note))
    if v["pii"]:
        st.caption("PII leaked this round: " + md_escape(", ".join(v["pii"])))
    if v["canaries"]:
        st.warning(
            md_escape(
                f"Canary hit: this answer carries the canary of {', '.join(v['canaries'])} — proof that the chunk "
                "leaked (a canary exists nowhere else, so no false positive)"
            )
        )
    if not v["leaked"]:
        st.caption("This answer reproduces no retrieved chunk.")
        return
    new = len(set(v["leaked"]) & set(v.get("recovered") or ()))
    st.markdown(
        f"**Chunks this answer reproduces — {len(v['leaked'])}**, {new} of them recovered for the first time (what "
        "CRR counts) · copied spans highlighted (runs of ≥ 4 words the answer repeats in order)",
        help="\n\n".join(LEAK_KINDS.values()),
    )
    for cid in v["leaked"][:5]:
        src = texts.get(cid)
        with st.container(border=True):
            rouge = ""
            if src is not None:
                rr, rp = rouge_of(src, v["answer"])
                # the one over 0.5 in bold: "recall or precision > 0.5" beside a recall of 0.35 read as a contradiction
                rouge = " · ROUGE-L " + ", ".join(
                    f"**{name} {x:.2f}**" if x > 0.5 else f"{name} {x:.2f}"
                    for name, x in (("recall", rr), ("precision", rp))
                )
            st.markdown(f"{md_code(cid)} · {', '.join(leak_kinds(v, cid))}" + rouge)
            if src is None:
                st.caption("source text unavailable (the knowledge base could not be reloaded)")
                continue
            a, b = st.columns(2)
            a.caption("Source chunk")
            a.markdown(marked_markdown(marked_segments(src, v["answer"])))
            b.caption("Answer")
            b.markdown(marked_markdown(marked_segments(v["answer"], src)))
    if len(v["leaked"]) > 5:
        st.caption(f"… and {len(v['leaked']) - 5} more")


def render_charts(events: list[Event], ids: list[str], kb_size: int | None, key: str) -> None:
    """The coverage map of the KB's chunks (``ids``, ``kb_size``) and the leakage curves round by round."""
    c1, c2 = st.columns([2, 3])
    narrow_chart(c1, coverage_map(ids, events, kb_size=kb_size), key=f"coverage_{key}")
    if metrics_rows(events):
        narrow_chart(c2, leakage_curves(events), key=f"curves_{key}")
    else:
        c2.caption("Leakage curves appear after the first round.")


INTERNAL_ITEMS = 50  # items of each attacker list drawn (long-term memory grows to hundreds of chunks)


def render_internals(events: list[Event], defenses: list[str], key: str) -> None:
    """What the attacker agent holds after the last round (memory, reflections, schedule) and, when a defense
    reports per-token decoding statistics, its chart."""
    agent, rnd, state = attacker_state(events)
    if not agent:
        st.info("The attacker's state appears after the first round.")
    elif "long_term" in state:  # an agent with memory (RAG-Thief)
        st.caption(
            f"{agent} after round {rnd}: {state.get('reflections', 0)} reflections, "
            f"{state.get('seed_used', 0)} seed anchors used, {state.get('last_new', 0)} new chunk(s) in the last "
            f"answer it read. It reads round {rnd}'s answer when it chooses its next query: what that answer "
            "gave it shows after the next round."
            + (
                f" Anchors dropped (their chunk's other direction gave nothing new): {state['dropped_anchors']}; "
                f"skipped (too close to one already sent): {state.get('skipped_anchors', 0)}."
                if state.get("dropped_anchors") or state.get("skipped_anchors")
                else ""
            )
        )
        cur = state.get("current") or {}
        if cur.get("text"):  # the anchor is taken off the list when it is sent: the list alone often reads empty
            how = {"seed": "a seed topic"}.get(cur.get("direction", ""), f"{cur.get('direction', '')} continuation")
            st.markdown(f"**Anchor of round {rnd}'s query** ({md_escape(how)}): {md_escape(cur['text'])}")
        c = st.columns(3)
        for col, (name, title) in zip(
            c, (("short_term", "Short-term queue"), ("long_term", "Long-term memory"), ("anchors", "Anchors waiting"))
        ):
            items = state.get(name) or []
            col.markdown(f"**{title}** ({len(items)})")
            # a scrolling box of wrapped items (a table clipped every chunk to its first line)
            box = col.container(height=260, border=True)
            if not items:
                box.caption("empty")
            for i, x in enumerate(items[:INTERNAL_ITEMS], 1):
                text = x.get("text", "") if isinstance(x, Mapping) else str(x)
                direction = x.get("direction", "") if isinstance(x, Mapping) and name == "anchors" else ""
                box.markdown(f"{i}. " + (f"*{md_escape(direction)}* · " if direction else "") + md_escape(text))
            if len(items) > INTERNAL_ITEMS:
                box.caption(f"… and {len(items) - INTERNAL_ITEMS} more (the run's events hold them all)")
    elif "history" in state:  # an agent that moves toward targets (Worm)
        hist = state.get("history") or []
        st.caption(f"{agent} after round {rnd}: {state.get('n_extracted', 0)} chunk(s) extracted so far")
        if hist:
            st.plotly_chart(worm_drift(hist), width="stretch", key=f"worm_{key}")
            st.markdown("**Last target**")
            st.text(str(hist[-1].get("target_text", "")))
    elif "next_information" in state:  # a fixed schedule of queries (Zeng et al.)
        st.caption(f"{agent} after round {rnd}: {state.get('issued', 0)} queries issued")
        st.markdown("**Next information**")
        st.text(state.get("next_information") or "(budget spent)")
    else:
        st.json(jsonable(state), expanded=False)
    if any(DEFENSES.get(d).token_report for d in defenses if d in DEFENSES):
        st.markdown("**Cascade decoding** — tokens per answer")
        if cascade_rows(events):
            st.plotly_chart(cascade_bars(events), width="stretch", key=f"cascade_{key}")
        else:
            st.caption("appears after the first answer")


def render_exports(events: list[Event], run_id: str) -> None:
    """Download buttons for the run's events (JSONL) and summary (JSON), built when clicked."""
    row = st.container(horizontal=True)
    row.download_button(
        "Events (JSONL)",
        lambda: "\n".join(event_to_json(e) for e in list(events)) + "\n",
        file_name=f"{run_id}-events.jsonl",
        mime="application/json",
        on_click="ignore",
        key=f"dl_events_{run_id}",
    )
    row.download_button(
        "Summary (JSON)",
        lambda: json.dumps(jsonable(summarize_extraction(list(events))), indent=2, default=str),
        file_name=f"{run_id}-summary.json",
        mime="application/json",
        on_click="ignore",
        key=f"dl_summary_{run_id}",
    )


def _store_key() -> None:
    st.session_state["llm_api_key"] = st.session_state.get("llm_api_key_box", "")


def _generator_name(run: ExtractionRun) -> str:
    """The model that answers (``qwen2.5-0.5b``, not the registry's ``local``): what the run's answers report."""
    from engine.events import Generated

    got = next((e.model for e in reversed(run.events) if isinstance(e, Generated) and e.model), "")
    return got or str(dict(run.config.generator_params or {}).get("model") or run.config.generator)


def render_sidebar_status(key_box: bool = True) -> None:
    """Sidebar block: the extraction run at a glance, with the API key box above it when ``key_box``."""
    st.markdown("**Extraction**")
    if key_box:
        # the key lives in session_state["llm_api_key"] (not a widget key, so it survives runs in which the
        # sidebar is not drawn); the box is re-seeded from it on every run
        st.session_state["llm_api_key_box"] = st.session_state.get("llm_api_key", "")
        st.text_input(
            "LLM API key (litellm)",
            type="password",
            key="llm_api_key_box",
            on_change=_store_key,
            help="Used only by a litellm generator in the Extraction lab. Kept in this browser session's "
            "memory only: never written to a config, event, export, log or file name.",
        )
    run = st.session_state.get("extract_run")
    if run is not None:
        m = run.metrics()
        st.caption(
            f"{run.config.attack} vs {'+'.join(run.config.defenses) or 'no defense'} · "
            f"{run.rounds_done}/{run.config.rounds} rounds · CRR {m.get(MK.CRR, 0.0):.3f}"
            + (" · complete" if run.done else "")
            + f"  \nknowledge base {md_code(Path(str(run.config.kb)).name)} · generator {md_code(_generator_name(run))}"
        )
    elif st.session_state.get("extract_view"):
        st.caption(f"viewing saved run {md_code(Path(st.session_state['extract_view']).name)}")
    else:
        st.caption("no extraction prepared")
