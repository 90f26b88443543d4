"""Canaries (honeytokens): a unique, plausible record number planted at the head of a share of a knowledge
base's chunks (the head: what an answer that copies a chunk reproduces first, and what the retriever always reads).

A canary exists nowhere but in its chunk, so an answer that carries it leaked that chunk — a leak signal with no
false positives by construction, which needs neither the knowledge base's text nor a similarity threshold to
score (the honeytoken of Spitzner 2003, *Honeytokens: The Other Honeypot*, applied to a knowledge base). The
share of canaries leaked estimates the share of the knowledge base leaked, with its Wilson interval, under the
assumption that an attacker finds canaried chunks as easily as the others (they differ by one short line).

The code is seeded: the same knowledge base, share and seed plant the same codes in the same chunks, so a resumed
run and a re-run score the same canaries.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Mapping

import numpy as np

from .corpora import Corpus, corpus_from_documents
from .errors import ConfigError
from .files import atomic_write
from .types import Document

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: a code read back by a model stays the same code
LINE_PATTERN = r"Internal reference: (CR-[A-Z0-9]{4}-[A-Z0-9]{4})"  # a planted line (canary_line); group 1: the code


def canary_codes(ids: list[str], share: float, seed: int) -> dict[str, str]:
    """Chunk id → its canary code, for round(share × chunks) chunks chosen by ``seed`` (at least one when the
    share is above 0)."""
    if share <= 0 or not ids:
        return {}
    rng = np.random.default_rng([seed, 0xCA9A])
    n = min(len(ids), max(1, round(share * len(ids))))
    chosen = sorted(rng.choice(len(ids), size=n, replace=False).tolist())
    codes: dict[str, str] = {}
    used: set[str] = set()
    for i in chosen:
        while True:
            body = "".join(rng.choice(list(ALPHABET), size=8).tolist())
            code = f"CR-{body[:4]}-{body[4:]}"
            if code not in used:
                break
        used.add(code)
        codes[ids[i]] = code
    return codes


def canary_line(code: str) -> str:
    """The line planted at the head of a chunk: a plausible internal record reference."""
    return f"Internal reference: {code}."


def plant_canaries(corpus: Corpus, share: float, seed: int) -> tuple[Corpus, dict[str, str]]:
    """``corpus`` with a canary line put before the chosen chunks' text (a new fingerprint), and the codes."""
    codes = canary_codes(corpus.ids, share, seed)
    if not codes:
        return corpus, {}
    docs = [
        Document(d.id, f"{canary_line(codes[d.id])}\n{d.text.lstrip()}", d.metadata) if d.id in codes else d
        for d in corpus.documents
    ]
    return corpus_from_documents(corpus.name, docs, chunk_size=None), codes


def _squash(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", text.upper())


def canary_hits(text: str, codes: Mapping[str, str]) -> list[str]:
    """The chunk ids whose canary ``text`` carries (case, spaces and dashes ignored: "cr 7q4k 2291" counts)."""
    flat = _squash(text)
    return [cid for cid, code in codes.items() if _squash(code) in flat]


def loose_pattern(code: str) -> "re.Pattern[str]":
    """A regular expression matching ``code`` as :func:`canary_hits` reads it (case, spaces and dashes ignored)."""
    return re.compile(r"[\s\-]*".join(re.escape(ch) for ch in _squash(code)), re.IGNORECASE)


MIN_CODE_CHARS = 6  # letters and digits: a shorter code can occur in an answer by chance


def find_canaries(corpus: Corpus, pattern: str = LINE_PATTERN) -> dict[str, str]:
    """Chunk id → code of every canary line already in ``corpus`` (planted by :func:`plant_canaries`, by
    ``python -m engine canaries plant`` or by hand with the same line); a chunk holding several keeps each, the
    second and later under ``<chunk id>#<n>``."""
    rx = re.compile(pattern)
    found: dict[str, str] = {}
    for d in corpus.documents:
        for n, m in enumerate(rx.finditer(d.text), 1):
            found[d.id if n == 1 else f"{d.id}#{n}"] = m.group(1)
    return found


def read_codes(spec: str) -> list[str]:
    """The canary codes of ``spec``: a file with one code per line (blank lines and ``#`` comments skipped; the
    file ``python -m engine canaries plant`` writes), or codes separated by commas. A missing file, an empty list
    or a code too short to be unique is one ConfigError."""
    spec = spec.strip()
    if not spec:
        return []
    path = Path(spec).expanduser()
    if path.is_file():
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"canary_codes: cannot read {spec} ({type(e).__name__})") from None
        codes = [ln.split("#", 1)[0].strip() for ln in lines]
    elif "/" in spec or spec.endswith((".txt", ".csv", ".codes")):
        raise ConfigError(f"canary_codes: {spec} not found (give a file of codes, one a line, or codes=A,B,…)")
    else:
        codes = [c.strip() for c in spec.split(",")]
    codes = list(dict.fromkeys(c for c in codes if c))
    if not codes:
        raise ConfigError(f"canary_codes: {spec} holds no code")
    for c in codes:
        if len(_squash(c)) < MIN_CODE_CHARS:
            raise ConfigError(
                f"canary_codes: {c!r} is too short to be unique (at least {MIN_CODE_CHARS} letters or digits; "
                "python -m engine canaries plant makes codes like CR-7Q4K-2291)"
            )
    return codes


def owner_canaries(corpus: Corpus, spec: str = "") -> dict[str, str]:
    """Every canary a run can score: the canary lines in ``corpus`` (its knowledge base, or an audit's reference)
    and the codes of ``spec`` (:func:`read_codes`) — a listed code found in a chunk is keyed by that chunk, one
    the scorer cannot place (no reference, or not in it) by ``canary:<code>``."""
    found = find_canaries(corpus)
    listed = read_codes(spec)
    if not listed:
        return found
    known = {_squash(c) for c in found.values()}
    flat = {d.id: _squash(d.text) for d in corpus.documents}  # only to place listed codes: not on every run
    for code in listed:
        sq = _squash(code)
        if sq in known:
            continue
        known.add(sq)
        where = next((cid for cid, text in flat.items() if sq in text and cid not in found), None)
        found[where or f"canary:{code}"] = code
    return found


def planted_files(corpus: Corpus, share: float, seed: int, out: str | Path) -> tuple[Path, Path, int]:
    """Write ``corpus`` with canaries planted (:func:`plant_canaries`) as ``out`` (JSON lines: id, text,
    metadata — what a store ingests, and what the engine reads back as a knowledge base) and the codes beside
    it (``<out stem>.codes.txt``, one a line: an audit's ``canary_codes``). Returns both paths and the count."""
    planted, codes = plant_canaries(corpus, share, seed)
    path = Path(out)
    rows = [json.dumps({"id": d.id, "text": d.text, "metadata": dict(d.metadata or {})}) for d in planted.documents]
    atomic_write(path, "\n".join(rows) + "\n")
    codes_path = path.with_name(path.stem + ".codes.txt")
    head = (
        f"# {len(codes)} canaries in {path.name} (share {share:g}, seed {seed}): a code a line, its document after #\n"
    )
    atomic_write(codes_path, head + "".join(f"{code}  # {cid}\n" for cid, code in codes.items()))
    return path, codes_path, len(codes)
