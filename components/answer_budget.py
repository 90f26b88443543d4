"""The answer-budget choice (``ExtractionConfig.answer_budget``) as one select box, the same in the extraction lab
and on the comparison page: its choices come from the config's declaration."""

from __future__ import annotations

from typing import Any

from engine.config import ExtractionConfig

LABELS = {"context": "covers the retrieved context", "fixed": "fixed (tokens per answer)"}
HELP = (
    "covers the retrieved context: each answer may be as long as its context (never shorter than the tokens "
    "per answer), so CRR is not capped by the budget. fixed: the tokens per answer, which caps what an answer "
    "can copy (and keeps rounds short)."
)


def answer_budget_choices() -> list[str]:
    """The budgets ``ExtractionConfig`` accepts, in its declared order."""
    return list(next(f["choices"] for f in ExtractionConfig.describe() if f["name"] == "answer_budget"))


def answer_budget_input(container: Any, value: str | None = None) -> str:
    """A select box for the answer budget in ``container`` (a column or ``st``), set to ``value`` (default: the
    config's default); returns the choice."""
    budgets = answer_budget_choices()
    default = value if value in budgets else ExtractionConfig().answer_budget
    return container.selectbox(
        "Answer budget",
        budgets,
        index=budgets.index(default),
        format_func=lambda b: LABELS.get(b, b),
        help=HELP,
    )
