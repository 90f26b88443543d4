"""The poisoning side of the command line: ``poison``, ``sweep`` and ``analyze``."""
from __future__ import annotations

import json
import sys
from typing import Any

from .common import _clean, _progress_printer, finish_run

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
    from ..runs import PoisoningRun

    def warn(s: dict) -> None:
        cs = s.get("corpus_stats") or {}
        if cs.get("over_window"):
            print(f"warning: {cs['over_window']} of {cs['chunks']} documents are longer than {cfg.retriever} reads "
                  f"({cs['retriever_max_tokens']} tokens); their tails are never embedded (chunk the corpus: "
                  f"--chunk-size)", file=sys.stderr)

    run = PoisoningRun(cfg, out_dir=args.out, progress=_progress_printer(not args.quiet))
    return finish_run(run, args, _print_summary, warn)


def cmd_poison(args) -> int:
    """``poison``: one poisoning run built from the command-line options."""
    from ..config import PoisonConfig

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
    from ..sweep import grid, run_sweep, write_sweep

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
    from ..sweep import finished_cells
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
    """``sweep``: a Table-1 grid from a preset or the options; cells already written in the output folder are
    skipped (resume)."""
    from ..config import SweepConfig
    from .common import load_kind_preset

    if args.preset:
        cfg = load_kind_preset(args.preset, "sweep", True)
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


def cmd_analyze(args) -> int:
    """``analyze``: why poisons win (Tables 3 and 4) for one corpus, query set, retriever and target."""
    from ..analysis.why import why_it_works
    from ..config import PoisonConfig

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



def add_parsers(sub, common) -> None:
    """Add the ``poison``, ``sweep`` and ``analyze`` subcommands; ``common(parser)`` adds the shared options."""
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

