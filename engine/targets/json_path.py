"""A small JSON path: where in a service's response the answer and the retrieved contexts are.

Syntax (a subset of JSONPath that covers what RAG services return): keys separated by dots, list items by
``[n]`` (negative counts from the end), every item of a list by ``[*]``, a key with dots or spaces as
``["a key"]``; a leading ``$`` or ``$.`` is optional. Examples: ``answer``, ``data.result.text``,
``choices[0].message.content``, ``sources[*].page_content``, ``$["source documents"][*]``.

A path that does not lead anywhere raises :class:`PathError` naming the step that failed, what was there
instead (the keys of the object, the length of the list) and the first 200 characters of the response, so
the user can fix the path from the message alone.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import ConfigError

_TOKEN = re.compile(r'\.?([^.\[\]"]+)|\[(-?\d+)\]|\[\*\]|\["([^"]*)"\]|\[\'([^\']*)\'\]')
WILDCARD = object()


class PathError(ConfigError):
    """A JSON path that is not in the response (or not a valid path)."""


def parse_path(path: str) -> list[Any]:
    """The steps of ``path``: keys (str), indexes (int) and :data:`WILDCARD`; a malformed path is a
    :class:`PathError`."""
    p = (path or "").strip()
    if p.startswith("$"):
        p = p[1:]
    steps: list[Any] = []
    pos = 0
    while pos < len(p):
        m = _TOKEN.match(p, pos)
        if not m or m.end() == pos:
            raise PathError(
                f"JSON path {path!r}: cannot read it at character {pos + 1} ({p[pos : pos + 10]!r}); "
                "write keys with dots and list items as [0] or [*], e.g. choices[0].message.content"
            )
        key, index, dq, sq = m.groups()
        if key is not None:
            steps.append(key.strip())
        elif index is not None:
            steps.append(int(index))
        elif dq is not None or sq is not None:
            steps.append(dq if dq is not None else sq)
        else:
            steps.append(WILDCARD)
        pos = m.end()
    return steps


def preview(body: Any, n: int = 200) -> str:
    """The first ``n`` characters of a response body (text or parsed JSON), on one line."""
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text[:n] + ("…" if len(text) > n else "")


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = list(value)[:12]
        return "an object with keys " + (", ".join(map(str, keys)) or "(none)") + (" …" if len(value) > 12 else "")
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    return f"a {type(value).__name__} value"


def _step_name(steps: list[Any], i: int) -> str:
    out = ""
    for s in steps[:i]:
        out += "[*]" if s is WILDCARD else f"[{s}]" if isinstance(s, int) else (f".{s}" if out else s)
    return out or "the top level"


def extract(body: Any, path: str, *, what: str = "path") -> Any:
    """The value at ``path`` in ``body`` (a list when the path has ``[*]``). ``what`` names the parameter in
    the error (e.g. ``answer_path``)."""
    steps = parse_path(path)

    def walk(value: Any, i: int) -> Any:
        if i == len(steps):
            return value
        s = steps[i]
        where = _step_name(steps, i)
        if s is WILDCARD:
            if not isinstance(value, list):
                raise PathError(
                    f"{what} {path!r}: [*] needs a list at {where}, found {_describe(value)}; "
                    f"the response began: {preview(body)}"
                )
            return [walk(v, i + 1) for v in value]
        if isinstance(s, int):
            if not isinstance(value, list):
                raise PathError(
                    f"{what} {path!r}: [{s}] needs a list at {where}, found {_describe(value)}; "
                    f"the response began: {preview(body)}"
                )
            if not -len(value) <= s < len(value):
                raise PathError(
                    f"{what} {path!r}: item [{s}] is not in the list at {where} ({len(value)} item(s));"
                    f" the response began: {preview(body)}"
                )
            return walk(value[s], i + 1)
        if not isinstance(value, dict):
            raise PathError(
                f"{what} {path!r}: key {s!r} needs an object at {where}, found {_describe(value)}; "
                f"the response began: {preview(body)}"
            )
        if s not in value:
            raise PathError(
                f"{what} {path!r}: key {s!r} not found at {where} ({_describe(value)}); "
                f"the response began: {preview(body)}"
            )
        return walk(value[s], i + 1)

    return walk(body, 0)


def first_key(item: Any, names: tuple[str, ...]) -> Any:
    """The value of the first of ``names`` (each may be a dotted path) present in ``item``, else None."""
    if not isinstance(item, dict):
        return None
    for name in names:
        try:
            return extract(item, name)
        except PathError:
            continue
    return None
