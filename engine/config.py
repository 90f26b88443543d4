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
from .tenancy import TENANT_FILTERS

INJECTION_MODES = ("one-at-a-time", "all-at-once")


class PoisonConfig(Params):
    """Everything that defines a poisoning run."""

    corpus: str = param("clinic_handbook", help="Corpus: bundled name, benchmark name or path")
    queries: str = param(
        "clinic_handbook", help="Query set: clinic_handbook, mirage:<set>, poisonedrag:<set> or a path"
    )
    retriever: str = param(
        "minilm", help="Retriever: a registered name or a sentence-transformers model name/path", registry="retrievers"
    )
    retriever_params: Optional[Mapping[str, Any]] = param(
        None, help="Retriever parameters", label="Retriever parameters (JSON)"
    )
    attack: str = param("universal", help="Poisoning attack", registry="poisoning-attacks")
    attack_params: Optional[Mapping[str, Any]] = param(None, help="Attack parameters")
    target: str = param("pii", help="Target information kind (universal / paraphrased attacks)")
    target_text: str = param("", help="Your own target text (target = custom)")
    injection: str = param(
        "one-at-a-time",
        choices=INJECTION_MODES,
        help="Inject one poison per query (the paper) or all poisons at once (realistic)",
    )
    limit: Optional[int] = param(None, min=1, help="Use the first N queries")
    top_k: int = param(5, min=1, max=1000, help="Documents retrieved per query")
    detectors: tuple[str, ...] = param(("l2", "mahalanobis"), help="Poison detectors to evaluate", registry="detectors")
    detector_params: Optional[Mapping[str, Any]] = param(None, help="Per-detector parameters {name: {...}}")
    anchor_k: int = param(
        10, min=1, max=1000, help="Clean documents per protected query used as anchors", label="Anchors per question"
    )
    anchor_fraction: float = param(
        0.5,
        min=0.05,
        max=0.95,
        help="Share of protected queries whose clean documents fit the detectors; the rest are held out",
        label="Share of questions fitting the detectors",
    )
    chunk_size: Optional[int] = param(
        512, min=16, help="Chunk size in the retriever's tokens, capped at what it reads (None: no chunking)"
    )
    chunk_overlap: int = param(32, min=0, help="Chunk overlap in tokens")
    seed: int = param(0, min=0, help="Seed for targets, splits and folds")
    data_dir: str = param("", help="Benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")
    store: str = param("persistent", choices=("persistent", "http"), help="Embedded Chroma or a Chroma server")
    chroma_host: str = param("127.0.0.1", help="Chroma server host (store = http)")
    chroma_port: int = param(8000, min=1, max=65535, help="Chroma server port (store = http)")
    generate: bool = param(
        False,
        help="Also answer each attacked question from its top-K (poison included where "
        "it ranked) and score whether the answer repeats the target",
    )
    generator: str = param("local", help="Generator of the answers", registry="generators")
    generator_params: Optional[Mapping[str, Any]] = param(
        None, help="Generator parameters (model, ...); local default: qwen2.5-0.5b"
    )
    template: str = param(
        "chat", choices=("chat", "rag-privacy"), help="Prompt template of the answers", label="Answer prompt template"
    )
    max_tokens: int = param(96, min=8, max=4096, help="Tokens per answer", label="Tokens per answer")
    judge: str = param(
        "",
        help="An LLM judge that also decides whether each answer states the target "
        "('' none; a generator name: local, litellm)",
        label="LLM judge (blank: none; local or litellm)",
    )
    judge_params: Optional[Mapping[str, Any]] = param(
        None, help="Judge generator parameters (model, ...)", label="Judge parameters (JSON)"
    )
    clean_baseline: bool = param(
        True,
        help="Jamming: answer each question without its blocker first; a question refused already is set aside "
        "and a refusal counts only where the answer loses the clean answer's content (Shafran et al. 2025 §3). "
        "Off: one answer per question, refusals the model makes anyway counted as the blocker's",
        label="Jamming: compare with the answer without the blocker",
    )
    defenses: tuple[str, ...] = param(
        (),
        help="Defenses between retrieval and the answer (query and retrieval "
        "stages always; context, prompt and generation stages with generate)",
        registry="defenses",
    )
    defense_params: Optional[Mapping[str, Any]] = param(None, help="Per-defense parameters {name: {...}}")

    def validate(self) -> None:
        """Refuses a chunk overlap that is not smaller than the chunk size; with generation, checks the generator,
        the judge and a local model before anything loads."""
        if self.chunk_size is not None and self.chunk_overlap >= self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        if self.generate:
            check_generators(self, ("generator", "judge"))
        from .defenses import DEFENSES

        for d in self.defenses:
            stage = DEFENSES.get(d).stage
            if stage == "index":
                raise ConfigError(
                    f"defense {d!r} rebuilds the index (index stage): not available in poisoning runs, "
                    "whose poisons are embedded by the attacker's retriever"
                )
            if stage in ("context", "prompt", "generation", "output") and not self.generate:
                raise ConfigError(
                    f"defense {d!r} acts at the {stage} stage, on the answer: switch generation on "
                    "(--generate / generate: true) to use it"
                )
        from .attacks.poisoning import POISONING_ATTACKS

        _check_plugins(
            "poisoning",
            [("attack", self.attack, POISONING_ATTACKS.get(self.attack))]
            + [("defense", d, DEFENSES.get(d)) for d in self.defenses],
            self.retriever,
            {"pipeline", "index"} | ({"generator"} if self.generate else set()),
            {"generator": "switch generation on (--generate / generate: true)"},
        )

    def answer_generator_params(self) -> dict[str, Any]:
        """Generator parameters of the answers: the local default model is Qwen2.5-0.5B (SmolLM2 rarely uses
        its context), ``max_tokens`` from the config."""
        gp = dict(self.generator_params or {})
        if self.generator == "local":
            gp.setdefault("model", "qwen2.5-0.5b")
        gp.setdefault("max_tokens", self.max_tokens)
        return gp

    def resolved_attack_params(self) -> dict[str, Any]:
        """``attack_params`` plus the run's ``target`` / ``target_text`` when the attack takes a target (values given
        in ``attack_params`` win)."""
        from .attacks.poisoning import POISONING_ATTACKS

        ap = dict(self.attack_params or {})
        if POISONING_ATTACKS.get(self.attack).takes_target():
            ap.setdefault("target", self.target)
            if self.target_text:
                ap.setdefault("target_text", self.target_text)
        return ap

    def config_hash(self) -> str:
        """First 16 hex digits of the sha256 of the sorted JSON config: equal configurations get equal hashes
        (the generation fields count only when ``generate`` is on, so older runs keep their hash)."""
        d = self.to_dict()
        defaults = PoisonConfig.__dataclass_fields__
        for k in LATER_KEYS:  # fields added later count only when set, so older runs keep their hash
            same = json.dumps(d.get(k), default=str) == json.dumps(_default_of(defaults[k]), default=str)
            if same or (k in GENERATION_KEYS and not self.generate):
                d.pop(k, None)
        # the jamming comparison with the clean answer changed how a jamming run's answers are scored (2026-12-05):
        # it counts in the hash of a jamming run with answers, so an older one is not resumed under the new rule
        if not (self.generate and self.attack == "jamming"):
            d.pop("clean_baseline", None)
        return config_digest(d)


