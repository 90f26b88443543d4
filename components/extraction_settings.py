"""The extraction lab's settings as a plain mapping, made from an :class:`ExtractionConfig` (a preset's, or the
defaults). No Streamlit and no other ``components`` module: ``state`` (the session defaults) and ``extraction``
(the lab's panels) both build on it."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from engine.config import ExtractionConfig
from engine.generators import hosted_generator, packaged_generator
from engine.generators.llama_local import LlamaCppGenerator

LOCAL = packaged_generator()  # the generator of the packaged (offline) models: each model is a lab choice
LITELLM = hosted_generator()  # the lab's generator choice that means "a provider's model string"
ATTACKER_NONE = "none"  # the lab's attacker-LLM choice that means "no attacker LLM"
# the ExtractionConfig fields the lab's own widgets set (a generator choice stands for generator + its params);
# the audit page sets target and target_params, the sidebar data_dir: every other field is a "More settings"
# widget made from its declaration, so a field added to ExtractionConfig shows up in the lab with no page edit
LAB_FIELDS = (
    "kb",
    "attack",
    "attack_params",
    "rounds",
    "generator",
    "generator_params",
    "attacker_llm",
    "attacker_llm_params",
    "defenses",
    "defense_params",
    "top_k",
    "max_tokens",
    "answer_budget",
    "seed",
)
ELSEWHERE = ("target", "target_params", "data_dir")
# the "More settings" fields the lab shows apart, in an expander open when they are in use
PRIVACY_FIELDS = ("canaries", "canary_codes", "tenants", "identity", "tenant_filter")


def more_fields() -> tuple[str, ...]:
    """The ExtractionConfig fields under the lab's "More settings" (every field neither the lab's own widgets
    nor another page sets), in declaration order."""
    return tuple(f.name for f in dataclasses.fields(ExtractionConfig) if f.name not in LAB_FIELDS + ELSEWHERE)


def settings_from_config(cfg: ExtractionConfig) -> dict[str, Any]:
    """The lab's setup settings for a config (e.g. a preset)."""
    gp = dict(cfg.generator_params or {})
    other: dict[str, Any] = {}
    if cfg.generator == LITELLM:
        gen, litellm_model = LITELLM, gp.get("model", "openai/gpt-4o-mini")
    elif cfg.generator != LOCAL:  # a generator plugin: its own parameters
        gen, litellm_model = cfg.generator, "openai/gpt-4o-mini"
        other = {cfg.generator: {k: v for k, v in gp.items() if k != "max_tokens"}}
    else:
        gen, litellm_model = gp.get("model", LlamaCppGenerator.Params().model), "openai/gpt-4o-mini"
    ap = dict(cfg.attack_params or {})
    ap.pop("budget", None)
    attacker = (
        dict(cfg.attacker_llm_params or {}).get("model", LlamaCppGenerator.Params().model)
        if cfg.attacker_llm
        else ATTACKER_NONE
    )
    return {
        "kb": cfg.kb,
        "generator": gen,
        "litellm_model": litellm_model,
        "api_base": gp.get("api_base", ""),
        "attack": cfg.attack,
        "attack_params": ap,
        "attacker_llm": attacker,
        "rounds": cfg.rounds,
        "top_k": cfg.top_k,
        "max_tokens": cfg.max_tokens,
        "answer_budget": cfg.answer_budget,
        "defenses": list(cfg.defenses),
        "seed": cfg.seed,
        "defense_params": {k: dict(v) for k, v in dict(cfg.defense_params or {}).items()},
        "generator_params": {k: v for k, v in gp.items() if k not in ("model", "max_tokens", "api_base")}
        if cfg.generator == LOCAL
        else {},
        "other_generator_params": other,
        "more": {k: (dict(v) if isinstance(v := getattr(cfg, k), Mapping) else v) for k in more_fields()},
    }
