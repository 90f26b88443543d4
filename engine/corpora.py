"""Corpus loading: bundled corpora, benchmark data by name, and any user corpus.

A corpus spec is one of
* a bundled name (``clinic_handbook``) from ``corpora/``;
* a benchmark name (``bioasq``, ``healthcaremagic``, ``enron``) read from the data dir;
* a path to a ``.jsonl`` (``text`` field, optional ``id`` and metadata), ``.csv`` (``text``
  column), ``.txt``/``.md`` or ``.pdf`` file, or a folder of such files.

Documents are chunked with llama-index's ``SentenceSplitter`` (chunk size and overlap in
tokens); a document shorter than one chunk stays whole and keeps its id. Given the retriever's
:class:`TokenWindow`, tokens are the *retriever's own* (its tokenizer, its document prefix) and a chunk
never exceeds what the encoder reads: ``chunk_size`` is capped at the window, a document over it is
cut into balanced pieces (the fewest that fit, of about equal size, not full chunks and a scrap),
a piece the splitter leaves too long is split again at word boundaries, and ``Corpus.stats`` records
``{"chunks", "retriever_max_tokens", "over_window"}``. Without chunking (``chunk_size=None``) nothing is
split and ``over_window`` counts the documents whose tail the retriever never sees.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .errors import CorpusError
from .paths import BUNDLED_CORPORA, data_file
from .types import Document

SUPPORTED_SUFFIXES = (".jsonl", ".csv", ".txt", ".md", ".pdf")
BENCHMARK_CORPORA = {
    "bioasq": "medical/bioasq_snippets.jsonl",
    "healthcaremagic": "kb/healthcaremagic_1k.jsonl",
    "enron": "kb/enron_2k.jsonl",
}
BUNDLED = ("clinic_handbook", "clinic_records", "clinic_records_heldout")  # the last: never indexed (non-members)
MAX_UPLOAD_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True)
class Corpus:
    """A named list of chunks plus a fingerprint of their ids and texts."""

    name: str
    documents: tuple[Document, ...]
    fingerprint: str = field(default="")
    stats: Mapping[str, Any] = field(default_factory=dict, compare=False)  # corpus_stats (see module doc)

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def texts(self) -> list[str]:
        """The chunk texts, in corpus order."""
        return [d.text for d in self.documents]

    @property
    def ids(self) -> list[str]:
        """The chunk ids, in corpus order (parallel to ``texts``)."""
        return [d.id for d in self.documents]


def fingerprint(docs: Iterable[Document]) -> str:
    """sha256 hex digest of the documents' ids and texts, in order: identifies a corpus in index caches. A chunk's
    tenant (multi-tenant knowledge bases, engine/tenancy.py) counts too, since the index stores it; a corpus
    without tenants keeps the digest it always had."""
    h = hashlib.sha256()
    for d in docs:
        h.update(d.id.encode())
        h.update(b"\0")
        h.update(d.text.encode())
        h.update(b"\1")
        if d.tenant is not None:
            h.update(b"\2" + d.tenant.encode() + b"\3")
    return h.hexdigest()


def available_corpora() -> list[str]:
    """Corpus names that load without a path: the bundled ones, then the benchmark ones (which need the data dir)."""
    return list(BUNDLED) + list(BENCHMARK_CORPORA)


# --------------------------------------------------------------------------- readers


def _read_text(path: Path, data: bytes | None = None) -> str:
    raw = data if data is not None else path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise CorpusError(f"{path.name}: looks like a binary file, not text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise CorpusError(f"{path.name}: not valid UTF-8 (byte {e.start}); re-save it as UTF-8") from None


def _enron_text(rec: dict) -> str:
    head = [
        f"From: {rec['from']}" if rec.get("from") else "",
        f"To: {rec['to']}" if rec.get("to") else "",
        f"Subject: {rec['subject']}" if rec.get("subject") else "",
    ]
    return "\n".join([h for h in head if h] + ["", str(rec.get("body", ""))]).strip()


def jsonl_objects(path: Path, text: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSONL text; a line that is not a JSON object is a
    :class:`CorpusError` naming the file and the line."""
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{path.name}: line {lineno} is not valid JSON ({e.msg})") from None
        if not isinstance(rec, dict):
            raise CorpusError(f"{path.name}: line {lineno} is not a JSON object")
        yield lineno, rec


