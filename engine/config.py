"""Run configurations and YAML presets (validated; a bad key gets a clear error naming it)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from .errors import ConfigError
from .params import Params, param
from .paths import PRESETS_DIR

INJECTION_MODES = ("one-at-a-time", "all-at-once")


class PoisonConfig(Params):
    """Everything that defines a poisoning run."""

    corpus: str = param("clinic_handbook", help="Corpus: bundled name, benchmark name or path")
    queries: str = param("clinic_handbook", help="Query set: clinic_handbook, mirage:<set>, poisonedrag:<set> or a path")
    retriever: str = param("minilm", help="Retriever: registered name or a sentence-transformers model name/path")
    retriever_params: Optional[Mapping[str, Any]] = param(None, help="Retriever parameters")
    attack: str = param("universal", help="Poisoning attack (registry name)")
    attack_params: Optional[Mapping[str, Any]] = param(None, help="Attack parameters")
    target: str = param("pii", help="Target information kind (universal / paraphrased attacks)")
    target_text: str = param("", help="Your own target text (target = custom)")
    injection: str = param("one-at-a-time", choices=INJECTION_MODES,
                           help="Inject one poison per query (the paper) or all poisons at once (realistic)")
    limit: Optional[int] = param(None, min=1, help="Use the first N queries")
    top_k: int = param(5, min=1, max=1000, help="Documents retrieved per query")
    detectors: tuple[str, ...] = param(("l2", "mahalanobis"), help="Poison detectors to evaluate")
    detector_params: Optional[Mapping[str, Any]] = param(None, help="Per-detector parameters {name: {...}}")
    anchor_k: int = param(10, min=1, max=1000, help="Clean documents per protected query used as anchors")
    anchor_fraction: float = param(0.5, min=0.05, max=0.95,
                                   help="Share of protected queries whose clean documents fit the detectors; the rest are held out")
    chunk_size: Optional[int] = param(512, min=16, help="Chunk size in tokens (None: no chunking)")
    chunk_overlap: int = param(32, min=0, help="Chunk overlap in tokens")
    seed: int = param(0, help="Seed for targets, splits and folds")
    data_dir: str = param("", help="Benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")
    store: str = param("persistent", choices=("persistent", "http"), help="Embedded Chroma or a Chroma server")
    chroma_host: str = param("127.0.0.1", help="Chroma server host (store = http)")
    chroma_port: int = param(8000, min=1, max=65535, help="Chroma server port (store = http)")

    def validate(self) -> None:
        if self.chunk_size is not None and self.chunk_overlap >= self.chunk_size:
            raise ConfigError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})")

    def resolved_attack_params(self) -> dict[str, Any]:
        ap = dict(self.attack_params or {})
        if self.attack in ("universal", "paraphrased", "camouflaged"):
            ap.setdefault("target", self.target)
            if self.target_text:
                ap.setdefault("target_text", self.target_text)
        return ap

    def config_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True, default=str).encode()).hexdigest()[:16]


class SweepConfig(Params):
    """A Table-1-style grid: corpora × retrievers × query sets × targets, ASR@K per cell."""

    corpora: tuple[str, ...] = param(("clinic_handbook",), help="Corpora")
    retrievers: tuple[str, ...] = param(("minilm",), help="Retrievers")
    query_sets: tuple[str, ...] = param(("clinic_handbook",), help="Query sets")
    targets: tuple[str, ...] = param(("pii", "diagnosis"), help="Target information kinds")
    attack: str = param("universal", help="Poisoning attack")
    injection: str = param("one-at-a-time", choices=INJECTION_MODES, help="Injection mode")
    variants: int = param(1, min=1, max=10, help="Target documents per kind, averaged (the paper uses 3)")
    limit: Optional[int] = param(None, min=1, help="First N queries of each set")
    k: int = param(2, min=1, max=100, help="K of the reported ASR@K (the paper's Table 1: K=2)")
    detectors: tuple[str, ...] = param((), help="Detectors to evaluate per cell (slower)")
    chunk_size: Optional[int] = param(512, min=16, help="Chunk size in tokens")
    chunk_overlap: int = param(32, min=0, help="Chunk overlap in tokens")
    seed: int = param(0, help="Seed")
    data_dir: str = param("", help="Benchmark data dir")


PRESET_KINDS = {"poison": PoisonConfig, "sweep": SweepConfig}


def load_preset(name_or_path: str) -> tuple[str, Params, dict[str, Any]]:
    """Read and validate a preset; returns (kind, config, meta with name/description)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PRESETS_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PRESETS_DIR.glob("*.yaml")))
        raise ConfigError(f"preset {name_or_path!r} not found (bundled presets: {known})")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path.name}: invalid YAML{where}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path.name}: a preset must be a mapping of keys to values")
    meta = {k: raw.pop(k) for k in ("name", "description") if k in raw}
    kind = raw.pop("kind", "poison")
    if kind not in PRESET_KINDS:
        raise ConfigError(f"{path.name}: kind {kind!r} is not one of {', '.join(PRESET_KINDS)}")
    cfg = PRESET_KINDS[kind].from_dict(raw, where=path.name)
    meta.setdefault("name", path.stem)
    return kind, cfg, meta


def list_presets() -> list[dict[str, Any]]:
    out = []
    for p in sorted(PRESETS_DIR.glob("*.yaml")):
        try:
            kind, _, meta = load_preset(str(p))
            out.append({"name": p.stem, "kind": kind, "description": meta.get("description", "")})
        except ConfigError as e:
            out.append({"name": p.stem, "kind": "invalid", "description": str(e)})
    return out
