"""What every runner shares: an id, an output folder, a progress callback and its event log."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Mapping

from ..errors import EngineError
from ..events import Event, event_to_json
from ..progress import Progress


class RunInterrupted(EngineError):
    """A run stopped on a fault; its finished rounds are on disk and it can be resumed."""

    def __init__(
        self, message: str, run_dir: Path | None, rounds_done: int, *, reason: str = "", failed_round: int = 0
    ) -> None:
        super().__init__(message)
        self.run_dir = run_dir
        self.rounds_done = rounds_done
        self.reason = reason or message  # the fault alone, without the run's name and resume hint
        self.failed_round = failed_round


def locked_resume(run_dir: str | Path, reopen: Any) -> Any:
    """Lock a run folder, then ``reopen(folder, lock)`` it (the lock passes to the run, which releases it when it
    closes); a second resume (or a live run) of the same folder stops at once with one line, and a folder that
    cannot be reopened releases the lock again."""
    from ..errors import ConfigError
    from ..folder_lock import run_lock

    if not str(run_dir).strip() or not Path(run_dir).is_dir():
        raise ConfigError(f"--resume: {str(run_dir)!r} is not a run folder")
    folder = Path(run_dir)
    lock = run_lock(folder, folder.name)
    lock.acquire()
    try:
        return reopen(folder, lock)
    except BaseException:
        lock.release()
        raise


def finished_rounds(events: list[Event]) -> tuple[list[Event], int, str]:
    """What a resume keeps of a run's events: those up to its last finished round (a round cut short, and a
    ``run_ended``, are dropped), the number of that round, and the status the run had ended with
    ('interrupted' when it had not ended)."""
    from ..events import RoundEnded, RoundStarted, RunEnded

    last = max((e.round for e in events if isinstance(e, RoundEnded)), default=0)
    cut = next((i for i, e in enumerate(events) if isinstance(e, RoundStarted) and e.round > last), None)
    if cut is None:
        cut = next((i for i, e in enumerate(events) if isinstance(e, RunEnded)), len(events))
    prev = next((e.status for e in events if isinstance(e, RunEnded)), "interrupted")
    return events[:cut], last, prev


def new_run_id() -> str:
    """A new run's id: when it started, then 8 random hex digits (its folder's name under a runs folder)."""
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]


class EventRunner:
    """Appends numbered, typed events to ``events`` and, once a sink is open, to ``events.jsonl``."""

    def __init__(
        self, *, out_dir: str | Path | None = None, progress: Progress | None = None, run_id: str | None = None
    ) -> None:
        self.run_id = run_id or new_run_id()
        if out_dir:
            from ..paths import writable_dir

            writable_dir(out_dir)  # a file in the way or a read-only place: one clear error, before any work
        self.out_dir = Path(out_dir) / self.run_id if out_dir else None
        self.progress = progress
        self.events: list[Event] = []
        self._sink = None
        self._lock = None  # the run folder's lock while events are written (engine.folder_lock)
        self._round = 0
        self._prepared = False
        self._finished = False

    def _emit(self, cls: type[Event], **fields: Any) -> Event:
        e = cls(seq=len(self.events), run_id=self.run_id, **fields)
        self.events.append(e)
        if self._sink is not None:
            self._sink.write(event_to_json(e) + "\n")
            self._sink.flush()
        return e

    def _mark(self) -> tuple[int, int | None]:
        """Where the events stand now, in memory and in ``events.jsonl``: what :meth:`_rewind` goes back to."""
        return len(self.events), (self._sink.tell() if self._sink is not None else None)

    def _rewind(self, mark: tuple[int, int | None]) -> None:
        """Drop every event written since ``mark`` (from :meth:`_mark`), in memory and on disk: a round cut
        short leaves no trace, so the run goes on as if it had not started."""
        count, pos = mark
        del self.events[count:]
        if self._sink is not None and pos is not None:
            self._sink.seek(pos)
            self._sink.truncate()
            self._sink.flush()

    def _tick(self, stage: str, done: int, total: int) -> None:
        if self.progress:
            self.progress(stage, done, total)

    def _load_models(self, *models: Any) -> None:
        """Load the answering models now, under their own progress stage: loaded on the first round's question
        instead, a page's bar read the index's "indexing N/N" for the tens of seconds a GGUF load takes."""
        models = tuple(m for m in models if m is not None)
        if not models:
            return
        self._tick("loading the generator", 0, 1)
        for m in models:
            load = getattr(m, "load", None)  # a generator a test or a caller passed in may load lazily only
            if load is not None:
                load()
        self._tick("loading the generator", 1, 1)

    def _hold(self, folder: Path) -> None:
        """Take the run folder's lock (one writer per run: a live run, or a resume), unless held already."""
        if self._lock is None:
            from ..folder_lock import run_lock

            lock = run_lock(folder, self.run_id)
            lock.acquire()
            self._lock = lock

    def _open_sink(self) -> None:
        """Start ``out_dir/events.jsonl`` (no-op without an output folder), holding the folder's lock."""
        if self.out_dir:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self._hold(self.out_dir)
            self._sink = open(self.out_dir / "events.jsonl", "w", encoding="utf-8")

    def _continue_after(self, path: Path, kept: list[Event], last: int, previous: str, dropped: int) -> None:
        """Resume in place: rewrite ``path`` with the ``kept`` events, record ``run_resumed``, go on after round
        ``last``."""
        from ..events import RunResumed

        self._hold(path.parent)
        self.events = []
        self._sink = open(path, "w", encoding="utf-8")
        for e in kept:
            self.events.append(e)
            self._sink.write(event_to_json(e) + "\n")
        self._sink.flush()
        self._emit(RunResumed, from_round=last, previous_status=previous, dropped_bytes=dropped)
        self._round = last
        self._prepared = True

    def _close_sink(self) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _end(self) -> list[Event]:
        """Emit ``run_ended`` (completed) with the summary, write ``summary.json``, close; returns the new events."""
        import json

        from ..events import RunEnded, jsonable

        start = len(self.events)
        summary = self.summary()
        # the event holds the summary's JSON object, as summary.json does (a typed summary is a dataclass, which
        # the event's own conversion would otherwise unfold field by field)
        self._emit(RunEnded, status="completed", summary=jsonable(summary))
        self._finished = True
        if self.out_dir:
            from ..files import atomic_write

            atomic_write(self.out_dir / "summary.json", json.dumps(jsonable(summary), indent=2, default=str))
        self.close()
        return self.events[start:]

    # the command that resumes a run of this kind (``python -m engine COMMAND --resume FOLDER``), named on a fault
    resume_command = ""

    def _fail(self, message: str, r: int) -> None:
        """End the run as failed in round ``r`` (a ``run_ended`` with the error) and raise RunInterrupted naming
        the command that resumes it."""
        from ..events import RunEnded
        from ..secrets import scrub

        message = scrub(message)
        where = (
            f"; resume with: python -m engine {self.resume_command} --resume {self.out_dir}"
            if self.out_dir and self.resume_command
            else ""
        )
        self._emit(RunEnded, status="failed", summary={"error": message, "rounds_done": self._round, "failed_round": r})
        raise RunInterrupted(
            f"run {self.run_id} stopped in round {r} ({message}); {self._round} finished round(s) kept{where}",
            self.out_dir,
            self._round,
            reason=message,
            failed_round=r,
        )

    def _emit_canaries(self, canaries: Mapping[str, str], share: float) -> None:
        """The ``canaries_planted`` event of the canaries (chunk id -> code) planted in the knowledge base, if any."""
        if canaries:
            from ..events import CanariesPlanted

            self._emit(CanariesPlanted, doc_ids=tuple(canaries), codes=tuple(canaries.values()), share=share)

    def _emit_tenants(self, scope: Any) -> None:
        """The ``tenants_assigned`` event of a multi-tenant run (``scope``: its :class:`~engine.tenancy.TenantScope`,
        or None for one owner)."""
        if scope is None:
            return
        from ..events import TenantsAssigned

        by_tenant: dict[str, list[str]] = {}
        for doc_id, owner in scope.owners.items():
            by_tenant.setdefault(owner, []).append(doc_id)
        self._emit(
            TenantsAssigned,
            identity=scope.identity,
            mode=scope.mode,
            tenants={t: tuple(ids) for t, ids in by_tenant.items()},
        )

    def _emit_scoped(self, r: int, scope: Any, ans: Any) -> None:
        """The ``tenant_scoped`` event of one answer of a multi-tenant run: the other tenants' chunks in its context
        and those a post-top-K filter cut (nothing for one owner)."""
        if scope is None:
            return
        from ..events import TenantScoped

        foreign = tuple(scope.foreign(c.doc_id for c in ans.context))
        self._emit(TenantScoped, round=r, foreign_ids=foreign, dropped_ids=tuple(ans.tenant_dropped))

    def _emit_answer(self, r: int, query_id: str, ans: Any) -> str:
        """Record one answer of the defended system in round ``r``: each defense's action, the raw top-K
        (``retrieved``), then ``generated``; returns the answer's text with every key the engine was given
        scrubbed."""
        from ..events import DefenseApplied, Generated, Retrieved
        from ..secrets import scrub_known

        for a in ans.actions:
            self._emit(DefenseApplied, round=r, defense=a.defense, stage=a.stage, action=a.action, detail=a.detail)
        self._emit(
            Retrieved,
            round=r,
            query_id=query_id,
            doc_ids=tuple(c.doc_id for c in ans.retrieved),
            scores=tuple(round(c.score, 5) for c in ans.retrieved),
            ranks=tuple(c.rank for c in ans.retrieved),
            is_poison=tuple(False for _ in ans.retrieved),
        )
        g = ans.generation
        text = scrub_known(ans.answer)  # a key the engine was given never reaches the events, even echoed
        self._emit(
            Generated,
            round=r,
            text=text,
            context_ids=tuple(c.doc_id for c in ans.context),
            blocked_by=ans.blocked_by,
            model=g.model if g else "",
            prompt_tokens=g.prompt_tokens if g else 0,
            completion_tokens=g.completion_tokens if g else 0,
            seconds=round(g.seconds, 4) if g else 0.0,
            info=dict(g.info) if g else {},
            context_tokens=ans.context_tokens,
            answer_budget=ans.answer_budget if g else 0,
        )
        return text

    def finish(self) -> list[Event]:
        """End the run: the summary event and ``summary.json`` (a no-op once finished); returns the new events."""
        if self._finished:
            return []
        return self._end()

    def summary(self) -> Mapping[str, Any]:
        """The run's headline numbers (a typed summary that reads as its JSON object), written to
        ``summary.json`` when it ends; each runner implements it."""
        raise NotImplementedError

    @property
    def finished(self) -> bool:
        """Whether ``run_ended`` has been emitted."""
        return self._finished

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the run's RAG system (its overlay store), if it has one, and the ``events.jsonl`` sink (safe to call
        again)."""
        system = getattr(self, "system", None)
        if system is not None:
            system.close()
        self._close_sink()

    # the progress stage :meth:`run` reports, and how many rounds it counts toward
    run_stage = "running"

    def planned_rounds(self) -> int:
        """How many rounds :meth:`run` plays (its progress total); a runner that uses :meth:`run` implements it."""
        raise NotImplementedError

    def run(self, stop: Any = None) -> list[Event]:
        """Prepare, play every round (``step``) and finish; returns all events. ``stop`` (a stop token: anything with
        ``is_set()``) ends it between two rounds, unfinished (the run resumes from its folder)."""
        from ..progress import stopped

        self.prepare()
        if not self.done:  # names the stage while the first round runs (it read "loading the generator 1/1")
            self._tick(self.run_stage, self._round, self.planned_rounds())
        while not self.done and not stopped(stop):
            self.step()
            self._tick(self.run_stage, self._round, self.planned_rounds())
        if self.done:
            self.finish()
        return self.events
