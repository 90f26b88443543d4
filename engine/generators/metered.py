"""A generator wrapper that counts what every call costs: calls, tokens in and out, seconds, dollars."""

from __future__ import annotations

from typing import Any


class MeteredGenerator:
    """Passes every call to ``inner`` and adds up its cost (an attack's own LLM, e.g. RAG-Thief's
    reflections, costs the attacker as much as the answers cost the victim). Dollars come from the
    generation's ``info["cost_usd"]`` (litellm's price map; local models cost none)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.seconds = 0.0
        self.cost_usd = 0.0

    def _add(self, g: Any) -> Any:
        self.calls += 1
        self.prompt_tokens += int(g.prompt_tokens)
        self.completion_tokens += int(g.completion_tokens)
        self.seconds += float(g.seconds)
        self.cost_usd += float((g.info or {}).get("cost_usd") or 0.0)
        return g

    def chat(self, messages: Any, **kw: Any) -> Any:
        """``inner.chat``, with the call's cost added to the totals."""
        return self._add(self.inner.chat(messages, **kw))

    def complete(self, prompt: str, **kw: Any) -> Any:
        """``inner.complete``, with the call's cost added to the totals."""
        return self._add(self.inner.complete(prompt, **kw))

    def totals(self) -> dict[str, float]:
        """Calls, prompt and completion tokens, seconds and dollars so far."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 4),
            "cost_usd": self.cost_usd,
        }

    def __getattr__(self, name: str) -> Any:  # load(), describe(), params, count_tokens() …
        return getattr(self.inner, name)
