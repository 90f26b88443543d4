"""Benchmarks of the poisoning engine, as ratios against baselines run in the same process.

    .venv/bin/python bench/bench_poisoning.py [--n-docs 3000] [--data-dir DIR]

1. ingest (embed + cache + Chroma) vs raw SentenceTransformer.encode of the same texts  (target ≤ 1.10×)
2. cold run vs the same run re-run from the on-disk caches                         (target ≥ 50× faster)
3. attack-evaluation search (Chroma + exact verification) vs exact numpy top-K        (target ≤ 1.5×)
4. Mahalanobis fit+score at d=768, n=10,000 vs scikit-learn's ShrunkCovariance       (ratio)
Not a test: it prints figures; nothing asserts on time.
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

import numpy as np  # noqa: E402


def timed(fn, *a, **kw):
    t = time.perf_counter()
    out = fn(*a, **kw)
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--n-docs",
        type=int,
        default=3000,
        help="documents for the ingest and cold/cached benchmarks (0 = the whole corpus)",
    )
    ap.add_argument(
        "--data-dir", default=os.environ.get("RAG_PLAYGROUND_DATA_DIR") or str(REPO.parent / "shared" / "corpora")
    )
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rag-bench-")
    os.environ["RAG_PLAYGROUND_CACHE"] = tmp  # a cold cache for this process

    from engine import store
    from engine.config import PoisonConfig
    from engine.corpora import corpus_from_documents, load_corpus
    from engine.queries import load_queries
    from engine.detectors import DETECTORS
    from engine.embedders import make_retriever
    from engine.embedders.packaged import minilm_path
    from engine.embedders.sentence_transformer import load_sentence_transformer
    from engine.runs import PoisoningRun
    from engine.store import BaseIndex, RunStore

    results = {}
    have_data = Path(args.data_dir, "medical", "bioasq_snippets.jsonl").is_file()
    if have_data:
        full = load_corpus("bioasq", data_dir=args.data_dir, chunk_size=None)
        docs = list(full.documents[: args.n_docs]) if args.n_docs else list(full.documents)
    else:
        full = load_corpus("clinic_handbook")
        docs = list(full.documents)
    corpus = corpus_from_documents("bench", docs, chunk_size=None)
    texts = corpus.texts
    retriever = make_retriever("minilm")
    model = load_sentence_transformer(str(minilm_path()))
    model.encode(texts[:64], batch_size=64)  # warm-up

    # 1. ingest vs raw encode ---------------------------------------------------------
    t_raw, _ = timed(model.encode, texts, batch_size=64, convert_to_numpy=True, show_progress_bar=False)
    t_ingest, index = timed(BaseIndex.build, corpus, retriever)
    results["ingest_vs_raw_encode"] = {
        "docs": len(texts),
        "raw_s": t_raw,
        "ingest_s": t_ingest,
        "ratio": t_ingest / t_raw,
    }

    # 2. cold vs cached re-run (the same poisoning run twice; the second reads the on-disk caches) --------
    os.environ["RAG_PLAYGROUND_CACHE"] = tempfile.mkdtemp(prefix="rag-bench-cold-")
    from engine.embedders import cache as cache_mod

    cache_mod._shared.clear()
    store._index_cache.clear()
    qspec = "mirage:pubmedqa" if have_data else "clinic_handbook"
    cfg = PoisonConfig(
        corpus="bench",
        queries=qspec,
        limit=100,
        detectors=("l2", "mahalanobis"),
        data_dir=args.data_dir if have_data else "",
        chunk_size=None,
    )
    t_cold, _ = timed(lambda: PoisoningRun(cfg, corpus=corpus).run())
    store._index_cache.clear()  # force the re-run through the on-disk caches (embeddings + Chroma)
    t_warm, _ = timed(lambda: PoisoningRun(cfg, corpus=corpus).run())
    results["cold_vs_cached_rerun"] = {
        "docs": len(corpus),
        "queries": 100,
        "cold_s": t_cold,
        "cached_s": t_warm,
        "speedup": t_cold / t_warm,
        "note": "model already loaded in both; cold embeds corpus, queries, poisons",
    }

    # 3. attack-evaluation search vs exact numpy (on the full corpus, default cache) ------------------
    os.environ.pop("RAG_PLAYGROUND_CACHE", None)
    cache_mod._shared.clear()
    store._index_cache.clear()
    index = BaseIndex.build(full, retriever)
    qtexts = [q.text for q in load_queries(qspec, data_dir=args.data_dir if have_data else None, limit=200)]
    qv = retriever.encode_queries(qtexts)
    D = index.search_matrix()
    k = 5

    def numpy_exact():
        s = qv @ D.T
        top = np.argpartition(-s, k - 1, axis=1)[:, :k]
        return np.take_along_axis(top, np.argsort(-np.take_along_axis(s, top, 1), axis=1), 1)

    numpy_exact()
    t_np = min(timed(numpy_exact)[0] for _ in range(3))
    with RunStore(index) as rs:
        rs.search(qtexts[:5], k, query_vecs=qv[:5])
        t_ours = min(timed(rs.search, qtexts, k, query_vecs=qv)[0] for _ in range(3))
        agree = sum(r.store_agreed for r in rs.search(qtexts, k, query_vecs=qv)) / len(qtexts)
    exact_only = RunStore(index, use_chroma=False)
    t_exact_path = min(timed(exact_only.search, qtexts, k, query_vecs=qv)[0] for _ in range(3))
    results["search_vs_numpy_exact"] = {
        "queries": len(qtexts),
        "docs": len(full),
        "numpy_s": t_np,
        "exact_path_s": t_exact_path,
        "exact_path_ratio": t_exact_path / t_np,
        "with_chroma_check_s": t_ours,
        "with_chroma_check_ratio": t_ours / t_np,
        "chroma_agreement": agree,
    }

    # 4. Mahalanobis at d=768, n=10,000 ------------------------------------------------
    from sklearn.covariance import ShrunkCovariance

    rng = np.random.default_rng(0)
    X = rng.normal(size=(10_000, 768)) @ (rng.normal(size=(768, 768)) / 28.0)
    Y = X[:2000] + 0.1
    det = DETECTORS.create("mahalanobis", {"beta": 0.01})
    det.beta_ = 0.01
    t_core, _ = timed(lambda: det._score(det._fit(X), Y))
    t_sk, _ = timed(lambda: ShrunkCovariance(shrinkage=0.01).fit(X).mahalanobis(Y))
    t_full, _ = timed(lambda: DETECTORS.create("mahalanobis").fit(X).score(Y))
    results["mahalanobis_d768_n10000"] = {
        "ours_fit_score_s": t_core,
        "sklearn_fit_score_s": t_sk,
        "ratio": t_core / t_sk,
        "ours_with_cv_beta_and_oof_threshold_s": t_full,
    }

    for name, r in results.items():
        print(f"{name}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
