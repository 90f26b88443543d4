"""Benchmark of one extraction attack round, split by stage, against the bare generator call.

    .venv/bin/python bench/bench_extraction.py [--kb clinic_records] [--attack rag-thief] [--rounds 5]
        [--model smollm2-135m] [--defenses a,b] [--json]

Reports the mean seconds per round of each stage recorded by the engine (attack = the agent's
next query incl. its own LLM/embedding work, defenses, retrieval, generation, metrics) and the
ratio of the whole round to a bare ``Llama.create_chat_completion`` on the same final prompt
(the baseline, run in the same process), so the engine's overhead is visible. Not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb", default="clinic_records")
    ap.add_argument("--attack", default="rag-thief")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--defenses", default="")
    ap.add_argument("--data-dir", default=os.environ.get("RAG_PLAYGROUND_DATA_DIR") or str(REPO.parent / "shared" / "corpora"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from engine.config import ExtractionConfig
    from engine.generators.llama_local import _llms_lock
    from engine.runs.extraction import ExtractionRun

    cfg = ExtractionConfig.from_dict({
        "kb": args.kb, "attack": args.attack, "rounds": args.rounds, "data_dir": args.data_dir,
        "generator": "local", "generator_params": {"model": args.model},
        "attacker_llm": "local", "attacker_llm_params": {"model": "smollm2-135m", "max_tokens": 48},
        "defenses": [d for d in args.defenses.split(",") if d], "top_k": 3, "max_tokens": 128})
    run = ExtractionRun(cfg, out_dir=tempfile.mkdtemp(prefix="rag-bench-x-"))
    t0 = time.perf_counter()
    run.prepare()
    t_prepare = time.perf_counter() - t0
    run.run()
    ends = [e for e in run.events if e.kind == "round_ended"]
    stages = sorted({k for e in ends for k in e.timings})
    per_stage = {k: sum(e.timings.get(k, 0.0) for e in ends) / len(ends) for k in stages}
    round_total = sum(per_stage.values())

    # baseline: the same final messages through bare llama.cpp, same model and max_tokens
    gen = run.system.generator
    llm = gen._llm()
    msgs = None
    last_q = [e for e in run.events if e.kind == "query_issued"][-1].text
    ans = run.system.answer(last_q)
    msgs = [dict(m) for m in ans.messages]
    t = time.perf_counter()
    n = 0
    for _ in range(3):
        with _llms_lock:
            out = llm.create_chat_completion(msgs, max_tokens=128, temperature=0.0, seed=0)
        n += out["usage"]["completion_tokens"]
    bare = (time.perf_counter() - t) / 3
    res = {"kb": args.kb, "attack": args.attack, "model": args.model, "rounds": len(ends),
           "prepare_seconds": round(t_prepare, 2),
           "per_round_seconds": {k: round(v, 4) for k, v in per_stage.items()},
           "round_seconds": round(round_total, 3), "bare_generation_seconds": round(bare, 3),
           "round_vs_bare_generation": round(round_total / bare, 2) if bare else None,
           "crr": run.summary()["crr"]}
    if args.json:
        print(json.dumps(res))
    else:
        print(f"{args.attack} on {args.kb} with {args.model}: {len(ends)} rounds, prepare {t_prepare:.1f}s")
        for k, v in per_stage.items():
            print(f"  {k:12s} {v:8.3f} s/round  ({v / round_total:5.1%})")
        print(f"  round total  {round_total:8.3f} s   bare generation on the same prompt {bare:.3f} s "
              f"→ {round_total / bare:.2f}×")


if __name__ == "__main__":
    main()
