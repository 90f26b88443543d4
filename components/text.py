"""Showing attacker-controlled text safely: never as HTML, never as live Markdown."""
from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$])")


def md_escape(text: str) -> str:
    """Backslash-escape Markdown so corpus text or file names render literally in st.markdown/st.error."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))
