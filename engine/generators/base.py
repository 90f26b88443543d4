"""The generator contract: text in, text out, with the tokens it cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional, Sequence

from ..params import Params


@dataclass(frozen=True)
class Generation:
    """One completion: the text, token usage, which model, how long, and any per-token log-probs."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    seconds: float
    logprobs: tuple[float, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)  # JSON-able extras (e.g. cascade statistics)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


Message = dict  # {"role": "system"|"user"|"assistant", "content": str}
TextCallback = Callable[[str], None]  # receives each new piece of an answer as it is generated


class Generator:
    """Base class: ``complete(prompt)`` for raw prompts and ``chat(messages)`` for chat models.

    Both take ``on_text``: a callback that receives the answer piece by piece while it is generated
    (streaming); a generator that cannot stream calls it once with the whole answer.
    """

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]]
    # declared capabilities: what the UI lists and what a run checks read, never a generator's name
    offline: ClassVar[bool] = False  # runs with no network (weights from a package or a local file)
    packaged_models: ClassVar[tuple[str, ...]] = ()  # models that come with their package: a model menu
    hosted: ClassVar[bool] = False  # a provider's model by a model string, with an API key kept apart

    def __init__(self, params: Params) -> None:
        self.params = params

    def load(self) -> None:
        """Load the model now (e.g. under a progress bar) instead of on the first call; remote: no-op."""

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        stop: Sequence[str] = (),
        on_text: Optional[TextCallback] = None,
    ) -> Generation:
        """Continue a raw ``prompt`` (at most ``max_tokens``, default the params'; stops at any of ``stop``)."""
        raise NotImplementedError

    def chat(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, on_text: Optional[TextCallback] = None
    ) -> Generation:
        """Answer ``messages`` (``role`` / ``content`` dicts) in at most ``max_tokens`` (default the params')."""
        raise NotImplementedError

    def token_logprobs(self, text: str, max_tokens: int = 512) -> list[float]:
        """Log-probability of each token of ``text`` (after the first) under the model, for perplexity; only
        generators that expose their model's log-probabilities implement it."""
        raise NotImplementedError(
            f"the {self.name or type(self).__name__} generator cannot score text (use a local model)"
        )

    def token_pieces(self, text: str, max_tokens: int = 512) -> list[tuple[bytes, float]]:
        """The first ``max_tokens`` tokens of ``text`` as (their bytes, their log-probability given the tokens
        before them; 0.0 for the first), which together spell ``text``; only generators that expose their model's
        log-probabilities implement it (an attacker's proxy model ranks words with it)."""
        raise NotImplementedError(
            f"the {self.name or type(self).__name__} generator cannot score text (use a local model)"
        )

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this generator's own tokenizer (an estimate where it has none)."""
        return max(1, round(len(text.split()) * 4 / 3)) if text.strip() else 0

    def describe(self) -> dict:
        """Name and parameters (for the run manifest)."""
        return {"name": self.name, "params": self.params.to_dict()}
