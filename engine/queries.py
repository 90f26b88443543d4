"""Query sets: the five MIRAGE sets, the bundled handbook questions, PoisonedRAG questions,
or a user file.

Specs: ``mirage:medqa|medmcqa|pubmedqa|bioasq|mmlu`` (data dir), ``clinic_handbook``,
``poisonedrag:nq|msmarco|hotpotqa`` (data dir), ``dialogs:<kb>`` (multiple choice built from a dialog KB's
own records, :mod:`engine.dialog_task`), or a path to ``.txt`` (one question a line),
``.jsonl`` (``question`` or ``text`` field), ``.json`` (a list of strings, or MIRAGE-style
``{id: {question: ...}}``) or ``.csv`` (``question`` or ``text`` column).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from .corpora import BUNDLED_CORPORA, _read_text, jsonl_objects
from .dialog_task import PREFIX as DIALOGS, load_dialog_questions
from .errors import ConfigError, CorpusError
from .paths import data_file
from .types import Query

MIRAGE_SETS = ("medqa", "medmcqa", "pubmedqa", "bioasq", "mmlu")
POISONEDRAG_SETS = ("nq", "msmarco", "hotpotqa")
BUNDLED_QUERY_SETS = ("clinic_handbook",)


def query_set_corpus(spec: str) -> str | None:
    """The corpus a query set's questions were written about (``clinic_handbook`` for the bundled set, the dialog
    KB for ``dialogs:<kb>``), or None for open benchmark questions (MIRAGE, PoisonedRAG) or a file of one's own."""
    if spec in BUNDLED_QUERY_SETS:
        return spec
    if spec.startswith(DIALOGS):
        return spec[len(DIALOGS) :]
    return None


def available_query_sets() -> list[str]:
    """Query-set specs that need no path: the bundled set, then the MIRAGE and PoisonedRAG sets and HealthCareMagic's
    own task (from the data dir; ``dialogs:<kb>`` takes any dialog KB)."""
    return (
        list(BUNDLED_QUERY_SETS)
        + [f"mirage:{s}" for s in MIRAGE_SETS]
        + [f"poisonedrag:{s}" for s in POISONEDRAG_SETS]
        + [f"{DIALOGS}healthcaremagic"]
    )


def load_mirage(name: str, data_dir: str | None = None) -> list[Query]:
    """One MIRAGE set from the data dir's ``queries/mirage_benchmark.json``; options and answer go in the metadata."""
    if name not in MIRAGE_SETS:
        raise ConfigError(f"unknown MIRAGE set {name!r} (choose from: {', '.join(MIRAGE_SETS)})")
    path = data_file("queries/mirage_benchmark.json", data_dir, what=f"query set mirage:{name}")
    data = json.loads(path.read_text())[name]
    return [
        Query(
            f"{name}-{qid}",
            rec["question"].strip(),
            {"options": rec.get("options", {}), "answer": rec.get("answer"), "set": name},
        )
        for qid, rec in data.items()
    ]


def load_poisonedrag(name: str, data_dir: str | None = None) -> dict[str, dict]:
    """The raw PoisonedRAG targets of one set (``targets/poisonedrag_<name>.json``): ``{id: {question, correct
    answer, incorrect answer, adv_texts}}``."""
    if name not in POISONEDRAG_SETS:
        raise ConfigError(f"unknown PoisonedRAG set {name!r} (choose from: {', '.join(POISONEDRAG_SETS)})")
    path = data_file(f"targets/poisonedrag_{name}.json", data_dir, what=f"PoisonedRAG {name}")
    return json.loads(path.read_text())


def _bundled_questions(name: str) -> list[Query]:
    out = []
    for p in sorted((BUNDLED_CORPORA / name).glob("questions_*.jsonl")):
        for line in p.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                out.append(
                    Query(
                        rec["id"],
                        rec["question"],
                        {"answer": rec.get("answer"), "gold_ids": tuple(rec.get("gold_ids", ()))},
                    )
                )
    return out


def _from_file(path: Path) -> list[Query]:
    suffix = path.suffix.lower()
    if path.stat().st_size == 0:
        raise CorpusError(f"{path.name}: the file is empty")
    text = _read_text(path)
    out: list[Query] = []
    if suffix in (".txt", ".md"):
        out = [Query(f"{path.stem}-{i}", line.strip()) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    elif suffix == ".jsonl":
        for i, rec in jsonl_objects(path, text):
            q = rec.get("question") or rec.get("text")
            if not isinstance(q, str) or not q.strip():
                raise CorpusError(f"{path.name}: line {i} has no 'question' or 'text' field")
            out.append(
                Query(
                    str(rec.get("id", f"{path.stem}-{i}")),
                    q.strip(),
                    {k: v for k, v in rec.items() if k in ("answer", "options", "gold_ids")},
                )
            )
    elif suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{path.name}: not valid JSON (line {e.lineno}: {e.msg})") from None
        items = data.items() if isinstance(data, dict) else enumerate(data)
        for key, rec in items:
            q = rec if isinstance(rec, str) else (rec.get("question") if isinstance(rec, dict) else None)
            if not isinstance(q, str) or not q.strip():
                raise CorpusError(f"{path.name}: entry {key!r} has no question text")
            out.append(Query(f"{path.stem}-{key}", q.strip()))
    elif suffix == ".csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        col = next((c for c in ("question", "text") if rows and c in rows[0]), None)
        if col is None:
            raise CorpusError(f"{path.name}: needs a 'question' or 'text' column")
        out = [
            Query(str(r.get("id") or f"{path.stem}-{i}"), r[col].strip())
            for i, r in enumerate(rows, 2)
            if (r.get(col) or "").strip()
        ]
    else:
        raise CorpusError(f"{path.name}: unsupported query file type (use .txt, .jsonl, .json or .csv)")
    return out


def load_queries(spec: str, *, data_dir: str | None = None, limit: int | None = None) -> list[Query]:
    """Load a query set by spec; ``limit`` keeps the first N in file order."""
    spec = (spec or "").strip()
    if not spec:
        raise ConfigError("no query set given")
    if spec.startswith("mirage:"):
        queries = load_mirage(spec.split(":", 1)[1], data_dir)
    elif spec.startswith(DIALOGS):
        queries = load_dialog_questions(spec, data_dir=data_dir)
    elif spec.startswith("poisonedrag:"):
        name = spec.split(":", 1)[1]
        queries = [
            Query(
                f"{name}-{k}",
                v["question"],
                {
                    "correct": v.get("correct answer"),
                    "incorrect": v.get("incorrect answer"),
                    "adv_texts": tuple(v.get("adv_texts", ())),
                },
            )
            for k, v in load_poisonedrag(name, data_dir).items()
        ]
    elif spec in BUNDLED_QUERY_SETS:
        queries = _bundled_questions(spec)
    else:
        path = Path(spec).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"unknown query set {spec!r} (choose from: {', '.join(available_query_sets())}, "
                f"or give a path to a question file)"
            )
        queries = _from_file(path)
    if not queries:
        raise CorpusError(f"query set {spec!r} is empty")
    if limit is not None:
        if limit < 1:
            raise ConfigError(f"limit must be at least 1, got {limit}")
        queries = queries[:limit]
    return queries
