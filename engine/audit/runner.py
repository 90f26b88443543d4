"""Run an audit: the battery's cells against one target, each resumable, the report written as cells land.

An audit folder holds:

* ``audit.json`` — the configuration and every cell's state (pending, done, failed, skipped, stopped), its
  run folder, summary, reference-free signals and evidence;
* ``audit.yaml`` — the same configuration as a preset (``python -m engine audit --preset DIR/audit.yaml
  --only CELL`` reproduces one finding);
* ``cells/<cell>-<id>/`` — each cell's run (``events.jsonl``, ``manifest.json``, ``summary.json``);
* ``plants.jsonl`` — the plant journal (:mod:`engine.audit.journal`);
* ``report.json``, ``report.html`` and ``report.junit.xml`` — rewritten after every cell.

The folder is held by one writer at a time (:func:`engine.folder_lock.exclusive_folder`). Running the same
audit into the same folder again resumes it: finished cells are kept, a cell cut short continues after its
last finished round, and the plants a crash left behind are removed first. A folder holding an audit of a
different configuration is refused, never overwritten. A target fault (unreachable, refused, over budget)
stops the audit after writing what it has; the same command resumes it.
"""

from __future__ import annotations

import json
import re
import shlex
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from ..config import AuditConfig, ExtractionConfig, differences
from ..errors import ConfigError, EngineError
from ..events import jsonable
from ..files import atomic_write
from ..folder_lock import exclusive_folder
from ..progress import Progress, StopToken, stopped
from .journal import PlantJournal, cleanup, describe_outstanding

STATE = "audit.json"
PRESET = "audit.yaml"
MEASURED_KEYS = (
    "target",
    "target_params",
    "kb",
    "extraction_attacks",
    "rounds",
    "attack_params",
    "attacker_llm",
    "poisoning_attacks",
    "questions",
    "poison_questions",
    "poison_target",
    "retriever",
    "chunk_size",
    "chunk_overlap",
    "seed",
    "canaries",
    "canary_codes",
    "identity",
)


class AuditStopped(EngineError):
    """The audit was asked to stop; its finished rounds are kept and the same command resumes it."""


def cells_of(cfg: AuditConfig) -> list[dict[str, str]]:
    """The battery's cells in run order: ``{"id", "family", "attack"}``."""
    return [{"id": f"extraction:{a}", "family": "extraction", "attack": a} for a in cfg.extraction_attacks] + [
        {"id": f"poisoning:{a}", "family": "poisoning", "attack": a} for a in cfg.poisoning_attacks
    ]


def _slug(cell_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]+", "-", cell_id).strip("-")


def _measured(cfg: Mapping[str, Any]) -> str:
    return json.dumps({k: jsonable(cfg.get(k)) for k in MEASURED_KEYS}, sort_keys=True, default=str)


