"""The membership-inference runner: is a given record in the (defended) RAG system's knowledge base?

The experiment (the design of Li et al. 2024 §5.1 and Anderson et al. 2024 §4): the knowledge base's records are
split by the seed into members, which stay in the knowledge base, and non-members, held out of it (or taken from
a held-out corpus of the same distribution, ``non_member_kb``). Every probed record is one round: the attack's
questions go through the defended system, its answers are scored, and the round records the truth (member or
not) beside the score. The run ends with AUROC (bootstrap interval), TPR at 1% and 5% FPR (Wilson intervals) and
the ROC curve (engine.metrics.membership).

Lifecycle and faults as the extraction runner: ``prepare()`` builds everything and emits the start events,
``step()`` probes the next record, ``finish()`` writes the summary; a failed generation ends the run with
status ``failed`` and :class:`~engine.runs.extraction.RunInterrupted`; :meth:`MembershipRun.resume` continues
after the last finished round (the split and the probing order are the seed's, so they come out the same).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from ..attacks.membership import MembershipAttack, MembershipContext, make_membership_attack
from ..canaries import canary_hits, plant_canaries
from ..config import MembershipConfig
from ..corpora import (
    Corpus,
    check_corpus_spec,
    corpus_from_documents,
    load_corpus,
    parent_of,
    retriever_window,
    stats_for,
)
from ..defenses import make_defenses
from ..embedders import make_retriever
from ..errors import ConfigError, EngineError
from ..events import (
    CanariesPlanted,
    DefenseApplied,
    Event,
    Generated,
    IndexBuilt,
    MembershipScored,
    MembershipSplit,
    QueryIssued,
    RoundEnded,
    RoundStarted,
    RunEnded,
    RunStarted,
    TenantsAssigned,
    TenantScoped,
    jsonable,
    read_events,
)
from ..files import atomic_write
from ..generators import GENERATORS
from ..generators.base import TextCallback
from ..metrics.intervals import wilson
from ..metrics.membership import membership_metrics
from ..progress import Progress
from ..rag import RagSystem
from ..store import StoreSettings
from ..summaries import MembershipSummary
from ..tenancy import TenantScope, owners_of, tenant_corpus
from ..metrics.catalog import MK
from ..types import Document
from .base import EventRunner, finished_rounds, locked_resume
from .extraction import events_file
from .manifest import build_manifest


def whole_records(corpus: Corpus, texts: Mapping[str, str] | None = None) -> list[Document]:
    """The records of a (chunked) corpus, in corpus order: a record cut into chunks is one document again — its id
    the record's, its text the record's as its owner holds it (``texts``: record id → text, e.g. the corpus
    loaded without chunking; else its chunks joined by a space), and ``chunk_ids`` in its metadata naming the
    chunks that stand for it in the index. An unchunked document is its own record."""
    groups: dict[str, list[Document]] = {}
    for d in corpus.documents:
        groups.setdefault(str(d.metadata.get("parent_id", d.id)), []).append(d)
    out = []
    for rid, chunks in groups.items():
        if len(chunks) == 1 and chunks[0].id == rid:
            d = chunks[0]
            out.append(Document(rid, d.text, {**d.metadata, "chunk_ids": (rid,)}))
            continue
        meta = {k: v for k, v in chunks[0].metadata.items() if k not in ("parent_id", "chunk")}
        text = (texts or {}).get(rid) or " ".join(c.text for c in chunks)
        out.append(Document(rid, text, {**meta, "chunk_ids": tuple(c.id for c in chunks)}))
    return out


def held_out_record(d: Document) -> Document:
    """A held-out record whose id a knowledge-base record also has, renamed ``held-out:<id>``."""
    rid = f"held-out:{d.id}"
    return Document(rid, d.text, {**d.metadata, "chunk_ids": (rid,)})


def split_records(
    kb: Corpus,
    held_out: Corpus | None,
    members: int,
    non_members: int,
    seed: int,
    *,
    texts: Mapping[str, str] | None = None,
) -> tuple[list[Document], list[Document], list[Document]]:
    """(members, non-members, the knowledge base's documents), chosen by ``seed``, by **record**: a record cut
    into chunks is a member with all its chunks or a non-member with none of them (a split by chunk would leave a
    "non-member" whose sibling chunk is still indexed — a non-member in name only). Members and non-members are
    whole records (:func:`whole_records`; ``texts`` gives ``kb``'s records' own text), the knowledge base's
    documents are chunks. Without a held-out corpus the non-members are drawn from ``kb``'s records and all their
    chunks left out of the knowledge base; with one they are drawn from its records and the knowledge base is all
    of ``kb``."""
    rng = np.random.default_rng(seed)
    docs = list(kb.documents)
    records = whole_records(kb, texts)
    order = [records[i] for i in rng.permutation(len(records))]
    if held_out is None:
        if members + non_members > len(records):
            raise ConfigError(
                f"members ({members}) + non_members ({non_members}) is more than the knowledge base's "
                f"{len(records)} records; ask for fewer, or give the non-members' own corpus (non_member_kb)"
            )
        out, mem = order[:non_members], order[non_members : non_members + members]
        gone = {cid for d in out for cid in d.metadata["chunk_ids"]}
        kept = [d for d in docs if d.id not in gone]
    else:
        if members > len(records):
            raise ConfigError(f"members ({members}) is more than the knowledge base's {len(records)} records")
        pool = whole_records(held_out)
        if non_members > len(pool):
            raise ConfigError(f"non_members ({non_members}) is more than the held-out corpus's {len(pool)} records")
        mem = order[:members]
        out = [pool[i] for i in rng.permutation(len(pool))[:non_members]]
        ids = {d.id for d in records} | {d.id for d in docs}
        out = [d if d.id not in ids else held_out_record(d) for d in out]
        kept = docs
    return mem, out, kept


def probe_order(members: list[Document], non_members: list[Document], seed: int) -> list[tuple[Document, bool]]:
    """The records in the order they are probed: members and non-members shuffled together by the seed, so a
    run cut short still holds both classes."""
    both = [(d, True) for d in members] + [(d, False) for d in non_members]
    rng = np.random.default_rng(seed + 1)
    return [both[i] for i in rng.permutation(len(both))]


class MembershipRun(EventRunner):
    """One membership-inference experiment: an attack against one defended RAG configuration."""

    resume_command = "membership"
    run_stage = "probing"

    def __init__(
        self,
        config: MembershipConfig,
        *,
        out_dir: str | Path | None = None,
        progress: Progress | None = None,
        run_id: str | None = None,
        generator: Any = None,
        settings: StoreSettings | None = None,
    ) -> None:
        super().__init__(out_dir=out_dir, progress=progress, run_id=run_id)
        self.config = config
        self._generator_override = generator
        self.settings = settings
        self.system: Optional[RagSystem] = None
        self.attack: Optional[MembershipAttack] = None
        self.order: list[tuple[Document, bool]] = []
        self.scores: dict[str, tuple[bool, float]] = {}  # record id -> (member, score)
        self.canaries: dict[str, str] = {}  # record id -> its canary code (config.canaries)
        self.tenancy: Optional[TenantScope] = None  # a multi-tenant KB (config.tenants): who asks, how enforced

    @property
    def rounds_done(self) -> int:
        """Records probed so far."""
        return self._round

    @property
    def done(self) -> bool:
        """Whether every record has been probed."""
        return self._prepared and self._round >= len(self.order)

    # ------------------------------------------------------------------ lifecycle
    def _build(self) -> Any:
        c = self.config
        data_dir = c.data_dir or None
        check_corpus_spec(c.kb, data_dir)  # wrong names and paths first, before any model loads
        if c.non_member_kb:
            check_corpus_spec(c.non_member_kb, data_dir)
        self.attack = make_membership_attack(c.attack, dict(c.attack_params or {}), MembershipContext(seed=c.seed))
        defenses = make_defenses(c.defenses, dict(c.defense_params or {}))
        retriever = make_retriever(c.retriever, dict(c.retriever_params or {}))
        generator = self._generator_override or GENERATORS.create(c.generator, dict(c.generator_params or {}))
        self._tick("loading the embedding model", 0, 1)  # its first load in a process: ~6 s of imports
        window = retriever_window(retriever)
        self._tick("loading knowledge base", 0, 1)
        chunking = {"chunk_size": c.chunk_size, "chunk_overlap": c.chunk_overlap, "window": window}
        kb = load_corpus(c.kb, data_dir=data_dir, **chunking)
        # the records as their owners hold them (what is probed); the held-out ones are never indexed
        whole = load_corpus(c.kb, data_dir=data_dir, chunk_size=None) if len(kb) > len(whole_records(kb)) else kb
        held = load_corpus(c.non_member_kb, data_dir=data_dir, chunk_size=None) if c.non_member_kb else None
        texts = {d.id: d.text for d in whole.documents}
        mem, out, kept = split_records(kb, held, c.members, c.non_members, c.seed, texts=texts)
        if c.top_k > len(kept):
            raise ConfigError(f"top-k ({c.top_k}) is larger than the knowledge base ({len(kept)} chunks)")
        self.split = (mem, out)
        self.corpus = kb if held is not None else corpus_from_documents(kb.name, kept, chunk_size=None)
        if c.canaries:  # planted in the knowledge base only: the probed records stay as their owner holds them
            self.corpus, self.canaries = plant_canaries(self.corpus, c.canaries, c.seed)
        if c.tenants:  # the knowledge base's records dealt to tenants; the attacker asks as one of them
            self.corpus, self.tenancy = tenant_corpus(self.corpus, c.tenants, c.identity, c.tenant_filter, c.seed)
        self.order = probe_order(mem, out, c.seed)
        self.system = RagSystem(
            self.corpus,
            retriever,
            generator,
            defenses,
            top_k=c.top_k,
            template=c.template,
            max_tokens=c.max_tokens,
            settings=self.settings,
            run_id=self.run_id.replace("_", "-"),
            tenant=self.tenancy,
        )
        return retriever

    def prepare(self) -> list[Event]:
        """Load and split the records, build the defended system and its index, emit the start events (a no-op
        once prepared); returns the new events."""
        if self._prepared:
            return []
        c = self.config
        start = len(self.events)
        retriever = self._build()
        self._open_sink()
        mem, out = self.split
        manifest = build_manifest(
            config=c.to_dict(),
            config_hash=c.config_hash(),
            seed=c.seed,
            corpus={"name": self.corpus.name, "size": len(self.corpus), "fingerprint": self.corpus.fingerprint},
            retriever={"name": retriever.name, "model_id": retriever.model_id},
            extra={
                "kind": "membership",
                "run_id": self.run_id,
                "generator": self.system.generator.describe() if self.system.generator is not None else {},
                "attack": self.attack.describe(),
                "defenses": [d.describe() for d in self.system.defenses],
            },
        )
        self._emit(RunStarted, config=c.to_dict(), manifest=manifest)
        if self.out_dir:
            atomic_write(self.out_dir / "manifest.json", json.dumps(jsonable(manifest), indent=2, default=str))
        self._emit(
            MembershipSplit,
            members=tuple(d.id for d in mem),
            non_members=tuple(d.id for d in out),
            kb_size=len(self.corpus),
            held_out_from=c.non_member_kb,
            unit="record",
        )
        self._emit_canaries(self.canaries, c.canaries)
        self._emit_tenants(self.tenancy)
        t0 = time.perf_counter()
        actions = self.system.build(progress=self._tick)
        base = self.system.index
        self._emit(
            IndexBuilt,
            corpus=self.corpus.name,
            n_docs=len(self.corpus),
            retriever=c.retriever,
            model_id=retriever.model_id,
            similarity=retriever.similarity,
            dim=int(base.vectors.shape[1]) if base is not None and base.dense else 0,
            n_embedded_now=base.n_encoded if base is not None else 0,
            seconds=round(time.perf_counter() - t0, 3),
            corpus_stats=stats_for(self.corpus, retriever_window(retriever)),
        )
        for a in actions:
            self._emit(DefenseApplied, round=0, defense=a.defense, stage=a.stage, action=a.action, detail=a.detail)
        self._load_models(self.system.generator)
        self._prepared = True
        return self.events[start:]

    def step(self, count: int = 1, *, on_text: TextCallback | None = None) -> list[Event]:
        """Probe the next ``count`` records; returns their events (``on_text`` receives answers as generated)."""
        if not self._prepared:
            self.prepare()
        start = len(self.events)
        for _ in range(max(1, count)):
            if self.done:
                break
            self._probe(on_text)
        if self.done and not self._finished:
            self.finish()
        return self.events[start:]

    def _probe(self, on_text: TextCallback | None = None) -> None:
        r = self._round + 1
        doc, member = self.order[r - 1]
        t0 = time.perf_counter()
        self._emit(RoundStarted, round=r, query_id=doc.id)
        rng = np.random.default_rng([self.config.seed, r])
        probes = self.attack.probes(doc.text, rng)
        answers, blocked, seen = [], 0, set()
        for q in probes:
            self._emit(QueryIssued, round=r, query_id=doc.id, text=q)
            try:
                ans = self.system.answer(q, on_text=on_text)
            except EngineError as e:
                self._fail(str(e), r)
            blocked += bool(ans.blocked_by)
            seen |= {c.doc_id for c in ans.retrieved}
            text = self._emit_answer(r, doc.id, ans)
            self._emit_scoped(r, self.tenancy, ans)
            answers.append(text)
        score = float(self.attack.score(doc.text, probes, answers))
        self.scores[doc.id] = (member, score)
        self._emit(
            MembershipScored,
            round=r,
            record_id=doc.id,
            member=member,
            score=round(score, 6),
            queries=len(probes),
            blocked=blocked,
            retrieved=bool(seen & set(doc.metadata.get("chunk_ids", (doc.id,)))),
            canaries=tuple(sorted({h for a in answers for h in canary_hits(a, self.canaries)}))
            if self.canaries
            else (),
        )
        self._emit(RoundEnded, round=r, query_id=doc.id, timings={"probe": round(time.perf_counter() - t0, 4)})
        self._round = r

    def planned_rounds(self) -> int:
        """Rounds to play: len(order)."""
        return len(self.order)

    def summary(self) -> MembershipSummary:
        """The experiment's :class:`~engine.summaries.MembershipSummary` so far (final once it has ended)."""
        return summarize_membership(self.events, self.config)

    # ------------------------------------------------------------------ resume
    @classmethod
    def resume(cls, run_dir: str | Path, *, progress: Progress | None = None, generator: Any = None) -> "MembershipRun":
        """Reopen a run folder and continue after its last finished record (the folder is locked first)."""
        return locked_resume(run_dir, lambda folder, lock: cls._resume(folder, lock, progress, generator))

    @classmethod
    def _resume(cls, run_dir: Path, lock: Any, progress: Progress | None, generator: Any) -> "MembershipRun":
        path = events_file(run_dir)
        if path is None:
            raise ConfigError(f"{run_dir} holds no events.jsonl: not a run folder")
        events, dropped = read_events(path)
        started = next((e for e in events if isinstance(e, RunStarted)), None)
        if started is None:
            raise ConfigError(f"{path} has no run_started event")
        if (started.manifest or {}).get("kind") != "membership":
            raise ConfigError(f"{run_dir} holds no membership run")
        cfg = MembershipConfig.from_dict(dict(started.config), where=str(run_dir))
        kept, last_done, prev = finished_rounds(events)
        run = cls(cfg, out_dir=run_dir.parent, progress=progress, run_id=started.run_id, generator=generator)
        run._lock = lock
        run._build()
        split = next((e for e in kept if isinstance(e, MembershipSplit)), None)
        if split is None or tuple(d.id for d in run.split[0]) != tuple(split.members):
            raise ConfigError(
                f"{run_dir}: its split of members and non-members differs from today's (the knowledge base changed, "
                "or the run was split by chunk: since December 2026 whole records are split); run it again with its "
                "settings (the membership page's Saved experiments) instead"
            )
        run.system.build(progress=run._tick)
        for e in kept:
            if isinstance(e, MembershipScored):
                run.scores[e.record_id] = (e.member, e.score)
        run._continue_after(path, kept, last_done, prev, dropped)
        return run


def run_membership(
    cfg: MembershipConfig,
    *,
    out_dir: str | Path | None = None,
    progress: Progress | None = None,
    stop: Any = None,
    generator: Any = None,
    run_id: str | None = None,
) -> MembershipRun:
    """Run an experiment to its end, or until ``stop`` (a stop token: anything with ``is_set()``) is set between
    two records; returns the closed run (``events``; ``summary()`` covers the records probed so far, and a stopped
    run with an ``out_dir`` resumes with :meth:`MembershipRun.resume`). ``run_id`` (default: a new one) names its
    folder ``out_dir/run_id``, for a caller that reads the events there while it runs."""
    run = MembershipRun(cfg, out_dir=out_dir, progress=progress, generator=generator, run_id=run_id)
    return _to_the_end(run, stop)


def resume_membership(run_dir: str | Path, *, progress: Progress | None = None, stop: Any = None) -> MembershipRun:
    """Continue a stopped or killed experiment in its folder (its own settings, after its last finished record) to
    its end or until ``stop``; returns the closed run, as :func:`run_membership` does."""
    return _to_the_end(MembershipRun.resume(run_dir, progress=progress), stop)


def _to_the_end(run: MembershipRun, stop: Any) -> MembershipRun:
    """Play ``run`` until its end or ``stop``, and close it whatever happens."""
    try:
        run.run(stop)
    finally:
        run.close()
    return run


def membership_config_of(folder: str | Path) -> MembershipConfig:
    """The settings a saved experiment ran with (from its ``run_started`` event), to run it again in a new folder:
    what a user needs where it cannot resume (its split of records changed, or it finished)."""
    path = events_file(Path(folder))
    if path is None:
        raise ConfigError(f"{folder} holds no events.jsonl: not a run folder")
    events, _ = read_events(path)
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    if started is None or (started.manifest or {}).get("kind") != "membership":
        raise ConfigError(f"{folder} holds no membership run")
    return MembershipConfig.from_dict(dict(started.config), where=str(folder))


def load_membership(folder: str | Path) -> tuple[dict[str, Any], list[Event], bool]:
    """A saved experiment's summary (from its events), events, and whether it ran to its end."""
    path = events_file(Path(folder))
    if path is None:
        raise ConfigError(f"{folder} holds no events.jsonl: not a run folder")
    events, _ = read_events(path)
    complete = any(isinstance(e, RunEnded) and e.status == "completed" for e in events)
    return dict(summarize_membership(events)), events, complete


def summarize_membership(events: list[Event], config: MembershipConfig | None = None) -> MembershipSummary:
    """AUROC, TPR at low FPR, the ROC curve and the costs of a membership run, from its events alone."""
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    cfg: Mapping[str, Any] = dict(started.config) if started else (config.to_dict() if config else {})
    scored = [e for e in events if isinstance(e, MembershipScored)]
    gens = [e for e in events if isinstance(e, Generated)]
    ends = [e for e in events if isinstance(e, RoundEnded)]
    split = next((e for e in events if isinstance(e, MembershipSplit)), None)
    mem = [e.score for e in scored if e.member]
    retrieved = [e.retrieved for e in scored if e.member]
    non = [e.score for e in scored if not e.member]
    m = membership_metrics(mem, non, seed=int(cfg.get("seed", 0) or 0))
    queries = sum(e.queries for e in scored)
    planted = next((e for e in events if isinstance(e, CanariesPlanted)), None)
    canaried = set(planted.doc_ids) if planted else set()
    leaked = {c for e in scored for c in e.canaries}
    # canaries are planted in chunks; a member record carries one when any of its chunks does
    canaried_records = {parent_of(c) for c in canaried}
    proven = [e for e in scored if e.member and e.record_id in canaried_records]
    return MembershipSummary(
        **m,
        tenancy=tenant_membership(events, scored, non, int(cfg.get("seed", 0) or 0)),
        canaries_planted=len(canaried),
        canaries_leaked=len(leaked),
        canaries_ci=wilson(len(leaked), len(canaried)) if canaried else None,
        canary_members=len(proven),
        canary_members_found=sum(any(parent_of(c) == e.record_id for c in e.canaries) for e in proven),
        mean_score_members=float(np.mean(mem)) if mem else None,
        mean_score_non_members=float(np.mean(non)) if non else None,
        queries=queries,
        queries_per_decision=queries / len(scored) if scored else 0.0,
        blocked=sum(e.blocked for e in scored),
        decisions=len(scored),
        members_retrieved=sum(retrieved) / len(retrieved) if retrieved else None,
        attack=cfg.get("attack"),
        defenses=list(cfg.get("defenses") or ()),
        kb=cfg.get("kb"),
        kb_size=split.kb_size if split else 0,
        tokens={"prompt": sum(g.prompt_tokens for g in gens), "completion": sum(g.completion_tokens for g in gens)},
        seconds=round(sum(sum(e.timings.values()) for e in ends), 3),
    )


def tenant_membership(
    events: list[Event], scored: list[MembershipScored], non: list[float], seed: int
) -> dict[str, Any] | None:
    """A multi-tenant experiment's numbers (None for one owner): the members split by owner — the attacker's own
    tenant's and the other tenants' — each class's AUROC against the same non-members (can a tenant tell that a
    record is in *another* tenant's part of the knowledge base?), the share of each whose own record reached the
    context, and the share of questions whose context held another tenant's chunk (Wilson interval)."""
    assigned = next((e for e in events if isinstance(e, TenantsAssigned)), None)
    if assigned is None:
        return None
    owners, me = owners_of(assigned.tenants), assigned.identity
    # members are whole records (``rec-0001``), the tenants' lists hold chunk ids (``rec-0001#c1`` for a record
    # indexed in two chunks): a record's owner is its chunks' (one tenant holds all of a record's chunks)
    owners.update({parent_of(d): t for d, t in list(owners.items())})
    scoped = [e for e in events if isinstance(e, TenantScoped)]
    out: dict[str, Any] = {"identity": me, "mode": assigned.mode, "tenants": len(assigned.tenants)}
    for side, keep in (("own", lambda t: t == me), ("foreign", lambda t: t is not None and t != me)):
        rows = [e for e in scored if e.member and keep(owners.get(e.record_id))]
        m = membership_metrics([e.score for e in rows], non, seed=seed) if rows and non else {}
        out[f"{side}_members"] = len(rows)
        out[f"auroc_{side}"] = m.get("auroc")
        out[f"auroc_{side}_ci"] = m.get("auroc_ci")
        out[f"{side}_members_retrieved"] = sum(e.retrieved for e in rows) / len(rows) if rows else None
    crossed = sum(1 for e in scoped if e.foreign_ids)
    out[MK.CROSS_TENANT_ROUNDS] = crossed / len(scoped) if scoped else 0.0
    out[MK.CROSS_TENANT_ROUNDS + "_ci"] = list(wilson(crossed, len(scoped)))
    out["tenant_dropped_queries"] = sum(1 for e in scoped if e.dropped_ids)
    return out
