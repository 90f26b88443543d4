"""Benchmark: what the HTTP target layer costs per round, against the same system in process.

    .venv/bin/python bench/bench_audit.py [--preset quick-extraction-demo] [--attack zeng] [--rounds 5]
        [--repeats 2] [--json]

Starts the example RAG service (``examples/rag_service.py``, a FastAPI app serving the preset's system) on
loopback, then plays the same extraction attack (same seed, same rounds) against

* **in process** — the built-in pipeline (``ExtractionRun`` on the preset's configuration), and
* **over HTTP** — the ``http`` target pointed at the service (the same retriever, generator and prompt, in
  the service's process; the audit process only runs the attacker and the metrics),

alternating the two ``--repeats`` times, and reports the mean seconds a round (wall clock around each
``step()``), the ratio over HTTP / in process (the issue's goal: ≤ 1.05), and whether the two produced the
same answers (greedy decoding of the same prompts). Not a test: numbers depend on the machine; run it on
idle cores.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def play(cfg, rounds: int) -> tuple[list[float], list[str]]:
    """Seconds of each round (wall clock around ``step``) and the answers."""
    from engine.runs.extraction import ExtractionRun

    run = ExtractionRun(cfg)
    run.prepare()
    seconds = []
    try:
        for _ in range(rounds):
            t = time.perf_counter()
            run.step()
            seconds.append(time.perf_counter() - t)
        answers = [e.text for e in run.events if e.kind == "generated"]
    finally:
        run.close()
    return seconds, answers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="quick-extraction-demo")
    ap.add_argument("--attack", default="zeng")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from helpers import http_target_params, start_rag_service, stop

    from engine.config import ExtractionConfig
    from engine.targets import make_target

    port = _free_port()
    service = start_rag_service(port, "--preset", args.preset)
    try:
        base = f"http://127.0.0.1:{port}"
        local = make_target("pipeline", {"preset": args.preset}).extraction_config(
            attack=args.attack, rounds=args.rounds, attacker_llm=""
        )
        remote = ExtractionConfig.from_dict(
            {
                "kb": local.kb,
                "attack": args.attack,
                "rounds": args.rounds,
                "attacker_llm": "",
                "retriever": local.retriever,
                "seed": local.seed,
                "chunk_size": local.chunk_size,
                "chunk_overlap": local.chunk_overlap,
                "target": "http",
                "target_params": http_target_params(base),
            }
        )
        play(local, 1)  # warm both sides (model loads, caches) before timing
        play(remote, 1)
        times = {"in_process": [], "http": []}
        answers = {}
        for _ in range(args.repeats):
            for name, cfg in (("in_process", local), ("http", remote)):
                secs, ans = play(cfg, args.rounds)
                times[name] += secs
                answers[name] = ans
        mean = {k: statistics.mean(v) for k, v in times.items()}
        out = {
            "preset": args.preset,
            "attack": args.attack,
            "rounds": args.rounds,
            "repeats": args.repeats,
            "round_seconds_mean": {k: round(v, 3) for k, v in mean.items()},
            "round_seconds_median": {k: round(statistics.median(v), 3) for k, v in times.items()},
            "ratio_http_over_in_process": round(mean["http"] / mean["in_process"], 3),
            "same_answers": answers["in_process"] == answers["http"],
            "answers_compared": len(answers["http"]),
        }
    finally:
        stop(service)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{args.attack} × {args.rounds} rounds × {args.repeats} repeats on {args.preset}:")
        print(
            f"  in process {out['round_seconds_mean']['in_process']:.2f} s a round (median "
            f"{out['round_seconds_median']['in_process']:.2f}); over HTTP {out['round_seconds_mean']['http']:.2f} s "
            f"(median {out['round_seconds_median']['http']:.2f})"
        )
        print(
            f"  ratio over HTTP / in process: {out['ratio_http_over_in_process']:.3f}; same answers: "
            f"{out['same_answers']} ({out['answers_compared']} compared)"
        )


if __name__ == "__main__":
    main()
