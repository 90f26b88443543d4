"""One form for any plugin's ``Params``: every registry the UI offers renders through it.

Labels, help, bounds and choices come from the dataclass metadata (``engine.params.param``), so a plugin
registered in one file shows up with its parameters on every page where its kind appears, with no page edit.
"""

from __future__ import annotations

import json
import typing
from typing import Any, Iterable, Mapping

import streamlit as st

from engine.params import Params
from engine.registry import registered

from components.numbers import with_bounds


def _base_type(tp: Any) -> Any:
    """int for Optional[int] etc."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) is not None and args and typing.get_origin(tp) is not tuple:
        return args[0]
    return tp


def new_form_generation() -> None:
    """Call when settings change from outside the widgets (a preset was loaded): every keyed form widget
    is created anew, so it shows the new values instead of what was typed before."""
    st.session_state["form_generation"] = st.session_state.get("form_generation", 0) + 1


ACRONYMS = {"url": "URL", "api": "API", "id": "ID", "json": "JSON", "http": "HTTP", "pii": "PII", "llm": "LLM"}


def _label(name: str) -> str:
    """A field's label from its name: ``ingest_url`` → "Ingest URL"."""
    words = name.split("_")
    return " ".join(ACRONYMS.get(w, w.capitalize() if i == 0 else w) for i, w in enumerate(words))


def field_groups(cls: type[Params]) -> list[str]:
    """The form sections of a Params class in field order ('' first: the main section)."""
    groups = list(dict.fromkeys(f.get("group") or "" for f in cls.describe()))
    return sorted(groups, key=lambda g: g != "")


def params_form(
    cls: type[Params],
    values: Mapping[str, Any] | None = None,
    *,
    skip: Iterable[str] = (),
    container: Any = None,
    key: str | None = None,
    group: str | None = None,
    mappings_as_json: bool = False,
    only: Iterable[str] | None = None,
    labels: Mapping[str, str] | None = None,
    choices: Mapping[str, list[str]] | None = None,
) -> dict[str, Any]:
    """One widget per field of a Params dataclass (label, help, bounds and choices from its metadata);
    returns the values the user chose. Safe inside a form. ``key`` (e.g. the plugin's name) keeps the
    widgets of two plugins with the same parameter apart; with it, a loaded preset shows up after
    :func:`new_form_generation`. ``group``: only the fields of that section (see :func:`field_groups`);
    ``mappings_as_json``: mapping fields get a JSON text box (its text is returned as typed when it is not
    valid JSON, so validating the Params names the field); ``only``: just these fields; ``labels``: a page's own
    label for a field; ``choices``: a page's narrower list for a field. A text field that names a registry
    (``param(registry=...)``) is a choice of the names registered there (the current value kept when it is none
    of them, e.g. a model path from a preset)."""
    box = container or st
    values = dict(values or {})
    skip = set(skip)
    only = None if only is None else set(only)
    labels = dict(labels or {})
    narrowed = dict(choices or {})
    gen = st.session_state.get("form_generation", 0)
    out: dict[str, Any] = {}
    for f in cls.describe():
        name = f["name"]
        if (
            name in skip
            or (only is not None and name not in only)
            or (group is not None and (f.get("group") or "") != group)
        ):
            continue
        label = labels.get(name) or f.get("label") or _label(name)
        value = values.get(name, f["default"])
        tp = _base_type(f["type"])
        lo, hi = f.get("min"), f.get("max")
        kw = {"help": with_bounds(f.get("help"), lo, hi), "key": f"pf.{key}.{name}.{gen}" if key else None}
        if (f.get("registry") or name in narrowed) and tp is str:
            names = list(narrowed.get(name) or registered(f["registry"]))
            names += [value] if value and value not in names else []
            out[name] = box.selectbox(label, names, index=names.index(value) if value in names else 0, **kw)
        elif f.get("choices"):
            names = list(f["choices"])
            out[name] = box.selectbox(label, names, index=names.index(value) if value in names else 0, **kw)
        elif tp is bool:
            out[name] = box.checkbox(label, value=bool(value), **kw)
        elif tp is int:
            out[name] = int(
                box.number_input(  # no min/max: see components/numbers.py
                    label,
                    value=int(value if value is not None else (lo or 0)),
                    step=1,
                    **kw,
                )
            )
        elif tp is float:
            out[name] = float(
                box.number_input(
                    label,
                    value=float(value if value is not None else (lo or 0.0)),
                    format="%.3f",
                    **kw,
                )
            )
        elif typing.get_origin(tp) is tuple:
            text = box.text_input(label, ", ".join(map(str, value or ())), **kw)
            out[name] = tuple(v.strip() for v in text.split(",") if v.strip())
        elif (typing.get_origin(tp) is not None or tp in (dict, Mapping)) and mappings_as_json:
            shown = value if isinstance(value, str) else (json.dumps(value) if value else "")  # as typed when invalid
            text = box.text_area(label, shown, height=68, placeholder='{"key": "value"}', **kw)
            try:
                out[name] = json.loads(text) if text.strip() else None
            except ValueError:
                out[name] = text
        elif typing.get_origin(tp) is not None or tp in (dict, Mapping):
            continue  # nested mappings (e.g. a plugin's own sub-parameters) have no widget; presets set them
        else:
            text = str(value if value is not None else "")
            out[name] = (
                box.text_area(label, text, height=90, **kw) if len(text) > 60 else box.text_input(label, text, **kw)
            )
    return out


def field_input(
    cls: type[Params], name: str, value: Any, *, label: str | None = None, container: Any = None, key: str | None = None
) -> Any:
    """One widget for one field of a config or plugin ``Params`` (bounds, choices and help from its declaration):
    a page's own layout with the declaration's limits, never a re-typed literal."""
    got = params_form(
        cls, {name: value}, only=(name,), labels={name: label} if label else None, container=container, key=key
    )
    return got[name]


def changed_only(cls: type[Params], chosen: Mapping[str, Any]) -> dict[str, Any]:
    """The values that differ from the plugin's defaults (what a config needs to store)."""
    defaults = {f["name"]: f["default"] for f in cls.describe()}
    return {k: v for k, v in chosen.items() if defaults.get(k) != v}


def registry_forms(
    registry: Any,
    names: Iterable[str],
    values: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    skip: Iterable[str] = (),
    title: str = "{name}",
) -> dict[str, dict[str, Any]]:
    """A parameter form per plugin of ``registry`` (in ``names``), each under its own heading; returns
    ``{name: values that differ from its defaults}``."""
    values = dict(values or {})
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        cls = registry.get(name).Params
        if not [f for f in cls.describe() if f["name"] not in set(skip)]:
            continue
        st.markdown(f"**{title.format(name=name)}**")
        got = params_form(cls, values.get(name), skip=skip, key=f"{registry.kind}.{name}")
        changed = changed_only(cls, got)
        if changed:
            out[name] = changed
    return out
