"""Accelerator figures, for a machine with a GPU: ingestion docs/s on the GPU vs the CPU for MiniLM and MPNet
on the BioASQ snippets, and the SupCon fine-tuning of contrastive reindexing on each device.

    .venv/bin/python bench/bench_gpu.py [--n-docs 20000] [--data-dir DIR] [--json OUT]

Raw ``encode`` of the same texts through the engine's retrievers (``device`` = cpu / cuda), no embedding
cache, so both devices do the same work; the SupCon run is the reindex defense's default settings on the
first ``--supcon-docs`` snippets, without its disk cache. Not a test: it prints figures (and writes them as
JSON); nothing asserts on time. Without CUDA it says so and measures the CPU only.
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


def encode_rate(name: str, device: str, texts: list[str]) -> float:
    """Documents per second of the retriever's own encoder on ``device`` (after one warm-up batch)."""
    from engine.embedders import make_retriever
    r = make_retriever(name, {"device": device})
    r._encode_documents(texts[:64])
    if device.startswith("cuda"):
        import torch
        torch.cuda.synchronize()
    t = time.perf_counter()
    r._encode_documents(texts)
    if device.startswith("cuda"):
        import torch
        torch.cuda.synchronize()
    return len(texts) / (time.perf_counter() - t)


def supcon_seconds(device: str, texts: list[str]) -> float:
    from engine.defenses import DEFENSES
    from engine.defenses.supcon import contrastive_reindex
    from engine.embedders import make_retriever
    p = DEFENSES.get("reindex").Params()
    t = time.perf_counter()
    contrastive_reindex(texts, make_retriever("minilm", {"device": device}), min_cluster_size=p.min_cluster_size,
                        min_samples=p.min_samples, selection=p.selection, per_class=p.per_class,
                        max_length=p.max_length, noise=p.noise, epochs=p.epochs, temperature=p.temperature,
                        batch_size=p.batch_size, lr=p.lr, max_steps=p.max_steps, seed=p.seed, cache=False,
                        device=device)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-docs", type=int, default=20000)
    ap.add_argument("--supcon-docs", type=int, default=1500)
    ap.add_argument("--data-dir", default=os.environ.get("RAG_PLAYGROUND_DATA_DIR") or str(REPO.parent / "shared" / "corpora"))
    ap.add_argument("--cpu-docs", type=int, default=2000, help="documents timed on the CPU (it is slow; a rate)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    import torch

    from engine.corpora import load_corpus
    texts = load_corpus("bioasq", data_dir=args.data_dir, chunk_size=None).texts[:args.n_docs]
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    if len(devices) == 1:
        print("no CUDA GPU visible: CPU figures only", file=sys.stderr)
    out: dict = {"date": time.strftime("%Y-%m-%d"), "n_docs": len(texts),
                 "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, "encode": {}}
    for name in ("minilm", "mpnet"):
        for dev in devices:
            sample = texts if dev != "cpu" else texts[:args.cpu_docs]
            rate = encode_rate(name, dev, sample)
            out["encode"][f"{name}@{dev}"] = round(rate, 1)
            print(f"{name} on {dev}: {rate:,.0f} docs/s over {len(sample):,} snippets", flush=True)
    out["supcon_seconds"] = {}
    for dev in devices:
        s = supcon_seconds(dev, texts[:args.supcon_docs])
        out["supcon_seconds"][dev] = round(s, 1)
        print(f"SupCon reindexing of {args.supcon_docs} snippets on {dev}: {s:.1f} s", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
