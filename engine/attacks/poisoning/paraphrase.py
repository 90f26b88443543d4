"""Paraphrase sources for the paraphrased-query attack (pluggable).

The attacker knows only a paraphrase of the victim's query (paper §3.2, Table 2; the paper
used GPT-4). :class:`RuleParaphraser` is the deterministic offline source shipped now:
synonym substitution over a fixed table plus a question-frame rewrite, seeded per query, so
runs are reproducible. It changes surface words while keeping the meaning, which is weaker
than an LLM paraphrase (fewer words change); an LLM paraphraser can be registered later.
"""

from __future__ import annotations

import hashlib
import random
import re

from ...params import Params, param
from ...registry import Registry

_SYNONYMS = {
    "patient": "individual",
    "patients": "individuals",
    "doctor": "physician",
    "physician": "doctor",
    "treatment": "therapy",
    "therapy": "treatment",
    "disease": "illness",
    "illness": "disease",
    "disorder": "condition",
    "condition": "disorder",
    "symptoms": "signs",
    "symptom": "sign",
    "increase": "rise",
    "increased": "elevated",
    "decrease": "reduction",
    "decreased": "reduced",
    "risk": "likelihood",
    "effect": "impact",
    "effects": "impacts",
    "associated": "linked",
    "association": "link",
    "cause": "lead to",
    "causes": "leads to",
    "common": "frequent",
    "most": "the majority of",
    "useful": "helpful",
    "valuable": "worthwhile",
    "improve": "enhance",
    "improves": "enhances",
    "reduce": "lower",
    "reduces": "lowers",
    "children": "kids",
    "elderly": "older adults",
    "women": "females",
    "men": "males",
    "study": "trial",
    "studies": "trials",
    "drug": "medication",
    "drugs": "medications",
    "medicine": "medication",
    "diagnosis": "identification",
    "diagnosed": "identified",
    "evaluate": "assess",
    "evaluated": "assessed",
    "outcome": "result",
    "outcomes": "results",
    "severe": "serious",
    "mild": "slight",
    "following": "after",
    "before": "prior to",
    "after": "following",
    "during": "throughout",
    "shows": "demonstrates",
    "show": "demonstrate",
    "likely": "probable",
    "best": "most appropriate",
    "first": "initial",
    "next": "subsequent",
    "step": "action",
    "management": "care",
    "pain": "discomfort",
    "blood": "blood",
    "high": "elevated",
    "low": "reduced",
    "used": "utilized",
    "use": "utilization",
    "help": "assist",
    "helps": "assists",
    "need": "require",
    "needs": "requires",
}
_FRAMES = ("{q}", "I would like to know: {q}", "Question: {q}", "Could you tell me this: {q}")


class Paraphraser:
    """Base class: ``paraphrase(text) -> text``."""

    Params: type[Params]

    def __init__(self, params: Params) -> None:
        self.params = params

    def paraphrase(self, text: str) -> str:
        """A rewording of ``text`` with the same meaning."""
        raise NotImplementedError


PARAPHRASERS: Registry[Paraphraser] = Registry("paraphraser")


@PARAPHRASERS.register("rule-based")
class RuleParaphraser(Paraphraser):
    """Deterministic synonym substitution plus a question-frame rewrite (offline stand-in).

    Source: stands in for the GPT-4 paraphrases of the universal-poisoning paper, §3.2/Table 2.
    """

    class Params(Params):
        rate: float = param(0.7, min=0.0, max=1.0, help="Share of replaceable words that are replaced")
        seed: int = param(0, min=0, help="Seed (mixed with the query text)")

    def paraphrase(self, text: str) -> str:
        """Swaps about ``rate`` of the known words for synonyms and picks a question frame; deterministic for a given
        seed and text."""
        h = int(hashlib.sha256(f"{self.params.seed}|{text}".encode()).hexdigest()[:8], 16)
        rng = random.Random(h)

        def swap(m: re.Match) -> str:
            w = m.group(0)
            rep = _SYNONYMS.get(w.lower())
            if rep is None or rng.random() > self.params.rate:
                return w
            return rep.capitalize() if w[0].isupper() else rep

        body = re.sub(r"[A-Za-z]+", swap, text)
        frame = _FRAMES[rng.randrange(len(_FRAMES))]
        return frame.format(q=body[0].lower() + body[1:] if frame != "{q}" and body else body)