def read_jsonl(path: Path, data: bytes | None = None) -> list[Document]:
    """Documents from JSONL, one object a line: ``text`` (or Enron's ``from``/``to``/``subject``/``body``) and an
    optional ``id`` (default ``<stem>-<line>``); other scalar fields become metadata."""
    docs = []
    for lineno, rec in jsonl_objects(path, _read_text(path, data)):
        body = rec.get("text")
        if body is None and "body" in rec:
            body = _enron_text(rec)
        if not isinstance(body, str) or not body.strip():
            raise CorpusError(f"{path.name}: line {lineno} has no non-empty 'text' field")
        doc_id = str(rec.get("id", f"{path.stem}-{lineno}"))
        meta = {k: v for k, v in rec.items() if k not in ("id", "text") and isinstance(v, (str, int, float, bool))}
        docs.append(Document(doc_id, body.strip(), meta))
    return docs


def read_csv(path: Path, data: bytes | None = None) -> list[Document]:
    """Documents from a CSV's ``text`` column (or its only column); an ``id`` column is optional, the other columns
    become metadata, blank rows are skipped."""
    text = _read_text(path, data)
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as e:
        raise CorpusError(f"{path.name}: malformed CSV ({e})") from None
    if not rows:
        return []
    cols = list(rows[0].keys())
    col = "text" if "text" in cols else (cols[0] if len(cols) == 1 else None)
    if col is None:
        raise CorpusError(f"{path.name}: needs a 'text' column (found: {', '.join(map(str, cols))})")
    docs = []
    for i, row in enumerate(rows, 2):
        body = (row.get(col) or "").strip()
        if body:
            meta = {k: v for k, v in row.items() if k not in (col, "id") and isinstance(k, str)}
            docs.append(Document(str(row.get("id") or f"{path.stem}-{i}"), body, meta))
    return docs


def read_plain(path: Path, data: bytes | None = None) -> list[Document]:
    """A ``.txt`` / ``.md`` file as one document whose id is the file's stem (none when the file is blank)."""
    body = _read_text(path, data).strip()
    return [Document(path.stem, body, {"source": path.name})] if body else []


def read_pdf(path: Path, data: bytes | None = None) -> list[Document]:
    """One document per non-empty PDF page (id ``<stem>-p<page>``) via llama-index's ``PDFReader``; ``data`` holds
    an upload's bytes."""
    from llama_index.readers.file import PDFReader

    if data is not None:
        if not data.startswith(b"%PDF"):
            raise CorpusError(f"{path.name}: not a PDF file")
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".pdf") as tmp:
            tmp.write(data)
            tmp.flush()
            return read_pdf(Path(tmp.name))
    try:
        pages = PDFReader().load_data(file=path)
    except Exception as e:  # pypdf raises many types on broken files
        raise CorpusError(f"{path.name}: could not read PDF ({type(e).__name__})") from None
    docs = []
    for i, page in enumerate(pages, 1):
        text = (getattr(page, "text", None) or "").strip()  # a scanned page has no text layer
        if text:
            docs.append(Document(f"{path.stem}-p{i}", text, {"source": path.name, "page": i}))
    return docs


READERS = {".jsonl": read_jsonl, ".csv": read_csv, ".txt": read_plain, ".md": read_plain, ".pdf": read_pdf}


def read_file(path: Path, data: bytes | None = None) -> list[Document]:
    """Read one file (or uploaded bytes named ``path``) into documents."""
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise CorpusError(f"{path.name}: unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})")
    size = len(data) if data is not None else path.stat().st_size
    if size > MAX_UPLOAD_BYTES:
        raise CorpusError(f"{path.name}: {size / 1e6:.0f} MB is over the {MAX_UPLOAD_BYTES // 1e6:.0f} MB limit")
    if size == 0:
        raise CorpusError(f"{path.name}: the file is empty")
    return reader(path, data)


