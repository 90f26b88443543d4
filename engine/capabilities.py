"""What a plugin needs from the run it joins, declared on its class and checked once before the run starts.

A plugin class (attack, defense) declares ``requires`` (capabilities without which it cannot work) and ``uses``
(capabilities it takes when the run offers them, e.g. an attacker LLM that RAG-Thief can do without). A run
kind says what it ``provides`` from its configuration; :func:`check_requirements` compares the two and raises
one :class:`~engine.errors.ConfigError` naming every plugin whose need is not met, and why, before any model or
data loads. The model is ART's ``_estimator_requirements``: an attack there declares the estimator interfaces it
needs and fails at construction with a clear message instead of deep inside an attack.

The UI reads the same declarations (``can_use("attacker_llm")`` decides whether the lab offers an attacker LLM;
``needs("index")`` keeps index-querying attacks off external targets), so no page names a plugin to decide what
to show.
"""

from __future__ import annotations

from typing import ClassVar, Iterable, Mapping

from .errors import ConfigError

# the vocabulary: capability → what it means (the error message says it)
CAPABILITIES: dict[str, str] = {
    "pipeline": "the engine's own RAG pipeline (its index, retrieval, prompt and generation)",
    "generator": "a generator that answers (the pipeline's LLM)",
    "dense_retriever": "a dense retriever (vectors, not BM25)",
    "attacker_llm": "an attacker LLM of its own",
    "index": "the clean index, queried before crafting (an adaptive attacker)",
}


class Declares:
    """Mixin for plugin base classes: ``requires`` and ``uses`` (sets of :data:`CAPABILITIES` keys)."""

    requires: ClassVar[frozenset[str]] = frozenset()
    uses: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def needs(cls, capability: str) -> bool:
        """Whether the plugin cannot run without ``capability``."""
        return capability in cls.requires

    @classmethod
    def can_use(cls, capability: str) -> bool:
        """Whether the plugin takes ``capability`` when the run offers it (required or optional)."""
        return capability in cls.requires or capability in cls.uses


def unknown_capabilities(cls: type) -> set[str]:
    """Capabilities a class declares that the vocabulary does not know (a contract test keeps this empty)."""
    declared = set(getattr(cls, "requires", ())) | set(getattr(cls, "uses", ()))
    return declared - set(CAPABILITIES)


def check_requirements(
    run: str,
    plugins: Iterable[tuple[str, str, type]],
    provided: Iterable[str],
    why_missing: Mapping[str, str] | None = None,
) -> None:
    """Raise one ConfigError listing every plugin whose required capability this run does not provide.

    ``run``: the run kind, for the message (e.g. "extraction"); ``plugins``: (kind, name, class) triples, e.g.
    ("defense", "cascade", Cascade); ``provided``: the capabilities the run's configuration offers;
    ``why_missing``: per capability, why this run lacks it and what to change (appended to the message)."""
    have = set(provided)
    why = dict(why_missing or {})
    problems = []
    for kind, name, cls in plugins:
        for cap in sorted(getattr(cls, "requires", ())):
            if cap not in have:
                reason = f" — {why[cap]}" if why.get(cap) else ""
                problems.append(f"{kind} {name!r} needs {CAPABILITIES.get(cap, cap)}{reason}")
    if problems:
        raise ConfigError(f"this {run} run cannot start: " + "; ".join(problems))
