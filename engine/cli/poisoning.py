"""The poisoning side of the command line: ``poison``, ``sweep`` and ``analyze``."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..metrics.intervals import fmt_interval
from .common import _clean, _progress_printer, add_executor_args, finish_run
from ..metrics.catalog import MK


def _print_summary(s: dict) -> None:
    print(f"run {s['run_id']}: {s['attack']} attack ({s['target']}), {s['injection']}, retriever {s['retriever']}")
    print(
        f"  corpus {s['corpus_size']} docs, {s['n_queries']} queries; Chroma agreed with exact search on "
        f"{s['store_agreement']:.0%} of searches"
    )
    a, ci = s["asr"], s.get("asr_ci") or {}
    print(
        "  "
        + "   ".join(f"ASR@{k} {a[k]:.3f} {fmt_interval(ci.get(k))}".rstrip() for k in ("1", "2", "5"))
        + f"   mean poison rank {s['mean_poison_rank']:.2f}   (95% Wilson intervals)"
    )
    if s.get("n_generated"):
        judge = f"   judge says yes {s['asr_judge']:.3f}" if s.get("asr_judge") is not None else ""
        print(
            f"  answers ({s['generator']}, {s['n_generated']} questions, poison in the context of "
            f"{s['poison_in_context']}): ASR (generation) {s[MK.ASR_GENERATION]:.3f} "
            f"{fmt_interval(s.get('asr_generation_ci'))}{judge}  "
            f"[{s['generation_seconds']:.0f} s of generation]"
            + (
                f"\n  {s['clean_refused']} question(s) refused already without the blocker: set aside"
                if s.get("clean_refused")
                else ""
            )
        )
    if s.get("trigger"):
        t = s["trigger"]
        print(
            f"  trigger {t['phrase']!r}: ASR@1/2/5 with it ({t['n_triggered']} questions) "
            + "/".join(f"{t[f'asr_triggered@{k}']:.2f}" for k in (1, 2, 5))
            + f" · without it ({t['n_untriggered']}) "
            + "/".join(f"{t[f'asr_untriggered@{k}']:.2f}" for k in (1, 2, 5))
        )
    if s.get("defenses"):
        d = s["defenses"]
        print(
            f"  defenses {', '.join(d['names'])}: ASR after defenses {d['asr_defended']:.3f} "
            f"{fmt_interval(d['asr_defended_ci'])}; removed {d['poisons_removed']}/{d['poisons_retrieved']} "
            f"retrieved poisons (TPR {d['tpr']:.3f} {fmt_interval(d['tpr_ci'])}) and {d['clean_removed']}/"
            f"{d['clean_retrieved']} clean chunks (FPR {d['fpr']:.3f} {fmt_interval(d['fpr_ci'])})"
            + (f"; {d['blocked']} questions blocked" if d["blocked"] else "")
        )
    if "poisonedrag" in s:
        p = s["poisonedrag"]
        print(
            f"  PoisonedRAG top-{s['top_k']}: precision {p['precision']:.3f}  recall {p['recall']:.3f}  "
            f"F1 {p['f1']:.3f}"
        )
    for name, d in s["detectors"].items():
        if "skipped" in d:
            print(f"  detector {name}: skipped ({d['skipped']})")
            continue
        beta = f"  β={d['beta']}" if "beta" in d else ""
        print(
            f"  detector {name}: TPR {d['tpr']:.3f} {fmt_interval(d.get('tpr_ci'))}  FPR {d['fpr']:.3f} "
            f"{fmt_interval(d.get('fpr_ci'))} (in-sample threshold: FPR "
            f"{d['fpr_in_sample']:.3f})  AUROC {d['auroc']:.3f}{beta}  "
            f"[{d['n_anchors']} anchors, {d['n_clean_held_out']} held-out clean, {d['n_poisons']} poisons]"
        )


def _run_poison(cfg, args) -> int:
    from ..runs import PoisoningRun

    def warn(s: dict) -> None:
        if s.get("poisons_over_window"):
            pt = s["poison_tokens"]
            print(
                f"warning: {s['poisons_over_window']} of {pt['n']} poisons are longer than {cfg.retriever} reads "
                f"({pt['retriever_max_tokens']} tokens; median poison {pt['median']:.0f}, longest "
                f"{pt['longest']}): what follows the cut, often the target, never reaches the embedding"
                + (
                    f"; {pt['attacker_text_cut']} lose part of the attacker's text, of which the embedding reads "
                    f"{pt['attacker_text_embedded']:.0%} on average (questions: median {pt['median_question']:.0f} "
                    f"tokens)"
                    if pt.get("attacker_text_embedded") is not None
                    else ""
                ),
                file=sys.stderr,
            )
        cs = s.get("corpus_stats") or {}
        if cs.get("over_window"):
            print(
                f"warning: {cs['over_window']} of {cs['chunks']} documents are longer than {cfg.retriever} reads "
                f"({cs['retriever_max_tokens']} tokens); their tails are never embedded (chunk the corpus: "
                f"--chunk-size)",
                file=sys.stderr,
            )

    def betas(run) -> dict:
        raw = getattr(args, "beta_sweep", None)
        if not raw:
            return {}
        from ..analysis.beta_sweep import PAPER_BETAS, beta_table

        rows = beta_table(
            run, PAPER_BETAS if raw.strip() == "paper" else [float(x) for x in raw.split(",") if x.strip()]
        )
        if not args.quiet:
            print("Mahalanobis detection by shrinkage β (same anchors, out-of-fold threshold):", file=sys.stderr)
            for r in rows:
                print(
                    f"  β = {r['beta']:<6g} TPR {r['tpr']:.3f}  FPR {r['fpr']:.3f}  AUROC {r['auroc']:.3f}",
                    file=sys.stderr,
                )
        return {"beta_sweep": rows}

    if getattr(args, "beta_sweep", None):
        from ..errors import ConfigError

        raw = args.beta_sweep.strip()
        try:
            vals = [] if raw == "paper" else [float(x) for x in raw.split(",") if x.strip()]
        except ValueError:
            raise ConfigError(
                f"--beta-sweep: give comma-separated numbers in [0, 1] or 'paper' (got {raw!r})"
            ) from None
        if raw != "paper" and (not vals or any(not 0 <= v <= 1 for v in vals)):
            raise ConfigError(f"--beta-sweep: give comma-separated numbers in [0, 1] or 'paper' (got {raw!r})")
    run = PoisoningRun(cfg, out_dir=args.out, progress=_progress_printer(not args.quiet))
    return finish_run(run, args, _print_summary, warn, extra=betas)


def cmd_poison(args) -> int:
    """``poison``: one poisoning run built from the command-line options."""
    from ..config import PoisonConfig

    return _run_poison(PoisonConfig.from_dict(poison_values(args)), args)


def poison_values(args) -> dict[str, Any]:
    """The PoisonConfig fields of ``poison``'s options (every field is an option: config_options), with
    ``--beta`` merged into the Mahalanobis detector's parameters and the generator specs read."""
    from ..config import PoisonConfig
    from .config_options import config_values
    from .extraction import generator_specs

    values = config_values(args, PoisonConfig)
    values["data_dir"] = args.data_dir or ""
    if args.beta is not None:
        dp = dict(values.get("detector_params") or {})
        values["detector_params"] = {**dp, "mahalanobis": {**dict(dp.get("mahalanobis") or {}), "beta": args.beta}}
    if values.get("judge") and not values.get("generate"):
        from ..errors import ConfigError

        raise ConfigError("--judge needs --generate (the judge reads the generated answers)")
    if values.get("generate"):
        values.setdefault("generator", "local:qwen2.5-0.5b")  # the answers' default model, recorded
    return generator_specs(values, ("generator", "judge"), args.api_base)


