"""Request templates: a JSON body (or a URL) with ``{query}``, ``{session}``, ``{id}``, ``{text}`` and ``{ids}``.

A body template is JSON text whose strings may hold placeholders, e.g. ``{"question": "{query}",
"conversation_id": "{session}"}``. It is parsed once, and each request fills the placeholders inside the
parsed strings, so an attacker's query with quotes, backslashes or newlines always yields valid JSON (no
string pasting). A string that is exactly one placeholder takes the value whole: ``"{ids}"`` becomes a JSON
list, ``"{metadata}"`` an object. In a URL the values are percent-encoded.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping
from urllib.parse import quote

from ..errors import ConfigError

PLACEHOLDERS = ("query", "session", "id", "ids", "text", "metadata")
_PH = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


def parse_body(template: str, *, what: str, needs: tuple[str, ...] = ()) -> Any:
    """The parsed JSON template (None for an empty one); each placeholder in ``needs`` must appear. A template
    that is not JSON, or lacks a needed placeholder, is one ConfigError naming ``what``."""
    t = (template or "").strip()
    if not t:
        if needs:
            raise ConfigError(f"{what}: give a JSON body with {', '.join('{' + n + '}' for n in needs)}")
        return None
    try:
        parsed = json.loads(t)
    except ValueError as e:
        raise ConfigError(
            f"{what}: not valid JSON ({e.msg} at character {e.pos + 1}); write it as JSON with the "
            f'placeholders inside strings, e.g. {{"question": "{{query}}"}}'
        ) from None
    found = set(_PH.findall(t))
    missing = [n for n in needs if n not in found]
    if missing:
        raise ConfigError(
            f"{what}: the template has no {', '.join('{' + m + '}' for m in missing)} "
            f"(where the {'query' if 'query' in missing else missing[0]} goes)"
        )
    return parsed


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """``template`` (parsed JSON) with its placeholders replaced by ``values`` (missing ones become '')."""
    if isinstance(template, str):
        whole = _PH.fullmatch(template)
        if whole:
            return values.get(whole.group(1), "")
        return _PH.sub(lambda m: _as_text(values.get(m.group(1), "")), template)
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    if isinstance(template, dict):
        return {fill(k, values) if isinstance(k, str) else k: fill(v, values) for k, v in template.items()}
    return template


def fill_url(url: str, values: Mapping[str, Any]) -> str:
    """``url`` with its placeholders replaced by percent-encoded values."""
    return _PH.sub(lambda m: quote(_as_text(values.get(m.group(1), "")), safe=""), url)


def _as_text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def uses(template_text: str, name: str) -> bool:
    """Whether the template text (a body or a URL) holds the placeholder ``{name}``."""
    return "{" + name + "}" in (template_text or "")
