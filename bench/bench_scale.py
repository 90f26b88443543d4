"""How the engine's costs grow: exact search, memory, Chroma inserts (embedded and server), and Ray per cell.

    .venv/bin/python bench/bench_scale.py [--sizes 10000,100000,1000000] [--dims 384,768]
                                          [--chroma-sizes 10000,100000] [--ray-cell] [--json OUT]

1. Exact search — what every ranking in the engine does (``RunStore.search``: one matrix product of the
   queries with every document vector, then a partial sort): milliseconds per query (a batch of 100
   queries, top-5) and the vectors' memory, for synthetic unit vectors of each size and dimension.
2. Chroma inserts: vectors per second into an embedded persistent client and into a ``chroma run`` server on
   loopback (batches of 4,096, as ``BaseIndex.build``).
3. Ray per cell (``--ray-cell``): the same comparison cell (Zeng's attack on the clinic records, no defense,
   SmolLM2, ``--ray-rounds`` rounds: ≥ 30 s here) run in this process and as a Ray task on a local Ray, each
   twice (the second run warm: models loaded), as a ratio (target ≤ 1.05× for such cells).
Not a test: it prints figures (and writes them as JSON); nothing asserts on time.
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

import numpy as np  # noqa: E402


def unit_vectors(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, d), dtype=np.float32)
    for a in range(0, n, 100_000):  # in blocks: no float64 copy of a 3 GB matrix
        b = rng.standard_normal((min(100_000, n - a), d), dtype=np.float32)
        out[a : a + len(b)] = b / np.linalg.norm(b, axis=1, keepdims=True)
    return out


def exact_search_ms(M: np.ndarray, n_queries: int = 100, k: int = 5, repeats: int = 3) -> float:
    Q = unit_vectors(n_queries, M.shape[1], seed=1)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        S = Q @ M.T
        np.argpartition(-S, k - 1, axis=1)[:, :k]
        best = min(best, time.perf_counter() - t)
    return best / n_queries * 1000


def chroma_rate(client, n: int, d: int) -> float:
    vecs = unit_vectors(n, d, seed=2)
    ids = [f"d{i}" for i in range(n)]
    col = client.create_collection(
        f"bench-{n}-{d}-{time.time_ns()}", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    step = min(client.get_max_batch_size(), 4096)
    t = time.perf_counter()
    for a in range(0, n, step):
        col.add(ids=ids[a : a + step], embeddings=vecs[a : a + step])
    secs = time.perf_counter() - t
    client.delete_collection(col.name)
    return n / secs


def start_chroma_server(path: str) -> tuple[subprocess.Popen, int]:
    sys.path.insert(0, str(REPO / "tests"))
    from helpers import free_port, wait_for_port

    port = free_port()
    exe = Path(sys.executable).with_name("chroma")
    proc = subprocess.Popen(
        [str(exe), "run", "--path", path, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not wait_for_port(port, proc, 60):
        proc.kill()
        raise SystemExit("chroma server did not start")
    return proc, port


def ray_cell(rounds: int) -> dict:
    from engine.compare import compare_cell
    from engine.config import ComparisonConfig
    from engine.executors import ExecutorConfig, connect, import_ray

    base = {
        "generator": "local",
        "generator_params": {"model": "smollm2-135m", "max_tokens": 96},
        "attacker_llm": "",
        "max_tokens": 96,
        "answer_budget": "fixed",
        "attack": "zeng",
        "rounds": rounds,
        "top_k": 2,
        "data_dir": "",
    }
    cfg = ComparisonConfig.from_dict({"base": base, "attacks": ["zeng"], "configurations": ["none"]})
    item = (cfg.to_dict(), 0, "clinic_records", "zeng", "none", None, False, False)
    local: list[float] = []
    for _ in range(2):
        t = time.perf_counter()
        compare_cell(item)
        local.append(time.perf_counter() - t)
    ray = import_ray()
    connect(ExecutorConfig(executor="ray"))
    try:
        task = ray.remote(compare_cell).options(num_cpus=1)
        ray.get(ray.remote(lambda: 0).remote())  # a worker up before timing
        remote = []
        for _ in range(2):
            t = time.perf_counter()
            ray.get(task.remote(item, None))
            remote.append(time.perf_counter() - t)
    finally:
        ray.shutdown()
    return {
        "rounds": rounds,
        "in_process_s": [round(x, 1) for x in local],
        "ray_s": [round(x, 1) for x in remote],
        "ratio_cold": round(remote[0] / local[0], 3),
        "ratio_warm": round(remote[1] / local[1], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--dims", default="384,768")
    ap.add_argument("--chroma-sizes", default="10000,100000")
    ap.add_argument("--ray-cell", action="store_true")
    ap.add_argument("--ray-rounds", type=int, default=10)
    ap.add_argument("--skip-search", action="store_true")
    ap.add_argument(
        "--data-dir", default=os.environ.get("RAG_PLAYGROUND_DATA_DIR") or str(REPO.parent / "shared" / "corpora")
    )
    ap.add_argument("--json")
    args = ap.parse_args()
    out: dict = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "search": [], "chroma": []}
    dims = [int(x) for x in args.dims.split(",")]
    for d in dims if not args.skip_search else []:
        for n in [int(x) for x in args.sizes.split(",")]:
            M = unit_vectors(n, d)
            ms = exact_search_ms(M)
            row = {"n": n, "d": d, "ms_per_query": round(ms, 3), "vectors_mb": round(M.nbytes / 2**20, 1)}
            out["search"].append(row)
            print(
                f"exact search n={n:>9,} d={d}: {ms:8.3f} ms/query · vectors {row['vectors_mb']:,.0f} MiB", flush=True
            )
            del M
    import chromadb
    from chromadb.config import Settings

    with tempfile.TemporaryDirectory() as tmp:
        if args.skip_search:
            args.chroma_sizes = ""
        embedded = chromadb.PersistentClient(
            path=str(Path(tmp) / "embedded"), settings=Settings(anonymized_telemetry=False)
        )
        proc, port = start_chroma_server(str(Path(tmp) / "server"))
        try:
            server = chromadb.HttpClient(host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False))
            for d in dims:
                for n in [int(x) for x in args.chroma_sizes.split(",") if x]:
                    for mode, client in (("embedded", embedded), ("server", server)):
                        rate = chroma_rate(client, n, d)
                        out["chroma"].append({"mode": mode, "n": n, "d": d, "vectors_per_s": round(rate)})
                        print(f"chroma {mode:8s} insert n={n:>9,} d={d}: {rate:8,.0f} vectors/s", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    if args.ray_cell:
        out["ray_cell"] = ray_cell(args.ray_rounds)
        print(f"comparison cell in process vs as a Ray task: {out['ray_cell']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
