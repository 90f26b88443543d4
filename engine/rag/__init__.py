"""RAG answering: prompt templates, the defended RAG system, and utility metrics (ACC, faithfulness)."""

from .prompts import TEMPLATES, PromptTemplate, as_prompt, get_template, render
from .system import RagAnswer, RagSystem
from .utility import evaluate_utility, faithfulness, mc_options, parse_choice

__all__ = [
    "TEMPLATES",
    "PromptTemplate",
    "RagAnswer",
    "RagSystem",
    "as_prompt",
    "evaluate_utility",
    "faithfulness",
    "get_template",
    "mc_options",
    "parse_choice",
    "render",
]
