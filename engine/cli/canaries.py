"""``python -m engine canaries plant``: a knowledge base with canaries in it, for a store the engine cannot write.

    python -m engine canaries plant clinic_records --share 0.1 --out planted.jsonl
    # ingest planted.jsonl into your own store, then audit it with the codes (or with the file as --kb):
    python -m engine audit --target http --target-params @target.json --canary-codes planted.codes.txt

The engine plants canaries itself in the built-in pipeline (``canaries`` of an extraction run or an audit). A
deployed system holds its own store: this writes the knowledge base with a canary line (``Internal reference:
CR-XXXX-XXXX.``) at the head of a seeded share of its documents, as JSON lines a store can ingest and the engine
reads back as a knowledge base, and the codes beside it (``<out>.codes.txt``) for the audit's ``canary_codes``.
"""

from __future__ import annotations

import json
from typing import Any


def cmd_canaries(args: Any) -> int:
    """``canaries plant``: write the planted knowledge base and its codes; print what was written."""
    from ..canaries import planted_files
    from ..corpora import load_corpus
    from ..errors import ConfigError

    if not 0 < args.share <= 1:
        raise ConfigError(f"--share must be above 0 and at most 1 (got {args.share:g})")
    if args.chunk_size is not None and args.chunk_size < 16:
        raise ConfigError("--chunk-size must be at least 16 tokens, or left out for whole documents")
    from pathlib import Path

    out = Path(args.file)
    if out.is_dir():
        raise ConfigError(f"--out {args.file} is a folder: give the file to write, e.g. {out / 'planted.jsonl'}")
    out.parent.mkdir(parents=True, exist_ok=True)
    corpus = load_corpus(args.kb, data_dir=args.data_dir, chunk_size=args.chunk_size, chunk_overlap=0)
    if not len(corpus):
        raise ConfigError(f"the knowledge base {args.kb!r} is empty")
    path, codes_path, n = planted_files(corpus, args.share, args.seed, out)
    if args.json:
        print(json.dumps({"kb": str(path), "codes": str(codes_path), "canaries": n, "documents": len(corpus)}))
    else:
        print(f"{n} canaries planted in {n} of {len(corpus)} documents of {args.kb}: {path}")
        print(f"codes: {codes_path} (give it to an audit as --canary-codes, or {path.name} as its --kb)")
    return 0


def add_parser(sub: Any, common: Any) -> None:
    """The ``canaries`` subcommand."""
    pc = sub.add_parser("canaries", help="plant canaries in a knowledge base for a store you run (then audit it)")
    pc.add_argument("action", choices=("plant",), help="plant: write the knowledge base with canaries, and the codes")
    pc.add_argument("kb", help="the knowledge base: a bundled name, a benchmark name or a path")
    pc.add_argument("--share", type=float, default=0.1, help="share of the documents given a canary (0 < S ≤ 1)")
    pc.add_argument("--seed", type=int, default=0, help="seed of the choice of documents and of the codes")
    pc.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        help="plant per chunk of this many tokens (default: per whole document, as your store will chunk it)",
    )
    pc.add_argument(
        "--out", dest="file", required=True, help="the planted knowledge base (JSON lines); codes beside it"
    )
    pc.add_argument("--data-dir", help="benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")
    pc.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    pc.add_argument("--quiet", "-q", action="store_true", help="print only the JSON line (with --json)")
    pc.set_defaults(func=cmd_canaries)
