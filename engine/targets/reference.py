"""Which reference chunk a context returned by a target is.

A service that reports its sources gives their text (and perhaps an id of its own store); the leakage
metrics count chunks of the *reference* knowledge base (the user's files, or the collection read back).
A context is matched to a reference chunk by, in order: its id (when the target's ids are the reference's,
as for a Chroma collection read as the reference), its exact text (whitespace-normalised), else the
reference chunk that holds the largest in-order share of its words (LCS over stemmed tokens ≥ ``min_share``,
0.8 by default: a service that chunks differently still maps each context to the chunk it came from). A
context that matches nothing is kept under an ``ext:`` id of its own, outside the reference.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Sequence

from ..corpora import Corpus
from ..metrics.overlap import lcs_bound, rouge_l, stemmed_tokens


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def external_id(text: str) -> str:
    """The id of a context outside the reference: ``ext:`` and 10 hex digits of its text's hash."""
    return "ext:" + hashlib.sha1(_norm(text).encode()).hexdigest()[:10]


class ContextMatcher:
    """Maps a target's contexts to reference chunk ids (see the module docstring)."""

    def __init__(self, corpus: Corpus | None, *, min_share: float = 0.8) -> None:
        self.corpus = corpus
        docs = corpus.documents if corpus is not None else ()
        self.ids = {d.id for d in docs}
        self.by_text = {_norm(d.text): d.id for d in docs}
        self.min_share = min_share
        self._stems = {d.id: stemmed_tokens(d.text) for d in docs}
        self._bags = {i: Counter(s) for i, s in self._stems.items()}
        self._memo: dict[str, str] = {}

    def match(self, text: str, cid: str = "") -> str:
        """The reference id of one context (``ext:…`` when none matches)."""
        if cid and cid in self.ids:
            return cid
        key = _norm(text)
        if key in self._memo:
            return self._memo[key]
        found = self.by_text.get(key) or self._closest(text) or external_id(text)
        self._memo[key] = found
        return found

    def _closest(self, text: str) -> str | None:
        stems = stemmed_tokens(text)
        if not stems or not self._stems:
            return None
        bag, need = Counter(stems), self.min_share * len(stems)
        best, best_share = None, 0.0
        for i, ref in self._stems.items():
            if sum((self._bags[i] & bag).values()) < need or lcs_bound(stems, ref) < need:
                continue
            share = rouge_l(stems, ref)[0]  # recall of the context's tokens inside the chunk
            if share >= self.min_share and share > best_share:
                best, best_share = i, share
        return best

    def match_all(self, items: Sequence[tuple[str, str]]) -> list[str]:
        """Reference ids of (text, id) pairs, in order."""
        return [self.match(t, i) for t, i in items]