def _sweep(cfg, args, meta: dict | None = None) -> int:
    from ..sweep import grid, run_sweep, write_sweep
    from .common import executor_of

    executor = executor_of(args, meta)

    try:
        from tqdm import tqdm

        bar = tqdm(total=len(grid(cfg)), desc="sweep cells", file=sys.stderr, disable=args.quiet)
    except ImportError:  # pragma: no cover
        bar = None

    def prog(done, total, row):
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(
                f"{row['retriever']}/{row['query_set']}/{row['target']}: ASR@{cfg.k}={row[f'asr@{cfg.k}']:.2f}"
            )

    from ..sweep import finished_cells

    out_dir = args.out or "sweep-out"
    already = len(finished_cells(cfg, out_dir))
    if already and not args.quiet:
        print(f"resuming the sweep in {out_dir}: {already} of {len(grid(cfg))} cells already done", file=sys.stderr)
    if bar is not None and already:
        bar.update(already)
    try:
        result = run_sweep(
            cfg, progress=prog, out_dir=out_dir, executor=executor, overwrite=bool(getattr(args, "overwrite", False))
        )
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
    for f in result.failed:  # the other cells are kept; running the sweep again retries these
        print(
            f"cell {f['corpus']}/{f['retriever']}/{f['query_set']}/{f['target']} failed: {f['error']}", file=sys.stderr
        )
    if args.json:
        print(
            json.dumps(
                _clean(
                    {
                        "cells": result.cells.to_dict(orient="records"),
                        "files": paths,
                        "complete": result.complete,
                        "failed": result.failed,
                    }
                )
            )
        )
    return 1 if result.failed else 0


