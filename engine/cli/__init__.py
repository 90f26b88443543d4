"""Command line: ``python -m engine poison|run|sweep|analyze|extract|utility|compare|audit|membership|canaries|list``.

Bad input exits non-zero with one ``error: …`` line on stderr, never a traceback. With
``--json`` the last line printed on stdout is one JSON object with the results.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from ..errors import EngineError
from ..secrets import scrub
from .audit import add_parser as add_audit_parser
from .canaries import add_parser as add_canaries_parser
from .membership import add_parser as add_membership_parser
from .common import Parser, _clean, _partial_line, _progress_printer, add_executor_args, check_args
from .extraction import _finish_extraction, run_compare
from .extraction import add_parsers as add_extraction_parsers
from .poisoning import _run_poison, _sweep
from .poisoning import add_parsers as add_poisoning_parsers


def cmd_run(args) -> int:
    """``run PRESET``: run a bundled or YAML preset of any kind; ``--data-dir`` (and for poison and sweep presets
    ``--limit``) override it."""
    from ..config import load_preset

    kind, cfg, meta = load_preset(args.preset)
    if kind == "audit":
        from .audit import cmd_audit

        for name in (
            "target",
            "target_params",
            "kb",
            "attacks",
            "poisoning",
            "attack_params",
            "rounds",
            "questions",
            "poison_questions",
            "attacker_llm",
            "retriever",
            "seed",
            "only",
            "fail_on",
            "baseline",
        ):
            setattr(args, name, None)
        args.new_only = False
        args.action = "run"
        return cmd_audit(args)
    if not args.quiet:
        print(f"preset {meta.get('name')}: {meta.get('description', '').strip()}", file=sys.stderr)
    if kind == "membership":
        from ..runs.membership import MembershipRun
        from .common import finish_run
        from .membership import _show

        if args.data_dir:
            cfg = cfg.replace(data_dir=args.data_dir)
        return finish_run(MembershipRun(cfg, out_dir=args.out, progress=_progress_printer(not args.quiet)), args, _show)
    if kind == "membership-table":
        from ..errors import ConfigError
        from ..membership_table import markdown_table, run_table

        if not args.out:
            raise ConfigError("a membership table needs --out (its folder: the same command continues it there)")
        if args.data_dir:
            cfg = cfg.replace(base={**dict(cfg.base or {}), "data_dir": args.data_dir})
        printer = _progress_printer(not args.quiet)
        rows = run_table(
            cfg, args.out, progress=lambda i, stage, done, total: printer(f"[{i + 1}] {stage}", done, total)
        )
        if args.json:
            print(json.dumps(_clean(rows)))
        else:
            print(markdown_table(rows))
        return 0
    if kind in ("extract", "compare"):
        from ..runs.extraction import ExtractionRun

        if kind == "compare":
            if args.data_dir:
                cfg = cfg.replace(base={**dict(cfg.base or {}), "data_dir": args.data_dir})
            return run_compare(cfg, args, meta)
        if args.data_dir:
            cfg = cfg.replace(data_dir=args.data_dir)
        return _finish_extraction(
            ExtractionRun(cfg, out_dir=args.out, progress=_progress_printer(not args.quiet)), args
        )
    if args.data_dir:
        cfg = cfg.replace(data_dir=args.data_dir)
    if args.limit is not None:
        cfg = cfg.replace(limit=args.limit)
    return _run_poison(cfg, args) if kind == "poison" else _sweep(cfg, args, meta)


def cmd_list(args) -> int:
    """``list``: registered plugins, local models, targets, corpora, query sets and presets (one object with
    ``--json``)."""
    from ..attacks.extraction import EXTRACTION_ATTACKS
    from ..attacks.membership import MEMBERSHIP_ATTACKS
    from ..attacks.poisoning import POISONING_ATTACKS, TARGET_KINDS
    from ..defenses import DEFENSES
    from ..generators import GENERATORS, MODELS
    from ..config import list_presets
    from ..corpora import available_corpora
    from ..detectors import DETECTORS
    from ..embedders import RETRIEVERS
    from ..queries import available_query_sets
    from ..targets import TARGETS

    info = {
        "retrievers": {n: RETRIEVERS.describe(n) for n in RETRIEVERS.names()},
        "attacks": {n: POISONING_ATTACKS.describe(n) for n in POISONING_ATTACKS.names()},
        "detectors": {n: DETECTORS.describe(n) for n in DETECTORS.names()},
        "extraction_attacks": {n: EXTRACTION_ATTACKS.describe(n) for n in EXTRACTION_ATTACKS.names()},
        "membership_attacks": {n: MEMBERSHIP_ATTACKS.describe(n) for n in MEMBERSHIP_ATTACKS.names()},
        "defenses": {n: DEFENSES.describe(n) for n in DEFENSES.names()},
        "generators": {n: GENERATORS.describe(n) for n in GENERATORS.names()},
        "audit_targets": {n: TARGETS.describe(n) for n in TARGETS.names()},
        "local_models": list(MODELS),
        "targets": list(TARGET_KINDS),
        "corpora": available_corpora(),
        "query_sets": available_query_sets(),
        "presets": list_presets(),
    }
    regs = {
        "retrievers": RETRIEVERS,
        "attacks": POISONING_ATTACKS,
        "detectors": DETECTORS,
        "extraction_attacks": EXTRACTION_ATTACKS,
        "membership_attacks": MEMBERSHIP_ATTACKS,
        "defenses": DEFENSES,
        "generators": GENERATORS,
        "audit_targets": TARGETS,
    }
    sources = {k: {n: r.source(n) for n in r.names() if r.source(n)} for k, r in regs.items()}
    if args.json:
        print(json.dumps({**info, "sources": sources}))
    else:
        for section, items in info.items():
            print(f"{section}:")
            if isinstance(items, dict):
                for k, v in items.items():
                    print(f"  {k:22s} {v}")
                    if sources.get(section, {}).get(k):
                        print(f"  {'':22s}   source: {sources[section][k]}")
            else:
                for v in items:
                    line = v if not isinstance(v, dict) else f"{v['name']} ({v['kind']}) {v['description'].strip()}"
                    print(f"  {line}")
    return 0


def one_line(text: str) -> str:
    """``text`` on one line: line breaks (a path or a name with a newline in it) shown as ``\\n``."""
    return str(text).replace("\r", "\\r").replace("\n", "\\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m engine`` parser with every subcommand (each sets ``func``)."""
    p = Parser(prog="python -m engine", description="RAG Attack & Defense Playground engine")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    def common(sp, out=True):
        sp.add_argument("--data-dir", help="benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")
        sp.add_argument("--json", action="store_true", help="print one JSON object as the last line")
        sp.add_argument(
            "--quiet", "-q", action="store_true", help="no progress; with --json also no tables (only the JSON line)"
        )
        if out:
            sp.add_argument("--out", help="write events.jsonl, manifest.json, summary.json (or sweep files) here")

    add_poisoning_parsers(sub, common)
    pr = sub.add_parser("run", help="run a preset (YAML file or bundled name)")
    pr.add_argument("preset")
    pr.add_argument("--limit", type=int)
    pr.add_argument(
        "--overwrite",
        action="store_true",
        help="sweep and compare presets: replace results of other settings already in --out",
    )
    add_executor_args(pr)
    common(pr)
    pr.set_defaults(func=cmd_run)

    add_extraction_parsers(sub, common)
    add_audit_parser(sub, common)
    add_membership_parser(sub, common)
    add_canaries_parser(sub, common)

    pl = sub.add_parser("list", help="registered retrievers, attacks, detectors, targets, presets")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_list)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code: the command's (0 on success), 2 bad input (one ``error:``
    line), 1 internal error, 130 interrupted."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_args(args)
        return int(args.func(args) or 0)
    except EngineError as e:
        if _partial_line["open"]:
            sys.stderr.write("\n")
        print(f"error: {one_line(scrub(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        import errno

        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):  # outside the user's input: exit 1, one line
            print(
                f"error: the disk is full or the file is over the size limit ({one_line(e.filename or '')}): "
                f"nothing finished was lost (results are written whole or not at all); free some space and run "
                f"the same command again",
                file=sys.stderr,
            )
            return 1
        if os.environ.get("RAG_PLAYGROUND_DEBUG"):
            raise
        print(
            f"internal error: {type(e).__name__}: {one_line(scrub(e))} (set RAG_PLAYGROUND_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1
    except Exception as e:  # an engine bug: still one line, with a hint
        if os.environ.get("RAG_PLAYGROUND_DEBUG"):
            raise
        print(
            f"internal error: {type(e).__name__}: {one_line(scrub(e))} (set RAG_PLAYGROUND_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1
