"""Where a sweep's or a comparison's cells run: the executor section of their setup forms."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components.params_form import params_form
from engine.executors import ExecutorConfig, checked


def executor_section(key: str) -> dict[str, Any]:
    """The :class:`~engine.executors.ExecutorConfig` widgets in a collapsed expander (inside a form); returns
    the chosen values (check them with :func:`executor_config` on submit)."""
    with st.expander("Where the cells run (local or Ray)"):
        st.caption(
            "Local runs the cells here, one after another. Ray runs each cell as a task: on a local Ray "
            "started for this run, or on a cluster ('auto' or ray://host:10001) for the big grids. The "
            "numbers are the same either way; on 2 cores expect no speed-up (more machines give it)."
        )
        return params_form(ExecutorConfig, st.session_state.get(f"{key}_executor"), key=f"{key}-executor")


def executor_config(key: str, values: dict[str, Any]) -> ExecutorConfig:
    """Validated executor settings (remembered for the next form); Ray missing is one clear error."""
    cfg = checked(ExecutorConfig.from_dict(values, where="executor"))
    st.session_state[f"{key}_executor"] = cfg.to_dict()
    return cfg