GENERATION_KEYS = ("generate", "generator", "generator_params", "template", "max_tokens", "judge", "judge_params")
LATER_KEYS = GENERATION_KEYS + ("defenses", "defense_params")


def _default_of(f: Any) -> Any:
    import dataclasses

    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else None


def config_digest(values: Mapping[str, Any]) -> str:
    """First 16 hex digits of the sha256 of ``values`` as sorted JSON: what every run config's hash is."""
    return hashlib.sha256(json.dumps(dict(values), sort_keys=True, default=str).encode()).hexdigest()[:16]


def _check_plugins(
    run: str,
    plugins: list[tuple[str, str, Any]],
    retriever: str,
    provided: set[str],
    why: Mapping[str, str] | None = None,
) -> None:
    """:func:`engine.capabilities.check_requirements` for a run whose configuration ``provided`` these capabilities
    and whose ``retriever`` adds ``dense_retriever`` when it is dense (else says which to choose)."""
    from .capabilities import check_requirements
    from .embedders import RETRIEVERS, offline_retrievers

    reasons = dict(why or {})
    if retriever in RETRIEVERS and RETRIEVERS.get(retriever).dense:
        provided = provided | {"dense_retriever"}
    else:
        dense = [n for n in offline_retrievers() if RETRIEVERS.get(n).dense]
        reasons["dense_retriever"] = f"retriever {retriever!r} is not dense: choose one of {', '.join(dense)}"
    check_requirements(run, plugins, provided, reasons)


def check_generators(cfg: Params, kinds: tuple[str, ...]) -> None:
    """Each named generator field of ``cfg`` (e.g. ``generator``, ``attacker_llm``) is registered, and a
    local model among them is a registered name or a GGUF file, so a bad config fails before data loads."""
    from .errors import ModelUnavailableError
    from .generators import GENERATORS
    from .generators.models import check_model_spec

    for kind in kinds:
        name = getattr(cfg, kind)
        if not name:
            continue
        gen = GENERATORS.get(name)
        if gen.packaged_models:  # a local model is checked now, not in round 1 after the data has loaded
            params = getattr(cfg, f"{kind}_params") or {}
            default = "qwen2.5-0.5b" if isinstance(cfg, PoisonConfig) else gen.Params().to_dict()["model"]
            model = dict(params).get("model") or default
            try:
                check_model_spec(str(model))
            except ModelUnavailableError as e:
                raise ConfigError(f"{kind}_params: {e}") from None


class SweepConfig(Params):
    """A Table-1-style grid: corpora × retrievers × query sets × targets, ASR@K per cell."""

    corpora: tuple[str, ...] = param(("clinic_handbook",), help="Corpora")
    retrievers: tuple[str, ...] = param(("minilm",), help="Retrievers", registry="retrievers")
    query_sets: tuple[str, ...] = param(("clinic_handbook",), help="Query sets")
    targets: tuple[str, ...] = param(("pii", "diagnosis"), help="Target information kinds")
    attack: str = param("universal", help="Poisoning attack", registry="poisoning-attacks")
    injection: str = param("one-at-a-time", choices=INJECTION_MODES, help="Injection mode")
    variants: int = param(1, min=1, max=10, help="Target documents per kind, averaged (the paper uses 3)")
    limit: Optional[int] = param(None, min=1, help="First N queries of each set")
    k: int = param(2, min=1, max=100, help="K of the reported ASR@K (the paper's Table 1: K=2)")
    detectors: tuple[str, ...] = param((), help="Detectors to evaluate per cell (slower)", registry="detectors")
    chunk_size: Optional[int] = param(
        512, min=16, help="Chunk size in each retriever's tokens, capped at what it reads"
    )
    chunk_overlap: int = param(32, min=0, help="Chunk overlap in tokens")
    seed: int = param(0, min=0, help="Seed")
    data_dir: str = param("", help="Benchmark data dir")
    store: str = param(
        "persistent",
        choices=("persistent", "http"),
        help="Embedded Chroma, or a Chroma server shared by every worker (base collections built once)",
    )
    chroma_host: str = param("127.0.0.1", help="Chroma server host (store = http)")
    chroma_port: int = param(8000, min=1, max=65535, help="Chroma server port (store = http)")


def _tenants_param() -> Any:
    return param(
        0,
        min=0,
        max=1000,
        help="Multi-tenant knowledge base: split it among this many tenants (whole records, seeded), or keep the "
        "tenants its documents name in a 'tenant' field (any value ≥ 2 switches them on); 0: one owner",
        label="Tenants",
    )


def _identity_param() -> Any:
    return param("", help="The tenant the attacker queries as ('' = the first: tenant-1)", label="Query as")