def _iter_files(folder: Path) -> Iterator[Path]:
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES and not p.name.startswith("."):
            yield p


def _bundled(name: str) -> list[Document]:
    folder = BUNDLED_CORPORA / name
    docs: list[Document] = []
    for p in sorted(folder.glob("part_*.jsonl")):
        docs.extend(read_jsonl(p))
    return docs


# --------------------------------------------------------------------------- chunking


@dataclass(frozen=True)
class TokenWindow:
    """How a retriever reads a document: at most ``limit`` tokens (None = no limit), counted by ``count``."""

    limit: int | None
    count: Callable[[Sequence[str]], list[int]]
    retriever: str = ""


def retriever_window(retriever: Any) -> TokenWindow | None:
    """The :class:`TokenWindow` of a retriever (None for sparse ones, which read everything)."""
    if retriever is None or not getattr(retriever, "dense", False):
        return None
    return TokenWindow(retriever.window(), retriever.count_tokens, getattr(retriever, "name", ""))


def _split_words(text: str, limit: int, count: Callable[[Sequence[str]], list[int]]) -> list[str]:
    """Greedy split at word boundaries into pieces of at most ``limit`` tokens (the last resort for a
    piece the sentence splitter left too long, e.g. one enormous 'sentence'). Words are counted once each and
    packed by their sum (a word-piece tokenizer's counts add up across spaces); a piece that still counts over
    the limit is split again word by word, so the bound holds exactly and the work stays linear."""
    words = text.split()
    if not words:
        return []
    sizes = count(words)
    out: list[str] = []
    cur: list[str] = []
    used = 0
    for w, n in zip(words, sizes):
        if cur and used + n > limit:
            out.append(" ".join(cur))
            cur, used = [], 0
        cur.append(w)
        used += n
    if cur:
        out.append(" ".join(cur))
    checked: list[str] = []
    for piece, n in zip(out, count(out)):
        if n <= limit or len(piece.split()) == 1:
            checked.append(piece)
            continue
        cur = []
        for w in piece.split():  # rare: the sum undercounted; fall back to counting the growing piece
            if cur and count([" ".join(cur + [w])])[0] > limit:
                checked.append(" ".join(cur))
                cur = []
            cur.append(w)
        checked.append(" ".join(cur))
    return checked


MAX_DOCUMENT_CHARS = 100_000  # longer documents are cut into blocks before any tokenizer sees them


def _blocks(text: str, size: int = MAX_DOCUMENT_CHARS) -> list[str]:
    """``text`` in consecutive blocks of at most ``size`` characters, cut at a paragraph, a sentence end or a
    space near the end of each block (a hard cut only where a block has none): a document of any length is
    chunked piece by piece, never tokenized whole."""
    out, start = [], 0
    while len(text) - start > size:
        window = text[start : start + size]
        cut = max(window.rfind("\n\n"), window.rfind(". "), window.rfind("\n"))
        if cut < size // 2:
            cut = window.rfind(" ")
        cut = cut + 1 if cut >= size // 2 else size
        out.append(text[start : start + cut])
        start += cut
    out.append(text[start:])
    return [b for b in out if b.strip()]


