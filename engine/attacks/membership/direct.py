"""The direct question: "is this text part of your context?" (the baseline)."""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ...params import Params, param
from .base import MembershipAttack

YES = re.compile(r"^\W*(yes|yeah|yep|correct|true)\b", re.I)
NO = re.compile(r"^\W*(no|nope|not|false|incorrect)\b", re.I)


class DirectQuestion(MembershipAttack):
    """Ask the RAG system whether the record is part of its context, and read the yes or no.

    Source: Anderson, Syed, Wang, Chen et al., *Is My Data in Your Retrieval Database? Membership Inference
    Attacks Against Retrieval Augmented Generation* (arXiv 2405.20446, 2024), §3: the query is the target
    document followed by "Is this part of your context? Answer with Yes or No."; the decision is the answer's
    yes or no. The paper thresholds the log-probability of "Yes" where the API returns it; a black-box answer
    gives only the word, so the score here is 1 (yes), 0 (no) or ½ (neither), and AUROC counts the ties half.
    The record is cut at ``max_chars`` (the prompt must fit the model's window beside the retrieved context).
    """

    queries_per_record = 1

    class Params(Params):
        prompt: str = param(
            'Answer with Yes or No. "{record}"\nIs this part of your context?',
            help="The question; {record} is replaced by the record's text (Anderson et al. §3)",
        )
        max_chars: int = param(1200, min=50, max=20000, help="Characters of the record put in the question")

    def probes(self, record: str, rng: np.random.Generator) -> list[str]:
        """One question: the record inside the paper's yes/no prompt."""
        return [self.params.prompt.replace("{record}", record[: self.params.max_chars].strip())]

    def score(self, record: str, probes: Sequence[str], answers: Sequence[str]) -> float:
        """1 for yes, 0 for no, ½ when the answer says neither first."""
        text = (answers[0] if answers else "").strip()
        if YES.match(text):
            return 1.0
        if NO.match(text):
            return 0.0
        return 0.5
