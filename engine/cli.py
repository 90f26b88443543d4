"""Command line: ``python -m engine poison|run|sweep|analyze|extract|utility|compare|list``.

Bad input exits non-zero with one ``error: …`` line on stderr, never a traceback. With
``--json`` the last line printed on stdout is one JSON object with the results.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any, Sequence

from .errors import EngineError
from .secrets import scrub


_partial_line = {"open": False}


def _progress_printer(enabled: bool):
    """Progress on stderr: a live line on a terminal, one line per finished stage otherwise."""
    state = {"stage": None, "t": 0.0}
    tty = sys.stderr.isatty()

    def cb(stage: str, done: int, total: int) -> None:
        if not enabled:
            return
        now = time.monotonic()
        finished = done >= total
        if not tty:
            if finished and stage != state["stage"]:
                state["stage"] = stage
                sys.stderr.write(f"{stage}: {done}/{total}\n")
            return
        if stage != state["stage"] or finished or now - state["t"] > 0.5:
            state.update(stage=stage, t=now)
            sys.stderr.write(f"\r{stage}: {done}/{total}{' ' * 10}" + ("\n" if finished else ""))
            sys.stderr.flush()
            _partial_line["open"] = not finished
    return cb


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _print_summary(s: dict) -> None:
    print(f"run {s['run_id']}: {s['attack']} attack ({s['target']}), {s['injection']}, retriever {s['retriever']}")
    print(f"  corpus {s['corpus_size']} docs, {s['n_queries']} queries; Chroma agreed with exact search on "
          f"{s['store_agreement']:.0%} of searches")
    a = s["asr"]
    print(f"  ASR@1 {a['1']:.3f}   ASR@2 {a['2']:.3f}   ASR@5 {a['5']:.3f}   "
          f"mean poison rank {s['mean_poison_rank']:.2f}")
    if "poisonedrag" in s:
        p = s["poisonedrag"]
        print(f"  PoisonedRAG top-{s['top_k']}: precision {p['precision']:.3f}  recall {p['recall']:.3f}  F1 {p['f1']:.3f}")
    for name, d in s["detectors"].items():
        if "skipped" in d:
            print(f"  detector {name}: skipped ({d['skipped']})")
            continue
        beta = f"  β={d['beta']}" if "beta" in d else ""
        print(f"  detector {name}: TPR {d['tpr']:.3f}  FPR {d['fpr']:.3f} (in-sample threshold: FPR "
              f"{d['fpr_in_sample']:.3f})  AUROC {d['auroc']:.3f}{beta}  "
              f"[{d['n_anchors']} anchors, {d['n_clean_held_out']} held-out clean, {d['n_poisons']} poisons]")


def _run_poison(cfg, args) -> int:
    from .runs import PoisoningRun

    run = PoisoningRun(cfg, out_dir=args.out, progress=_progress_printer(not args.quiet))
    try:
        run.run()
    finally:
        run.close()
    s = run.summary()
    if run.out_dir:
        s["out_dir"] = str(run.out_dir)
    cs = s.get("corpus_stats") or {}
    if cs.get("over_window"):
        print(f"warning: {cs['over_window']} of {cs['chunks']} documents are longer than {cfg.retriever} reads "
              f"({cs['retriever_max_tokens']} tokens); their tails are never embedded (chunk the corpus: "
              f"--chunk-size)", file=sys.stderr)
    if not args.json or not args.quiet:
        _print_summary(s)
    if args.json:
        print(json.dumps(_clean(s)))
    return 0


def cmd_poison(args) -> int:
    from .config import PoisonConfig

    values = dict(corpus=args.corpus, queries=args.queries, retriever=args.retriever, target=args.target,
                  attack=args.attack, injection=args.injection, top_k=args.top_k, seed=args.seed,
                  data_dir=args.data_dir or "", target_text=args.target_text or "", store=args.store,
                  chroma_host=args.chroma_host, chroma_port=args.chroma_port, anchor_k=args.anchor_k,
                  chunk_size=args.chunk_size or None, chunk_overlap=args.chunk_overlap)
    if args.limit is not None:
        values["limit"] = args.limit
    values["detectors"] = tuple(d for d in (args.detectors or "").split(",") if d.strip())
    if args.beta is not None:
        values["detector_params"] = {"mahalanobis": {"beta": args.beta}}
    return _run_poison(PoisonConfig.from_dict(values), args)


def _sweep(cfg, args) -> int:
    from .sweep import grid, run_sweep, write_sweep

    try:
        from tqdm import tqdm
        bar = tqdm(total=len(grid(cfg)), desc="sweep cells",
                   file=sys.stderr, disable=args.quiet)
    except ImportError:  # pragma: no cover
        bar = None

    def prog(done, total, row):
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"{row['retriever']}/{row['query_set']}/{row['target']}: ASR@{cfg.k}={row[f'asr@{cfg.k}']:.2f}")
    stop = {"flag": False}
    from .sweep import finished_cells
    out_dir = args.out or "sweep-out"
    already = len(finished_cells(cfg, out_dir))
    if already and not args.quiet:
        print(f"resuming the sweep in {out_dir}: {already} of {len(grid(cfg))} cells already done", file=sys.stderr)
    if bar is not None and already:
        bar.update(already)
    try:
        result = run_sweep(cfg, progress=prog, should_stop=lambda: stop["flag"], out_dir=out_dir)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()
    paths = write_sweep(result, args.out or "sweep-out", cfg.k)
    if not args.quiet:
        print(result.table1(cfg.k).round(3).to_string())
        for k, p in paths.items():
            print(f"{k}: {p}")
    if args.json:
        print(json.dumps(_clean({"cells": result.cells.to_dict(orient="records"), "files": paths,
                                 "complete": result.complete})))
    return 0


def cmd_sweep(args) -> int:
    from .config import SweepConfig, load_preset

    if args.preset:
        kind, cfg, _ = load_preset(args.preset)
        if kind != "sweep":
            raise EngineError(f"preset {args.preset!r} is a {kind} preset; use 'python -m engine run'")
    else:
        values: dict[str, Any] = {}
        for key in ("corpora", "retrievers", "query_sets", "targets", "detectors"):
            v = getattr(args, key)
            if v:
                values[key] = tuple(x.strip() for x in v.split(",") if x.strip())
        for key in ("limit", "k", "variants", "seed"):
            if getattr(args, key) is not None:
                values[key] = getattr(args, key)
        values["data_dir"] = args.data_dir or ""
        cfg = SweepConfig.from_dict(values)
    if args.data_dir:
        cfg = cfg.replace(data_dir=args.data_dir)
    if args.limit is not None:
        cfg = cfg.replace(limit=args.limit)
    return _sweep(cfg, args)


def cmd_run(args) -> int:
    from .config import load_preset

    kind, cfg, meta = load_preset(args.preset)
    if not args.quiet:
        print(f"preset {meta.get('name')}: {meta.get('description', '').strip()}", file=sys.stderr)
    if kind in ("extract", "compare"):
        from .cli_extract import _finish_extraction, run_compare
        from .runs.extraction import ExtractionRun
        if kind == "compare":
            if args.data_dir:
                cfg = cfg.replace(base={**dict(cfg.base or {}), "data_dir": args.data_dir})
            return run_compare(cfg, args)
        if args.data_dir:
            cfg = cfg.replace(data_dir=args.data_dir)
        return _finish_extraction(ExtractionRun(cfg, out_dir=args.out, progress=_progress_printer(not args.quiet)),
                                  args)
    if args.data_dir:
        cfg = cfg.replace(data_dir=args.data_dir)
    if args.limit is not None:
        cfg = cfg.replace(limit=args.limit)
    return _run_poison(cfg, args) if kind == "poison" else _sweep(cfg, args)


def cmd_analyze(args) -> int:
    from .analysis.why import why_it_works
    from .config import PoisonConfig

    cfg = PoisonConfig.from_dict(dict(corpus=args.corpus, queries=args.queries, retriever=args.retriever,
                                      target=args.target, limit=args.limit or 50, data_dir=args.data_dir or "",
                                      detectors=(), chunk_size=args.chunk_size or None))
    tables = why_it_works(cfg, progress=_progress_printer(not args.quiet))
    if not args.quiet or not args.json:
        for name, df in tables.items():
            print(f"\n{name}\n{df.to_string()}")
    if args.json:
        print(json.dumps({k: v.to_dict() for k, v in tables.items()}))
    return 0


def cmd_list(args) -> int:
    from .attacks.extraction import EXTRACTION_ATTACKS
    from .attacks.poisoning import POISONING_ATTACKS, TARGET_KINDS
    from .defenses import DEFENSES
    from .generators import GENERATORS, MODELS
    from .config import list_presets
    from .corpora import available_corpora
    from .detectors import DETECTORS
    from .embedders import RETRIEVERS
    from .queries import available_query_sets

    info = {
        "retrievers": {n: RETRIEVERS.describe(n) for n in RETRIEVERS.names()},
        "attacks": {n: POISONING_ATTACKS.describe(n) for n in POISONING_ATTACKS.names()},
        "detectors": {n: DETECTORS.describe(n) for n in DETECTORS.names()},
        "extraction_attacks": {n: EXTRACTION_ATTACKS.describe(n) for n in EXTRACTION_ATTACKS.names()},
        "defenses": {n: DEFENSES.describe(n) for n in DEFENSES.names()},
        "generators": {n: GENERATORS.describe(n) for n in GENERATORS.names()},
        "local_models": list(MODELS),
        "targets": list(TARGET_KINDS), "corpora": available_corpora(), "query_sets": available_query_sets(),
        "presets": list_presets(),
    }
    if args.json:
        print(json.dumps(info))
    else:
        for section, items in info.items():
            print(f"{section}:")
            if isinstance(items, dict):
                for k, v in items.items():
                    print(f"  {k:22s} {v}")
            else:
                for v in items:
                    print(f"  {v if not isinstance(v, dict) else v['name'] + ' (' + v['kind'] + ') ' + v['description'].strip()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine", description="RAG Attack & Defense Playground engine")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp, out=True):
        sp.add_argument("--data-dir", help="benchmark data dir (else $RAG_PLAYGROUND_DATA_DIR)")
        sp.add_argument("--json", action="store_true", help="print one JSON object as the last line")
        sp.add_argument("--quiet", "-q", action="store_true", help="no progress or tables")
        if out:
            sp.add_argument("--out", help="write events.jsonl, manifest.json, summary.json (or sweep files) here")

    ps = sub.add_parser("poison", help="universal poisoning / PoisonedRAG against a retriever, with detectors")
    ps.add_argument("--corpus", default="clinic_handbook")
    ps.add_argument("--queries", default="clinic_handbook")
    ps.add_argument("--retriever", default="minilm")
    ps.add_argument("--target", default="pii")
    ps.add_argument("--target-text", help="your own target text (with --target custom)")
    ps.add_argument("--attack", default="universal")
    ps.add_argument("--injection", default="one-at-a-time", choices=("one-at-a-time", "all-at-once"))
    ps.add_argument("--limit", type=int)
    ps.add_argument("--top-k", type=int, default=5)
    ps.add_argument("--detectors", default="l2,mahalanobis", help="comma-separated; empty for none")
    ps.add_argument("--beta", type=float, help="fix the Mahalanobis shrinkage β (default: cross-validated)")
    ps.add_argument("--anchor-k", type=int, default=10)
    ps.add_argument("--chunk-size", type=int, default=512, help="0 = no chunking")
    ps.add_argument("--chunk-overlap", type=int, default=32)
    ps.add_argument("--seed", type=int, default=0)
    ps.add_argument("--store", default="persistent", choices=("persistent", "http"))
    ps.add_argument("--chroma-host", default="127.0.0.1")
    ps.add_argument("--chroma-port", type=int, default=8000)
    common(ps)
    ps.set_defaults(func=cmd_poison)

    pr = sub.add_parser("run", help="run a preset (YAML file or bundled name)")
    pr.add_argument("preset")
    pr.add_argument("--limit", type=int)
    common(pr)
    pr.set_defaults(func=cmd_run)

    pw = sub.add_parser("sweep", help="Table-1 grid: corpora × retrievers × query sets × targets")
    pw.add_argument("--preset", help="a sweep preset (YAML file or bundled name)")
    pw.add_argument("--corpora")
    pw.add_argument("--retrievers")
    pw.add_argument("--query-sets", dest="query_sets")
    pw.add_argument("--targets")
    pw.add_argument("--detectors")
    pw.add_argument("--limit", type=int)
    pw.add_argument("--k", type=int)
    pw.add_argument("--variants", type=int)
    pw.add_argument("--seed", type=int)
    common(pw)
    pw.set_defaults(func=cmd_sweep)

    pa = sub.add_parser("analyze", help="why poisons win: Table 3 (orthogonal augmentation) and Table 4")
    pa.add_argument("--corpus", default="clinic_handbook")
    pa.add_argument("--queries", default="clinic_handbook")
    pa.add_argument("--retriever", default="minilm")
    pa.add_argument("--target", default="pii")
    pa.add_argument("--limit", type=int, default=50)
    pa.add_argument("--chunk-size", type=int, default=512)
    common(pa, out=False)
    pa.set_defaults(func=cmd_analyze)

    from .cli_extract import add_parsers
    add_parsers(sub, common)

    pl = sub.add_parser("list", help="registered retrievers, attacks, detectors, targets, presets")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_list)
    return p


def _check_args(args) -> None:
    """Refuse bad values before any work starts: an output folder that cannot be written, a limit that is
    not positive, an empty list."""
    from .errors import ConfigError
    from .paths import writable_dir

    if getattr(args, "out", None):
        writable_dir(args.out, "--out")
    v = getattr(args, "limit", None)   # the other counts are checked by their configs, with their names
    if v is not None and v < 1:
        raise ConfigError(f"--limit must be at least 1 (got {v}); leave it out to use every question")
    for name in ("corpora", "retrievers", "query_sets", "targets", "attacks", "configurations", "kbs"):
        v = getattr(args, name, None)
        if v is not None and not [x for x in v.split(",") if x.strip()]:
            raise ConfigError(f"--{name.replace('_', '-')} is empty: give at least one name")


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        _check_args(args)
        return int(args.func(args) or 0)
    except EngineError as e:
        if _partial_line["open"]:
            sys.stderr.write("\n")
        print(f"error: {scrub(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # an engine bug: still one line, with a hint
        if os.environ.get("RAG_PLAYGROUND_DEBUG"):
            raise
        print(f"internal error: {type(e).__name__}: {scrub(e)} (set RAG_PLAYGROUND_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1
