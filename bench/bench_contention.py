"""Benchmark: the extraction demo round on idle cores and beside one CPU-bound process, with the engine's
thread counts fixed (the configured 2) and adaptive (one per free core, :mod:`engine.cpu_share`).

    .venv/bin/python bench/bench_contention.py [--preset quick-extraction-demo] [--rounds 3] [--repeats 1] [--json]

Each condition replays the same rounds of the preset from a fresh run (same seed: same queries, same
prompts); the busy process is ``python -c 'while True: pass'``, started before the condition's first round
and killed after its last. Conditions are interleaved (idle/busy, fixed/adaptive) ``--repeats`` times and
the medians reported, with the ratio busy / idle for each policy and whether every answer was the same.
Not a test: run it on otherwise idle cores (the busy process is the only other load it wants).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def play(cfg, rounds: int) -> dict:
    """One fresh run of ``rounds`` rounds: wall seconds per round, stage seconds, first tokens, answers."""
    from engine.events import Generated, RoundEnded
    from engine.generators.llama_local import threads_now
    from engine.runs.extraction import ExtractionRun

    run = ExtractionRun(cfg, out_dir=tempfile.mkdtemp(prefix="rag-bench-c-"))
    run.prepare()
    run.system.generator.load()
    walls = []
    for _ in range(rounds):
        t = time.perf_counter()
        run.step()
        walls.append(time.perf_counter() - t)
    gens = [e for e in run.events if isinstance(e, Generated)]
    ends = [e for e in run.events if isinstance(e, RoundEnded)]
    threads = threads_now(run.system.generator._llm())
    run.close()
    stages: dict[str, float] = {}
    for e in ends:
        for s, v in e.timings.items():
            stages[s] = stages.get(s, 0.0) + v
    return {
        "walls": walls,
        "answers": [g.text for g in gens],
        "threads": threads,
        "first_tokens": [g.info.get("first_token_seconds") for g in gens],
        "stages": {s: round(v / max(len(ends), 1), 2) for s, v in stages.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="quick-extraction-demo")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from engine.config import ExtractionConfig, load_preset

    kind, cfg, _ = load_preset(args.preset)
    if kind != "extract":
        raise SystemExit(f"{args.preset} is not an extraction preset")
    cfg = ExtractionConfig.from_dict({**cfg.to_dict(), "rounds": args.rounds})
    play(cfg, 1)  # load the models and warm the caches once
    results: dict[str, list[dict]] = {}
    for _ in range(args.repeats):
        for policy in ("fixed", "adaptive"):
            os.environ["RAG_PLAYGROUND_THREADS"] = policy
            for load in ("idle", "busy"):
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load == "busy" else None
                try:
                    if hog:
                        time.sleep(0.5)
                    results.setdefault(f"{policy}/{load}", []).append(play(cfg, args.rounds))
                finally:
                    if hog:
                        hog.kill()
                        hog.wait()
                time.sleep(1.0)
    rows = {}
    for key, runs in results.items():
        walls = [w for r in runs for w in r["walls"]]
        firsts = [f for r in runs for f in r["first_tokens"] if f is not None]
        rows[key] = {
            "round_seconds_median": round(statistics.median(walls), 2),
            "round_seconds_max": round(max(walls), 2),
            "first_token_median": round(statistics.median(firsts), 2) if firsts else None,
            "threads": runs[-1]["threads"],
            "stages": runs[-1]["stages"],
        }
    answers = {k: [r["answers"] for r in v] for k, v in results.items()}
    ref = answers["fixed/idle"][0]
    res = {
        "preset": args.preset,
        "rounds": args.rounds,
        "repeats": args.repeats,
        "cores": len(os.sched_getaffinity(0)),
        "conditions": rows,
        "busy_over_idle": {
            p: round(rows[f"{p}/busy"]["round_seconds_median"] / rows[f"{p}/idle"]["round_seconds_median"], 2)
            for p in ("fixed", "adaptive")
        },
        "adaptive_idle_over_fixed_idle": round(
            rows["adaptive/idle"]["round_seconds_median"] / rows["fixed/idle"]["round_seconds_median"], 2
        ),
        "same_answers": all(a == ref for v in answers.values() for a in v),
    }
    if args.json:
        print(json.dumps(res))
        return
    print(f"{args.preset}: {args.rounds} rounds x {args.repeats} per condition, {res['cores']} cores")
    for key, row in rows.items():
        print(
            f"  {key:15s} round median {row['round_seconds_median']:6.2f} s (max {row['round_seconds_max']:.2f}) · "
            f"first token {row['first_token_median']} s · threads {row['threads']} · stages {row['stages']}"
        )
    print(
        f"  busy / idle: fixed {res['busy_over_idle']['fixed']}x, adaptive {res['busy_over_idle']['adaptive']}x "
        f"(target <= 2x); adaptive idle / fixed idle {res['adaptive_idle_over_fixed_idle']}x; "
        f"same answers: {res['same_answers']}"
    )


if __name__ == "__main__":
    main()
