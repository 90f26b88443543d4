"""A run's own copy of a knowledge base that cannot be reloaded by name (uploaded documents).

A run over a bundled or benchmark corpus stores only the corpus name in its config and reloads it
when resumed. Uploaded documents live in one browser session; to make such a run resumable (and its
leaked chunks viewable later) the run folder keeps the chunks it attacked in ``kb.jsonl`` — one JSON
object per chunk, ``{"id", "text", "metadata"}``, texts exactly as indexed — and checks them against
the fingerprint in the run's manifest when they are read back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..corpora import Corpus, fingerprint
from ..errors import ConfigError
from ..types import Document

KB_FILE = "kb.jsonl"


def save_kb(corpus: Corpus, run_dir: str | Path) -> Path:
    """Write the corpus's chunks to ``run_dir/kb.jsonl`` (atomically)."""
    path = Path(run_dir) / KB_FILE
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for d in corpus.documents:
            meta = {k: v for k, v in dict(d.metadata).items() if isinstance(v, (str, int, float, bool)) or v is None}
            f.write(json.dumps({"id": d.id, "text": d.text, "metadata": meta}, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path


def load_kb(run_dir: str | Path, name: str, expected_fingerprint: str | None = None) -> Corpus:
    """The corpus saved by :func:`save_kb`; refuses a missing, malformed or altered file."""
    path = Path(run_dir) / KB_FILE
    if not path.is_file():
        raise ConfigError(f"{Path(run_dir).name}: the run's knowledge base ({KB_FILE}) is not in its folder")
    docs = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                rec = json.loads(line)
                docs.append(Document(str(rec["id"]), rec["text"], dict(rec.get("metadata") or {})))
            except (json.JSONDecodeError, KeyError, TypeError):
                raise ConfigError(f"{path}: line {n} is not a saved chunk") from None
    fp = fingerprint(docs)
    if expected_fingerprint and fp != expected_fingerprint:
        raise ConfigError(
            f"{path} does not match the run's manifest (fingerprint {fp[:12]}… vs "
            f"{expected_fingerprint[:12]}…): it was changed after the run"
        )
    return Corpus(name, tuple(docs), fp)
