"""MBA: mask the words of a record that are hard to guess, and score how many the RAG system fills in."""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from ...params import Params, param
from .base import MembershipAttack

WORD = re.compile(r"\S+")
CORE = re.compile(r"^\W*(.*?)\W*$", re.S)  # a word without its surrounding punctuation
ANSWER = re.compile(r"\[?\s*mask[\s_-]*(\d+)\s*\]?\s*[:=\-]\s*(.+)", re.I)
# English function words: never masked (any model predicts them without the document)
STOP = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being has have had do does
    did not no nor so than then that this these those it its he she they them his her their we our you your i me my
    will would can could should may might must shall into onto over under about after before while during per via
    also very just only any some all each both either neither such what which who whom whose when where why
    how""".split()
)


def _norm(word: str) -> str:
    """Lower-cased, surrounding punctuation stripped: how a mask's answer is compared with the word."""
    m = CORE.match(word.strip().lower())
    return m.group(1) if m else ""


class MaskBased(MembershipAttack):
    """Mask the record's hardest words; a member's masks are filled from the retrieved record itself.

    Source: Liu, Zhang and Long, *Mask-based Membership Inference Attacks for Retrieval-Augmented Generation*
    (arXiv 2410.20142, WWW 2025), §3: a proxy language model ranks each word of the target document by how hard it
    is to predict from its prefix; the ``masks`` hardest words (function words, short words and neighbours of
    another mask excluded) are replaced by ``[MASK_1]`` … ``[MASK_M]``; the masked document goes to the RAG system
    with a request to give each mask's value; the share of masks filled with the original word is the membership
    score (the paper thresholds it; AUROC here sweeps every threshold). A mask's answer is read from its
    ``[MASK_i]: word`` line; with ``match = anywhere`` (the default here) a mask also counts as filled when its
    word appears anywhere in the answer — a 0.5B model often repeats the retrieved passage instead of the format, and
    a non-member's identifiers cannot appear in an answer by chance. The masked text still retrieves the record
    when it is a member, so its exact words are in the context; a non-member's rare words (names, numbers, drug
    doses) cannot be guessed.

    Choices where the paper leaves room (each a parameter): a word's difficulty is the sum of its tokens' negative
    log-probabilities under the proxy model (``difficulty = proxy-lm``; the offline SmolLM2-135M by default), or,
    with no proxy model, its length and whether it holds a digit or a capital (``rule``); the paper's fragmented-word
    merging is the proxy tokenizer's own (a word's tokens are scored together) and its misspelling correction is
    left out (the knowledge bases here are generated or edited text).
    """

    queries_per_record = 1
    suggested_model = "qwen2.5-1.5b"  # Qwen2.5-0.5B repeats the masked text instead of filling it (docs/results.md)

    class Params(Params):
        masks: int = param(6, min=1, max=50, help="Words masked per record (M)")
        difficulty: str = param(
            "proxy-lm",
            choices=("proxy-lm", "rule"),
            help="How hard a word is: the proxy model's surprisal, or a rule (length, digits, capitals)",
        )
        proxy_model: str = param(
            "smollm2-135m", help="The attacker's own small local model that ranks the words (difficulty proxy-lm)"
        )
        max_words: int = param(220, min=20, max=5000, help="Words of the record put in the question")
        match: str = param(
            "anywhere",
            choices=("slot", "anywhere"),
            help="A mask counts as filled when its word is the answer given for that mask (slot, the paper's), or "
            "appears anywhere in the answer (small models rarely keep the [MASK_i]: format)",
        )
        prompt: str = param(
            "Below is a text in which some words are replaced by [MASK_1], [MASK_2], ... Using your context, give "
            "the original word of every mask, one per line, as [MASK_i]: word.\n\n{masked}",
            help="The question; {masked} is replaced by the masked record (Liu et al. §3)",
        )

    def __init__(self, params: Params, ctx: Any = None) -> None:
        super().__init__(params, ctx)
        self._masked: dict[str, tuple[str, list[str]]] = {}

    # ------------------------------------------------------------------ the masks

    def _proxy(self) -> Any:
        if self.ctx.proxy_llm is None:
            from ...generators import GENERATORS

            self.ctx.proxy_llm = GENERATORS.create("local", {"model": self.params.proxy_model})
        return self.ctx.proxy_llm

    def _surprisal(self, words: list[str]) -> np.ndarray:
        """Per word: the sum of its tokens' negative log-probabilities given the record's prefix (proxy model); a
        token belongs to the word its first non-space byte falls in."""
        text = " ".join(words).encode("utf-8")
        starts, pos = [], 0
        for w in words:
            starts.append(pos)
            pos += len(w.encode("utf-8")) + 1
        ends = [s + len(w.encode("utf-8")) for s, w in zip(starts, words)]
        out = np.zeros(len(words))
        at = 0
        for piece, lp in self._proxy().token_pieces(" ".join(words), max_tokens=4 * len(words) + 8):
            first = at + (len(piece) - len(piece.lstrip()))
            at += len(piece)
            if first >= len(text):
                break
            w = int(np.searchsorted(ends, first, side="right"))
            if w < len(words) and starts[w] <= first:
                out[w] += -lp
        return out

    @staticmethod
    def _rule(words: list[str]) -> np.ndarray:
        return np.array(
            [
                len(_norm(x)) + 4 * any(c.isdigit() for c in x) + 2 * (x[:1].isupper() and i > 0)
                for i, x in enumerate(words)
            ],
            dtype=float,
        )

    def mask(self, record: str) -> tuple[str, list[str]]:
        """(the masked text, the original words in mask order); cached per record."""
        if record in self._masked:
            return self._masked[record]
        words = WORD.findall(record)[: self.params.max_words]
        hard = self._surprisal(words) if self.params.difficulty == "proxy-lm" else self._rule(words)
        eligible = [i for i, x in enumerate(words) if len(_norm(x)) >= 3 and _norm(x) not in STOP]
        chosen: list[int] = []
        for i in sorted(eligible, key=lambda i: (-hard[i], i)):
            if all(abs(i - j) > 1 for j in chosen):
                chosen.append(i)
            if len(chosen) == self.params.masks:
                break
        chosen.sort()
        out, answers = list(words), []
        for n, i in enumerate(chosen, 1):
            m = CORE.match(words[i])
            core = m.group(1) if m else words[i]
            out[i] = words[i].replace(core, f"[MASK_{n}]", 1)
            answers.append(core)
        self._masked[record] = (" ".join(out), answers)
        return self._masked[record]

    # ------------------------------------------------------------------ the contract

    def probes(self, record: str, rng: np.random.Generator) -> list[str]:
        """One question: the masked record inside the fill-in request."""
        masked, _ = self.mask(record)
        return [self.params.prompt.replace("{masked}", masked)]

    def score(self, record: str, probes: Sequence[str], answers: Sequence[str]) -> float:
        """The share of masks whose original word the answer gives (case and punctuation ignored): in the mask's own
        ``[MASK_i]:`` line, or anywhere in the answer (``match``)."""
        _, truth = self.mask(record)
        if not truth:
            return 0.0
        text = answers[0] if answers else ""
        if self.params.match == "anywhere":  # every word of the answer counts, its mask lines included
            said_anywhere = {_norm(w) for w in WORD.findall(text)}
            return sum(_norm(w) in said_anywhere for w in truth) / len(truth)
        given: dict[int, str] = {}
        for line in text.splitlines():
            m = ANSWER.search(line)
            if m and int(m.group(1)) not in given:
                given[int(m.group(1))] = m.group(2)
        return sum(
            _norm(w) in {_norm(x) for x in WORD.findall(given.get(n, ""))} for n, w in enumerate(truth, 1)
        ) / len(truth)
