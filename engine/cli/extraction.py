"""The extraction side of the command line: ``extract``, ``utility`` and ``compare``.

``python -m engine extract --kb PATH_OR_NAME --attack zeng|worm|rag-thief --generator NAME
[--attacker-llm NAME] [--defenses a,b,…] [--rounds N] [--top-k K] [--retriever NAME] [--data-dir DIR]
[--seed S] [--out DIR] [--json]`` (or ``--resume RUN_DIR``); ``utility`` → ACC / faithfulness;
``compare`` → one or more attacks against several defense configurations, ratios to no defense.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..metrics.intervals import fmt_interval
from ..views.extraction import tenancy_line
from .common import add_executor_args
from ..metrics.catalog import MK


def _gen(spec: str, api_base: str | None) -> tuple[str, dict[str, Any]]:
    from ..generators.spec import parse_generator

    return parse_generator(spec, api_base=api_base)


def _defenses(text: str | None) -> tuple[str, ...]:
    return tuple(d.strip() for d in (text or "").split(",") if d.strip() and d.strip() != "none")


def _print_extraction(s: dict) -> None:
    print(
        f"run {s.get('run_id', '')}: {s['attack']} vs defenses [{', '.join(s['defenses']) or 'none'}] on "
        f"{s['kb']} ({s['kb_size']} chunks), {s['rounds']} rounds"
    )
    print(
        f"  CRR {s[MK.CRR]:.3f}   retrieved coverage {s[MK.RETRIEVED_COVERAGE]:.3f}   repeat contexts "
        f"{s[MK.REPEAT_CONTEXTS]}   ROUGE contexts {s[MK.ROUGE_CONTEXTS]}   semantic leak {s[MK.SEMANTIC_LEAK]:.3f}   "
        f"PII leaked {s[MK.PII_LEAKED]}/{s['pii_total']}   blocked {s['blocked']}"
    )
    if s.get("canaries_planted"):
        print(
            f"  canaries leaked {s['canaries_leaked']}/{s['canaries_planted']} "
            f"{fmt_interval(s.get('canaries_ci'), 3)} (no false positives; the share estimates the KB share leaked)"
        )
    tenancy, _ = tenancy_line(s)
    if tenancy:
        print(f"  {tenancy}")
    if s.get(MK.CRR_CI):
        print(
            f"  95% Wilson intervals: CRR {fmt_interval(s[MK.CRR_CI], 4)}"
            + (f"   PII share {fmt_interval(s['pii_ci'], 3)}" if s.get("pii_ci") else "")
        )
    print(
        f"  by stage: {s.get(MK.EE_RETRIEVAL, 0):.3f} of the KB reached the context, {s.get(MK.EE_GENERATION, 0):.2f} "
        f"of that was reproduced; {s.get(MK.EXPLORATION, 0):.0%} of rounds found a new chunk"
    )
    b, cs = s.get("answer_budget") or {}, s.get("corpus_stats") or {}
    if b.get("capped_rounds"):
        print(
            f"  the answer budget capped {b['capped_rounds']} of {b['answered_rounds']} answers below their context: "
            f"CRR undercounts what the model would leak (--answer-budget context lifts the cap)"
        )
    if cs.get("over_window"):
        print(
            f"  {cs['over_window']} of {cs['chunks']} chunks are longer than the retriever reads "
            f"({cs['retriever_max_tokens']} tokens): their tails are invisible to retrieval"
        )
    c = s.get("cost") or {}
    if c:
        usd = "" if c.get("usd") is None else f", ${c['usd']:.4f}"
        print(
            f"  cost: {c['queries']} queries, generator {c['generator_tokens']['prompt']:,} tokens in / "
            f"{c['generator_tokens']['completion']:,} out, attacker LLM {c['attacker_tokens']['prompt']:,} in / "
            f"{c['attacker_tokens']['completion']:,} out, {c['seconds']:.0f} s{usd}"
        )
    if "cascade" in s:
        c = s["cascade"]
        ratio = (c["flops_draft"] + c["flops_verifier"]) / c["flops_verifier_only"] if c["flops_verifier_only"] else 0
        print(
            f"  cascade: {int(c['accepted'])} draft tokens accepted, {int(c['rejected'])} rejected "
            f"({int(c['suppressed'])} copy continuations suppressed); FLOPs {ratio:.2f}× verifier-only"
        )


def _finish_extraction(run, args) -> int:
    from .common import finish_run

    return finish_run(run, args, _print_extraction)


# ``extract``'s defaults where they differ from ExtractionConfig's: the attacker's LLM is the small local model
EXTRACT_DEFAULTS = {"generator": "local", "attacker_llm": "local:smollm2-135m"}
GENERATOR_SPEC = (
    "local[:model] | a packaged model name | a .gguf path | a litellm provider/model string; "
    "parameters in the matching --*-params JSON"
)


def generator_specs(values: dict[str, Any], fields: tuple[str, ...], api_base: str | None) -> dict[str, Any]:
    """``values`` with each generator field (``generator``, ``attacker_llm``, ``judge``) read as a generator spec
    (``local:qwen2.5-1.5b``, ``openai/gpt-4o-mini``): the registry name, the spec's model merged under the field's
    ``*_params`` (the JSON given there wins); ``--api-base`` goes to the answering generator. '' or ``none``: no
    generator (where the field allows it)."""
    out = dict(values)
    for name in fields:
        spec = out.get(name)
        if spec is None or str(spec).strip() in ("", "none"):
            if spec is not None:
                out[name] = ""
            continue
        gname, gparams = _gen(spec, api_base if name == "generator" else None)
        out[name] = gname
        out[f"{name}_params"] = {**gparams, **dict(out.get(f"{name}_params") or {})}
    return out


def extraction_values(args) -> dict[str, Any]:
    """The ExtractionConfig fields of ``extract``'s options (every field is an option: config_options)."""
    from ..config import ExtractionConfig
    from .config_options import config_values

    values = config_values(args, ExtractionConfig, defaults=EXTRACT_DEFAULTS)
    values["data_dir"] = args.data_dir or ""
    return generator_specs(values, ("generator", "attacker_llm"), args.api_base)


