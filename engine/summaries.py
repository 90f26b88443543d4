"""Typed summaries that cross the engine's public API: an extraction run's headline numbers
(:class:`ExtractionSummary`), a poisoning run's (:class:`PoisoningSummary`) and one row of a defense comparison
(:class:`ComparisonRow`).

All are frozen records with named, typed fields for code that uses the engine as a library
(``run.summary().crr``, ``row.metrics[MK.CRR]``), and both read as the JSON object they are saved as
(``summary[MK.CRR]``, ``row["crr_ratio"]``, ``json.dumps(s.to_dict())``): the files on disk, the
CLI's ``--json`` and the pages that read saved files keep one shape, so a summary written by an older
version reads the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterator, Mapping

from .metrics.catalog import LEAKAGE, MK, STAGE


class _ReadsAsDict(Mapping):
    """Read access to a record's JSON object: ``r[key]``, ``r.get``, ``in``, ``dict(r)``."""

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - each record implements it
        """The record as the flat JSON object it is saved as (``summary.json``, ``comparison.json`` rows)."""
        raise NotImplementedError

    def _flat(self) -> dict[str, Any]:
        cached = self.__dict__.get("_flat_cache")
        if cached is None:
            cached = self.to_dict()
            object.__setattr__(self, "_flat_cache", cached)
        return cached

    def __getitem__(self, key: str) -> Any:
        return self._flat()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._flat())

    def __len__(self) -> int:
        return len(self._flat())


