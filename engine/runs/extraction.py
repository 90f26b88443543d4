"""The extraction runner: an attacker agent queries a defended RAG system, round by round.

Lifecycle (as the poisoning runner): ``prepare()`` loads the knowledge base, retriever,
generator, defenses (index-stage ones act here) and the agent; ``step()`` plays one round —
the agent's next query, the system's retrieval, defenses and answer, the leakage it caused;
``finish()`` ends the run. Every action is an event appended to ``events`` and, with an output
folder, to ``events.jsonl`` as it happens (plus ``manifest.json`` and ``summary.json``).

Faults: when generation fails (timeouts or 429s past their retries, a crashed server), the run
writes a ``run_ended`` event with status ``failed`` and raises :class:`RunInterrupted`; every
finished round is already on disk, and :meth:`ExtractionRun.resume` continues from the last one
(the agent's state is restored from its last ``attacker_state`` event; the leakage metrics are
recomputed from the recorded answers, which is deterministic).
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from ..attacker_states import full_states, state_delta
from ..attacks.extraction import AttackContext, Exchange, ExtractionAgent, make_agent
from ..config import ExtractionConfig
from ..canaries import owner_canaries, plant_canaries
from ..corpora import Corpus, check_corpus_spec, load_corpus, retriever_window, stats_for
from ..defenses import make_defenses
from ..embedders import make_retriever
from ..errors import ConfigError, EngineError
from ..generators import GENERATORS
from ..generators.base import TextCallback
from ..generators.metered import MeteredGenerator
from ..metrics.intervals import wilson
from ..metrics.leakage import LeakageTracker
from ..progress import Progress
from ..files import atomic_write
from ..rag import RagSystem
from ..store import StoreSettings
from ..tenancy import OBSERVED, TenantScope, check_identity, cross_tenant_summary, owners_of, tenant_corpus, tenants_of
from ..summaries import ExtractionSummary
from ..events import (
    AttackerState,
    CanariesPlanted,
    DefenseApplied,
    Event,
    Generated,
    IndexBuilt,
    LeakScored,
    QueryIssued,
    Retrieved,
    RoundEnded,
    RoundStarted,
    RunStarted,
    TenantsAssigned,
    TenantScoped,
    jsonable,
    read_events,
)
from .base import EventRunner, RunInterrupted, finished_rounds, locked_resume  # noqa: F401 (RunInterrupted: imported from here)
from .kb_snapshot import KB_FILE, load_kb, save_kb
from .manifest import build_manifest
from ..metrics.catalog import MK

QueryCallback = Callable[[int, str], None]
KB_HINTS = {"clinic_records": "medical", "healthcaremagic": "medical", "enron": "email"}


def events_file(run_dir: Path) -> Path | None:
    """A run folder's ``events.jsonl``; a gzipped copy (``events.jsonl.gz``, how long experiments keep their
    unfinished runs in git between sessions) is unpacked first. None when the folder holds neither."""
    path = Path(run_dir) / "events.jsonl"
    packed = path.with_name("events.jsonl.gz")
    if not path.is_file() and packed.is_file():
        import gzip
        import shutil

        with gzip.open(packed, "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return path if path.is_file() else None


class ExtractionRun(EventRunner):
    """One extraction attack against one defended RAG configuration."""

    resume_command = "extract"
    run_stage = "attacking"

    def __init__(
        self,
        config: ExtractionConfig,
        *,
        out_dir: str | Path | None = None,
        progress: Progress | None = None,
        run_id: str | None = None,
        corpus: Corpus | None = None,
        generator: Any = None,
        settings: StoreSettings | None = None,
        secrets: Mapping[str, str] | None = None,
        target: Any = None,
    ) -> None:
        super().__init__(out_dir=out_dir, progress=progress, run_id=run_id)
        self.config = config
        self._secrets = dict(secrets or {})  # a target's ${NAME} values: kept in memory only
        self._target_override = target
        self.transcript: list[Exchange] = []
        self._corpus_override = corpus
        self._generator_override = generator
        self.settings = settings
        self.system: Optional[RagSystem] = None
        self.agent: Optional[ExtractionAgent] = None
        self.tracker: Optional[LeakageTracker] = None
        self.corpus: Optional[Corpus] = None
        self.window = None
        self.attacker_meter: Optional[MeteredGenerator] = None
        self._exhausted = False
        self._agent_state: dict[str, Any] | None = None  # the last full state written (the next event's base)
        self._scored = False  # the round being played has updated the leakage tracker
        self._torn = False  # a round was cut short after scoring: the run cannot go on in memory
        self.canaries: dict[str, str] = {}  # chunk id -> canary code (config.canaries)
        self._kb_has_canaries = False
        self.tenancy: Optional[TenantScope] = None  # a multi-tenant KB (config.tenants): who asks, how enforced

    @property
    def rounds_done(self) -> int:
        """Rounds played so far."""
        return self._round

    @property
    def done(self) -> bool:
        """Whether the run has played its rounds (or the attacker ran out of queries to ask)."""
        return self._prepared and (self._round >= self.config.rounds or self._exhausted)

    def metrics(self) -> dict[str, float]:
        """The leakage metrics so far (empty before the run is prepared)."""
        return self.tracker.metrics() if self.tracker else {}

    # ------------------------------------------------------------------ lifecycle
    def _build(self) -> tuple[Any, Any]:
        """Everything but events: KB, retriever, generator(s), defenses, system, agent, tracker."""
        c = self.config
        data_dir = c.data_dir or None
        if self._corpus_override is None and c.kb.strip() not in ("", "none", "target"):
            check_corpus_spec(c.kb, data_dir)  # a wrong name or path is one line now, before any model loads
        retriever = make_retriever(c.retriever, dict(c.retriever_params or {}))
        if c.external:
            return self._build_target(retriever)
        generator = self._generator_override or GENERATORS.create(c.generator, dict(c.generator_params or {}))
        self._attacker_llm(generator)
        defenses = make_defenses(c.defenses, dict(c.defense_params or {}))
        self._tick("loading the embedding model", 0, 1)  # its first load in a process: ~6 s of imports
        self.window = retriever_window(retriever)
        self._tick("loading knowledge base", 0, 1)
        corpus = self._corpus_override or load_corpus(
            c.kb, data_dir=data_dir, chunk_size=c.chunk_size, chunk_overlap=c.chunk_overlap, window=self.window
        )
        if len(corpus) == 0:
            raise ConfigError(f"the knowledge base {c.kb!r} is empty")
        if c.top_k > len(corpus):
            raise ConfigError(f"top-k ({c.top_k}) is larger than the knowledge base ({len(corpus)} chunks)")
        if c.canaries and not self._kb_has_canaries:  # a resumed upload's saved chunks hold them already
            corpus, _ = plant_canaries(corpus, c.canaries, c.seed)
        self.canaries = owner_canaries(corpus, c.canary_codes)  # the planted ones, the KB's own, the listed ones
        if c.tenants:
            corpus, self.tenancy = tenant_corpus(corpus, c.tenants, c.identity, c.tenant_filter, c.seed)
        self.corpus = corpus
        self._make_agent(retriever, defenses)
        self.system = RagSystem(
            corpus,
            retriever,
            generator,
            defenses,
            top_k=c.top_k,
            template=c.template,
            max_tokens=c.max_tokens,
            settings=self.settings,
            run_id=self.run_id.replace("_", "-"),
            answer_budget=c.answer_budget,
            tenant=self.tenancy,
        )
        return retriever, generator

    def _attacker_llm(self, generator: Any = None) -> Any:
        """The attacker's own LLM (metered), or None; the generator itself when both are the same model."""
        c = self.config
        if not c.attacker_llm:
            return None
        same = (
            generator is not None
            and c.attacker_llm == c.generator
            and dict(c.attacker_llm_params or {}) == dict(c.generator_params or {})
            and self._generator_override is None
        )
        llm = generator if same else GENERATORS.create(c.attacker_llm, dict(c.attacker_llm_params or {}))
        self.attacker_meter = MeteredGenerator(llm)
        return self.attacker_meter

    def _make_agent(self, retriever: Any, defenses: Any, attacker_llm: Any = None) -> None:
        c = self.config
        ap = {**dict(c.attack_params or {}), "budget": c.rounds}
        if attacker_llm is None and self.attacker_meter is not None:
            attacker_llm = self.attacker_meter
        self.agent = make_agent(
            c.attack,
            ap,
            AttackContext(
                seed=c.seed,
                data_dir=c.data_dir or None,
                attacker_llm=attacker_llm,
                embedder=retriever,
                kb_hint=KB_HINTS.get(c.kb, ""),
                known_defenses=tuple(defenses),
            ),
        )

    def _build_target(self, retriever: Any) -> tuple[Any, Any]:
        """An audit target instead of the built-in pipeline: the reference KB is ``kb`` (a name or path), the
        target's own store (``kb: target``) or unknown (``kb: ''``: the leakage metrics that need it are 0 and
        the report says they could not be computed)."""
        from ..targets import make_target
        from ..targets.system import TargetSystem

        c = self.config
        target = self._target_override or make_target(
            c.target, dict(c.target_params or {}), secrets=self._secrets, data_dir=c.data_dir or None
        )
        self._tick("loading the embedding model", 0, 1)  # its first load in a process: ~6 s of imports
        self.window = retriever_window(retriever)
        self._tick("loading knowledge base", 0, 1)
        if self._corpus_override is not None:
            corpus = self._corpus_override
        elif c.kb == "target":
            target.open(self._tick)
            corpus = target.reference_corpus()
            if corpus is None:
                raise ConfigError(
                    f"target {c.target!r} cannot be read as the reference knowledge base: give the "
                    "knowledge base's files as kb"
                )
        elif c.kb.strip():
            corpus = load_corpus(
                c.kb,
                data_dir=c.data_dir or None,
                chunk_size=c.chunk_size,
                chunk_overlap=c.chunk_overlap,
                window=self.window,
            )
        else:
            corpus = Corpus("unknown", ())
        self.corpus = corpus
        self.canaries = owner_canaries(corpus, c.canary_codes)  # the owner's canaries: in the reference, or listed
        if c.identity:  # queried with one tenant's credentials: the reference's tenant fields say who owns what
            owners = tenants_of(corpus.documents)
            if not owners:
                raise ConfigError(
                    f"identity {c.identity!r}: the reference knowledge base {corpus.name!r} names no tenant; give one "
                    "whose records carry a 'tenant' field (a JSONL key or CSV column, a Chroma metadata key)"
                )
            self.tenancy = TenantScope(check_identity(c.identity, owners), OBSERVED, owners)
        self._make_agent(retriever, (), self._attacker_llm())
        self.system = TargetSystem(target, corpus)
        return retriever, target

    def prepare(self) -> list[Event]:
        """Build the knowledge base, index, generator(s), defenses and attacker, emit the start events (a no-op
        once prepared); returns the new events."""
        if self._prepared:
            return []
        c = self.config
        start = len(self.events)
        retriever, generator = self._build()
        self._open_sink()
        corpus = self.corpus
        manifest = build_manifest(
            config=c.to_dict(),
            config_hash=c.config_hash(),
            seed=c.seed,
            corpus={"name": corpus.name, "size": len(corpus), "fingerprint": corpus.fingerprint},
            retriever={"name": retriever.name, "model_id": retriever.model_id},
            extra={
                "kind": "extract",
                "run_id": self.run_id,
                ("target" if c.external else "generator"): generator.describe(),
                "attack": self.agent.describe(),
                "defenses": [d.describe() for d in self.system.defenses],
            },
        )
        self._emit(RunStarted, config=c.to_dict(), manifest=manifest)
        placed = sum(not k.startswith("canary:") for k in self.canaries)  # the owner's, found in the reference
        self._emit_canaries(self.canaries, c.canaries or (placed / len(corpus) if len(corpus) else 0.0))
        self._emit_tenants(self.tenancy)
        if self.out_dir:
            atomic_write(self.out_dir / "manifest.json", json.dumps(jsonable(manifest), indent=2, default=str))
            # uploads, or a target's own store read as the reference: not reloadable by name (or may change), so kept
            if self._corpus_override is not None or (c.external and c.kb == "target"):
                save_kb(corpus, self.out_dir)
        self._index_events(retriever)
        if not c.external:  # a target answers with its own models
            self._load_models(generator)
        self.tracker = LeakageTracker(
            corpus,
            retriever=retriever,
            crr_tau=c.crr_tau,
            semantic_threshold=c.semantic_threshold,
            canaries=self.canaries,
        )
        self._prepared = True
        return self.events[start:]

    def _index_events(self, retriever: Any) -> None:
        t0 = time.perf_counter()
        actions = self.system.build(progress=self._tick)
        base = self.system.index  # None against an audit target: its store is its own
        self._emit(
            IndexBuilt,
            corpus=self.corpus.name,
            n_docs=len(self.corpus),
            retriever=self.config.retriever,
            model_id=retriever.model_id,
            similarity=retriever.similarity,
            dim=int(base.vectors.shape[1]) if base is not None and base.dense else 0,
            n_embedded_now=base.n_encoded if base is not None else 0,
            seconds=round(time.perf_counter() - t0, 3),
            corpus_stats=stats_for(self.corpus, self.window) if len(self.corpus) else {},
        )
        for a in actions:
            self._emit(DefenseApplied, round=0, defense=a.defense, stage=a.stage, action=a.action, detail=a.detail)

    def step(
        self, count: int = 1, *, on_query: QueryCallback | None = None, on_text: TextCallback | None = None
    ) -> list[Event]:
        """Play the next ``count`` rounds; returns their events. Live views: ``on_query(round, text)`` as
        soon as the attacker has chosen its query, ``on_text(piece)`` as the answer is generated."""
        if not self._prepared:
            self.prepare()
        start = len(self.events)
        for _ in range(max(1, count)):
            if self.done:
                break
            self._play_round(on_query, on_text)
        if self.done and not self._finished:
            self.finish()
        return self.events[start:]

    def _play_round(self, on_query: QueryCallback | None = None, on_text: TextCallback | None = None) -> None:
        """One round, all or nothing: a round cut short before its answer is scored (an exception, a Ctrl-C, a
        live view's callback interrupted by the UI) is rewound — its events are dropped in memory and on disk and
        the agent's state restored, so the next step plays the same round again. A fault of the target
        (:class:`RunInterrupted`) is not rewound: it ends the run, and a resume continues it. Cut after scoring
        (no callback runs there), the run is torn and says so on the next step."""
        if self._torn:
            raise EngineError(
                f"round {self._round + 1} of run {self.run_id} was cut short after its answer was scored; "
                "resume the run from its folder to go on"
            )
        mark = self._mark()
        before = self._agent_state if self._agent_state is not None else jsonable(self.agent.state())
        self._scored = False
        try:
            self._round_body(on_query, on_text)
        except RunInterrupted:
            raise
        except BaseException:
            if self._scored:
                self._torn = True
            else:
                self._rewind(mark)
                self.agent.load_state(copy.deepcopy(before))
                self._exhausted = False
            raise

    def _round_body(self, on_query: QueryCallback | None, on_text: TextCallback | None) -> None:
        r = self._round + 1
        t0 = time.perf_counter()
        used0 = self.attacker_meter.totals() if self.attacker_meter else {}
        query = self.agent.next_query(self.transcript)
        t_attack = time.perf_counter() - t0
        if query is None:
            self._exhausted = True
            return
        qid = f"r{r:04d}"
        self._emit(RoundStarted, round=r, query_id=qid)
        self._emit(QueryIssued, round=r, query_id=qid, text=query)
        if on_query is not None:
            on_query(r, query)
        try:
            ans = self.system.answer(query, on_text=on_text)
        except EngineError as e:
            self._fail(str(e), r)
        answer = self._emit_answer(r, qid, ans)
        self._emit_scoped(r, self.tenancy, ans)
        t1 = time.perf_counter()
        self._scored = True  # from here the tracker holds this round: it cannot be rewound
        leak = self.tracker.update(answer, [c.doc_id for c in ans.context], [c.doc_id for c in ans.retrieved])
        t_metrics = time.perf_counter() - t1
        self._emit(
            LeakScored,
            round=r,
            recovered=leak.recovered,
            recall=leak.recall,
            repeat_contexts=leak.repeat_contexts,
            rouge_contexts=leak.rouge_contexts,
            semantic=leak.semantic,
            pii=leak.pii,
            metrics=leak.metrics,
            canaries=leak.canaries,
        )
        self.transcript.append(Exchange(query, answer))
        state = jsonable(self.agent.state())
        whole, appended = state_delta(self._agent_state, state)
        self._emit(AttackerState, round=r, agent=self.config.attack, state=whole, appended=appended)
        self._agent_state = state
        timings = {"attack": t_attack, **ans.timings, "metrics": t_metrics}
        used = self.attacker_meter.totals() if self.attacker_meter else {}
        usage = {k: round(used[k] - used0.get(k, 0), 6) for k in used}
        self._emit(RoundEnded, round=r, query_id=qid, timings={k: round(v, 4) for k, v in timings.items()}, usage=usage)
        self._round = r

    def planned_rounds(self) -> int:
        """Rounds to play: config.rounds."""
        return self.config.rounds

    # ------------------------------------------------------------------ results
    def summary(self) -> ExtractionSummary:
        """The run's :class:`~engine.summaries.ExtractionSummary` so far (final once it has ended)."""
        return summarize_extraction(self.events, self.config)

    # ------------------------------------------------------------------ resume
    @classmethod
    def resume(
        cls,
        run_dir: str | Path,
        *,
        progress: Progress | None = None,
        generator: Any = None,
        config_overrides: dict | None = None,
        secrets: Mapping[str, str] | None = None,
        target: Any = None,
    ) -> "ExtractionRun":
        """Reopen a run folder: replay its finished rounds, then continue where it stopped. The folder is locked
        first: a second resume (or a live run) of the same folder stops at once with one line."""
        return locked_resume(
            run_dir,
            lambda folder, lock: cls._resume(
                folder,
                lock,
                progress=progress,
                generator=generator,
                config_overrides=config_overrides,
                secrets=secrets,
                target=target,
            ),
        )

    @classmethod
    def _resume(
        cls,
        run_dir: Path,
        lock: Any,
        *,
        progress: Progress | None,
        generator: Any,
        config_overrides: dict | None,
        secrets: Mapping[str, str] | None,
        target: Any,
    ) -> "ExtractionRun":
        path = events_file(run_dir)
        if path is None:
            raise ConfigError(f"{run_dir} holds no events.jsonl: not a run folder")
        events, dropped = read_events(path)
        started = next((e for e in events if isinstance(e, RunStarted)), None)
        if started is None:
            raise ConfigError(f"{path} has no run_started event")
        kind = (started.manifest or {}).get("kind", "poison")
        if kind != "extract":
            raise ConfigError(
                f"{run_dir} holds a {'poisoning' if kind == 'poison' else kind} run: only extraction "
                f"runs can be resumed (a poisoning run is re-run from its preset, with the same seed)"
            )
        cfg = ExtractionConfig.from_dict({**dict(started.config), **(config_overrides or {})}, where=str(run_dir))
        kept, last_done, prev = finished_rounds(events)
        corpus = None
        if (run_dir / KB_FILE).is_file() or cfg.kb == "upload":
            saved = dict(started.manifest.get("corpus") or {})
            corpus = load_kb(run_dir, saved.get("name") or cfg.kb, saved.get("fingerprint"))
        run = cls(
            cfg,
            out_dir=run_dir.parent,
            progress=progress,
            run_id=started.run_id,
            generator=generator,
            corpus=corpus,
            secrets=secrets,
            target=target,
        )
        run._lock = lock
        run._kb_has_canaries = corpus is not None  # the saved chunks are the planted ones
        retriever, _ = run._build()
        run.system.build(progress=run._tick)
        run.tracker = LeakageTracker(
            run.corpus,
            retriever=retriever,
            crr_tau=cfg.crr_tau,
            semantic_threshold=cfg.semantic_threshold,
            canaries=run.canaries,
        )
        queries = {e.round: e.text for e in kept if isinstance(e, QueryIssued)}
        answers = {e.round: e for e in kept if isinstance(e, Generated)}
        context = {e.round: e.context_ids for e in kept if isinstance(e, Generated)}
        top_k = {e.round: e.doc_ids for e in kept if isinstance(e, Retrieved)}
        states = full_states(kept)
        for r in range(1, last_done + 1):
            run.tracker.update(answers[r].text, context.get(r, ()), top_k.get(r, ()))
            run.transcript.append(Exchange(queries[r], answers[r].text))
        if last_done:
            run.agent.load_state(dict(states[last_done]))
            run._agent_state = states[last_done]
        run._continue_after(path, kept, last_done, prev, dropped)
        return run


