"""Faster CPU encoders vs today's PyTorch encoder: ingestion speed, top-5 agreement and ASR@2.

    .venv/bin/python bench/bench_encoders.py [--models minilm,mpnet] [--backends torch-bf16,onnx,onnx-int8]
                                             [--n-speed 1500] [--queries 200] [--agreement-docs N] [--json OUT]

For each packaged model and each backend (``torch-bf16``: bfloat16 autocast; ``onnx``: ONNX Runtime fp32;
``onnx-int8``: int8 weights):
1. ingestion speed: raw encode of the same ``--n-speed`` BioASQ snippets, PyTorch (the engine's default batch
   size) vs the ONNX backend (both warm, the export excluded), as a ratio in this process (target ≥ 2.5×);
2. top-5 agreement on BioASQ (all 20,767 snippets) × MIRAGE PubMedQA (``--queries`` questions): the mean share
   of the PyTorch top-5 that the backend also ranks in its top-5, and the share of identical top-5 sets
   (target ≥ 0.98);
3. ASR@2 of universal poisoning (PII target) on the same setup, both backends (target: within 0.01).
The corpus vectors go through the embedding cache (a second run only re-times the speed part). Not a test:
it prints figures; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402


def speed(name: str, backend: str, texts: list[str]) -> float:
    from engine.embedders import make_retriever

    r = make_retriever(name, {"backend": backend, "device": "cpu"})
    r._encode_documents(texts[:32])  # load / export, warm up
    t = time.perf_counter()
    r._encode_documents(texts)
    return time.perf_counter() - t


def top5(name: str, backend: str, docs: list[str], queries: list[str]) -> np.ndarray:
    from engine.embedders import make_retriever

    r = make_retriever(name, {"backend": backend, "device": "cpu"})
    d, _ = r.encode_documents(docs)
    q = r.encode_queries(queries)
    s = r.score(q, d)
    return np.argsort(-s, axis=1)[:, :5]


def asr2(name: str, backend: str, data_dir: str, limit: int) -> float:
    from engine.config import PoisonConfig
    from engine.metrics import asr
    from engine.runs.poisoning import PoisoningRun

    run = PoisoningRun(
        PoisonConfig(
            corpus="bioasq",
            queries="mirage:pubmedqa",
            retriever=name,
            retriever_params={"backend": backend} if backend != "torch" else None,
            target="pii",
            limit=limit,
            chunk_size=None,
            data_dir=data_dir,
        )
    )
    run.run()
    run.close()
    return asr(run.events, 2).value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="minilm,mpnet")
    ap.add_argument("--backends", default="torch-bf16,onnx,onnx-int8")
    ap.add_argument("--n-speed", type=int, default=1500)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument(
        "--data-dir", default=os.environ.get("RAG_PLAYGROUND_DATA_DIR") or str(REPO.parent / "shared" / "corpora")
    )
    ap.add_argument("--skip-agreement", action="store_true")
    ap.add_argument(
        "--agreement-docs",
        type=int,
        default=0,
        help="rank over the first N snippets only (0: all); ASR@2 is then not measured",
    )
    ap.add_argument("--json")
    args = ap.parse_args()
    from engine.corpora import load_corpus
    from engine.queries import load_queries

    docs = load_corpus("bioasq", data_dir=args.data_dir, chunk_size=None).texts
    sample = docs[: args.n_speed]
    subset = bool(args.agreement_docs)
    if subset:
        docs = docs[: args.agreement_docs]
    queries = [q.text for q in load_queries("mirage:pubmedqa", data_dir=args.data_dir)][: args.queries]
    out: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "n_speed": len(sample),
        "n_docs": len(docs),
        "n_queries": len(queries),
        "models": {},
    }
    for name in args.models.split(","):
        res: dict = {}
        base = speed(name, "torch", sample)
        res["torch_seconds"] = round(base, 2)
        print(f"{name} torch: {len(sample) / base:,.0f} docs/s", flush=True)
        ref = None if args.skip_agreement else top5(name, "torch", docs, queries)
        asr_ref = None if args.skip_agreement or subset else asr2(name, "torch", args.data_dir, args.queries)
        for backend in args.backends.split(","):
            secs = speed(name, backend, sample)
            row = {"seconds": round(secs, 2), "speedup": round(base / secs, 2)}
            line = f"{name} {backend}: {len(sample) / secs:,.0f} docs/s, {base / secs:.2f}× PyTorch"
            if ref is not None:
                got = top5(name, backend, docs, queries)
                overlap = float(np.mean([len(set(a) & set(b)) / 5 for a, b in zip(ref, got)]))
                same = float(np.mean([set(a) == set(b) for a, b in zip(ref, got)]))
                row.update(top5_agreement=round(overlap, 4), top5_identical=round(same, 4), n_docs=len(docs))
                line += f"; top-5 agreement over {len(docs):,} snippets {overlap:.4f} (identical sets {same:.3f})"
                if asr_ref is not None:
                    a2 = asr2(name, backend, args.data_dir, args.queries)
                    row.update(
                        asr2=a2,
                        asr2_torch=asr_ref,
                        holds=bool(base / secs >= 2.5 and overlap >= 0.98 and abs(a2 - asr_ref) <= 0.01),
                    )
                    line += f"; ASR@2 {a2:.3f} vs {asr_ref:.3f}; {'holds' if row['holds'] else 'does not hold'}"
            res[backend] = row
            print(line, flush=True)
        out["models"][name] = res
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