@dataclass(frozen=True, eq=False)
class ExtractionSummary(_ReadsAsDict):
    """The final metrics, per-round curves and costs of one extraction run, from its events alone.

    Leakage fields are the last round's cumulative values (see ``engine.metrics.catalog`` for what each
    means); ``curves`` holds them round by round and ``round_seconds`` the wall seconds each round took;
    ``answer_budget`` says how much of the retrieved context the answers could copy; ``cost`` counts
    queries, tokens of both sides, seconds and dollars (None when no provider priced the calls); ``cascade`` is
    present only when the cascade generator ran."""

    crr: float = 0.0
    retrieved_coverage: float = 0.0
    repeat_contexts: float = 0.0
    rouge_contexts: float = 0.0
    repeat_prompts: float = 0.0
    rouge_prompts: float = 0.0
    semantic_leak: float = 0.0
    pii_leaked: int = 0
    pii_total: int = 0
    kb_size: int = 0
    recovered: int = 0
    retrieved: int = 0
    ee_retrieval: float = 0.0
    ee_generation: float = 0.0
    exploration: float = 0.0
    corpus_stats: Mapping[str, Any] = field(default_factory=dict)
    answer_budget: Mapping[str, Any] = field(default_factory=dict)
    cost: Mapping[str, Any] = field(default_factory=dict)
    rounds: int = 0
    attack: str | None = None
    defenses: list[str] = field(default_factory=list)
    kb: str | None = None
    blocked: int = 0
    curves: Mapping[str, list[float]] = field(default_factory=dict)
    tokens: Mapping[str, int] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict)
    round_seconds: list[float] = field(default_factory=list)  # wall seconds of each round, all stages
    cascade: Mapping[str, float] | None = None
    crr_ci: tuple[float, float] | None = None  # 95% Wilson interval of CRR over the KB's chunks
    pii_ci: tuple[float, float] | None = None  # 95% Wilson interval of the share of PII items leaked
    canaries_planted: int = 0  # canaries planted in the KB (engine.canaries); 0: none
    canaries_leaked: int = 0  # distinct canaries the answers carried
    canaries_ci: tuple[float, float] | None = None  # 95% Wilson interval of the share leaked: the KB share estimate
    tenancy: Mapping[str, Any] | None = None  # a multi-tenant run: identity, mode, cross-tenant numbers (tenancy.py)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``summary.json`` and ``run_ended.summary`` (``cascade`` only when it ran)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if out["cascade"] is None:
            del out["cascade"]
        if out["tenancy"] is None:  # one owner: the JSON of runs without tenants
            del out["tenancy"]
        if not out["canaries_planted"]:  # no canaries: the JSON of runs without them
            for k in ("canaries_planted", "canaries_leaked", "canaries_ci"):
                del out[k]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ExtractionSummary":
        """A summary read back from its JSON object (unknown keys are ignored, missing ones default)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


# the generation-side numbers of a poisoning run with answers: one typed section, flat keys in its JSON
POISON_GENERATION_KEYS = (
    MK.ASR_GENERATION,
    "asr_generation_ci",
    "n_generated",
    "generation_successes",
    "poison_in_context",
    "clean_refused",
    "asr_judge",
    "generator",
    "generation_seconds",
)
_POISON_SECTIONS = ("poisons_over_window", "poison_tokens", "trigger", "defenses", "poisonedrag")


@dataclass(frozen=True, eq=False)
class PoisoningSummary(_ReadsAsDict):
    """The headline numbers of one poisoning run, from its events alone.

    ``asr`` / ``asr_ci``: ASR@1, @2, @5 (keys "1", "2", "5") with 95% Wilson intervals; ``asr_top_k`` at the run's
    K; ``detectors``: per detector TPR/FPR/AUROC, thresholds and counts (or ``skipped`` with the reason);
    ``store_agreement``: share of searches where Chroma returned the exact top-K. The sections that only some runs
    have are None otherwise: ``poison_tokens`` (lengths against the retriever's window), ``trigger`` (ASR with and
    without the trigger phrase), ``defenses`` (ASR after the defenses, their TPR/FPR), ``generation`` (the answers:
    ASR (generation), judge, seconds; saved as flat keys, :data:`POISON_GENERATION_KEYS`) and ``poisonedrag``
    (precision / recall / F1 of the poisons in the top-K)."""

    run_id: str
    asr: Mapping[str, float]
    asr_ci: Mapping[str, Any]
    asr_top_k: float
    mean_poison_rank: float
    n_queries: int
    corpus: str
    queries: str
    corpus_size: int | None
    corpus_stats: Mapping[str, Any]
    top_k: int
    injection: str
    retriever: str
    attack: str
    target: str
    store_agreement: float
    detectors: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    poisons_over_window: int | None = None
    poison_tokens: Mapping[str, Any] | None = None
    trigger: Mapping[str, Any] | None = None
    defenses: Mapping[str, Any] | None = None
    generation: Mapping[str, Any] | None = None
    poisonedrag: Mapping[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``summary.json`` (the sections a run lacks are left out; ``generation`` flat)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "generation"}
        for k in _POISON_SECTIONS:
            if out[k] is None:
                del out[k]
        out.update(self.generation or {})
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PoisoningSummary":
        """A summary read back from its JSON object (unknown keys are ignored)."""
        names = {f.name for f in fields(cls)} - {"generation"}
        gen = {k: d[k] for k in POISON_GENERATION_KEYS if k in d}
        return cls(**{k: v for k, v in d.items() if k in names}, generation=gen or None)


_ROW_IDENTITY = (
    "kb",
    "attack",
    "configuration",
    "defenses",
    "run_id",
    "run_ids",
    "seed",
    "seeds",
    "n_runs",
    "rounds",
    "kb_size",
    "blocked",
    "curves",
    "seconds",
    "cascade",
)


@dataclass(frozen=True, eq=False)
class ComparisonRow(_ReadsAsDict):
    """One (kb, attack, configuration) of a defense comparison, averaged over its seeds.

    ``metrics`` holds the leakage metrics (mean over the runs), ``std`` their sample standard deviations
    (None for one run), ``ratio`` each value over the same attack's undefended value (None without a
    baseline or when it is 0), ``stages`` the leakage-by-stage numbers, ``ci`` 95% Wilson intervals (CRR),
    ``vs_none`` whether it leaks less / more than no protection or is not distinguishable from it at this
    budget (intervals overlap), ``utility`` the configuration's
    utility (``acc``, ``faithfulness``, ``acc_drop`` …). Saved flat in ``comparison.json`` as
    ``crr``, ``crr_std``, ``crr_ratio``, ``utility_acc`` …; :meth:`from_dict` reads that shape back."""

    attack: str
    configuration: str
    kb: str | None = None
    defenses: list[str] = field(default_factory=list)
    run_id: str = ""
    run_ids: list[str] = field(default_factory=list)
    seed: int | None = None
    seeds: list[Any] = field(default_factory=list)
    n_runs: int = 1
    rounds: float = 0
    kb_size: int = 0
    blocked: float = 0
    metrics: Mapping[str, float] = field(default_factory=dict)
    std: Mapping[str, float | None] = field(default_factory=dict)
    ratio: Mapping[str, float | None] = field(default_factory=dict)
    stages: Mapping[str, float | None] = field(default_factory=dict)
    ci: Mapping[str, list[float] | None] = field(default_factory=dict)
    vs_none: Mapping[str, str] = field(default_factory=dict)
    utility: Mapping[str, Any] = field(default_factory=dict)
    curves: Mapping[str, list[float]] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict)
    cascade: Mapping[str, float] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    membership: Mapping[str, Any] = field(default_factory=dict)  # auroc, auroc_ci, … (membership_attack)
    task: Mapping[str, Any] = field(default_factory=dict)  # acc, acc_ci, acc_drop … of the KB's own task

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ComparisonRow":
        """The typed row of one flat row of ``comparison.json``; keys it does not know stay in ``extra``."""
        d = dict(d)
        take = {k: d.pop(k) for k in _ROW_IDENTITY if k in d}
        metrics = {k: d.pop(k) for k in LEAKAGE if k in d}
        std = {k: d.pop(f"{k}_std") for k in LEAKAGE if f"{k}_std" in d}
        ratio = {k: d.pop(f"{k}_ratio") for k in LEAKAGE if f"{k}_ratio" in d}
        stages = {k: d.pop(k) for k in STAGE if k in d}
        ci = {k: d.pop(f"{k}_ci") for k in LEAKAGE if f"{k}_ci" in d}
        vs_none = {k: d.pop(f"{k}_vs_none") for k in LEAKAGE if f"{k}_vs_none" in d}
        utility = {k[len("utility_") :]: d.pop(k) for k in [k for k in d if k.startswith("utility_")]}
        membership = {k[len("membership_") :]: d.pop(k) for k in [k for k in d if k.startswith("membership_")]}
        task = {k[len("task_") :]: d.pop(k) for k in [k for k in d if k.startswith("task_")]}
        return cls(
            **take,
            metrics=metrics,
            std=std,
            ratio=ratio,
            stages=stages,
            ci=ci,
            vs_none=vs_none,
            utility=utility,
            extra=d,
            membership=membership,
            task=task,
        )

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON object of ``comparison.json`` (the inverse of :meth:`from_dict`)."""
        out: dict[str, Any] = {
            k: getattr(self, k) for k in _ROW_IDENTITY if k != "cascade" and not (k == "seed" and self.seed is None)
        }
        out.update(self.metrics)
        out.update({f"{k}_std": v for k, v in self.std.items()})
        out.update({f"{k}_ratio": v for k, v in self.ratio.items()})
        out.update(self.stages)
        out.update({f"{k}_ci": v for k, v in self.ci.items()})
        out.update({f"{k}_vs_none": v for k, v in self.vs_none.items()})
        out.update({f"utility_{k}": v for k, v in self.utility.items()})
        out.update({f"membership_{k}": v for k, v in self.membership.items()})
        out.update({f"task_{k}": v for k, v in self.task.items()})
        if self.cascade is not None:
            out["cascade"] = self.cascade
        out.update(self.extra)
        return out


