"""The poisoning lab's settings: which PoisonConfig field each part of the app sets, and the config they make.

The pipeline page sets the retrieval half (corpus, chunking, retriever, K), the lab's own widgets the attack, and
the deployment the data folder and the Chroma server; every other field is a "More settings" widget generated from
its declaration, so a field added to ``PoisonConfig`` shows up in the lab with no page edit. No Streamlit here.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from engine.config import PoisonConfig
from engine.generators import packaged_generator

PIPELINE_FIELDS = ("corpus", "retriever", "top_k", "chunk_size", "chunk_overlap")
LAB_FIELDS = (
    "queries", "attack", "attack_params", "target", "target_text", "injection", "limit", "detectors",
    "detector_params", "seed", "defenses", "defense_params", "generate", "generator", "generator_params",
)  # fmt: skip
ELSEWHERE = ("data_dir", "store", "chroma_host", "chroma_port")


def more_fields() -> tuple[str, ...]:
    """The PoisonConfig fields under the lab's "More settings", in declaration order."""
    taken = PIPELINE_FIELDS + LAB_FIELDS + ELSEWHERE
    return tuple(f.name for f in dataclasses.fields(PoisonConfig) if f.name not in taken)


def more_from_config(cfg: PoisonConfig) -> dict[str, Any]:
    """The "More settings" values of a config (e.g. a preset's)."""
    return {k: (dict(v) if isinstance(v := getattr(cfg, k), Mapping) else v) for k in more_fields()}


def build_poison_config(
    pipeline: Mapping[str, Any], lab: Mapping[str, Any], data_dir: str, answer_model: str
) -> PoisonConfig:
    """The PoisonConfig of the pipeline page's and the lab's settings (``answer_model``: the assistant's model when
    the lab answers each question)."""
    detectors = tuple(lab["detectors"])
    defenses = tuple(lab.get("defenses") or ())
    return PoisonConfig.from_dict(
        {
            "corpus": pipeline["corpus"],
            "retriever": pipeline["retriever"],
            "top_k": pipeline["top_k"],
            "chunk_size": pipeline["chunk_size"],
            "chunk_overlap": pipeline["chunk_overlap"],
            "queries": lab["queries"],
            "attack": lab["attack"],
            "target": lab["target"],
            "target_text": lab["target_text"],
            "injection": lab["injection"],
            "limit": lab["limit"] or None,
            "detectors": detectors,
            "seed": lab["seed"],
            "data_dir": data_dir,
            "attack_params": dict(lab.get("attack_params") or {}) or None,
            "detector_params": {d: v for d, v in dict(lab.get("detector_params") or {}).items() if d in detectors}
            or None,
            "defenses": defenses,
            "defense_params": {d: v for d, v in dict(lab.get("defense_params") or {}).items() if d in defenses} or None,
            "generate": bool(lab.get("generate")),
            "generator": packaged_generator(),
            "generator_params": {"model": lab.get("gen_model") or answer_model},
            **{k: v for k, v in dict(lab.get("more") or {}).items() if k in more_fields()},
        },
        where="poisoning setup",
    )