def _tenant_filter_param() -> Any:
    return param(
        "inside",
        choices=TENANT_FILTERS,
        help="How retrieval enforces tenancy: inside the vector search (correct), after the top-K (fewer results, "
        "and their count leaks), none (the misconfiguration)",
        label="Tenant filter",
    )


def _check_tenancy(cfg: Any) -> None:
    """The tenancy fields of a run config (``tenants``, ``identity``, ``tenant_filter``) are consistent."""
    if cfg.tenants == 1:
        raise ConfigError("tenants: 1 tenant isolates nothing: 0 (one owner) or at least 2")
    if not cfg.tenants and (cfg.identity or cfg.tenant_filter != "inside"):
        raise ConfigError("identity and tenant_filter apply to a multi-tenant knowledge base: set tenants (≥ 2)")


def _without_tenancy(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` without the tenancy fields when the knowledge base has one owner: the record and hash of runs written
    before tenancy existed."""
    if not d.get("tenants"):
        for k in ("tenants", "identity", "tenant_filter"):
            d.pop(k, None)
    return d


class ExtractionConfig(Params):
    """Everything that defines a knowledge-base extraction run (attack × defenses × system)."""

    kb: str = param("clinic_records", help="Private knowledge base: bundled name, benchmark name or path")
    attack: str = param("rag-thief", help="Extraction attack", registry="extraction-attacks")
    attack_params: Optional[Mapping[str, Any]] = param(None, help="Attack parameters")
    rounds: int = param(10, min=1, max=10000, help="Attack queries (the attacker's query budget)")
    generator: str = param("local", help="Generator", registry="generators")
    generator_params: Optional[Mapping[str, Any]] = param(None, help="Generator parameters (model, ...)")
    attacker_llm: str = param("local", help="The attacker's own LLM (RAG-Thief reflections); '' for none")
    attacker_llm_params: Optional[Mapping[str, Any]] = param(None, help="Attacker LLM parameters")
    defenses: tuple[str, ...] = param((), help="Defenses switched on (any subset)", registry="defenses")
    defense_params: Optional[Mapping[str, Any]] = param(None, help="Per-defense parameters {name: {...}}")
    retriever: str = param(
        "minilm", help="Retriever: a registered name or a sentence-transformers model name/path", registry="retrievers"
    )
    retriever_params: Optional[Mapping[str, Any]] = param(
        None, help="Retriever parameters", label="Retriever parameters (JSON)"
    )
    top_k: int = param(3, min=1, max=100, help="Chunks retrieved per query")
    template: str = param(
        "rag-privacy", choices=("rag-privacy", "chat"), help="Prompt template", label="Prompt template"
    )
    max_tokens: int = param(
        192, min=8, max=4096, help="Tokens generated per answer (the floor when the budget covers the context)"
    )
    answer_budget: str = param(
        "context",
        choices=("context", "fixed"),
        help="context: each answer may be as long as its retrieved context (+10% + 32 "
        "tokens), so the budget never caps CRR; fixed: max_tokens, which caps "
        "what an answer can reproduce",
    )
    chunk_size: Optional[int] = param(
        512,
        min=16,
        help="Chunk size in the retriever's tokens, capped at what it reads (None: no chunking)",
        label="Chunk size (tokens)",
    )
    chunk_overlap: int = param(0, min=0, help="Chunk overlap in tokens", label="Chunk overlap (tokens)")
    crr_tau: float = param(
        0.5, min=0.0, max=1.0, help="CRR: ROUGE-L recall at which a chunk counts as recovered", label="CRR threshold τ"
    )
    semantic_threshold: float = param(
        0.7, min=-1.0, max=1.0, help="Semantic leak: cosine threshold", label="Semantic-leak threshold"
    )
    seed: int = param(0, min=0, help="Seed of the attacker")
    data_dir: str = param("", help="Benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")
    target: str = param(
        "pipeline",
        help="The system attacked: pipeline (the engine's own, built from the fields above) or an audit target",
        registry="targets",
    )
    target_params: Optional[Mapping[str, Any]] = param(None, help="The target's parameters (credentials as ${VAR})")
    canaries: float = param(
        0.0,
        min=0.0,
        max=1.0,
        help="Share of the knowledge base's chunks given a unique fake record number (a canary) before the run: an "
        "answer carrying one leaked its chunk, with no false positives",
        label="Canaries (share of chunks)",
    )
    canary_codes: str = param(
        "",
        help="Canaries the knowledge base's owner planted (in a target's store, say): a file of codes, one a line "
        "(as 'python -m engine canaries plant' writes), or codes separated by commas. Canary lines already in the "
        "knowledge base are found without it",
        label="Canary codes (file or list)",
    )
    tenants: int = _tenants_param()
    identity: str = _identity_param()
    tenant_filter: str = _tenant_filter_param()

    def validate(self) -> None:
        """Checks chunking, that the attack, generators and defenses are registered, and that a local model is a
        registered name or a GGUF file, so a bad config fails before the knowledge base loads. Against a target
        other than the built-in pipeline: its parameters are valid, the engine's defenses are not asked for (the
        target has its own), and ``kb`` is the reference ('' = unknown, 'target' = the target's own store)."""
        if self.chunk_size is not None and self.chunk_overlap >= self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        from .attacks.extraction import EXTRACTION_ATTACKS
        from .defenses import DEFENSES

        EXTRACTION_ATTACKS.get(self.attack)
        if self.target == "pipeline":
            check_generators(self, ("generator", "attacker_llm"))
            if self.target_params:
                raise ConfigError("target_params: the built-in pipeline is set by the config's own fields")
            if not self.kb.strip() or self.kb == "target":
                raise ConfigError("kb: name the knowledge base of the built-in pipeline")
        else:  # the target's name and parameters are checked when the run builds it, before any data loads
            check_generators(self, ("attacker_llm",))
            if not self.target.strip():
                raise ConfigError("target: name the system attacked (pipeline, http, openai-chat, python, chroma)")
            if self.canaries:
                raise ConfigError(
                    f"canaries: planted in the built-in pipeline's knowledge base only; target {self.target!r} "
                    "holds its own: plant them in its store (python -m engine canaries plant KB --share S writes "
                    "the knowledge base with them and their codes) and give the codes file as canary_codes"
                )
        if self.canary_codes:
            from .canaries import read_codes

            read_codes(self.canary_codes)  # a missing file or a too-short code: one line now, before any model
        if self.external:  # a target enforces its own tenancy: the run is told whose credentials it holds
            if self.tenants or self.tenant_filter != "inside":
                raise ConfigError(
                    f"tenants, tenant_filter: split the built-in pipeline's knowledge base only; target "
                    f"{self.target!r} enforces its own tenancy: query it with one tenant's credentials, name that "
                    "tenant as identity and give a reference kb whose records carry a 'tenant' field"
                )
            if self.identity and self.kb.strip() in ("", "none"):
                raise ConfigError(
                    "identity: whose records an answer reached is read from the reference knowledge base's 'tenant' "
                    "field: give the reference kb (a file, or target for a store the engine can read)"
                )
        else:
            _check_tenancy(self)
        _check_plugins(
            "extraction",
            [("attack", self.attack, EXTRACTION_ATTACKS.get(self.attack))]
            + [("defense", d, DEFENSES.get(d)) for d in self.defenses],
            self.retriever,
            {"generator"}
            | ({"pipeline"} if not self.external else set())
            | ({"attacker_llm"} if self.attacker_llm else set()),
            {"pipeline": f"target {self.target!r} runs its own (for a Chroma target, set its defenses parameter)"},
        )

    def to_dict(self) -> dict[str, Any]:
        """Field values as a plain dict; ``target`` and ``target_params`` only when the run attacks a target
        other than the built-in pipeline, so a pipeline run's record, hash and resume match those written
        before targets existed."""
        d = super().to_dict()
        if d.get("target") == "pipeline" and not d.get("target_params"):
            d.pop("target", None)
            d.pop("target_params", None)
        if not d.get("canaries"):  # no canaries: the record and hash of runs written before they existed
            d.pop("canaries", None)
        if not d.get("canary_codes"):
            d.pop("canary_codes", None)
        identity = d.get("identity")
        d = _without_tenancy(d)
        if identity and d.get("target") not in (None, "pipeline"):
            d["identity"] = identity  # an audit target queried as one tenant: whose credentials it was given
        return d

    @property
    def external(self) -> bool:
        """Whether the run attacks an audit target rather than the built-in pipeline."""
        return self.target != "pipeline"

    def config_hash(self) -> str:
        """First 16 hex digits of the sha256 of the sorted JSON config: equal configurations get equal hashes."""
        return config_digest(self.to_dict())


class MembershipConfig(Params):
    """A membership-inference experiment: which records of a knowledge base an attack can tell are in it."""

    kb: str = param(
        "clinic_records",
        help="Knowledge base whose records are probed: bundled name, benchmark or path",
        label="Knowledge base",
    )
    attack: str = param("direct", help="Membership-inference attack", registry="membership-attacks")
    attack_params: Optional[Mapping[str, Any]] = param(None, help="Attack parameters")
    members: int = param(
        20, min=1, max=100000, help="Records probed that are in the knowledge base", label="Members probed"
    )
    non_members: int = param(
        20,
        min=1,
        max=100000,
        help="Records probed that are not (held out of the knowledge base by the seed)",
        label="Non-members probed",
    )
    non_member_kb: str = param(
        "",
        help="Corpus the non-members come from (records of the same kind never indexed); blank: held out of kb",
        label="Non-members' corpus",
    )
    generator: str = param("local", help="Generator", registry="generators")
    generator_params: Optional[Mapping[str, Any]] = param(None, help="Generator parameters (model, ...)")
    defenses: tuple[str, ...] = param((), help="Defenses switched on (any subset)", registry="defenses")
    defense_params: Optional[Mapping[str, Any]] = param(None, help="Per-defense parameters {name: {...}}")
    retriever: str = param(
        "minilm", help="Retriever: a registered name or a sentence-transformers model name/path", registry="retrievers"
    )
    retriever_params: Optional[Mapping[str, Any]] = param(
        None, help="Retriever parameters", label="Retriever parameters (JSON)"
    )
    top_k: int = param(3, min=1, max=100, help="Chunks retrieved per question", label="Top-K")
    template: str = param(
        "rag-privacy", choices=("rag-privacy", "chat"), help="Prompt template", label="Prompt template"
    )
    max_tokens: int = param(96, min=8, max=4096, help="Tokens generated per answer", label="Tokens per answer")
    chunk_size: Optional[int] = param(
        512,
        min=16,
        help="Chunk size in the retriever's tokens (a record is a chunk; None: whole documents)",
        label="Chunk size (tokens)",
    )
    chunk_overlap: int = param(0, min=0, help="Chunk overlap in tokens", label="Chunk overlap (tokens)")
    seed: int = param(0, min=0, help="Seed of the split, the probing order and the attack")
    data_dir: str = param("", help="Benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")
    canaries: float = param(
        0.0,
        min=0.0,
        max=1.0,
        help="Share of the knowledge base's records given a unique fake record number (a canary) before the run: an "
        "answer carrying a member's own canary proves it is in the knowledge base, with no false positives",
        label="Canaries (share of records)",
    )
    tenants: int = _tenants_param()
    identity: str = _identity_param()
    tenant_filter: str = _tenant_filter_param()

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict, ``canaries`` only when some are planted and the tenancy fields only for a
        multi-tenant knowledge base (so the record and hash of runs without them stay as they were)."""
        d = super().to_dict()
        if not d.get("canaries"):
            d.pop("canaries", None)
        return _without_tenancy(d)

    def validate(self) -> None:
        """The attack, generator and defenses are registered and the chunking is consistent, so a bad config
        fails before anything loads."""
        if self.chunk_size is not None and self.chunk_overlap >= self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        from .attacks.membership import MEMBERSHIP_ATTACKS
        from .defenses import DEFENSES

        MEMBERSHIP_ATTACKS.get(self.attack)
        if not self.kb.strip():
            raise ConfigError("kb: name the knowledge base whose records are probed")
        check_generators(self, ("generator",))
        _check_tenancy(self)
        _check_plugins(
            "membership",
            [("attack", self.attack, MEMBERSHIP_ATTACKS.get(self.attack))]
            + [("defense", d, DEFENSES.get(d)) for d in self.defenses],
            self.retriever,
            {"generator", "pipeline"},
        )

    def config_hash(self) -> str:
        """First 16 hex digits of the sha256 of the sorted JSON config."""
        return config_digest(self.to_dict())


class ComparisonConfig(Params):
    """One attack against several defense configurations, with leakage and utility per configuration."""

    base: Optional[Mapping[str, Any]] = param(None, help="ExtractionConfig fields shared by every configuration")
    configurations: tuple[str, ...] = param(
        ("none", "threshold", "summarize", "reindex", "cascade", "reindex+cascade"),
        help="Defense sets: '+'-joined defense names, 'none' for no defense",
    )
    attacks: tuple[str, ...] = param(
        ("rag-thief",), help="Attacks, each run against every configuration", registry="extraction-attacks"
    )
    kbs: tuple[str, ...] = param(
        (), help="Knowledge bases, each attacked with every attack × configuration (empty: the base's kb)"
    )
    utility_corpus: str = param("clinic_handbook", help="Corpus for the utility side (ACC, faithfulness)")
    utility_queries: str = param("clinic_handbook", help="Questions for the utility side")
    utility_limit: Optional[int] = param(30, min=1, help="Questions used for utility (None: all)")
    repeats: int = param(
        1,
        min=1,
        max=100,
        help="Runs per attack × configuration, with seeds base seed, base seed "
        "+ 1, …; the table reports their mean and standard deviation",
    )
    membership_attack: str = param(
        "",
        help="Also measure membership inference per configuration with this attack (same KB, generator and "
        "defenses): AUROC beside CRR; '' for none",
        registry="membership-attacks",
    )
    membership_records: int = param(
        10, min=2, max=5000, help="Members, and as many non-members, probed per configuration (membership_attack)"
    )
    task_limit: int = param(
        0,
        min=0,
        help="Questions of each knowledge base's own task answered per configuration (dialogs:<kb>: multiple "
        "choice built from its dialog records): task ACC with its interval beside CRR, the utility RAGFort "
        "reports; 0: none (KBs without dialog records are skipped)",
    )

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict; the membership fields only when a membership attack is asked for, and
        ``task_limit`` only when set (so the record of comparisons without them, and their resumption, stay as
        they were)."""
        d = super().to_dict()
        if not d.get("membership_attack"):
            d.pop("membership_attack", None)
            d.pop("membership_records", None)
        if not d.get("task_limit"):
            d.pop("task_limit", None)
        return d

    def validate(self) -> None:
        """Needs at least one configuration, registered defenses in each, and a ``base`` that is a valid
        :class:`ExtractionConfig`."""
        from .defenses import DEFENSES

        if not self.configurations:
            raise ConfigError("configurations: give at least one (e.g. none)")
        for c in self.configurations:
            for d in defense_set(c):
                DEFENSES.get(d)
        ExtractionConfig.from_dict(dict(self.base or {}), where="base")
        for attack in self.attacks:  # every cell's plugins against what its run provides, before any cell starts
            for c in self.configurations:
                self.extraction_config(attack, c)
        if self.membership_attack:
            for c in self.configurations:
                self.membership_config(c)

    def membership_config(self, configuration: str, kb: str | None = None) -> "MembershipConfig":
        """The membership experiment of ``configuration`` (on ``kb``, default the base's): the base's generator,
        retriever, top-K, prompt, answer length, chunking and seed, the configuration's defenses,
        ``membership_records`` members and as many non-members."""
        e = self.extraction_config("zeng", configuration, kb=kb)
        return MembershipConfig.from_dict(
            {
                "kb": e.kb,
                "attack": self.membership_attack,
                "members": self.membership_records,
                "non_members": self.membership_records,
                "generator": e.generator,
                "generator_params": dict(e.generator_params or {}),
                "defenses": list(e.defenses),
                "defense_params": dict(e.defense_params or {}) or None,
                "retriever": e.retriever,
                "retriever_params": dict(e.retriever_params or {}) or None,
                "top_k": e.top_k,
                "template": e.template,
                "max_tokens": e.max_tokens,
                "chunk_size": e.chunk_size,
                "chunk_overlap": e.chunk_overlap,
                "seed": e.seed,
                "data_dir": e.data_dir,
            },
            where=f"membership of {configuration}",
        )

    def knowledge_bases(self) -> tuple[str, ...]:
        """The knowledge bases to attack: ``kbs``, else the base's ``kb``, else the default one."""
        return tuple(self.kbs) or (str(dict(self.base or {}).get("kb") or ExtractionConfig().kb),)

    def extraction_config(
        self, attack: str, configuration: str, repeat: int = 0, kb: str | None = None
    ) -> ExtractionConfig:
        """The run of ``attack`` against ``configuration`` (on ``kb``, default the base's); repeat ``i``
        uses seed base seed + ``i``."""
        base = dict(self.base or {})
        seed = {"seed": int(base.get("seed") or 0) + repeat} if repeat else {}
        kb_over = {"kb": kb} if kb else {}
        return ExtractionConfig.from_dict(
            {**base, "attack": attack, "defenses": list(defense_set(configuration)), **seed, **kb_over}, where="base"
        )


class UtilityConfig(Params):
    """What defenses cost: multiple-choice accuracy and faithfulness of a (defended) RAG system on honest
    questions (the ``utility`` command)."""

    corpus: str = param("clinic_handbook", help="Knowledge base answered from: bundled name, benchmark name or path")
    queries: str = param("clinic_handbook", help="Honest questions (query-set spec with answer options)")
    generator: str = param(
        "local",
        help="The answering generator: local[:model] | a packaged model name | a .gguf path | a litellm "
        "provider/model string",
    )
    defenses: tuple[str, ...] = param((), help="Defenses switched on", registry="defenses")
    limit: Optional[int] = param(None, min=1, help="First N questions (none: all)")
    retriever: str = param(
        "minilm", help="Retriever: a registered name or a sentence-transformers model", registry="retrievers"
    )
    top_k: int = param(3, min=1, max=1000, help="Documents retrieved per question")
    seed: int = param(0, min=0, help="Seed of the answer-option order")
    data_dir: str = param("", help="Benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")

    def validate(self) -> None:
        """Every defense is registered."""
        from .defenses import DEFENSES

        for d in self.defenses:
            DEFENSES.get(d)


class AnalyzeConfig(Params):
    """Why poisons win: the universal-poisoning paper's Table 3 (orthogonal augmentation) and Table 4 for one
    corpus and target, per retriever (the ``analyze`` command)."""

    corpus: str = param("clinic_handbook", help="Corpus: bundled name, benchmark name or path")
    queries: tuple[str, ...] = param(
        ("clinic_handbook",), help="Query sets: Table 3 uses the first, Table 4 has a column for each"
    )
    retrievers: tuple[str, ...] = param(
        ("minilm",),
        help="Dense retrievers, each analysed in turn (then the paper's Contriever and MedCPT rows)",
        registry="retrievers",
    )
    target: str = param("pii", help="Target information kind of the poisons")
    limit: int = param(50, min=1, help="First N questions of each set")
    chunk_size: Optional[int] = param(512, min=16, help="Chunk size in the retriever's tokens (none: no chunking)")
    data_dir: str = param("", help="Benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")

    def validate(self) -> None:
        """At least one retriever and one query set."""
        if not self.retrievers or not self.queries:
            raise ConfigError("analyze: give at least one retriever and one query set")


def defense_set(configuration: str) -> tuple[str, ...]:
    """'reindex+cascade' → ('reindex', 'cascade'); 'none' or '' → ()."""
    c = configuration.strip()
    return () if c in ("", "none") else tuple(x.strip() for x in c.split("+") if x.strip())


class AuditConfig(Params):
    """An audit: a battery of extraction and poisoning attacks against one target, a report and a CI gate."""

    target: str = param("pipeline", help="The system audited (pipeline: the built-in one)", registry="targets")
    target_params: Optional[Mapping[str, Any]] = param(None, help="The target's parameters (credentials as ${VAR})")
    kb: str = param(
        "",
        help="Reference knowledge base for the leakage metrics: blank = the target's own store where "
        "it can be read, else none; a bundled name, benchmark name or path; 'none'",
    )
    extraction_attacks: tuple[str, ...] = param(
        ("zeng", "rag-thief", "code-claim", "ikea"),
        help="Extraction attacks of the battery",
        registry="extraction-attacks",
    )
    rounds: int = param(5, min=1, max=10000, help="Queries per extraction attack")
    attack_params: Optional[Mapping[str, Any]] = param(None, help="Per-attack parameters {attack: {...}}")
    attacker_llm: str = param(
        "",
        help="The extraction attacker's own LLM, a generator spec such as "
        "local:smollm2-135m ('' = rule-based continuations)",
    )
    poisoning_attacks: tuple[str, ...] = param(
        ("universal", "trigger", "jamming"),
        help="Poisoning attacks (run where the target has a write surface)",
        registry="poisoning-attacks",
    )
    questions: str = param("clinic_handbook", help="Questions the poisons are aimed at (query-set spec)")
    poison_questions: int = param(3, min=1, max=10000, help="Questions per poisoning attack")
    poison_target: str = param("pii", help="Information the poisons carry (pii, diagnosis, …)")
    retriever: str = param("minilm", help="The auditor's embedding model (semantic leak, reference chunking)")
    chunk_size: Optional[int] = param(512, min=16, help="Chunk size of the reference knowledge base")
    chunk_overlap: int = param(0, min=0, help="Chunk overlap of the reference knowledge base")
    seed: int = param(0, min=0, help="Seed of every attacker")
    data_dir: str = param("", help="Benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")
    fail_on: Optional[Mapping[str, Any]] = param(None, help="Gate thresholds {severity: high, crr: 0.02, …}")
    canaries: float = param(
        0.0,
        min=0.0,
        max=1.0,
        help="Built-in pipeline: share of its knowledge base's chunks given a canary (a unique fake record number) "
        "before the extraction attacks; an answer carrying one is a leak with no false positive",
        label="Canaries (share of chunks)",
    )
    canary_codes: str = param(
        "",
        help="Any target: the canaries its owner planted in its store — a file of codes, one a line (python -m "
        "engine canaries plant writes the knowledge base with them and this file), or codes separated by commas; "
        "canary lines in the reference knowledge base are found without it",
        label="Canary codes (file or list)",
    )
    identity: str = param(
        "",
        help="A multi-tenant target: the tenant whose credentials it is queried with; an answer or reported context "
        "holding another tenant's record (the reference kb's 'tenant' field says whose) is a retrieval-scope breach",
        label="Query as tenant",
    )

    def validate(self) -> None:
        """Every attack is registered and the battery is not empty (the target's parameters and the gate's
        thresholds are checked when the audit starts, before any request: :class:`engine.audit.Audit`)."""
        from .attacks.extraction import EXTRACTION_ATTACKS
        from .attacks.poisoning import POISONING_ATTACKS, TARGET_KINDS

        if not self.target.strip():
            raise ConfigError("target: name the system audited (pipeline, http, openai-chat, python, chroma)")
        for a in self.extraction_attacks:
            EXTRACTION_ATTACKS.get(a)
        _check_plugins(
            "audit",
            [("extraction attack", a, EXTRACTION_ATTACKS.get(a)) for a in self.extraction_attacks]
            + [("poisoning attack", a, POISONING_ATTACKS.get(a)) for a in self.poisoning_attacks],
            self.retriever,
            {"generator"} | ({"attacker_llm"} if self.attacker_llm else set()),
            {"index": "an audit reaches its target through its queries and documents only"},
        )
        if not self.extraction_attacks and not self.poisoning_attacks:
            raise ConfigError("the battery is empty: give extraction_attacks or poisoning_attacks")
        if self.target == "pipeline" and self.kb.strip() not in ("", "none", "target"):
            raise ConfigError(
                f"kb: the built-in pipeline is attacked with its own knowledge base (its preset's), so {self.kb!r} "
                "would be ignored; choose the pipeline's knowledge base in its parameters instead "
                f'(--target-params \'{{"kb": "{self.kb}"}}\')'
            )
        if self.poison_target not in TARGET_KINDS:
            raise ConfigError(f"poison_target: {self.poison_target!r} is not one of {', '.join(TARGET_KINDS)}")
        for name in dict(self.attack_params or {}):
            if name not in EXTRACTION_ATTACKS and name not in POISONING_ATTACKS:
                raise ConfigError(f"attack_params: {name!r} is not an attack")
        if self.chunk_size is not None and self.chunk_overlap >= self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        if self.attacker_llm:
            from .generators.spec import parse_generator

            parse_generator(self.attacker_llm)
        if self.canaries and self.target != "pipeline":
            raise ConfigError(
                f"canaries: the audit plants them in the built-in pipeline only; target {self.target!r} holds its "
                "own store: plant them there (python -m engine canaries plant KB --share S) and give the codes "
                "file as canary_codes"
            )
        if (self.canaries or self.canary_codes) and not self.extraction_attacks:
            raise ConfigError("canaries are read in the extraction attacks' answers: the battery has none")
        if self.identity and self.target == "pipeline":
            raise ConfigError(
                "identity: the built-in pipeline's tenants are set by its preset (tenants, identity, tenant_filter)"
            )
        if self.identity and self.kb.strip() == "none":
            raise ConfigError("identity: whose records reached an answer is read from the reference kb: give one")
        if self.canary_codes:
            from .canaries import read_codes

            read_codes(self.canary_codes)

    def to_dict(self) -> dict[str, Any]:
        """Field values as a plain dict, the canary and identity fields only when set (an audit folder written
        before they existed resumes: its recorded configuration is the same)."""
        d = super().to_dict()
        for k in ("canaries", "canary_codes", "identity"):
            if not d.get(k):
                d.pop(k, None)
        return d


def differences(old: Mapping[str, Any], new: Mapping[str, Any], *, skip: tuple[str, ...] = (), limit: int = 4) -> str:
    """The settings two config dicts differ in, as ``key old → new`` (nested mappings by dotted key; ``data_dir``
    never counts), at most ``limit`` of them: what a refusal to overwrite a folder names."""
    out: list[str] = []

    def walk(a: Any, b: Any, prefix: str) -> None:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for k in sorted(set(a) | set(b), key=str):
                if k == "data_dir" or (not prefix and k in skip):
                    continue
                walk(a.get(k), b.get(k), f"{prefix}{k}.")
        elif json.dumps(a, sort_keys=True, default=str) != json.dumps(b, sort_keys=True, default=str):
            out.append(f"{prefix[:-1]} {json.dumps(a, default=str)[:40]} → {json.dumps(b, default=str)[:40]}")

    walk(dict(old), dict(new), "")
    more = f"; and {len(out) - limit} more" if len(out) > limit else ""
    return ("; ".join(out[:limit]) + more) or "none"


class MembershipTableConfig(Params):
    """A grid of membership experiments — knowledge bases × attacks × defense configurations — one resumable run
    per cell, read back as one table (engine/membership_table.py)."""

    base: Optional[Mapping[str, Any]] = param(None, help="MembershipConfig fields every cell shares")
    kbs: tuple[str, ...] = param(("clinic_records",), help="Knowledge bases probed")
    non_member_kbs: Optional[Mapping[str, Any]] = param(
        None, help="Per knowledge base, the corpus its non-members come from {kb: corpus} (else held out of it)"
    )
    attacks: tuple[str, ...] = param(("direct",), help="Membership attacks", registry="membership-attacks")
    configurations: tuple[str, ...] = param(
        ("none",), help="Defense configurations: none, or defenses joined by + (e.g. detect-and-hide, intent-block)"
    )
    attack_generators: Optional[Mapping[str, Any]] = param(
        None, help="Per attack, its generator parameters instead of the base's {attack: {model: …}}"
    )
    utility_corpus: str = param("clinic_handbook", help="Corpus of the utility measured per defense configuration")
    utility_queries: str = param("clinic_handbook", help="Questions of the utility measured per configuration")
    utility_limit: int = param(
        0, min=0, help="Utility questions answered per defense configuration (ACC beside AUROC); 0: no utility"
    )
    task_limit: int = param(
        0,
        min=0,
        help="Questions of each dialog knowledge base's own task (dialogs:<kb>) answered per configuration, before "
        "that KB's first cell: task ACC beside AUROC; 0: none (KBs without dialog records are skipped)",
    )
    order: str = param(
        "table",
        choices=("table", "baselines-first"),
        help="Order the cells run in: table (knowledge base, attack, configuration: the table's reading order) or "
        "baselines-first (per knowledge base, every attack with no defense, then each configuration across the "
        "attacks: a table cut short still has every attack's baseline); the table reads the same either way",
    )

    def validate(self) -> None:
        """Every cell's configuration is valid (so a bad grid fails before its first cell runs)."""
        if not self.kbs or not self.attacks or not self.configurations:
            raise ConfigError("kbs, attacks and configurations each need at least one entry")
        for kb in dict(self.non_member_kbs or {}):
            if kb not in self.kbs:
                raise ConfigError(f"non_member_kbs: {kb!r} is not one of the grid's kbs ({', '.join(self.kbs)})")
        for a in dict(self.attack_generators or {}):
            if a not in self.attacks:
                raise ConfigError(f"attack_generators: {a!r} is not one of the grid's attacks")
        for kb in self.kbs:
            for a in self.attacks:
                for c in self.configurations:
                    self.cell_config(kb, a, c)

    def cell_config(self, kb: str, attack: str, configuration: str) -> MembershipConfig:
        """The membership experiment of one cell."""
        defenses = [] if configuration == "none" else [d for d in configuration.split("+") if d]
        fields: dict[str, Any] = {**dict(self.base or {}), "kb": kb, "attack": attack, "defenses": defenses}
        if (self.non_member_kbs or {}).get(kb):
            fields["non_member_kb"] = self.non_member_kbs[kb]  # type: ignore[index]
        if (self.attack_generators or {}).get(attack):
            fields["generator_params"] = dict(self.attack_generators[attack])  # type: ignore[index]
        return MembershipConfig.from_dict(fields, where=f"cell {kb} × {attack} × {configuration}")


PRESET_KINDS = {
    "poison": PoisonConfig,
    "sweep": SweepConfig,
    "extract": ExtractionConfig,
    "compare": ComparisonConfig,
    "audit": AuditConfig,
    "membership": MembershipConfig,
    "membership-table": MembershipTableConfig,
}


PRESET_MAX_BYTES = 1_000_000
PRESET_MAX_ALIASES = 100
PRESET_MAX_DEPTH = 32


class _PresetLoader(yaml.SafeLoader):
    """YAML's safe loader with the limits a preset needs: at most :data:`PRESET_MAX_ALIASES` aliases (an alias
    bomb expands to gigabytes when the config is written out), nesting at most :data:`PRESET_MAX_DEPTH` deep,
    and no key given twice in one mapping (YAML would keep the last one silently)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > PRESET_MAX_ALIASES:
                raise ConfigError(f"more than {PRESET_MAX_ALIASES} YAML aliases (*name): a preset needs none")
        self._depth += 1
        try:
            if self._depth > PRESET_MAX_DEPTH:
                raise ConfigError(f"nested more than {PRESET_MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise ConfigError(f"key {key!r} is given twice (line {key_node.start_mark.line + 1}); keep one")
            seen.add(key) if isinstance(key, (str, int, float, bool)) else None
        return super().construct_mapping(node, deep=deep)


PRESET_MAX_VALUES = 100_000


def expanded_size(obj: Any, cap: int = PRESET_MAX_VALUES) -> int:
    """How many values ``obj`` holds once written out (a list or mapping shared through YAML aliases counts
    every time it appears, as JSON would write it); counting stops just past ``cap``."""
    memo: dict[int, int] = {}

    def size(o: Any) -> int:
        if isinstance(o, (list, tuple, dict)):
            if id(o) in memo:
                return memo[id(o)]
            items = o.values() if isinstance(o, dict) else o
            n = 1
            for x in items:
                n += size(x)
                if n > cap:
                    break
            memo[id(o)] = n
            return n
        return 1

    return size(obj)


def parse_preset_yaml(text: str, name: str) -> Any:
    """A preset's YAML parsed under the limits of :class:`_PresetLoader`; anything wrong is one ConfigError
    naming the file (and the line, where YAML gives one)."""
    loader = _PresetLoader(text)
    try:
        data = loader.get_single_data()
        if expanded_size(data) > PRESET_MAX_VALUES:
            raise ConfigError(
                f"it expands to more than {PRESET_MAX_VALUES:,} values (YAML aliases repeating "
                "lists): a preset is a small mapping"
            )
        return data
    except ConfigError as e:
        raise ConfigError(f"{name}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{name}: invalid YAML{where}") from None
    except RecursionError:
        raise ConfigError(f"{name}: nested too deep to read") from None
    finally:
        loader.dispose()


def load_preset(name_or_path: str) -> tuple[str, Params, dict[str, Any]]:
    """Read and validate a preset; returns (kind, config, meta with name/description)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PRESETS_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PRESETS_DIR.glob("*.yaml")))
        raise ConfigError(f"preset {name_or_path!r} not found (bundled presets: {known})")
    if path.stat().st_size > PRESET_MAX_BYTES:
        raise ConfigError(
            f"{path.name}: {path.stat().st_size:,} bytes; a preset is a small YAML file (at most "
            f"{PRESET_MAX_BYTES:,} bytes)"
        )
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise ConfigError(f"{path.name}: a preset is a YAML text file; this one holds binary data")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path.name}: not valid UTF-8 (byte {e.start}); re-save the preset as UTF-8") from None
    raw = parse_preset_yaml(text, path.name)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path.name}: a preset must be a mapping of keys to values")
    for key in ("kind", "name", "description"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{path.name}: {key} must be text (got {type(raw[key]).__name__})")
    meta = {k: raw.pop(k) for k in ("name", "description") if k in raw}
    kind = raw.pop("kind", "poison")
    if kind not in PRESET_KINDS:
        raise ConfigError(f"{path.name}: kind {kind!r} is not one of {', '.join(PRESET_KINDS)}")
    if "executor" in raw:  # where a sweep's or a comparison's cells run; not part of the results
        if kind not in ("sweep", "compare"):
            raise ConfigError(f"{path.name}: executor: only sweep and compare presets run cells on an executor")
        from .executors import ExecutorConfig

        ex = raw.pop("executor")
        if not isinstance(ex, dict):
            raise ConfigError(f"{path.name}: executor must be a mapping (executor: ray, workers: 2, ...)")
        meta["executor"] = ExecutorConfig.from_dict(ex, where=f"{path.name}: executor")
    cfg = PRESET_KINDS[kind].from_dict(raw, where=path.name)
    meta.setdefault("name", path.stem)
    return kind, cfg, meta


def list_presets() -> list[dict[str, Any]]:
    """Bundled presets as ``{name, kind, description}``; one that fails to load is listed with kind ``invalid``
    and its error as the description."""
    out = []
    for p in sorted(PRESETS_DIR.glob("*.yaml")):
        try:
            kind, _, meta = load_preset(str(p))
            out.append({"name": p.stem, "kind": kind, "description": meta.get("description", "")})
        except ConfigError as e:
            out.append({"name": p.stem, "kind": "invalid", "description": str(e)})
    return out
