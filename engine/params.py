"""Typed, validated plugin parameters.

Each plugin declares a frozen ``Params`` dataclass whose fields carry defaults, bounds,
choices and help text in their metadata (via :func:`param`). The same metadata drives the
UI widgets, the YAML presets and the run manifest. Values are validated on construction,
so an invalid value never reaches a plugin.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping, Self

from .errors import ConfigError


def param(
    default: Any,
    *,
    help: str,
    min: float | None = None,
    max: float | None = None,
    choices: tuple | None = None,
    label: str | None = None,
    group: str = "",
    registry: str | None = None,
) -> Any:
    """A dataclass field with UI/validation metadata; ``group`` names the section a form shows it in ('' = the
    main section; e.g. a target's connection limits go under "Connection"); ``registry`` the kind of plugin the
    field names (a key of ``engine.cli.common.REGISTRIES``: its help lists what is registered)."""
    meta = {
        "help": help,
        "min": min,
        "max": max,
        "choices": choices,
        "label": label,
        "group": group,
        "registry": registry,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("mutable defaults are not allowed; use a tuple")
    return field(default=default, metadata=meta)


def _check_type(name: str, value: Any, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if (
        origin is typing.Union
        or (origin is not None and str(origin) == "<class 'types.UnionType'>")
        or type(tp).__name__ == "UnionType"
    ):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _check_type(name, value, a)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"{name}: invalid value {value!r}")
    if tp is Mapping or origin in (Mapping, dict, typing.Mapping) or str(origin) == "<class 'collections.abc.Mapping'>":
        if isinstance(value, str):  # a form's JSON box whose text did not parse
            raise ConfigError(f'{name}: not valid JSON: {value!r} — write a mapping such as {{"key": "value"}}')
        if not isinstance(value, Mapping):
            raise ConfigError(f"{name}: expected a mapping of keys to values, got {value!r}")
        return value
    if origin is tuple:
        if isinstance(value, str):
            value = tuple(v.strip() for v in value.split(",") if v.strip())
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name}: expected a list, got {value!r}")
        inner = args[0] if args else Any
        return tuple(_check_type(name, v, inner) for v in value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{name}: expected true/false, got {value!r}")
    if tp in (int, float) and isinstance(value, str):
        try:
            value = tp(value.strip())
        except ValueError:
            raise ConfigError(f"{name}: expected {'an integer' if tp is int else 'a number'}, got {value!r}") from None
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(f"{name}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{name}: expected a number, got {value!r}")
        if not math.isfinite(value):  # NaN passes every bound (it compares false); ±inf means nothing here
            raise ConfigError(f"{name}: expected a finite number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: expected text, got {value!r}")
        return value
    return value


def out_of_range(name: str, value: Any, lo: Any, hi: Any) -> str | None:
    """The one line naming a number outside ``[lo, hi]`` ("rounds: 0 is below the minimum 1"), else None; the
    app's forms word their checks with it too."""
    if lo is not None and value < lo:
        return f"{name}: {value} is below the minimum {lo}"
    if hi is not None and value > hi:
        return f"{name}: {value} is above the maximum {hi}"
    return None


@dataclass(frozen=True)
class Params:
    """Base class: validates types, bounds and choices of every field on construction.

    Subclasses are made frozen dataclasses automatically (no decorator needed).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True)(cls)

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            value = _check_type(f.name, value, hints.get(f.name, Any))
            object.__setattr__(self, f.name, value)
            meta = f.metadata
            if value is None:
                continue
            if meta.get("choices") is not None:
                items = value if isinstance(value, tuple) else (value,)
                for v in items:
                    if v not in meta["choices"]:
                        raise ConfigError(f"{f.name}: {v!r} is not one of {', '.join(map(str, meta['choices']))}")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                problem = out_of_range(f.name, value, meta.get("min"), meta.get("max"))
                if problem:
                    raise ConfigError(problem)
        self.validate()

    def validate(self) -> None:
        """Cross-field checks; override and raise ConfigError."""

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None, *, where: str = "") -> Self:
        """Build and validate from a mapping (None: all defaults); an unknown key or a bad value is a ConfigError
        prefixed with ``where``."""
        values = dict(values or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            prefix = f"{where}: " if where else ""
            raise ConfigError(f"{prefix}unknown parameter {unknown[0]!r} (known: {', '.join(sorted(known)) or 'none'})")
        try:
            return cls(**values)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}" if where else str(e)) from None

    def to_dict(self) -> dict[str, Any]:
        """Field values as a plain dict (tuples become lists), the form written to presets and manifests."""
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in dataclasses.fields(self)
        }

    def replace(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` applied (the original is frozen and unchanged)."""
        return type(self).from_dict({**self.to_dict(), **changes})

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """Field descriptions for UI widget generation."""
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            out.append(
                {
                    "name": f.name,
                    "type": hints.get(f.name),
                    "default": f.default,
                    **{k: v for k, v in f.metadata.items()},
                }
            )
        return out
