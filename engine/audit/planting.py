"""Poisoning against an audit target: plant one poison, ask its question, read the answer, remove the poison.

Against the engine's own index a poisoning run measures the poison's exact rank; against a deployed system
only what a user sees can be measured: whether the answer repeats the attacker's information (the goal items,
PoisonedRAG's substring rule — :func:`engine.metrics.poisoning.answer_matches`) and, where the service reports
its sources, whether the poison was among them. Each round:

1. (jamming only) the question is asked once *without* the poison: an answer that refuses already is not
   counted as the blocker's success, and neither is one that carries the refusal yet still answers (a service
   that quotes its context repeats the blocker's "I don't know" beside the real answer): the blocker succeeds when
   the answer refuses and keeps less than ``DENIAL_RECALL`` of the clean answer's content words
   (:func:`engine.metrics.poisoning.denial_verdict`, the rule the poisoning lab uses too);
2. the poison (the attack's document for this question, under an id of the audit's own) is written to the
   plant journal, then planted (:meth:`Target.ingest`);
3. the question is asked;
4. the poison is removed — always, also when the question failed — and the target is asked whether it is
   gone (:meth:`Target.exists`); the journal records both.

The trigger attack is asked questions with the trigger and as many without (the poison should answer only
the first). Rounds are events like every run's; a run stopped by a fault resumes after its last finished
round, once the journal's outstanding plants are removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Optional

from ..attacks.poisoning import POISONING_ATTACKS, TARGET_KINDS, make_attack
from ..attacks.poisoning.base import Poison
from ..errors import ConfigError, EngineError
from ..events import (
    AnswerScored,
    CleanupChecked,
    Event,
    Generated,
    PoisonInjected,
    QueryIssued,
    Retrieved,
    RoundEnded,
    RoundStarted,
    RunEnded,
    RunStarted,
    jsonable,
    read_events,
)
from ..files import atomic_write
from ..metrics.intervals import wilson
from ..metrics.poisoning import answer_matches, clean_refused_rounds, denial_verdict
from ..params import Params, param
from ..progress import Progress
from ..queries import load_queries
from ..runs.base import EventRunner, finished_rounds
from ..runs.manifest import build_manifest
from ..secrets import scrub
from ..types import Document, Query
from .journal import PlantJournal
from ..metrics.catalog import MK


class PlantingConfig(Params):
    """One poisoning attack planted in an audit target, one question at a time."""

    target: str = param("pipeline", help="The audit target (registry name)")
    target_params: Optional[Mapping[str, Any]] = param(None, help="The target's parameters")
    attack: str = param("universal", help="Poisoning attack")
    attack_params: Optional[Mapping[str, Any]] = param(None, help="Attack parameters")
    questions: str = param("clinic_handbook", help="Questions the poisons are aimed at (a query-set spec)")
    limit: int = param(
        4,
        min=1,
        max=10000,
        help="Questions attacked (the trigger attack: this many with the trigger and this many without)",
    )
    poison_target: str = param("pii", choices=TARGET_KINDS, help="The information the poisons carry")
    seed: int = param(0, min=0, help="Seed of the attack")
    data_dir: str = param("", help="Benchmark data dir")

    def validate(self) -> None:
        from ..targets import TARGETS

        cls = POISONING_ATTACKS.get(self.attack)
        if cls.needs("index"):
            raise ConfigError(
                f"attack {self.attack!r} searches the clean index before crafting (an adaptive "
                "attacker): not available against an audit target"
            )
        TARGETS.get(self.target).Params.from_dict(self.target_params, where=f"target {self.target}")

    def attack_arguments(self) -> dict[str, Any]:
        """The attack's parameters, with the run's target information where the attack takes one."""
        ap = dict(self.attack_params or {})
        if POISONING_ATTACKS.get(self.attack).takes_target():
            ap.setdefault("target", self.poison_target)
        return ap


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _is_poison(source: Any, stored: set[str], poison_text: str) -> bool:
    """Whether a reported context is the planted poison (by id, or by its text either way round)."""
    if source.id and source.id in stored:
        return True
    a, b = _norm(source.text), _norm(poison_text)
    return bool(a) and (a in b or b[:300] in a)


class TargetPoisoningRun(EventRunner):
    """One poisoning attack against an audit target (see the module docstring)."""

    def __init__(
        self,
        config: PlantingConfig,
        *,
        out_dir: str | Path | None = None,
        progress: Progress | None = None,
        run_id: str | None = None,
        secrets: Mapping[str, str] | None = None,
        journal: PlantJournal | None = None,
        cell: str = "",
        target: Any = None,
    ) -> None:
        super().__init__(out_dir=out_dir, progress=progress, run_id=run_id)
        self.config = config
        self._secrets = dict(secrets or {})
        self.journal = journal
        self.cell = cell or f"poisoning:{config.attack}"
        self.target = target
        self.queries: list[Query] = []
        self.poisons: list[Poison] = []

    @property
    def done(self) -> bool:
        """Whether every question has been attacked."""
        return self._prepared and self._round >= len(self.queries)

    @property
    def rounds_done(self) -> int:
        """Questions attacked so far."""
        return self._round

    # ------------------------------------------------------------------ setup
    def _build(self) -> None:
        from ..targets import make_target

        c = self.config
        if self.target is None:
            self.target = make_target(
                c.target, dict(c.target_params or {}), secrets=self._secrets, data_dir=c.data_dir or None
            )
        attack = make_attack(c.attack, c.attack_arguments(), seed=c.seed, data_dir=c.data_dir or None)
        pool = load_queries(c.questions, data_dir=c.data_dir or None)
        trigger = str(getattr(attack.params, "trigger", "") or "")
        if trigger:
            hit = [q for q in pool if trigger.casefold() in q.text.casefold()][: c.limit]
            miss = [q for q in pool if trigger.casefold() not in q.text.casefold()][: c.limit]
            if not hit:
                raise ConfigError(
                    f"no question of {c.questions!r} contains the trigger {trigger!r}: choose a "
                    f"trigger the questions use (attack parameter trigger)"
                )
            self.queries = [Query(q.id, q.text, {**dict(q.metadata), "trigger": True}) for q in hit] + [
                Query(q.id, q.text, {**dict(q.metadata), "trigger": False}) for q in miss
            ]
        else:
            self.queries = pool[: c.limit]
        crafted = attack.craft(self.queries)
        tag = self.run_id.replace("_", "-")[-8:]
        self.poisons = [
            Poison(
                Document(f"audit-{tag}-{i:04d}", p.doc.text, {**dict(p.doc.metadata), "audit": self.run_id}),
                p.query_id,
                p.target_kind,
                p.goal,
            )
            for i, p in enumerate(crafted)
        ]
        if not self.target.can_write:
            raise ConfigError(
                f"target {c.target!r} has no knowledge-base write surface: poisoning cannot be "
                "tested (give its ingest and delete endpoints, or ingest/remove callables)"
            )

    def prepare(self) -> list[Event]:
        """Open the target and craft the poisons (a no-op once prepared); returns the new events."""
        if self._prepared:
            return []
        start = len(self.events)
        self._build()
        self._tick("opening the target", 0, 1)
        self.target.open(self._tick)
        self._open_sink()
        c = self.config
        manifest = build_manifest(
            config=c.to_dict(),
            config_hash="",
            seed=c.seed,
            corpus={"name": c.questions, "size": len(self.queries), "fingerprint": ""},
            retriever={},
            extra={
                "kind": "plant",
                "run_id": self.run_id,
                "target": self.target.describe(),
                "attack": {"name": c.attack, "params": c.attack_arguments()},
                "n_queries": len(self.queries),
            },
        )
        self._emit(RunStarted, config=c.to_dict(), manifest=manifest)
        if self.out_dir:
            atomic_write(self.out_dir / "manifest.json", json.dumps(jsonable(manifest), indent=2, default=str))
        self._prepared = True
        return self.events[start:]

    # ------------------------------------------------------------------ rounds
    def step(self, count: int = 1) -> list[Event]:
        """Attack the next ``count`` questions; returns their events."""
        if not self._prepared:
            self.prepare()
        start = len(self.events)
        for _ in range(max(1, count)):
            if self.done:
                break
            self._play_round()
        if self.done and not self._finished:
            self._end()
        return self.events[start:]

    def _plant(self, poison: Poison) -> list[str]:
        t = self.target
        spec = {"kind": t.name, "params": t.params.to_dict()}
        in_copy = bool(getattr(t, "writes_in_place", True) is False)
        if self.journal is not None:
            self.journal.plan(self.cell, [poison.doc.id], spec, in_copy=in_copy)
        stored = t.ingest([poison.doc])
        if self.journal is not None:
            self.journal.planted(self.cell, [poison.doc.id], stored)
        return stored

    def _unplant(self, r: int, stored: list[str]) -> bool | None:
        self.target.remove(stored)
        left = self.target.exists(stored)
        verified = None if left is None else not any(left)
        if verified is not False and self.journal is not None:
            self.journal.removed(self.cell, stored, verified)
        self._emit(CleanupChecked, round=r, doc_ids=tuple(stored), verified=verified)
        if verified is False:
            raise EngineError(
                f"the target still holds planted document(s) {', '.join(stored)} after removing them; "
                f"remove them by hand (the plant journal lists them)"
            )
        return verified

    def _play_round(self) -> None:
        r = self._round + 1
        q, poison = self.queries[r - 1], self.poisons[r - 1]
        refusal_goal = poison.target_kind == "refusal"
        self._emit(RoundStarted, round=r, query_id=q.id)
        clean_answer = None
        stored: list[str] = []
        try:
            if refusal_goal:  # a blocker counts only where the clean answer did not refuse already
                clean_answer = self.target.query(q.text).answer
            stored = self._plant(poison)
            self._emit(
                PoisonInjected, doc_ids=tuple(stored), query_ids=(q.id,), texts=(poison.doc.text,), mode="one-at-a-time"
            )
            self._emit(QueryIssued, round=r, query_id=q.id, text=q.text)
            try:
                reply = self.target.query(q.text)
            finally:
                self._unplant(r, stored)
        except EngineError as e:
            self._fail(str(e), r)
        hits = [_is_poison(s, set(stored), poison.doc.text) for s in reply.contexts]
        self._emit(
            Retrieved,
            round=r,
            query_id=q.id,
            doc_ids=tuple(s.id or f"context-{i + 1}" for i, s in enumerate(reply.contexts)),
            scores=tuple(float(s.score or 0.0) for s in reply.contexts),
            ranks=tuple(range(1, len(reply.contexts) + 1)),
            is_poison=tuple(hits),
            target_ids=tuple(stored),
            target_ranks=tuple(hits.index(True) + 1 if any(hits) else 0 for _ in stored),
        )
        matched = answer_matches(reply.answer, poison.goal)
        info = {"contexts_reported": reply.contexts_reported, "trigger": q.metadata.get("trigger")}
        carried = bool(matched)
        if clean_answer is not None:
            carried, clean = denial_verdict(reply.answer, clean_answer, poison.goal)
            info.update(clean)
        self._emit(
            Generated,
            round=r,
            text=reply.answer,
            context_ids=tuple(s.id for s in reply.contexts),
            model=str(reply.info.get("model") or self.target.name),
            seconds=reply.seconds,
            info=info,
        )
        self._emit(
            AnswerScored,
            round=r,
            query_id=q.id,
            poison_in_context=any(hits),
            goal=tuple(poison.goal),
            matched=tuple(matched),
            carried=carried,
        )
        self._emit(RoundEnded, round=r, query_id=q.id, timings={"target": reply.seconds})
        self._round = r
        self._tick("planting", r, len(self.queries))

    def _fail(self, message: str, r: int) -> None:
        from ..runs.extraction import RunInterrupted

        message = scrub(message)
        self._emit(RunEnded, status="failed", summary={"error": message, "rounds_done": self._round, "failed_round": r})
        raise RunInterrupted(
            f"{self.cell} stopped in round {r} ({message}); {self._round} finished round(s) kept",
            self.out_dir,
            self._round,
            reason=message,
            failed_round=r,
        )

    def run(self) -> list[Event]:
        """Attack every question, then end the run."""
        self.prepare()
        while not self.done:
            self.step()
        if not self._finished:
            self._end()
        return self.events

    def close(self) -> None:
        if self.target is not None:
            self.target.close()
        self._close_sink()

    def summary(self) -> dict[str, Any]:
        return summarize_planting(self.events)

    # ------------------------------------------------------------------ resume
    @classmethod
    def resume(
        cls,
        run_dir: str | Path,
        *,
        progress: Progress | None = None,
        secrets: Mapping[str, str] | None = None,
        journal: PlantJournal | None = None,
        cell: str = "",
    ) -> "TargetPoisoningRun":
        """Reopen a run folder and continue after its last finished round (the journal's outstanding plants
        must have been removed first: :func:`engine.audit.journal.cleanup`)."""
        from ..folder_lock import run_lock

        run_dir = Path(run_dir)
        path = run_dir / "events.jsonl"
        if not path.is_file():
            raise ConfigError(f"{run_dir} holds no events.jsonl: not a run folder")
        lock = run_lock(run_dir, run_dir.name)
        lock.acquire()
        try:
            return cls._resume(run_dir, path, lock, progress=progress, secrets=secrets, journal=journal, cell=cell)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _resume(
        cls,
        run_dir: Path,
        path: Path,
        lock: Any,
        *,
        progress: Progress | None,
        secrets: Mapping[str, str] | None,
        journal: PlantJournal | None,
        cell: str,
    ) -> "TargetPoisoningRun":
        events, dropped = read_events(path)
        started = next((e for e in events if isinstance(e, RunStarted)), None)
        if started is None or (started.manifest or {}).get("kind") != "plant":
            raise ConfigError(f"{run_dir} holds no poisoning-against-a-target run")
        cfg = PlantingConfig.from_dict(dict(started.config), where=str(run_dir))
        kept, last, prev = finished_rounds(events)
        run = cls(
            cfg,
            out_dir=run_dir.parent,
            progress=progress,
            run_id=started.run_id,
            secrets=secrets,
            journal=journal,
            cell=cell,
        )
        run._lock = lock
        run._build()
        run.target.open(progress)
        run._continue_after(path, kept, last, prev, dropped)
        return run


def summarize_planting(events: list[Event]) -> dict[str, Any]:
    """Headline numbers of a poisoning-against-a-target run, from its events alone."""
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    cfg = dict(started.config) if started else {}
    scored = [e for e in events if isinstance(e, AnswerScored)]
    gens = {e.round: e for e in events if isinstance(e, Generated)}
    checks = [e for e in events if isinstance(e, CleanupChecked)]
    reported = any(bool(g.info.get("contexts_reported")) for g in gens.values())

    def rate(rows: list[AnswerScored]) -> dict[str, Any]:
        wins = sum(e.carried for e in rows)
        return {
            "rate": wins / len(rows) if rows else None,
            "ci": wilson(wins, len(rows)) if rows else None,
            "successes": wins,
            "n": len(rows),
        }

    compared = any("clean_refused" in g.info for g in gens.values())  # a blocker's run: asked without it too
    refused = clean_refused_rounds(events)
    asr = rate([e for e in scored if e.round not in refused])
    out: dict[str, Any] = {
        "attack": cfg.get("attack"),
        "target": cfg.get("target"),
        "questions": cfg.get("questions"),
        "rounds": len(scored),
        MK.ASR_GENERATION: asr["rate"],
        "asr_generation_ci": asr["ci"],
        "successes": asr["successes"],
        "answered": asr["n"],
        "contexts_reported": reported,
        "poison_in_context": sum(e.poison_in_context for e in scored),
        "poison_retrieved_rate": (sum(e.poison_in_context for e in scored) / len(scored))
        if scored and reported
        else None,
        "poison_retrieved_ci": wilson(sum(e.poison_in_context for e in scored), len(scored))
        if scored and reported
        else None,
        "cleanup": {
            "planted": sum(len(e.doc_ids) for e in checks),
            "verified": sum(len(e.doc_ids) for e in checks if e.verified is True),
            "unverifiable": sum(len(e.doc_ids) for e in checks if e.verified is None),
            "still_there": sum(len(e.doc_ids) for e in checks if e.verified is False),
        },
    }
    if compared:
        out["clean_refusals"] = len(refused)
    with_trigger = [e for e in scored if gens.get(e.round) is not None and gens[e.round].info.get("trigger") is True]
    if with_trigger:
        without = [e for e in scored if gens.get(e.round) is not None and gens[e.round].info.get("trigger") is False]
        w, wo = rate(with_trigger), rate(without)
        out["trigger"] = {"with": w, "without": wo}
        out.update(asr_generation=w["rate"], asr_generation_ci=w["ci"], successes=w["successes"], answered=w["n"])
    return out


def planting_evidence(events: list[Event], limit: int = 5) -> list[dict[str, Any]]:
    """Up to ``limit`` rounds where the attack worked: the question, the planted text, the answer and the goal
    items it repeated (``spans``: where in the answer)."""
    poisons, current = {}, 0
    for e in events:
        if isinstance(e, RoundStarted):
            current = e.round
        elif isinstance(e, PoisonInjected):
            poisons[current] = e.texts[0] if e.texts else ""
    queries = {e.round: e.text for e in events if isinstance(e, QueryIssued)}
    gens = {e.round: e for e in events if isinstance(e, Generated)}
    out = []
    for e in events:
        if isinstance(e, AnswerScored) and e.carried and e.round in gens and len(out) < limit:
            answer = gens[e.round].text
            low = answer.lower()
            spans = [[low.find(m.lower()), low.find(m.lower()) + len(m)] for m in e.matched if m and m.lower() in low]
            out.append(
                {
                    "round": e.round,
                    "query": queries.get(e.round, ""),
                    "answer": answer,
                    "source_id": "planted document",
                    "why": "the answer repeats: " + ", ".join(e.matched),
                    "source_text": poisons.get(e.round, "")[:1200],
                    "spans": [],
                    "answer_spans": spans,
                    "clean_answer": gens[e.round].info.get("clean_answer"),
                }
            )
    return out