def cmd_sweep(args) -> int:
    """``sweep``: a Table-1 grid from a preset or the options; cells already written in the output folder are
    skipped (resume)."""
    cfg, meta = sweep_config(args)
    return _sweep(cfg, args, meta)


def sweep_config(args) -> tuple[Any, dict]:
    """The SweepConfig of ``sweep``'s options (a preset's, with every option given on top) and the preset's meta."""
    from ..config import SweepConfig
    from .common import load_kind_preset

    from .config_options import config_values

    meta: dict = {}
    values = config_values(args, SweepConfig, skip=("data_dir",))  # the grid itself, or overrides of a preset's
    if args.preset:
        cfg, meta = load_kind_preset(args.preset, "sweep", True)
        cfg = SweepConfig.from_dict({**cfg.to_dict(), **values})
    else:
        cfg = SweepConfig.from_dict({**values, "data_dir": args.data_dir or ""})
    if args.data_dir:
        cfg = cfg.replace(data_dir=args.data_dir)
    return cfg, meta


def cmd_analyze(args) -> int:
    """``analyze``: why poisons win (Tables 3 and 4) for one corpus and target, for each retriever of
    ``--retrievers`` (dense ones), Table 3 on the first query set and Table 4 on every one of ``--queries``; then
    the paper's Contriever and MedCPT rows."""
    from ..analysis.paper_tables import paper_table3, paper_table4
    from ..analysis.why import why_it_works
    from .config_options import config_values
    from ..config import AnalyzeConfig, PoisonConfig
    from ..errors import ConfigError
    from ..paths import writable_file

    if args.save:
        writable_file(args.save, "--save")  # checked now, not after the whole analysis

    acfg = AnalyzeConfig.from_dict({**config_values(args, AnalyzeConfig), "data_dir": args.data_dir or ""})
    retrievers, sets = list(acfg.retrievers), list(acfg.queries)
    out: dict = {}
    for name in retrievers:
        cfg = PoisonConfig.from_dict(
            dict(
                corpus=acfg.corpus,
                queries=sets[0],
                retriever=name,
                target=acfg.target,
                limit=acfg.limit,
                data_dir=acfg.data_dir,
                detectors=(),
                chunk_size=acfg.chunk_size,
            )
        )
        try:
            tables = why_it_works(cfg, progress=_progress_printer(not args.quiet), table4_sets=sets[1:])
        except ConfigError as e:
            if len(retrievers) == 1:
                raise
            print(f"{name}: skipped ({e})", file=sys.stderr)
            continue
        out[name] = tables
        if not args.quiet or not args.json:
            for t, df in tables.items():
                print(f"\n{t} — {name}\n{df.to_string()}")
    paper = {"table3_orthogonal_augmentation": paper_table3(), "table4_clean_retrieval": paper_table4()}
    if len(retrievers) > 1 and (not args.quiet or not args.json):
        for t, frames in paper.items():
            for r, df in frames.items():
                print(f"\n{t} — paper, {r}\n{df.to_string()}")
    first = out.get(retrievers[0], {})  # the first retriever's tables also at the top level, as before
    payload = {
        **{k: v.to_dict() for k, v in first.items()},
        "retrievers": {r: {k: v.to_dict() for k, v in t.items()} for r, t in out.items()},
        "paper": {t: {r: df.to_dict() for r, df in frames.items()} for t, frames in paper.items()},
        "setup": {
            "corpus": acfg.corpus,
            "queries": sets,
            "target": acfg.target,
            "limit": acfg.limit,
            "chunk_size": acfg.chunk_size,
        },
    }
    if args.save:
        from pathlib import Path
        from ..files import atomic_write

        dest = Path(args.save)
        atomic_write(dest, json.dumps(payload, ensure_ascii=False, indent=1))
        if not args.quiet:
            print(f"tables: {dest}", file=sys.stderr)
    if args.json:
        print(json.dumps(payload))
    return 0


