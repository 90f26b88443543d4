"""Text overlap between private chunks and generated outputs (ROUGE-L, verbatim runs), made fast.

Tokens are rouge-score's: lower-cased alphanumeric words, Porter-stemmed for ROUGE (``stem=True``)
and unstemmed for verbatim copying. ROUGE-L is rouge-score's own LCS scorer
(``rouge_scorer._score_lcs``) on pre-tokenized text; a pair is skipped without computing the LCS
when the bag-of-words overlap — an upper bound of the LCS — already rules the threshold out.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Sequence


@lru_cache(maxsize=2)
def _tokenizer(stem: bool):
    """rouge-score's tokenizer, imported on first use (rouge-score imports nltk: 1.4 s at every start else)."""
    from rouge_score import tokenizers

    return tokenizers.DefaultTokenizer(use_stemmer=stem)


@lru_cache(maxsize=200_000)
def stemmed_tokens(text: str) -> tuple[str, ...]:
    """rouge-score tokens of ``text``, Porter-stemmed (for ROUGE-L); memoised."""
    return tuple(_tokenizer(True).tokenize(text))


@lru_cache(maxsize=200_000)
def word_tokens(text: str) -> tuple[str, ...]:
    """rouge-score tokens of ``text``, unstemmed (for verbatim runs); memoised."""
    return tuple(_tokenizer(False).tokenize(text))


def lcs_bound(a: Sequence[str], b: Sequence[str]) -> int:
    """Multiset overlap of two token lists: an upper bound on their LCS length."""
    return sum((Counter(a) & Counter(b)).values())


def rouge_l(reference: Sequence[str], candidate: Sequence[str]) -> tuple[float, float, float]:
    """(recall, precision, F1) of ROUGE-L, reference = the private chunk, candidate = the output."""
    if not reference or not candidate:
        return 0.0, 0.0, 0.0
    from rouge_score import rouge_scorer

    s = rouge_scorer._score_lcs(list(reference), list(candidate))
    return s.recall, s.precision, s.fmeasure


def rouge_l_recall_at_least(reference: Sequence[str], candidate: Sequence[str], tau: float) -> float | None:
    """ROUGE-L recall when it can reach ``tau`` (None when the bag-of-words bound already rules it out)."""
    if not reference or lcs_bound(reference, candidate) < tau * len(reference):
        return None
    return rouge_l(reference, candidate)[0]


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    """The set of ``n``-token windows of ``tokens``."""
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def shares_verbatim_run(a: Sequence[str], b: Sequence[str], n: int) -> bool:
    """True when ``a`` and ``b`` share a run of at least ``n`` consecutive identical tokens."""
    if len(a) < n or len(b) < n:
        return False
    return not ngrams(a, n).isdisjoint(ngrams(b, n))


def shared_spans(source: str, output: str, min_words: int = 4) -> list[tuple[int, int]]:
    """Character spans of ``source`` covered by runs of ≥ ``min_words`` words that also occur, in
    order, in ``output`` (case-insensitive) — what the UI marks as copied."""
    import re

    toks = [(m.start(), m.end(), m.group().lower()) for m in re.finditer(r"[A-Za-z0-9]+", source)]
    grams = ngrams([t.lower() for t in re.findall(r"[A-Za-z0-9]+", output)], min_words)
    covered = [False] * len(toks)
    for i in range(len(toks) - min_words + 1):
        if tuple(t[2] for t in toks[i : i + min_words]) in grams:
            for j in range(i, i + min_words):
                covered[j] = True
    spans: list[tuple[int, int]] = []
    for (s, e, _), c in zip(toks, covered):
        if not c:
            continue
        if spans and not source[spans[-1][1] : s].strip(" \t,.;:-()'\"") and covered:
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))
    return spans