def unfinished_audit(root: str | Path, cfg: AuditConfig) -> Path | None:
    """The newest folder under ``root`` holding an audit of the same measured configuration (target, battery; not
    the gate) with a cell not finished — what running ``cfg`` there would resume — or None. The app's *Run audit*
    resumes a stopped audit this way, as the CLI does with the same ``--out``."""
    want = _measured(cfg.to_dict())
    states = sorted(Path(root).glob(f"*/{STATE}"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in states:
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(state, dict) or _measured(state.get("config") or {}) != want:
            continue
        if any(c.get("status") not in ("done", "skipped") for c in (state.get("cells") or {}).values()):
            return path.parent
    return None


def default_out(cfg: AuditConfig) -> Path:
    """The ``--out`` of an audit given none: ``audit-<target>-<8 hex>``, named after what it measures (the gate and
    the data dir left out), so the same command finds the same folder and resumes it."""
    import hashlib

    digest = hashlib.sha256(_measured(cfg.to_dict()).encode()).hexdigest()[:8]
    return Path(f"audit-{_slug(cfg.target)}-{digest}")


def reference_spec(cfg: AuditConfig) -> str:
    """The ``kb`` an extraction cell gets: a name/path, ``target`` (the target's own store) or '' (none)."""
    from ..targets import TARGETS

    if cfg.kb == "none":
        return ""
    if cfg.kb:
        return cfg.kb
    return "target" if TARGETS.get(cfg.target).readable else ""


def extraction_config(cfg: AuditConfig, attack: str) -> ExtractionConfig:
    """The extraction run of one cell: against the built-in pipeline, the pipeline's own configuration (its
    knowledge base is the reference); against any other target, the target with the reference ``kb``."""
    from ..generators.spec import parse_generator
    from ..targets import make_target

    llm, llm_params = parse_generator(cfg.attacker_llm) if cfg.attacker_llm else ("", None)
    fields: dict[str, Any] = {
        "attack": attack,
        "rounds": cfg.rounds,
        "seed": cfg.seed,
        "attack_params": dict((cfg.attack_params or {}).get(attack) or {}) or None,
        "attacker_llm": llm,
        "attacker_llm_params": llm_params or None,
        "canary_codes": cfg.canary_codes,
    }
    if cfg.canaries:
        fields["canaries"] = cfg.canaries
    if cfg.target == "pipeline":
        target = make_target("pipeline", dict(cfg.target_params or {}), data_dir=cfg.data_dir or None)
        return target.extraction_config(**fields)
    return ExtractionConfig.from_dict(
        {
            **fields,
            "kb": reference_spec(cfg),
            "retriever": cfg.retriever,
            "chunk_size": cfg.chunk_size,
            "chunk_overlap": cfg.chunk_overlap,
            "data_dir": cfg.data_dir,
            "target": cfg.target,
            "target_params": dict(cfg.target_params or {}),
            "identity": cfg.identity,
        },
        where="audit",
    )


def planting_config(cfg: AuditConfig, attack: str):
    """The poisoning run of one cell."""
    from .planting import PlantingConfig

    return PlantingConfig.from_dict(
        {
            "target": cfg.target,
            "target_params": dict(cfg.target_params or {}),
            "attack": attack,
            "attack_params": dict((cfg.attack_params or {}).get(attack) or {}) or None,
            "questions": cfg.questions,
            "limit": cfg.poison_questions,
            "poison_target": cfg.poison_target,
            "seed": cfg.seed,
            "data_dir": cfg.data_dir,
        },
        where="audit",
    )


class Audit:
    """One audit into one folder (see the module docstring). ``run()`` returns the report (a dict)."""

    def __init__(
        self,
        cfg: AuditConfig,
        out: str | Path,
        *,
        secrets: Mapping[str, str] | None = None,
        progress: Progress | None = None,
        stop: StopToken | None = None,
        only: tuple[str, ...] = (),
        on_cell: Callable[[dict], None] | None = None,
    ) -> None:
        self.cfg = cfg
        self.out = Path(out)
        self.secrets = dict(secrets or {})
        self.progress = progress
        self.stop = stop
        self.only = tuple(only)
        self.on_cell = on_cell
        from ..targets import TARGETS
        from .gate import parse_fail_on

        TARGETS.get(cfg.target).Params.from_dict(cfg.target_params, where=f"target {cfg.target}")
        parse_fail_on(cfg.fail_on)
        if cfg.kb.strip() not in ("", "none", "target"):  # a wrong reference is one line now, not after a cell
            from ..corpora import check_corpus_spec

            check_corpus_spec(cfg.kb, cfg.data_dir or None)
        known = {c["id"] for c in cells_of(cfg)}
        for c in self.only:
            if c not in known:
                raise ConfigError(f"--only: {c!r} is not a cell of this battery (cells: {', '.join(sorted(known))})")
        self.journal = PlantJournal(self.out)
        self.state: dict[str, Any] = {}

    # ------------------------------------------------------------------ state
    def _tick(self, stage: str, done: int, total: int) -> None:
        if self.progress:
            self.progress(stage, done, total)

    def _load_state(self) -> None:
        path = self.out / STATE
        cfg = self.cfg.to_dict()
        if path.is_file():
            try:
                prev = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raise ConfigError(f"{path} is damaged; choose another --out (or delete the folder)") from None
            if _measured(prev.get("config") or {}) != _measured(cfg):
                was = {k: (prev.get("config") or {}).get(k) for k in MEASURED_KEYS}
                diff = differences(was, {k: cfg.get(k) for k in MEASURED_KEYS})
                finished = [i for i, c in (prev.get("cells") or {}).items() if c.get("status") == "done"]
                if finished or self.journal.outstanding():
                    raise ConfigError(
                        f"{self.out} holds an audit of another configuration ({diff}) with "
                        + (
                            f"{len(finished)} finished cell(s); choose another --out — the earlier audit's results "
                            "are kept, never overwritten"
                            if finished
                            else f"planted documents not yet removed; remove them first (python -m engine audit "
                            f"cleanup --out {self.out}) or choose another --out"
                        )
                    )
                # nothing finished and nothing planted (e.g. every cell failed on a wrong answer_path): start again
                prev = {**self._fresh_state(cfg), "cleanups": list(prev.get("cleanups") or [])}
            self.state = prev
            self.state["config"] = cfg  # the gate and data dir may change between calls
        else:
            self.state = self._fresh_state(cfg)
        for c in cells_of(self.cfg):
            self.state["cells"].setdefault(c["id"], {**c, "status": "pending"})

    def preflight(self) -> int:
        """Check the folder before anything runs (damaged state, another configuration's results): the same
        ConfigError ``run()`` would raise, but before a caller announces the audit. Returns the finished cells."""
        if (self.out / STATE).is_file():
            self._load_state()
        return sum(1 for c in (self.state.get("cells") or {}).values() if c.get("status") == "done")

    @staticmethod
    def _fresh_state(cfg: Mapping[str, Any]) -> dict[str, Any]:
        return {"schema": "rag-playground/audit-state", "config": cfg, "created": _now(), "cells": {}, "cleanups": []}

    def _save(self) -> None:
        self.state["updated"] = _now()
        atomic_write(self.out / STATE, json.dumps(jsonable(self.state), indent=2, default=str))

    def _write_preset(self) -> None:
        d = {
            "name": f"audit of {self.cfg.target}",
            "description": "The configuration of this audit (written by "
            "python -m engine audit); reproduce a finding with --preset this-file --only CELL.",
            "kind": "audit",
            **jsonable(self.cfg.to_dict()),
        }
        atomic_write(self.out / PRESET, yaml.safe_dump(d, sort_keys=False, allow_unicode=True))

    def command(self, cell_id: str) -> str:
        """The command that reruns one cell of this audit into a folder of its own."""
        q = shlex.quote
        return (
            f"python -m engine audit --preset {q(str(self.out / PRESET))} --only {q(cell_id)} "
            f"--out {q(str(self.out / ('repro-' + _slug(cell_id))))}"
        )

    # ------------------------------------------------------------------ run
    def run(self) -> dict[str, Any]:
        """Run (or resume) every cell of the battery, writing state and report after each; returns the report.
        Raises AuditStopped when the stop token is set (what finished is kept; the same call resumes)."""
        from ..paths import writable_dir

        writable_dir(self.out, "--out")
        with exclusive_folder(self.out, "this audit"):
            self._load_state()
            self.state["only"] = list(self.only)  # the cells this call runs: what the report's gate waits for
            self._write_preset()
            self._save()
            self._cleanup_first()
            todo = [c for c in cells_of(self.cfg) if not self.only or c["id"] in self.only]
            try:
                for n, c in enumerate(todo):
                    rec = self.state["cells"][c["id"]]
                    if rec.get("status") in ("done", "skipped"):
                        continue
                    if stopped(self.stop):
                        raise AuditStopped("stopped before " + c["id"])
                    self._tick(f"cell {n + 1}/{len(todo)}: {c['id']}", 0, 1)
                    self._run_cell(rec)
                    self._save()
                    self.write_report()
                    if self.on_cell is not None:
                        self.on_cell(rec)
            finally:
                self._save()
                report = self.write_report()
        return report

    def _cleanup_first(self) -> None:
        left = self.journal.outstanding()
        if not left:
            return
        self._tick("removing documents an earlier run planted", 0, 1)
        done = cleanup(self.journal, secrets=self.secrets, data_dir=self.cfg.data_dir or None, progress=self.progress)
        self.state["cleanups"].append({"at": _now(), "found": describe_outstanding(left), **done})
        self._save()
        if done["failed"]:
            raise EngineError(
                "could not remove what an earlier run planted: "
                + "; ".join(done["failed"])
                + " — fix the target and rerun, or run 'python -m engine audit cleanup'"
            )

    def _target(self):
        from ..targets import make_target

        return make_target(
            self.cfg.target,
            dict(self.cfg.target_params or {}),
            secrets=self.secrets,
            data_dir=self.cfg.data_dir or None,
        )

    def _run_cell(self, rec: dict[str, Any]) -> None:
        from ..runs.extraction import RunInterrupted

        t0 = time.monotonic()
        rec.pop("error", None)
        try:
            if rec["family"] == "extraction":
                self._extraction_cell(rec)
            else:
                self._poisoning_cell(rec)
        except AuditStopped:
            rec["status"] = "stopped"
            raise
        except ConfigError as e:  # the configuration, not the target: nothing to resume until it is changed
            rec.update(status="failed", error=str(e))
            raise ConfigError(f"{rec['id']}: {e}") from None
        except RunInterrupted as e:
            rec.update(status="failed", error=str(e))
            raise EngineError(
                f"{rec['id']} failed in round {e.failed_round}: {e.reason}; {e.rounds_done} finished round(s) kept — "
                "rerun the same command to resume (with the target's parameters changed, an audit with no finished "
                "cell starts again in the same --out)"
            ) from None
        except EngineError as e:
            rec.update(status="failed", error=str(e))
            raise EngineError(
                f"{rec['id']} failed: {e}; what finished is kept — rerun the same command to resume"
            ) from None
        finally:
            rec["seconds"] = round(float(rec.get("seconds") or 0.0) + time.monotonic() - t0, 3)

    def _steps(self, run: Any, rec: dict[str, Any], total: int) -> None:
        while not run.done:
            if stopped(self.stop):
                raise AuditStopped(
                    f"stopped in {rec['id']} "
                    + (f"after round {run.rounds_done}" if run.rounds_done else "before its first round")
                )
            # before the round too: the label read the run's last preparation stage ("indexing …") until the first
            # round, often the longest, was over
            self._tick(rec["id"], run.rounds_done, total)
            run.step()
            self._tick(rec["id"], run.rounds_done, total)

    def _extraction_cell(self, rec: dict[str, Any]) -> None:
        from ..runs.extraction import ExtractionRun
        from .signals import answer_signals, leak_evidence

        ecfg = extraction_config(self.cfg, rec["attack"])
        prev = Path(rec["run_dir"]) if rec.get("run_dir") else None
        if prev is not None and (prev / "events.jsonl").is_file():
            run = ExtractionRun.resume(prev, progress=self.progress, secrets=self.secrets)
        else:
            run = ExtractionRun(
                ecfg,
                out_dir=self.out / "cells",
                progress=self.progress,
                secrets=self.secrets,
                run_id=f"{_slug(rec['id'])}-{uuid.uuid4().hex[:8]}",
            )
            run.prepare()
            rec["run_dir"] = str(run.out_dir)
            self._save()
        try:
            self._steps(run, rec, ecfg.rounds)
            if not run.finished:
                run.finish()
            rec.update(
                status="done",
                summary=jsonable(run.summary()),
                signals=answer_signals(run.events),
                evidence=leak_evidence(run.events, run.corpus),
                reference={
                    "name": run.corpus.name if run.corpus is not None else "",
                    "chunks": len(run.corpus) if run.corpus is not None else 0,
                },
            )
        finally:
            run.close()

    def _poisoning_cell(self, rec: dict[str, Any]) -> None:
        from .planting import TargetPoisoningRun, planting_evidence

        target = self._target()
        if not target.can_write:
            rec.update(
                status="skipped",
                reason=f"target {self.cfg.target!r} has no knowledge-base write surface "
                "(http / openai-chat: ingest_url and delete_url; python: ingest and remove callables)",
            )
            return
        pcfg = planting_config(self.cfg, rec["attack"])
        prev = Path(rec["run_dir"]) if rec.get("run_dir") else None
        if prev is not None and (prev / "events.jsonl").is_file():
            run = TargetPoisoningRun.resume(
                prev, progress=self.progress, secrets=self.secrets, journal=self.journal, cell=rec["id"]
            )
        else:
            run = TargetPoisoningRun(
                pcfg,
                out_dir=self.out / "cells",
                progress=self.progress,
                secrets=self.secrets,
                journal=self.journal,
                cell=rec["id"],
                target=target,
                run_id=f"{_slug(rec['id'])}-{uuid.uuid4().hex[:8]}",
            )
            run.prepare()
            rec["run_dir"] = str(run.out_dir)
            self._save()
        try:
            self._steps(run, rec, len(run.queries))
            if not run.finished:
                run._end()
            rec.update(status="done", summary=jsonable(run.summary()), evidence=planting_evidence(run.events))
        finally:
            run.close()

    # ------------------------------------------------------------------ report
    def write_report(self) -> dict[str, Any]:
        """Write the report files (json, html, JUnit XML) from the current state; returns the report."""
        from .report import build_report, write_outputs

        report = build_report(self.state, journal=self.journal, command=self.command)
        write_outputs(self.out, report)
        return report


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def run_audit(cfg: AuditConfig, out: str | Path, **kw: Any) -> dict[str, Any]:
    """Run (or resume) an audit into ``out``; returns the report. See :class:`Audit` for the keywords."""
    return Audit(cfg, out, **kw).run()