def cmd_extract(args) -> int:
    """``extract``: one extraction run from the options, or ``--resume`` an interrupted one from its folder."""
    from .common import _progress_printer
    from ..config import ExtractionConfig
    from ..runs.extraction import ExtractionRun

    prog = _progress_printer(not args.quiet)
    if args.resume is not None:
        run = ExtractionRun.resume(args.resume, progress=prog)
        resumed = next((e for e in reversed(run.events) if e.kind == "run_resumed"), None)
        if resumed is not None and not args.quiet:
            torn = (
                f"; dropped a torn last line ({resumed.dropped_bytes} bytes) left by the crash"
                if resumed.dropped_bytes
                else ""
            )
            print(f"resuming run {run.run_id} after round {resumed.from_round}{torn}", file=sys.stderr)
        return _finish_extraction(run, args)
    cfg = ExtractionConfig.from_dict(extraction_values(args))
    return _finish_extraction(ExtractionRun(cfg, out_dir=args.out, progress=prog), args)


def cmd_utility(args) -> int:
    """``utility``: ACC and faithfulness of a (defended) RAG system on honest questions."""
    from .common import _clean, _progress_printer
    from .config_options import config_values
    from ..config import UtilityConfig
    from ..corpora import load_corpus, retriever_window
    from ..defenses import make_defenses
    from ..embedders import make_retriever
    from ..generators import GENERATORS
    from ..queries import load_queries
    from ..rag import RagSystem, evaluate_utility

    cfg = UtilityConfig.from_dict({**config_values(args, UtilityConfig), "data_dir": args.data_dir or ""})
    gname, gparams = _gen(cfg.generator, args.api_base)
    retriever = make_retriever(cfg.retriever)
    corpus = load_corpus(cfg.corpus, data_dir=cfg.data_dir, window=retriever_window(retriever))
    queries = load_queries(cfg.queries, data_dir=cfg.data_dir)
    system = RagSystem(
        corpus, retriever, GENERATORS.create(gname, gparams), make_defenses(cfg.defenses), top_k=cfg.top_k
    )
    try:
        system.build(progress=_progress_printer(not args.quiet))
        u = evaluate_utility(
            system, queries, seed=cfg.seed, limit=cfg.limit, progress=_progress_printer(not args.quiet)
        )
    finally:
        system.close()
    out = {k: u[k] for k in ("acc", "faithfulness", "n", "n_graded", "blocked")}
    if not args.json or not args.quiet:
        acc = "n/a" if out["acc"] is None else f"{out['acc']:.3f}"
        print(
            f"utility on {cfg.queries} over {cfg.corpus}: ACC {acc} ({out['n_graded']} graded), "
            f"faithfulness {out['faithfulness']:.3f}, {out['n']} questions, {out['blocked']} blocked"
        )
    if args.json:
        print(json.dumps(_clean(out)))
    return 0


