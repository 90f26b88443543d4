"""Benchmark of an extraction round: today's decoding path against the engine's, on the same prompts.

    .venv/bin/python bench/bench_extraction.py [--preset quick-extraction-demo] [--rounds 3] [--json]

1. Plays ``--rounds`` rounds of the preset (the home page's extraction demo by default) through the engine
   and reports each round's wall time, its stages and when the first answer token came.
2. Replays every round's exact prompt (same messages, same answer budget) three ways, each from an empty KV
   cache, one after another in this run:

   * **main before** — llama-cpp-python's own ``create_chat_completion`` (one token per forward pass) on the
     portable AVX2 build (``.venv/llama-avx2``, run in a child process: one process can load one build);
   * **llama.cpp decoding** — the same call on the installed build (AVX-512 where the CPU has it);
   * **engine** — :mod:`engine.generators.llama_decode` on the installed build (reference lookup, only the
     logit rows it reads).

   It prints the seconds of each, the ratios, and whether the three produced the same text (greedy decoding
   of the same tokens; a batched pass can flip a near-tie, which the agreement column would show).

The round ratio counts the whole round: the engine's measured round minus its generation plus the baseline's
generation. Not a test: numbers depend on the machine; run it on idle cores.
"""

from __future__ import annotations

import argparse
import json
import os
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
AVX2_SITE = REPO / ".venv" / "llama-avx2"


def _clear(llm) -> None:
    llm.n_tokens = 0
    llm._ctx.kv_cache_seq_rm(-1, 0, -1)


def llama_cpp_calls(llm, jobs: list[dict]) -> list[dict]:
    """``create_chat_completion`` (greedy) on each job, from an empty cache: seconds, tokens, text."""
    out = []
    for j in jobs:
        _clear(llm)
        t = time.perf_counter()
        r = llm.create_chat_completion(j["messages"], max_tokens=j["max_tokens"], temperature=0.0, seed=0)
        out.append(
            {
                "seconds": time.perf_counter() - t,
                "tokens": r["usage"]["completion_tokens"],
                "text": r["choices"][0]["message"]["content"] or "",
            }
        )
    return out