def _merge_scraps(parts: list[str], limit: int, count: Callable[[Sequence[str]], list[int]]) -> list[str]:
    """Fold a piece of under a quarter of the window into its neighbour when the two still fit."""
    out: list[str] = []
    for p in parts:
        if out and (count([p])[0] < limit // 4 or count([out[-1]])[0] < limit // 4):
            merged = out[-1] + " " + p
            if count([merged])[0] <= limit:
                out[-1] = merged
                continue
        out.append(p)
    return out


def chunk_documents(
    docs: list[Document], chunk_size: int | None, chunk_overlap: int = 0, window: TokenWindow | None = None
) -> list[Document]:
    """Split documents with llama-index's SentenceSplitter; short documents keep their id.

    With a ``window`` the sizes are in the retriever's tokens and no chunk exceeds ``window.limit``.
    """
    if not chunk_size:
        return docs
    if chunk_overlap >= chunk_size:
        raise CorpusError(f"chunk overlap ({chunk_overlap}) must be smaller than chunk size ({chunk_size})")
    from llama_index.core.node_parser import SentenceSplitter

    size, overlap = chunk_size, chunk_overlap
    limit = window.limit if window is not None else None
    if limit:
        size = min(size, limit)
        overlap = min(overlap, size // 4)  # the cap can leave the user's overlap larger than a chunk
    if any(len(d.text) > MAX_DOCUMENT_CHARS for d in docs):
        return _chunk_long_documents(docs, chunk_size, chunk_overlap, window)
    if window is not None:
        counts = window.count([d.text for d in docs])
        splitter = SentenceSplitter(
            chunk_size=size, chunk_overlap=overlap, tokenizer=lambda t: range(window.count([t])[0])
        )
    else:
        counts = [len(d.text.split()) * 2 for d in docs]  # cheap pre-check: a quarter chunk never splits
        splitter = SentenceSplitter(chunk_size=size, chunk_overlap=overlap)
    out: list[Document] = []
    for d, n in zip(docs, counts):
        if n <= size:
            out.append(d)
            continue
        if window is not None:
            # balanced: the fewest pieces that fit, each about the same size (+10% so sentence boundaries fit),
            # instead of full chunks and a scrap; a 20-token tail of boilerplate would otherwise count as a
            # whole "chunk" in every leakage metric
            k = max(2, -(-(n - overlap) // (size - overlap)))
            target = min(size, -(-(n + (k - 1) * overlap) * 11 // (10 * k)))
            parts = SentenceSplitter(
                chunk_size=max(target, 16),
                chunk_overlap=min(overlap, max(target, 16) // 4),
                tokenizer=lambda t: range(window.count([t])[0]),
            ).split_text(d.text)
        else:
            parts = splitter.split_text(d.text)
        if limit:
            fixed: list[str] = []
            for part, m in zip(parts, window.count(parts)):
                fixed.extend([part] if m <= limit else _split_words(part, limit, window.count))
            parts = _merge_scraps(fixed, limit, window.count)
        if len(parts) <= 1:
            out.append(d)
            continue
        for i, part in enumerate(parts):
            out.append(Document(f"{d.id}#c{i}", part, {**d.metadata, "parent_id": d.id, "chunk": i}))
    return out


def parent_of(doc_id: str) -> str:
    """The record a chunk id was cut from (``rec-0001#c1`` → ``rec-0001``); an unchunked id is its own record."""
    return re.sub(r"#c\d+$", "", doc_id)


def _chunk_long_documents(
    docs: list[Document], chunk_size: int, chunk_overlap: int, window: TokenWindow | None
) -> list[Document]:
    """:func:`chunk_documents` where some documents are longer than :data:`MAX_DOCUMENT_CHARS`: those are chunked
    block by block (:func:`_blocks`), their chunks numbered on across the blocks, the others as usual."""
    out: list[Document] = []
    for d in docs:
        if len(d.text) <= MAX_DOCUMENT_CHARS:
            out.extend(chunk_documents([d], chunk_size, chunk_overlap, window))
            continue
        n = 0
        for i, block in enumerate(_blocks(d.text)):
            for c in chunk_documents([Document(f"{d.id}#b{i}", block, d.metadata)], chunk_size, chunk_overlap, window):
                out.append(Document(f"{d.id}#c{n}", c.text, {**d.metadata, "parent_id": d.id, "chunk": n}))
                n += 1
    return out


def corpus_stats(docs: Sequence[Document], window: TokenWindow | None) -> dict[str, Any]:
    """``{"chunks", "retriever_max_tokens", "over_window"}``: how many chunks the retriever cannot read
    to the end (0 whenever chunking is on)."""
    limit = window.limit if window is not None else None
    over = sum(n > limit for n in window.count([d.text for d in docs])) if limit else 0
    return {
        "chunks": len(docs),
        "retriever_max_tokens": limit,
        "over_window": int(over),
        "retriever": window.retriever if window is not None else "",
    }


def check_corpus_spec(spec: str, data_dir: str | None = None) -> None:
    """Fail now, before any work, if ``spec`` names no corpus (no loading; files are read later)."""
    spec = str(spec or "").strip()
    if not spec:
        raise CorpusError("no corpus given")
    if spec in BUNDLED or spec == "upload":
        return
    if spec in BENCHMARK_CORPORA:
        data_file(BENCHMARK_CORPORA[spec], data_dir, what=f"corpus {spec!r}")
        return
    if not Path(spec).expanduser().exists():
        raise CorpusError(
            f"corpus {spec!r} not found: not a bundled name ({', '.join(BUNDLED)}), "
            f"not a benchmark name ({', '.join(BENCHMARK_CORPORA)}) and no such file"
        )


def load_corpus(
    spec: str,
    *,
    data_dir: str | None = None,
    chunk_size: int | None = 512,
    chunk_overlap: int = 32,
    limit: int | None = None,
    window: TokenWindow | None = None,
) -> Corpus:
    """Load and chunk a corpus from a bundled name, a benchmark name or a path (``window``: the
    retriever's, so chunks are measured in its tokens and fit what it reads)."""
    if not spec or not str(spec).strip():
        raise CorpusError("no corpus given")
    spec = str(spec).strip()
    if spec in BUNDLED:
        docs, name = _bundled(spec), spec
    elif spec in BENCHMARK_CORPORA:
        docs, name = read_jsonl(data_file(BENCHMARK_CORPORA[spec], data_dir, what=f"corpus {spec!r}")), spec
    else:
        path = Path(spec).expanduser()
        if not path.exists():
            raise CorpusError(
                f"corpus {spec!r} not found: not a bundled name ({', '.join(BUNDLED)}), "
                f"not a benchmark name ({', '.join(BENCHMARK_CORPORA)}) and no such file"
            )
        if path.is_dir():
            files = list(_iter_files(path))
            if not files:
                raise CorpusError(f"folder {spec!r} has no {', '.join(SUPPORTED_SUFFIXES)} files")
            docs = [d for f in files for d in read_file(f)]
        else:
            docs = read_file(path)
        name = path.stem
    if limit:
        docs = docs[:limit]
    if not docs:  # e.g. a PDF of scanned pages: nothing to chunk (the tokenizer refuses an empty batch)
        raise CorpusError(f"corpus {spec!r} is empty (no non-empty documents)")
    docs = chunk_documents(docs, chunk_size, chunk_overlap, window)
    docs = _dedupe_ids(docs)
    if not docs:
        raise CorpusError(f"corpus {spec!r} is empty (no non-empty documents)")
    return Corpus(name, tuple(docs), fingerprint(docs), corpus_stats(docs, window))


def stats_for(corpus: Corpus, window: TokenWindow | None) -> dict[str, Any]:
    """The corpus's ``stats`` when they were measured for this retriever, else measured now."""
    name = window.retriever if window is not None else ""
    if corpus.stats and corpus.stats.get("retriever", "") == name:
        return dict(corpus.stats)
    return corpus_stats(corpus.documents, window)


def corpus_from_documents(
    name: str,
    docs: list[Document],
    *,
    chunk_size: int | None = 512,
    chunk_overlap: int = 32,
    window: TokenWindow | None = None,
) -> Corpus:
    """A :class:`Corpus` from documents already in memory (e.g. uploads), chunked as :func:`load_corpus` does;
    duplicate ids get a ``~n`` suffix."""
    docs = _dedupe_ids(chunk_documents(list(docs), chunk_size, chunk_overlap, window))
    if not docs:
        raise CorpusError(f"corpus {name!r} is empty (no non-empty documents)")
    return Corpus(name, tuple(docs), fingerprint(docs), corpus_stats(docs, window))


def _dedupe_ids(docs: list[Document]) -> list[Document]:
    seen: dict[str, int] = {}
    out = []
    for d in docs:
        if d.id in seen:
            seen[d.id] += 1
            d = Document(f"{d.id}~{seen[d.id]}", d.text, d.metadata)
        else:
            seen[d.id] = 0
        out.append(d)
    return out
