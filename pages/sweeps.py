"""Sweeps: the paper's Table 1 as a grid you launch here — ASR@K per corpus × retriever × query set × target."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from components.executor import executor_config, executor_section
from components.job_panel import follow_running, job_panel
from components.numbers import NumberFields
from components.reproduce import reproduce_section
from components.sweep_table import live_cells, sweep_cells_table
from components.state import data_dir, init_state, my_sweeps_dir, owner
from components.text import md_escape
from engine.analysis.paper_tables import side_by_side
from engine.attacks.poisoning import TARGET_KINDS
from engine.config import SweepConfig
from engine.corpora import available_corpora
from engine.embedders import RETRIEVERS, offline_retrievers
from engine.errors import EngineError
from engine.jobs import Job
from engine.plots import table1_heatmap
from engine.queries import available_query_sets
from engine.sweep import finished_cells, grid, list_sweeps, load_sweep, run_sweep, sweep_key, sweep_state

CHUNKING = {"auto": "auto", "whole": "whole documents", "128": "128 tokens", "256": "256 tokens", "512": "512 tokens"}


def chunk_size(choice: str, corpora: list[str]) -> int | None:
    """The sweep's ``chunk_size`` for a Chunking choice: None keeps documents whole."""
    if choice == "auto":
        return None if corpora == ["bioasq"] else 512
    return None if choice == "whole" else int(choice)


init_state()
st.title("Sweeps")
st.caption(
    "Universal poisoning over a grid of configurations (paper Table 1). Each cell attacks the first N "
    "questions of a set with each target kind and reports the top-K attack success rate. It runs in the "
    "background: you can switch pages and come back, or stop it."
)
job: Job | None = follow_running("sweep_job", "sweep", what="sweep")

number = NumberFields()
with st.form("sweep_setup", enter_to_submit=False):  # a sweep starts only from its button
    c1, c2 = st.columns(2)
    corpora = c1.multiselect("Corpora", available_corpora(), default=["clinic_handbook"])
    offline = offline_retrievers()  # a sweep runs many cells: only retrievers that need no download
    sweep_default = SweepConfig().retrievers
    # the config's default retriever beside the sparse one, for the contrast Table 1 draws
    default = [r for r in offline if r in sweep_default or not RETRIEVERS.get(r).dense]
    retrievers = c1.multiselect("Retrievers", offline, default=default)
    query_sets = c2.multiselect("Query sets", available_query_sets(), default=["clinic_handbook"])
    targets = c2.multiselect("Targets", [t for t in TARGET_KINDS if t != "custom"], default=["pii", "diagnosis"])
    c3, c4, c5, c6 = st.columns(4, vertical_alignment="bottom")  # inputs in one line if a label wraps
    limit = number(c3, "Questions per set (first N)", 1, 5000, 20)
    variants = number(
        c4, "Targets per kind", 1, 10, 1, help="Target documents per target kind; ASR is averaged over them"
    )
    k = number(c5, "K of ASR@K", 1, 20, 2)
    chunking = c6.selectbox(
        "Chunking",
        list(CHUNKING),
        format_func=CHUNKING.get,
        help="How the corpora are cut into the retriever's documents, in the retriever's own "
        "tokens (never past what it reads). Auto keeps BioASQ's snippets whole, as the "
        "Table-1 preset does, and cuts other corpora at 512 tokens.",
    )
    executor_values = executor_section("sweep")
    start = st.form_submit_button("Start sweep", type="primary", disabled=bool(job and job.running))


def start_sweep(cfg: SweepConfig, executor=None, resumed: str | None = None, folder: Path | None = None) -> None:
    """Run (or resume: the same grid, the same folder) ``cfg`` in the background; ``resumed``: what the panel
    names while it runs (a saved sweep resumed, in its own ``folder``)."""
    folder = folder or my_sweeps_dir() / sweep_key(cfg)  # every finished cell lands here; the same grid resumes
    already = len(finished_cells(cfg, folder))
    state = {"sweep_cfg": cfg, "sweep_folder": str(folder), "sweep_already": already, "sweep_job_resumed": resumed}
    st.session_state.update(state)
    st.session_state.pop("sweep_view", None)
    st.session_state["sweep_job"] = Job(
        "sweep",
        lambda progress, stop: run_sweep(cfg, progress=progress, stop=stop, executor=executor, out_dir=folder),
        owner=owner(),
        state=state,
    ).start()


if start:
    try:
        number.check()
        cfg = SweepConfig(
            corpora=tuple(corpora),
            retrievers=tuple(retrievers),
            query_sets=tuple(query_sets),
            targets=tuple(targets),
            limit=int(limit),
            variants=int(variants),
            k=int(k),
            chunk_size=chunk_size(chunking, corpora),
            data_dir=data_dir(),
        )
        if not grid(cfg):
            raise EngineError("choose at least one corpus, retriever, query set and target")
        start_sweep(cfg, executor_config("sweep", executor_values))
        st.rerun()
    except EngineError as e:
        st.error(md_escape(e))


