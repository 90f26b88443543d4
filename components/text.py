"""Showing attacker-controlled text safely: never as HTML, never as live Markdown."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$])")
# Streamlit's own codes, read from the Markdown source before it is parsed: ``:red[…]`` (coloured text: its opening
# colon is escaped) and ``:smile:`` / ``:material/home:`` (emoji and icons: the closing colon and any slash are
# escaped; Streamlit shows ``:material/home\:`` as ``:material_home:``), matched
# after the marks above were escaped (an ``_`` in a name reads ``\_``)
_DIRECTIVE = re.compile(r":(?=[A-Za-z][\w-]*\\\[)")
_SHORTCODE = re.compile(r"(:(?:[\w+/-]|\\_)+):")
# where Streamlit's renderer would turn plain text into a live link (GFM's literal autolinks: an e-mail address —
# name@host.domain, not ASR@K —, scheme://, www.). Its autolink pass reads the parsed text, after backslash escapes
# are gone, so an invisible WORD JOINER (U+2060) goes there instead: the text reads the same and no attacker address
# becomes clickable.
_LINK_START = re.compile(r"(?<=[\w.+-])(?=@[\w-]+\.\w)|(?<=[A-Za-z0-9])(?=://)|(?<=\bwww)(?=\.)", re.IGNORECASE)
WORD_JOINER = "\u2060"
# a whole URL (scheme://…, up to a space, a quote, a bracket or a table's bar; a sentence's closing mark stays
# outside): shown as a code span, which no autolink pass enters, so it reads and copies exactly (a word joiner inside
# it would travel with a copied address and break it: the app's own errors name the service URLs a user pastes)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'`\[\]()|]*[^\s<>\"'`\[\]()|.,;:!?]")


def _escape_words(text: str) -> str:
    text = _MD_SPECIAL.sub(r"\\\1", _LINK_START.sub(WORD_JOINER, text))
    return _SHORTCODE.sub(lambda m: m[1].replace("/", "\\/") + "\\:", _DIRECTIVE.sub(r"\\:", text))


def md_escape(text: str) -> str:
    """Corpus text or a file name as Markdown that renders literally in st.markdown/st.error: every Markdown mark
    backslash-escaped, Streamlit's colour, emoji and icon codes broken by an escaped colon, a URL as a code span
    (literal, copyable, never a link) and a word joiner where an e-mail address or a www. name would otherwise
    become a link."""
    text, out, at = str(text), [], 0
    for m in _URL.finditer(text):
        out += [_escape_words(text[at : m.start()]), md_code(m[0])]
        at = m.end()
    out.append(_escape_words(text[at:]))
    return "".join(out)


def short(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:—-(")
    return cut + "…"


def md_code(text: str) -> str:
    """``text`` as a Markdown inline code span, shown literally (no backslash escapes show through: a code span
    takes none): one line, fenced by more backticks than any run inside it."""
    body = " ".join(str(text).splitlines())
    runs = [len(r) for r in re.findall(r"`+", body)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def doc_plain(text: str) -> str:
    """A plugin's docstring line for a plain-text widget (a select box): reST's ````code```` marks dropped."""
    return str(text).replace("``", "")


def doc_markdown(text: str) -> str:
    """A plugin's docstring line as Markdown: its ````code```` spans as code, everything else escaped."""
    parts = str(text).split("``")
    return "".join(md_code(p) if i % 2 else md_escape(p) for i, p in enumerate(parts))


def marked_markdown(segments: list[tuple[str, bool]]) -> str:
    """Escaped Markdown of (text, copied) pieces, copied pieces highlighted; line breaks kept."""
    out = []
    for text, copied in segments:
        lines = [md_escape(x) for x in text.split("\n")]
        if copied:
            lines = [f":red-background[{x}]" if x.strip() else x for x in lines]
        out.append("  \n".join(lines))
    return "".join(out)


def shell_lines(command: str) -> str:
    """A one-line shell command as one option (with its value) a line, joined by backslashes: a narrow box wraps
    it between options, never inside one, and it still copies and runs as it is. Unparsable text is returned
    unchanged."""
    import shlex

    try:
        parts = shlex.split(command)
    except ValueError:
        return command
    lines: list[list[str]] = [[]]
    for p in parts:
        if p.startswith("--") and lines[-1]:
            lines.append([])
        lines[-1].append(p)
    return " \\\n  ".join(" ".join(shlex.quote(x) for x in line) for line in lines if line)