@dataclass(frozen=True, eq=False)
class MembershipSummary(_ReadsAsDict):
    """The result of one membership-inference experiment, from its events alone (engine.metrics.membership).

    ``auroc`` with its stratified-bootstrap 95% interval ``auroc_ci``; ``tpr_at_1fpr`` / ``tpr_at_5fpr``: the
    TPR at the lowest threshold keeping the FPR at or below 1% / 5%, each with its Wilson interval and the FPR
    it reached (``fpr_resolution``: 1 / non-members, the smallest FPR above 0 this many non-members can show);
    ``roc``: the curve's points; ``queries``: questions sent in all, ``queries_per_decision`` per record;
    ``members_retrieved``: the share of members whose own record came back in the top-K (an attack cannot tell
    a member the retriever never finds); with canaries planted, how many leaked (``canaries_ci``: the Wilson
    interval of the share) and how many probed members were proven by their own canary in an answer."""

    auroc: float | None = None
    auroc_ci: tuple[float, float] | None = None
    tpr_at_1fpr: float = 0.0
    tpr_at_1fpr_ci: tuple[float, float] | None = None
    tpr_at_1fpr_fpr: float = 0.0
    tpr_at_5fpr: float = 0.0
    tpr_at_5fpr_ci: tuple[float, float] | None = None
    tpr_at_5fpr_fpr: float = 0.0
    fpr_resolution: float | None = None
    roc: Mapping[str, list[float]] = field(default_factory=dict)
    n_members: int = 0
    n_non_members: int = 0
    mean_score_members: float | None = None
    mean_score_non_members: float | None = None
    queries: int = 0
    queries_per_decision: float = 0.0
    blocked: int = 0
    decisions: int = 0
    members_retrieved: float | None = None  # share of members whose own record its questions retrieved
    canaries_planted: int = 0  # records given a canary (engine.canaries); 0: none
    canaries_leaked: int = 0  # distinct canaries the answers carried
    canaries_ci: tuple[float, float] | None = None  # 95% Wilson interval of the share leaked
    canary_members: int = 0  # probed members that carry a canary in the knowledge base
    canary_members_found: int = 0  # of those, members whose own canary came back in an answer (certain, no FP)
    tenancy: Mapping[str, Any] | None = None  # a multi-tenant KB: own vs other tenants' members (tenant_membership)
    attack: str | None = None
    defenses: list[str] = field(default_factory=list)
    kb: str | None = None
    kb_size: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``summary.json`` and ``run_ended.summary`` (the canary fields only when some were
        planted)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if not out["canaries_planted"]:
            for k in ("canaries_planted", "canaries_leaked", "canaries_ci", "canary_members", "canary_members_found"):
                out.pop(k)
        if out["tenancy"] is None:  # one owner: the JSON of runs without tenants
            del out["tenancy"]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MembershipSummary":
        """A summary read back from its JSON object (unknown keys are ignored, missing ones default)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