def summarize_extraction(events: list[Event], config: ExtractionConfig | None = None) -> ExtractionSummary:
    """Final metrics, per-round curves and costs of an extraction run, from its events alone."""
    scored = [e for e in events if isinstance(e, LeakScored)]
    gens = [e for e in events if isinstance(e, Generated)]
    ends = [e for e in events if isinstance(e, RoundEnded)]
    final = dict(scored[-1].metrics) if scored else {}
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    cfg = dict(started.config) if started else (config.to_dict() if config else {})
    cascade = [g.info for g in gens if "flops_verifier" in g.info]
    timing_keys = sorted({k for e in ends for k in e.timings})
    built = next((e for e in events if isinstance(e, IndexBuilt)), None)
    answered = [g for g in gens if not g.blocked_by and g.answer_budget]
    usage_keys = sorted({k for e in ends for k in e.usage})
    attacker = {k: sum(float(e.usage.get(k, 0)) for e in ends) for k in usage_keys}
    gen_cost = [g.info.get("cost_usd") for g in gens if "cost_usd" in g.info]
    out = {
        **{
            k: final.get(k, 0)
            for k in (
                MK.CRR,
                MK.RETRIEVED_COVERAGE,
                MK.REPEAT_CONTEXTS,
                MK.ROUGE_CONTEXTS,
                "repeat_prompts",
                "rouge_prompts",
                MK.SEMANTIC_LEAK,
                MK.PII_LEAKED,
                "pii_total",
                "kb_size",
                "recovered",
                "retrieved",
                MK.EE_RETRIEVAL,
                MK.EE_GENERATION,
                MK.EXPLORATION,
            )
        },
        "corpus_stats": dict(built.corpus_stats) if built else {},
        "answer_budget": {
            "mode": cfg.get("answer_budget", "fixed"),
            "context_tokens": sum(g.context_tokens for g in answered),
            "recoverable_tokens": sum(min(g.context_tokens, g.answer_budget) for g in answered),
            "capped_rounds": sum(g.answer_budget < g.context_tokens for g in answered),
            "answered_rounds": len(answered),
        },
        "cost": {
            "queries": len(ends),
            "generator_tokens": {
                "prompt": sum(g.prompt_tokens for g in gens),
                "completion": sum(g.completion_tokens for g in gens),
            },
            "attacker_tokens": {
                "prompt": int(attacker.get("prompt_tokens", 0)),
                "completion": int(attacker.get("completion_tokens", 0)),
                "calls": int(attacker.get("calls", 0)),
            },
            "seconds": round(sum(sum(e.timings.values()) for e in ends), 3),
            "usd": (sum(gen_cost) + attacker.get("cost_usd", 0.0)) if gen_cost or attacker.get("cost_usd") else None,
        },
        "rounds": len(ends),
        "attack": cfg.get("attack"),
        "defenses": list(cfg.get("defenses") or ()),
        "kb": cfg.get("kb"),
        "blocked": sum(bool(g.blocked_by) for g in gens),
        "curves": {
            k: [e.metrics.get(k, 0) for e in scored]
            for k in (
                MK.CRR,
                MK.RETRIEVED_COVERAGE,
                MK.REPEAT_CONTEXTS,
                MK.ROUGE_CONTEXTS,
                MK.SEMANTIC_LEAK,
                MK.PII_LEAKED,
                MK.EE_GENERATION,
                MK.EXPLORATION,
            )
        },
        "tokens": {"prompt": sum(g.prompt_tokens for g in gens), "completion": sum(g.completion_tokens for g in gens)},
        "seconds": {k: round(sum(e.timings.get(k, 0.0) for e in ends), 3) for k in timing_keys},
        "round_seconds": [round(sum(e.timings.values()), 3) for e in ends],
    }
    if cascade:
        out["cascade"] = {
            k: sum(float(i.get(k, 0)) for i in cascade)
            for k in ("accepted", "rejected", "suppressed", "flops_draft", "flops_verifier", "flops_verifier_only")
        }
    kb, rec, pii, pii_n = int(out["kb_size"]), int(out["recovered"]), int(out[MK.PII_LEAKED]), int(out["pii_total"])
    out[MK.CRR_CI] = wilson(rec, kb) if kb else None
    out["pii_ci"] = wilson(pii, pii_n) if pii_n else None
    assigned = next((e for e in events if isinstance(e, TenantsAssigned)), None)
    if assigned is not None:
        owners = owners_of(assigned.tenants)
        scoped = [e for e in events if isinstance(e, TenantScoped)]
        contexts = [g.context_ids for g in gens if not g.blocked_by]
        out["tenancy"] = {
            "identity": assigned.identity,
            "mode": assigned.mode,
            "tenants": len(assigned.tenants),
            "own_chunks": len(assigned.tenants.get(assigned.identity, ())),
            **cross_tenant_summary(
                owners,
                assigned.identity,
                contexts,
                {c for e in scored for c in e.recovered},
                [len(e.dropped_ids) for e in scoped],
            ),
        }
    planted = next((e for e in events if isinstance(e, CanariesPlanted)), None)
    if planted is not None and planted.doc_ids:
        leaked = len({c for e in scored for c in e.canaries})
        out.update(
            canaries_planted=len(planted.doc_ids),
            canaries_leaked=leaked,
            canaries_ci=wilson(leaked, len(planted.doc_ids)),
        )
    return ExtractionSummary(**out)
