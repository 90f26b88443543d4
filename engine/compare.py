"""Defense comparison: one attack (or several) against several defense configurations.

For every (attack, configuration) it runs an extraction (leakage) and, once per configuration,
the utility evaluation (ACC, faithfulness) of the same defended system on a question set. The
table reports each metric and its ratio to the undefended configuration (``none``) — RAGFort's
ablation shape: CRR(reindex+cascade) < min(CRR(reindex), CRR(cascade)) < CRR(none).
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Callable, Optional

from .config import ComparisonConfig, defense_set
from .defenses import make_defenses
from .embedders import make_retriever
from .generators import GENERATORS
from .queries import load_queries
from .corpora import load_corpus
from .rag import RagSystem, evaluate_utility
from .runs.extraction import ExtractionRun

Progress = Callable[[str, int, int], None]
LEAK_KEYS = ("crr", "retrieved_coverage", "repeat_contexts", "rouge_contexts", "semantic_leak", "pii_leaked")


def utility_of(cfg: ComparisonConfig, configuration: str, *, progress: Progress | None = None) -> dict[str, Any]:
    """ACC and faithfulness of the system defended by ``configuration`` on the utility question set."""
    base = cfg.extraction_config("zeng", configuration)
    data_dir = base.data_dir or None
    corpus = load_corpus(cfg.utility_corpus, data_dir=data_dir, chunk_size=base.chunk_size,
                         chunk_overlap=base.chunk_overlap)
    queries = load_queries(cfg.utility_queries, data_dir=data_dir)
    system = RagSystem(corpus, make_retriever(base.retriever, dict(base.retriever_params or {})),
                       GENERATORS.create(base.generator, dict(base.generator_params or {})),
                       make_defenses(base.defenses, dict(base.defense_params or {})), top_k=base.top_k,
                       template=base.template, max_tokens=base.max_tokens)
    try:
        system.build(progress=progress)
        u = evaluate_utility(system, queries, seed=base.seed, limit=cfg.utility_limit, progress=progress)
    finally:
        system.close()
    return {k: u[k] for k in ("acc", "faithfulness", "n", "n_graded", "blocked")}


def run_comparison(cfg: ComparisonConfig, *, out_dir: str | Path | None = None, progress: Progress | None = None,
                   stop: Optional[threading.Event] = None,
                   on_row: Callable[[dict], None] | None = None) -> list[dict[str, Any]]:
    """Rows of (attack, configuration, leakage metrics, utility, ratios to 'none'); ``stop`` ends early."""
    rows: list[dict[str, Any]] = []
    utility: dict[str, dict] = {}
    cells = [(a, c) for a in cfg.attacks for c in cfg.configurations]
    out = Path(out_dir) if out_dir else None
    for i, (attack, conf) in enumerate(cells):
        if stop is not None and stop.is_set():
            break

        def tick(stage: str, d: int, t: int, _i=i, _a=attack, _c=conf) -> None:
            if progress:
                progress(f"[{_i + 1}/{len(cells)}] {_a} vs {_c}: {stage}", d, t)

        run = ExtractionRun(cfg.extraction_config(attack, conf), out_dir=out / "runs" if out else None, progress=tick)
        try:
            run.run()
        finally:
            run.close()
        s = run.summary()
        if conf not in utility and cfg.utility_limit != 0:
            utility[conf] = utility_of(cfg, conf, progress=tick)
        row = {"attack": attack, "configuration": conf, "defenses": list(defense_set(conf)), "run_id": run.run_id,
               **{k: s[k] for k in LEAK_KEYS}, "rounds": s["rounds"], "kb_size": s["kb_size"],
               "blocked": s["blocked"], "curves": s["curves"], "seconds": s["seconds"],
               **({"cascade": s["cascade"]} if "cascade" in s else {}),
               **{f"utility_{k}": v for k, v in utility.get(conf, {}).items()}}
        rows.append(row)
        if on_row:
            on_row(row)
        add_ratios(rows)
        if out:  # after every cell, so a stopped or killed comparison keeps what it finished
            out.mkdir(parents=True, exist_ok=True)
            (out / "comparison.json").write_text(json.dumps({"config": cfg.to_dict(), "rows": rows,
                                                            "complete": len(rows) == len(cells)},
                                                           indent=2, default=str))
    add_ratios(rows)
    return rows


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """``<metric>_ratio`` = value / value of the 'none' configuration of the same attack."""
    base = {r["attack"]: r for r in rows if r["configuration"] == "none"}
    for r in rows:
        b = base.get(r["attack"])
        for k in LEAK_KEYS:
            r[f"{k}_ratio"] = (r[k] / b[k]) if b and b[k] else None
        if b and r.get("utility_acc") is not None and b.get("utility_acc") is not None:
            r["utility_acc_drop"] = b["utility_acc"] - r["utility_acc"]


def ablation_direction(rows: list[dict[str, Any]], attack: str, metric: str = "crr") -> dict[str, Any]:
    """RAGFort's claim on one attack: both < min(single paths) < none."""
    v = {r["configuration"]: r[metric] for r in rows if r["attack"] == attack}
    needed = ("none", "reindex", "cascade", "reindex+cascade")
    if not all(k in v for k in needed):
        return {"holds": None, "values": v}
    return {"holds": v["reindex+cascade"] < min(v["reindex"], v["cascade"]) < v["none"], "values": v}


def average_ablation_direction(rows: list[dict[str, Any]], metric: str = "crr") -> dict[str, Any]:
    """RAGFort's claim on the *relative average* (the paper's ablation table, "Relative Average CRR"):
    per configuration, the mean over attacks of ``metric`` ÷ its value without protection (same
    attack); attacks that leaked nothing undefended are left out (no ratio). Then: both < min(single
    paths) < none (= 1)."""
    needed = ("none", "reindex", "cascade", "reindex+cascade")
    by_attack: dict[str, dict[str, float]] = {}
    for r in rows:
        by_attack.setdefault(r["attack"], {})[r["configuration"]] = r[metric]
    usable = [v for v in by_attack.values() if all(k in v for k in needed) and v["none"]]
    if not usable:
        return {"holds": None, "ratios": {}, "attacks": 0}
    ratios = {k: sum(v[k] / v["none"] for v in usable) / len(usable) for k in needed}
    holds = ratios["reindex+cascade"] < min(ratios["reindex"], ratios["cascade"]) < ratios["none"]
    return {"holds": holds, "ratios": ratios, "attacks": len(usable)}