def baseline_worker(path: str) -> None:
    """Child-process mode: run :func:`llama_cpp_calls` with whichever llama_cpp build is first on sys.path."""
    spec = json.loads(Path(path).read_text())
    import llama_cpp
    from llama_cpp import Llama

    from engine.generators.models import resolve_model

    llm = Llama(model_path=str(resolve_model(spec["model"])), n_ctx=spec["n_ctx"], n_threads=2, verbose=False, seed=0)
    res = llama_cpp_calls(llm, spec["jobs"])
    print(json.dumps({"build": str(Path(llama_cpp.__file__).parent), "results": res}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="quick-extraction-demo")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--data-dir", default=os.environ.get("RAG_PLAYGROUND_DATA_DIR") or str(REPO.parent / "shared" / "corpora")
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--baseline-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.baseline_worker:
        baseline_worker(args.baseline_worker)
        return

    from engine.config import ExtractionConfig, load_preset
    from engine.generators.llama_local import decoder_for, locked
    from engine.rag.prompts import render
    from engine.events import Generated, QueryIssued, RoundEnded
    from engine.runs.extraction import ExtractionRun

    kind, cfg, _ = load_preset(args.preset)
    if kind != "extract":
        raise SystemExit(f"{args.preset} is not an extraction preset")
    cfg = ExtractionConfig.from_dict({**cfg.to_dict(), "rounds": args.rounds, "data_dir": args.data_dir})
    run = ExtractionRun(cfg, out_dir=tempfile.mkdtemp(prefix="rag-bench-x-"))
    run.prepare()
    gen = run.system.generator
    gen.load()
    walls = []
    for _ in range(cfg.rounds):
        t = time.perf_counter()
        run.step()
        walls.append(time.perf_counter() - t)
    ev = run.events
    ends = {e.round: e for e in ev if isinstance(e, RoundEnded)}
    gens = {e.round: e for e in ev if isinstance(e, Generated)}
    queries = {e.round: e.text for e in ev if isinstance(e, QueryIssued)}
    texts = {d.id: d.text for d in run.corpus.documents}
    extra = [d.system_prompt() for d in run.system.by_stage("prompt")]
    jobs = [
        {
            "messages": render(
                run.system.template, queries[r], [texts[c] for c in gens[r].context_ids], extra_system=extra
            ),
            "max_tokens": gens[r].answer_budget or cfg.max_tokens,
        }
        for r in sorted(gens)
        if not gens[r].blocked_by
    ]
    model = dict(cfg.generator_params or {}).get("model", "smollm2-135m")
    n_ctx = int(gen.params.n_ctx)

    # the engine's decoder and llama.cpp's own decoding on the installed build, same model object
    llm = gen._llm()
    dec = decoder_for(llm)
    engine_res = []
    with locked(llm):
        for j in jobs:
            _clear(llm)
            t = time.perf_counter()
            _, text, st = dec.generate(dec.chat_tokens(j["messages"]), j["max_tokens"], gen._settings())
            engine_res.append(
                {
                    "seconds": time.perf_counter() - t,
                    "tokens": st.completion_tokens,
                    "text": text,
                    "forward_passes": st.forward_passes,
                    "first_token": st.first_token_seconds,
                }
            )
        same_build = llama_cpp_calls(llm, jobs)
    run.close()

    # today's main: llama.cpp's decoding on the portable AVX2 build, in a child process
    main_res, main_build = None, None
    if (AVX2_SITE / "llama_cpp").is_dir():
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"model": model, "jobs": jobs, "n_ctx": n_ctx}, f)
        env = dict(os.environ, PYTHONPATH=f"{AVX2_SITE}{os.pathsep}{REPO}")
        out = subprocess.run(
            [sys.executable, __file__, "--baseline-worker", f.name], env=env, capture_output=True, text=True, check=True
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        main_res, main_build = got["results"], got["build"]
        os.unlink(f.name)

    def total(rs):
        return sum(r["seconds"] for r in rs)

    rounds = []
    for r in sorted(gens):
        if gens[r].blocked_by:
            continue
        k = len(rounds)
        row = {
            "round": r,
            "wall_seconds": round(walls[r - 1], 2),
            "stages": {s: round(v, 2) for s, v in ends[r].timings.items()},
            "first_token_seconds": gens[r].info.get("first_token_seconds"),
            "answer_tokens": engine_res[k]["tokens"],
            "engine_seconds": round(engine_res[k]["seconds"], 2),
            "llama_cpp_seconds": round(same_build[k]["seconds"], 2),
            "same_text_llama_cpp": engine_res[k]["text"] == same_build[k]["text"],
        }
        if main_res:
            row["main_before_seconds"] = round(main_res[k]["seconds"], 2)
            row["same_text_main_before"] = engine_res[k]["text"] == main_res[k]["text"]
            row["round_ratio"] = round(
                (sum(ends[r].timings.values()) - gens[r].seconds + main_res[k]["seconds"])
                / max(sum(ends[r].timings.values()), 1e-9),
                2,
            )
        rounds.append(row)
    res = {
        "preset": args.preset,
        "model": model,
        "rounds": rounds,
        "round_seconds_max": round(max(walls), 2),
        "round_seconds_mean": round(sum(walls) / len(walls), 2),
        "generation_ratio_decoding_only": round(total(same_build) / total(engine_res), 2),
        "installed_build": (REPO / ".venv" / "llama-build").read_text().strip()
        if (REPO / ".venv" / "llama-build").is_file()
        else "unknown",
    }
    if main_res:
        res["generation_ratio_vs_main_before"] = round(total(main_res) / total(engine_res), 2)
        res["generation_ratio_build_only"] = round(total(main_res) / total(same_build), 2)
        res["main_before_build"] = main_build
    if args.json:
        print(json.dumps(res))
        return
    print(
        f"{args.preset}: {model}, {len(rounds)} rounds; round wall time mean {res['round_seconds_mean']} s, "
        f"max {res['round_seconds_max']} s (installed llama.cpp build: {res['installed_build']})"
    )
    for row in rounds:
        print(
            f"  round {row['round']}: {row['answer_tokens']} answer tokens"
            f" · first token {row['first_token_seconds']} s"
            f" · engine {row['engine_seconds']} s · llama.cpp decoding {row['llama_cpp_seconds']} s"
            + (f" · main before (AVX2 build) {row['main_before_seconds']} s" if main_res else "")
            + f" · same text: {row['same_text_llama_cpp']}"
            + (f"/{row['same_text_main_before']}" if main_res else "")
        )
    print(f"  generation: engine vs llama.cpp decoding (same build) {res['generation_ratio_decoding_only']}x")
    if main_res:
        print(
            f"  generation: engine vs main before {res['generation_ratio_vs_main_before']}x "
            f"(of which the build: {res['generation_ratio_build_only']}x)"
        )
        print("  whole round vs main before: " + ", ".join(f"{r['round_ratio']}x" for r in rounds))
    else:
        print("  (no portable AVX2 build in .venv/llama-avx2: run scripts/install.sh for the main-before baseline)")


if __name__ == "__main__":
    main()