def sweep_progress(j: Job) -> tuple[float, str]:
    n = len(grid(st.session_state["sweep_cfg"]))
    # its report counts every finished cell of the grid, those a previous run of it saved included; before its first
    # report, those saved ones
    done = max(j.done_count, st.session_state.get("sweep_already", 0))
    return done / max(n, 1), f"{done}/{n} cells · running"


job_panel(
    "sweep_job",
    what="sweep",
    progress=sweep_progress,
    stop_label="Stop after this cell",
    stop_key="sweep_stop",
    drawn=job is not None and not job.running,
    idle=lambda: None if st.session_state.get("sweep_view") else st.info("Choose a grid and press **Start sweep**."),
    live=lambda j: live_cells(st.session_state["sweep_cfg"], st.session_state.get("sweep_folder")),
)
if job is not None and not job.running and job.result is not None and st.session_state.get("sweep_view_job") is not job:
    st.session_state["sweep_view"] = {
        "cfg": st.session_state["sweep_cfg"],
        "result": job.result,
        "folder": st.session_state.get("sweep_folder"),
    }
    st.session_state["sweep_view_job"] = job

with st.expander("Saved sweeps"):
    saved = list_sweeps(my_sweeps_dir())
    if not saved:
        st.caption("None yet: every sweep you run here is saved cell by cell and can be reopened or resumed.")
    else:
        pick = st.selectbox(
            "Sweep",
            [s["folder"] for s in saved],
            format_func=lambda f: next(f"{s['label']}{sweep_state(s)}" for s in saved if s["folder"] == f),
            help="Corpora × retrievers × query sets × targets of each saved grid, its questions per set, K, and "
            "its folder's name (two grids may differ in one number only)",
        )
        chosen = next(s for s in saved if s["folder"] == pick)
        b1, b2 = st.columns([1, 4])
        if b1.button("Open", key="sweep_open"):
            try:
                saved_cfg, saved_result = load_sweep(pick)
                st.session_state["sweep_view"] = {"cfg": saved_cfg, "result": saved_result, "folder": pick}
            except EngineError as e:
                st.error(md_escape(e))
        if (
            not chosen["complete"]
            and not chosen["being written"]
            and not (job and job.running)
            and b2.button(
                "Resume this sweep",
                key="sweep_resume",
                help="Run the cells it has not finished, with its settings, into its folder",
            )
        ):
            try:
                start_sweep(load_sweep(pick)[0], resumed=f"the sweep {chosen['grid']}", folder=Path(pick))
                st.rerun()
            except EngineError as e:
                st.error(f"Cannot resume it: {md_escape(e)}")

view = st.session_state.get("sweep_view")
if view is not None:
    cfg, res = view["cfg"], view["result"]
    for f in res.failed:
        st.error(
            md_escape(f"Cell {f['corpus']} / {f['retriever']} / {f['query_set']} / {f['target']} failed: {f['error']}")
        )
    if res.damaged:
        st.warning(
            f"{res.damaged} line(s) of this sweep's sweep_cells.csv could not be read as a cell of its grid (torn, "
            "malformed or written twice): they are left out here. "
            + (
                "Every cell of the grid was read from the other lines, so nothing is missing."
                if res.complete
                else "Their cells run again on resume, and the file as it was is then kept beside it as "
                "sweep_cells.damaged.csv."
            )
        )
    if not res.complete and not res.failed:
        st.warning(
            f"Not finished: {len(res.cells)} of {len(grid(cfg))} cells. **Resume this sweep** under Saved sweeps (or "
            "starting the same grid again) runs the rest; the finished cells are kept."
        )
if view is not None and not view["result"].cells.empty:
    table = res.table1(cfg.k)
    fig = table1_heatmap(table, cfg.k)
    st.plotly_chart(fig, width="stretch", key="sweep_heatmap")
    st.caption(
        "Darker = the poison reaches the top K for more of the attacked questions. Chunking: "
        + (f"{cfg.chunk_size} retriever tokens." if cfg.chunk_size else "whole documents.")
    )
    sweep_cells_table(res.cells)
    row = st.container(horizontal=True)
    row.download_button(
        "Cells (CSV)", res.cells.to_csv(index=False), file_name="sweep_cells.csv", mime="text/csv", on_click="ignore"
    )
    row.download_button(
        "Heat map (HTML)",
        lambda: fig.to_html(include_plotlyjs=True),
        file_name="sweep_heatmap.html",
        mime="text/html",
        on_click="ignore",
    )
    folder = view.get("folder")
    if folder:
        st.caption(
            "Every finished cell is saved in this folder as it ends; after a stop, a refresh or a restart, "
            "**Resume this sweep** (Saved sweeps) or the same grid started again continues from there:"
        )
        st.code(folder, language=None)
        if side_by_side(res.cells, 2).empty:  # nothing the paper's Table 1 has: no button into an empty table
            st.caption(
                "This grid has no cell on the paper's query sets (MIRAGE's five) and targets, so it has nothing to "
                "set beside the paper's tables below; choose those to compare."
            )
        else:
            st.button(
                "Show beside the paper's tables (below)",
                key="sweep_to_reproduce",
                on_click=lambda: st.session_state.update(t1_folder=folder),
            )


st.divider()
reproduce_section()