def print_comparison(rows: list[dict]) -> None:
    """Print comparison rows as a fixed-width table (with a ``kb`` column when there are several KBs)."""
    kbs = len({r.get("kb") for r in rows}) > 1
    head = (
        (f"{'kb':16s} " if kbs else "")
        + f"{'attack':10s} {'configuration':22s} {'CRR':>7s} {'×none':>6s} {'cover':>6s} {'repeat':>6s} "
        f"{'rouge':>6s} {'sem':>6s} {'PII':>5s} {'ACC':>6s} {'faith':>6s} {'EE-gen':>6s}"
    )
    print(head)
    for r in rows:
        ratio = "" if r.get("crr_ratio") is None else f"{r['crr_ratio']:.2f}"
        acc = r.get(MK.UTILITY_ACC)
        faith = r.get(MK.UTILITY_FAITHFULNESS)
        eeg = r.get(MK.EE_GENERATION)
        print(
            (f"{str(r.get('kb')):16s} " if kbs else "")
            + f"{r['attack']:10s} {r['configuration']:22s} {r[MK.CRR]:7.4f} {ratio:>6s} "
            f"{r[MK.RETRIEVED_COVERAGE]:6.3f} "
            f"{_count(r[MK.REPEAT_CONTEXTS])} {_count(r[MK.ROUGE_CONTEXTS])} {r[MK.SEMANTIC_LEAK]:6.3f} "
            f"{_count(r[MK.PII_LEAKED], 5)} "
            f"{'' if acc is None else f'{acc:6.3f}':>6s} {'' if faith is None else f'{faith:6.3f}':>6s} "
            f"{'' if eeg is None else f'{eeg:6.3f}':>6s}"
        )
        if r.get(MK.CRR_CI):
            vs = r.get(MK.CRR_VS_NONE)
            print(
                f"{'':33s} CRR 95% interval {fmt_interval(r[MK.CRR_CI], 4)}"
                + (
                    f"; vs no protection: {vs}" + (" at this budget" if vs == "not distinguishable" else "")
                    if vs
                    else ""
                )
            )
        if r.get(MK.TASK_ACC) is not None:
            drop = r.get("task_acc_drop")
            print(
                f"{'':33s} task ACC {r[MK.TASK_ACC]:.3f} {fmt_interval(r.get('task_acc_ci'), 3)} on "
                f"{r.get('task_n_graded')} questions of the KB's own task"
                + (f"; {-drop:+.3f} against no protection" if drop is not None and r["configuration"] != "none" else "")
            )
        if r.get("n_runs", 1) > 1:
            print(
                f"{'':33s} mean of {r['n_runs']} runs (seeds {', '.join(map(str, r['seeds']))}): "
                f"CRR sd {r['crr_std']:.4f}, retrieved coverage sd {r['retrieved_coverage_std']:.4f}"
            )


def _count(x: float, width: int = 6) -> str:
    """A count, or the mean of counts over repeated runs."""
    return f"{x:{width}d}" if isinstance(x, int) else f"{x:{width}.1f}"