def add_parsers(sub, common) -> None:
    """Add the ``poison``, ``sweep`` and ``analyze`` subcommands; ``common(parser)`` adds the shared options."""
    ps = sub.add_parser("poison", help="universal poisoning / PoisonedRAG against a retriever, with detectors")
    from ..config import PoisonConfig
    from .config_options import add_config_options
    from .extraction import GENERATOR_SPEC

    add_config_options(
        ps,
        PoisonConfig,
        skip=("data_dir",),
        zero_is_none=("chunk_size",),
        helps={
            "generator": "with --generate, the answering generator: "
            + GENERATOR_SPEC
            + " (default: local, Qwen2.5-0.5B)",
            "judge": "with --generate: an LLM judge (a generator spec, as --generator) that also "
            "decides whether each answer states the target (asr_judge)",
        },
    )
    ps.add_argument(
        "--beta",
        type=float,
        help="fix the Mahalanobis shrinkage β (default: cross-validated); "
        'short for --detector-params \'{"mahalanobis": {"beta": B}}\'',
    )
    ps.add_argument(
        "--beta-sweep",
        help="after the run, refit Mahalanobis for each β (comma-separated, or 'paper' "
        "for 0.001,0.005,0.01,0.05,0.1,0.2: the paper's Table 8) on the same anchors",
    )
    ps.add_argument("--api-base", help="base URL of an OpenAI-compatible server (litellm generators)")
    common(ps)
    ps.set_defaults(func=cmd_poison)

    pw = sub.add_parser("sweep", help="Table-1 grid: corpora × retrievers × query sets × targets")
    pw.add_argument("--preset", help="a sweep preset (YAML file or bundled name)")
    from ..config import SweepConfig

    add_config_options(pw, SweepConfig, skip=("data_dir",))
    pw.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a sweep with other settings already in --out (its finished cells are dropped)",
    )
    add_executor_args(pw)
    common(pw)
    pw.set_defaults(func=cmd_sweep)

    pa = sub.add_parser("analyze", help="why poisons win: Table 3 (orthogonal augmentation) and Table 4")
    from ..config import AnalyzeConfig

    add_config_options(
        pa, AnalyzeConfig, skip=("data_dir",), aliases={"retrievers": ("--retriever",)}, zero_is_none=("chunk_size",)
    )
    pa.add_argument(
        "--save",
        metavar="FILE.json",
        help="also write the tables (every retriever's and the paper's) "
        "to this JSON file: the Sweeps page's Reproduce section reads it",
    )
    common(pa, out=False)
    pa.set_defaults(func=cmd_analyze)
