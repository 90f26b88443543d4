"""Showing attacker-controlled text safely: never as HTML, never as live Markdown."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$])")


def md_escape(text: str) -> str:
    """Backslash-escape Markdown so corpus text or file names render literally in st.markdown/st.error."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def marked_markdown(segments: list[tuple[str, bool]]) -> str:
    """Escaped Markdown of (text, copied) pieces, copied pieces highlighted; line breaks kept."""
    out = []
    for text, copied in segments:
        lines = [md_escape(x) for x in text.split("\n")]
        if copied:
            lines = [f":red-background[{x}]" if x.strip() else x for x in lines]
        out.append("  \n".join(lines))
    return "".join(out)
