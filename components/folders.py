"""Folder boxes: a path typed freely on your own machine, a choice among known folders on a shared deployment.

On a laptop (single-user mode) any folder of the machine can be read — the saved runs of a CLI experiment, a
colleague's results copied over. On a shared deployment (``RAG_PLAYGROUND_SHARED=1``) a web user must not be able
to make the server read arbitrary paths: the box becomes a choice among the repository's ``results/`` folders
and the user's own folders (their comparisons, sweeps) — names, never a typed path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import streamlit as st

from components.state import shared_mode


def folder_input(
    label: str, default: str | Path, *, key: str, choices: Iterable[str | Path], help: str = "", container: Any = None
) -> str | None:
    """A folder: typed (single-user mode) or chosen among ``choices`` (shared mode; None when there is none)."""
    box = container or st
    if not shared_mode():
        if key in st.session_state:  # set by a button elsewhere: a default too would draw Streamlit's warning
            return box.text_input(
                label, key=key, help=(help + " — " if help else "") + "single-user mode: any folder on this machine"
            )
        return box.text_input(
            label,
            value=str(default),
            key=key,
            help=(help + " — " if help else "") + "single-user mode: any folder on this machine",
        )
    options = list(dict.fromkeys(str(c) for c in choices))
    if str(default) in options:
        options.remove(str(default))
        options.insert(0, str(default))
    if not options:
        box.info(f"{label}: no folder to read yet.")
        return None
    return box.selectbox(
        label,
        options,
        key=key,
        help=(help + " — " if help else "") + "a shared deployment reads "
        "only the repository's results and your own folders",
    )


def subfolders_holding(roots: Iterable[str | Path], pattern: str) -> list[str]:
    """The folders under ``roots`` (and the roots themselves) that hold a file matching ``pattern``."""
    out: list[str] = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        hits = {p.parent for p in root.rglob(pattern)}
        out += [str(root)] if any(h == root for h in hits) else []
        out += sorted(str(h) for h in hits if h != root)
    return out