def _caveat(check: dict) -> str:
    worse = check.get("not_below_none") or []
    close = check.get("not_distinguishable") or []
    out = f" (but {' and '.join(worse)} alone leaks no less than no protection)" if worse else ""
    if close:
        out += f"; CRR intervals overlap for {', '.join(close)}: not distinguishable at this budget"
    return out


def run_compare(cfg, args, meta: dict | None = None) -> int:
    """Run a comparison, print its table and the RAGFort ablation-direction checks; returns the exit code
    (1 when a cell failed on Ray: the others are kept and running the same command again retries it)."""
    from .common import _clean, _progress_printer, executor_of
    from ..compare import ablation_direction, average_ablation_direction, run_comparison

    kbs = cfg.knowledge_bases()
    executor = executor_of(args, meta)
    failed: list = []
    rows = run_comparison(
        cfg,
        out_dir=args.out,
        progress=_progress_printer(not args.quiet),
        executor=executor,
        failed=failed,
        overwrite=bool(getattr(args, "overwrite", False)),
    )
    checks = {
        (f"{a} on {kb}" if len(kbs) > 1 else a): ablation_direction(rows, a, kb=kb if len(kbs) > 1 else None)
        for kb in kbs
        for a in cfg.attacks
    }
    average = average_ablation_direction(rows)
    if not args.json or not args.quiet:
        print_comparison(rows)
        for a, c in checks.items():
            if c["holds"] is not None:
                print(
                    f"RAGFort ablation direction for {a}: CRR(reindex+cascade) < min(CRR(reindex), CRR(cascade)) "
                    f"< CRR(none): {'holds' if c['holds'] else 'does NOT hold'}{_caveat(c)}"
                )
        if average["holds"] is not None and average["attacks"] > 1:
            rr = average["ratios"]
            print(
                f"RAGFort ablation, relative CRR averaged over {average['attacks']} attack × KB pairs: "
                f"reindex+cascade {rr['reindex+cascade']:.2f}× · reindex {rr['reindex']:.2f}× · "
                f"cascade {rr['cascade']:.2f}× · "
                f"none 1.00×: direction {'holds' if average['holds'] else 'does NOT hold'}{_caveat(average)}"
            )
    for f in failed:
        print(
            f"cell {f['attack']} vs {f['configuration']} on {f['kb']} (seed {f['seed']}) failed: {f['error']}",
            file=sys.stderr,
        )
    if args.json:
        print(
            json.dumps(
                _clean(
                    {
                        "rows": [{k: v for k, v in r.items() if k != "curves"} for r in rows],
                        "ablation": checks,
                        "ablation_average": average,
                        "failed": failed,
                    }
                )
            )
        )
    return 1 if failed else 0


# ``compare``'s grid without a preset, where it differs from ComparisonConfig's: a quick one (no reindexing)
COMPARE_DEFAULTS = {"configurations": ("none", "threshold", "system-prompt")}
# the base every cell starts from without a preset, where it differs from ExtractionConfig's
COMPARE_BASE_DEFAULTS = {"kb": "clinic_records", "generator": "local", "rounds": 10}
# ExtractionConfig fields a comparison sets per cell (--attacks, --configurations) or from a shared option
COMPARE_VARIES = ("attack", "defenses", "data_dir")


def cmd_compare(args) -> int:
    """``compare``: a comparison from a preset or the options, with the command-line overrides applied on top."""
    cfg, meta = compare_config(args)
    return run_compare(cfg, args, meta)


