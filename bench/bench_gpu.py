"""Accelerator figures, for a machine with a GPU: ingestion docs/s on the GPU vs the CPU for MiniLM and MPNet
on the BioASQ snippets, and the SupCon fine-tuning of contrastive reindexing on each device.

    .venv/bin/python bench/bench_gpu.py [--n-docs 20000] [--data-dir DIR] [--json OUT]
                                        [--models minilm,mpnet | --models LABEL=PATH,...]

Raw ``encode`` of the same texts through the engine's retrievers (``device`` = cpu / cuda), no embedding
cache, so both devices do the same work; the SupCon run is the reindex defense's default settings on the
first ``--supcon-docs`` snippets, without its disk cache. Not a test: it prints figures (and writes them as
JSON); nothing asserts on time. Without CUDA it says so and measures the CPU only. ``--models`` takes the
engine's retriever names or ``LABEL=PATH`` (a sentence-transformers folder, run by the generic retriever): a
GPU machine without this repository's virtual environment reads the model from a folder. The GPU's vectors are
compared with the CPU's for the first ``--cpu-docs`` snippets (same weights): the least cosine is reported.
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


def retriever(spec: str, device: str, batch_size: int = 0):
    """The engine's retriever for ``spec`` (a registered name, or LABEL=PATH) on ``device``."""
    from engine.embedders import make_retriever

    return make_retriever(
        spec.split("=", 1)[-1], {"device": device, **({"batch_size": batch_size} if batch_size else {})}
    )


def encode_rate(name: str, device: str, texts: list[str], batch_size: int = 0) -> tuple[float, "object"]:
    """Documents per second of the retriever's own encoder on ``device`` (after one warm-up batch), and the
    vectors."""
    r = retriever(name, device, batch_size)
    r._encode_documents(texts[:64])
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
    t = time.perf_counter()
    vecs = r._encode_documents(texts)
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
    return len(texts) / (time.perf_counter() - t), vecs


def supcon_seconds(spec: str, device: str, texts: list[str]) -> float:
    from engine.defenses import DEFENSES
    from engine.defenses.supcon import contrastive_reindex

    p = DEFENSES.get("reindex").Params()
    t = time.perf_counter()
    contrastive_reindex(
        texts,
        retriever(spec, device),
        min_cluster_size=p.min_cluster_size,
        min_samples=p.min_samples,
        selection=p.selection,
        per_class=p.per_class,
        max_length=p.max_length,
        noise=p.noise,
        epochs=p.epochs,
        temperature=p.temperature,
        batch_size=p.batch_size,
        lr=p.lr,
        max_steps=p.max_steps,
        seed=p.seed,
        cache=False,
        device=device,
    )
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-docs", type=int, default=20000)
    ap.add_argument("--supcon-docs", type=int, default=1500)
    ap.add_argument(
        "--data-dir", default=os.environ.get("RAG_PLAYGROUND_DATA_DIR") or str(REPO.parent / "shared" / "corpora")
    )
    ap.add_argument("--cpu-docs", type=int, default=2000, help="documents timed on the CPU (it is slow; a rate)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument(
        "--models",
        default="minilm,mpnet",
        help="retriever names or LABEL=PATH, comma-separated; "
        "the first one is fine-tuned by the SupCon run (--supcon-docs 0: none)",
    )
    ap.add_argument("--gpu-batch-sizes", default="", help="more encoding batch sizes to time on the GPU, e.g. 256,1024")
    args = ap.parse_args()

    import torch

    from engine.corpora import load_corpus

    texts = load_corpus("bioasq", data_dir=args.data_dir, chunk_size=None).texts[: args.n_docs]
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    if len(devices) == 1:
        print("no CUDA GPU visible: CPU figures only", file=sys.stderr)
    out: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "n_docs": len(texts),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "encode": {},
    }
    import numpy as np

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    out["min_cosine_gpu_vs_cpu"] = {}
    for spec in models:
        name = spec.split("=", 1)[0]
        vectors = {}
        for dev in devices:
            sample = texts if dev != "cpu" else texts[: args.cpu_docs]
            rate, vectors[dev] = encode_rate(spec, dev, sample)
            out["encode"][f"{name}@{dev}"] = round(rate, 1)
            print(f"{name} on {dev}: {rate:,.0f} docs/s over {len(sample):,} snippets", flush=True)
        if "cuda" in vectors:
            a, b = vectors["cpu"], vectors["cuda"][: len(vectors["cpu"])]
            cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
            out["min_cosine_gpu_vs_cpu"][name] = round(float(cos.min()), 6)
            print(f"{name}: least cosine between the GPU's and the CPU's vectors {cos.min():.6f}", flush=True)
            for bs in [int(b) for b in args.gpu_batch_sizes.split(",") if b.strip()]:
                rate, _ = encode_rate(spec, "cuda", texts, bs)
                out["encode"][f"{name}@cuda,batch={bs}"] = round(rate, 1)
                print(f"{name} on cuda, batch {bs}: {rate:,.0f} docs/s", flush=True)
    out["supcon_seconds"] = {}
    for dev in devices if args.supcon_docs > 0 else []:
        s = supcon_seconds(models[0], dev, texts[: args.supcon_docs])
        out["supcon_seconds"][dev] = round(s, 1)
        print(f"SupCon reindexing of {args.supcon_docs} snippets on {dev}: {s:.1f} s", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
