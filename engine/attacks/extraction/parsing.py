"""Turn a system's answer into candidate chunks (what the attacker believes it extracted)."""

from __future__ import annotations

import json
import re

from ...metrics.overlap import rouge_l, stemmed_tokens


def _json_strings(text: str) -> list[str]:
    """String values of any JSON object/array embedded in the text (Worm asks for JSON)."""
    out: list[str] = []
    for m in re.finditer(r"[\[{]", text):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[m.start() :])
        except ValueError:
            continue
        stack = [obj]
        while stack:
            x = stack.pop()
            if isinstance(x, str):
                out.append(x)
            elif isinstance(x, dict):
                stack.extend(x.values())
            elif isinstance(x, list):
                stack.extend(x)
        if out:
            break
    return out


def parse_chunks(answer: str, *, min_words: int = 8, echo: str = "") -> list[str]:
    """Paragraph-like pieces of an answer with at least ``min_words`` words, JSON fields first.

    Lines are grouped into paragraphs at blank lines and list markers; a piece that mostly repeats
    the attacker's own query (``echo``, ROUGE-L recall ≥ 0.8 of the piece) is dropped.
    """
    pieces = _json_strings(answer)
    if not pieces:
        pieces = re.split(r"\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)]|\[\d+\]|Document|Context|Record)\b)", answer)
    out = []
    echo_t = stemmed_tokens(echo) if echo else ()
    for p in pieces:
        p = re.sub(r"^\s*(?:[-*•]|\d+[.)]|\[\d+\])\s*", "", p.strip())
        if len(p.split()) < min_words:
            continue
        if echo_t and rouge_l(stemmed_tokens(p), echo_t)[0] >= 0.8:
            continue
        out.append(p)
    return out


def is_duplicate(text: str, memory: list[str], threshold: float, containment: float = 1.01) -> bool:
    """RAG-Thief's deduplication: ROUGE-L F1 ≥ ``threshold`` against any remembered chunk, or the
    piece lies mostly inside one (ROUGE-L precision of the piece against it ≥ ``containment``).

    F1 alone misses fragments: an answer cut off halfway through a known chunk has F1 ≈ 0.67 against
    it and would be remembered (and reflected on) as a new chunk. ``containment`` > 1 disables the
    second test.
    """
    t = stemmed_tokens(text)
    for m in memory:
        _, precision, f1 = rouge_l(stemmed_tokens(m), t)
        if f1 >= threshold or precision >= containment:
            return True
    return False
