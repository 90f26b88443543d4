"""A run configuration's fields as command-line options, derived from its declaration.

Every field of a :class:`~engine.params.Params` config becomes ``--field-name`` (underscores as hyphens), with its
help, choices and registry from the field's metadata: the CLI never re-declares a field, so adding one to
``ExtractionConfig`` / ``PoisonConfig`` / ``AuditConfig`` adds its option (tests/contracts/test_config_options.py
checks both directions). Values are read as typed:

* numbers and text as given (the config checks bounds and names the field);
* ``true``/``false`` fields as ``--name`` / ``--no-name``;
* lists comma-separated (``none`` alone = empty);
* mappings as JSON, or ``@FILE`` with the JSON in a file;
* an optional field takes ``none`` for None.

Options left out are absent from :func:`config_values`, so the config's default (or a preset's value) applies.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import Any, Iterable, Mapping

from ..params import Params

NONE_WORDS = ("none", "None", "null")
GIVEN_NONE = type("GivenNone", (), {"__repr__": lambda self: "none"})()  # 'none' given (argparse's None: not given)


def option_flag(name: str) -> str:
    """``top_k`` → ``--top-k``."""
    return "--" + name.replace("_", "-")


def _kind(tp: Any) -> tuple[str, bool]:
    """(kind, optional) of a field type: kind is bool, int, float, str, list or mapping."""
    args = typing.get_args(tp)
    optional = type(None) in args
    inner = [a for a in args if a is not type(None)]
    base = inner[0] if optional and inner else tp
    origin = typing.get_origin(base)
    if base is bool:
        return "bool", optional
    if base in (int, float, str):
        return base.__name__, optional
    if origin is tuple:
        return "list", optional
    if base in (dict, Mapping) or origin in (dict, Mapping) or str(origin) == "<class 'collections.abc.Mapping'>":
        return "mapping", optional
    return "str", optional


def _optional_number(kind: str, zero_is_none: bool) -> Any:
    cast = int if kind == "int" else float

    def parse(text: str) -> Any:
        if text.strip() in NONE_WORDS:
            return GIVEN_NONE
        value = cast(text)
        return GIVEN_NONE if zero_is_none and value == 0 else value

    parse.__name__ = kind  # argparse names the type in its error: "invalid int value"
    return parse


def _help(f: Mapping[str, Any], kind: str, optional: bool, default: Any, zero_is_none: bool) -> str:
    text = (f.get("help") or "").rstrip(".")
    if f.get("registry"):
        text += f" (registered: {{registered:{f['registry']}}})"
    lo, hi = f.get("min"), f.get("max")
    if lo is not None or hi is not None:
        text += f" [{'' if lo is None else lo}..{'' if hi is None else hi}]"
    if kind == "list":
        text += " (comma-separated)"
    elif kind == "mapping":
        text += " (JSON, or @FILE)"
    if optional and kind in ("int", "float", "str"):
        text += " ('none': None" + ("; 0 too" if zero_is_none else "") + ")"
    if not (default is None or default is False or (isinstance(default, (str, tuple)) and not default)):
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        text += f" (default: {shown})"
    return text.replace("%", "%%")


def add_config_options(
    parser: argparse.ArgumentParser,
    cls: type[Params],
    *,
    skip: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    aliases: Mapping[str, tuple[str, ...]] | None = None,
    helps: Mapping[str, str] | None = None,
    metavars: Mapping[str, str] | None = None,
    zero_is_none: Iterable[str] = (),
) -> None:
    """One option per field of ``cls`` (except ``skip``). ``defaults``: the command's own default where it
    differs from the config's (shown in the help; applied by :func:`config_values`); ``aliases``: older
    spellings of a flag; ``helps``: the command's help for a field whose value it reads differently (a
    generator spec rather than a registry name) and ``metavars`` its value's name; ``zero_is_none``:
    optional fields where 0 also means None."""
    skip, defaults, aliases, helps = set(skip), dict(defaults or {}), dict(aliases or {}), dict(helps or {})
    zero = set(zero_is_none)
    for f in cls.describe():
        name = f["name"]
        if name in skip:
            continue
        kind, optional = _kind(f["type"])
        default = defaults.get(name, f["default"])
        kw: dict[str, Any] = {
            "dest": name,
            "default": None,
            "help": helps.get(name) or _help(f, kind, optional, default, name in zero),
        }
        if kind == "bool":
            kw["action"] = argparse.BooleanOptionalAction
        elif kind in ("int", "float"):
            kw["type"] = _optional_number(kind, name in zero) if optional else (int if kind == "int" else float)
            kw["metavar"] = "N" if kind == "int" else "X"
        elif f.get("choices") and kind == "str":  # the config refuses another value, naming the field
            kw["metavar"] = "{" + ",".join(map(str, f["choices"])) + "}"
        elif kind == "mapping":
            kw["metavar"] = "JSON"
        if name in dict(metavars or {}):
            kw["metavar"] = dict(metavars or {})[name]
        parser.add_argument(option_flag(name), *aliases.get(name, ()), **kw)


def config_values(
    args: Any,
    cls: type[Params],
    *,
    skip: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    none_is_a_value: Iterable[str] = (),
) -> dict[str, Any]:
    """The fields of ``cls`` given on the command line (``defaults``: the command's own defaults, applied where
    an option was not given), converted: lists split at commas, JSON mappings read (a bad one is a ConfigError
    naming its option), ``none`` as None (or, alone, as an empty list; ``none_is_a_value``: list fields where it is
    a value, e.g. a comparison's no-defense configuration)."""
    from .common import json_option

    skip = set(skip)
    out = {k: v for k, v in dict(defaults or {}).items() if k not in skip}
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        raw = getattr(args, f.name, None)
        if raw is None:
            continue
        if raw is GIVEN_NONE:
            out[f.name] = None
            continue
        kind, optional = _kind(typing.get_type_hints(cls)[f.name])
        if kind == "list" and isinstance(raw, str):  # 'none' alone: an empty list, unless it is one of the values
            empty = raw.strip() in NONE_WORDS and f.name not in set(none_is_a_value)
            out[f.name] = () if empty else tuple(x.strip() for x in raw.split(",") if x.strip())
        elif kind == "mapping" and isinstance(raw, str) and raw.strip() in NONE_WORDS:
            out[f.name] = None
        elif kind == "mapping" and isinstance(raw, str):
            got = json_option(raw, option_flag(f.name)[2:], '\'{"name": "value"}\'')
            if got is not None and not isinstance(got, dict):
                from ..errors import ConfigError

                raise ConfigError(f"{option_flag(f.name)} must be a JSON object, got {type(got).__name__}")
            out[f.name] = got
        elif kind == "str" and optional and raw.strip() in NONE_WORDS:
            out[f.name] = None
        else:
            out[f.name] = raw
    return out