def compare_config(args) -> tuple[Any, dict]:
    """The ComparisonConfig of ``compare``'s options (a preset's, with every option given on top) and the
    preset's meta. The options named after ExtractionConfig fields set the base every cell starts from (a preset's
    base, else :data:`COMPARE_BASE_DEFAULTS`)."""
    from ..config import ComparisonConfig, ExtractionConfig
    from .common import load_kind_preset

    from .config_options import config_values

    meta: dict = {}
    given = config_values(
        args, ComparisonConfig, skip=("base",), none_is_a_value=("configurations",)
    )  # the options given, over the preset's values
    if args.preset:
        cfg, meta = load_kind_preset(args.preset, "compare", args.quiet)
        values = cfg.to_dict()
    else:
        values = {"base": dict(COMPARE_BASE_DEFAULTS), **COMPARE_DEFAULTS}
    base = dict(values.get("base") or {})
    over = config_values(args, ExtractionConfig, skip=COMPARE_VARIES)
    for name in ("generator", "attacker_llm"):  # read as specs; naming the base's generator keeps its parameters
        spec = over.get(name)
        if spec is None:
            continue
        if str(spec).strip() in ("", "none"):
            over[name] = ""
            continue
        gname, gparams = _gen(spec, args.api_base if name == "generator" else None)
        kept = dict(base.get(f"{name}_params") or {}) if gname == base.get(name) else {}
        over[name] = gname
        over[f"{name}_params"] = {**kept, **gparams, **dict(over.get(f"{name}_params") or {})}
    if "generator" not in over and args.api_base:  # a server for the base's own generator
        over["generator_params"] = {**dict(base.get("generator_params") or {}), "api_base": args.api_base}
    base.update(over)
    if args.data_dir:
        base["data_dir"] = args.data_dir
    return ComparisonConfig.from_dict({**values, **given, "base": base}), meta


def add_parsers(sub, common) -> None:
    """Add the ``extract``, ``utility`` and ``compare`` subcommands; ``common(parser)`` adds the shared options."""
    from ..config import ComparisonConfig, ExtractionConfig, UtilityConfig
    from .config_options import add_config_options

    pe = sub.add_parser("extract", help="knowledge-base extraction attack against a (defended) RAG system")
    add_config_options(
        pe,
        ExtractionConfig,
        skip=("data_dir",),
        defaults=EXTRACT_DEFAULTS,
        helps={
            "generator": "the answering generator: " + GENERATOR_SPEC + " (default: local)",
            "attacker_llm": "the attacker's LLM (RAG-Thief reflections): "
            + GENERATOR_SPEC
            + "; 'none' for none (default: local:smollm2-135m)",
        },
    )
    pe.add_argument("--api-base", help="base URL of an OpenAI-compatible server (litellm generators)")
    pe.add_argument("--resume", help="continue an interrupted run from its folder")
    common(pe)
    pe.set_defaults(func=cmd_extract)

    pu = sub.add_parser("utility", help="what defenses cost: multiple-choice ACC and faithfulness")
    add_config_options(pu, UtilityConfig, skip=("data_dir",))
    pu.add_argument("--api-base", help="base URL of an OpenAI-compatible server (litellm generators)")
    common(pu, out=False)
    pu.set_defaults(func=cmd_utility)

    pc = sub.add_parser("compare", help="one attack against several defense configurations (RAGFort ablation)")
    pc.add_argument("--preset", help="a compare preset, e.g. ragfort-healthcaremagic")
    add_config_options(
        pc,
        ExtractionConfig,
        skip=COMPARE_VARIES,
        defaults=COMPARE_BASE_DEFAULTS,
        helps={
            "generator": "every cell's answering generator: " + GENERATOR_SPEC + " (default: local)",
            "attacker_llm": "every cell's attacker LLM (RAG-Thief reflections): "
            + GENERATOR_SPEC
            + "; 'none' for none",
        },
    )  # every cell's base: a preset's, with these on top
    pc.add_argument(
        "--api-base",
        help="base URL of an OpenAI-compatible server (a vLLM or llama.cpp server on a "
        "GPU machine) for a provider/model generator",
    )
    add_config_options(
        pc,
        ComparisonConfig,
        skip=("base",),
        defaults=COMPARE_DEFAULTS,
        helps={"configurations": "comma-separated defense sets, '+' inside a set, 'none' for no defense; defenses: "
               "{registered:defenses} (default without a preset: none,threshold,system-prompt)"},
    )  # fmt: skip
    pc.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a comparison with other settings already in --out (its recorded runs are dropped)",
    )
    add_executor_args(pc)
    common(pc)
    pc.set_defaults(func=cmd_compare)
