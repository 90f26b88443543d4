"""RAGFort contrastive reindexing (engine.defenses.supcon): real models, no mocks."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch

from engine.defenses.supcon import contrastive_reindex, pseudo_labels, separation_metrics, supcon_loss
from engine.errors import ConfigError


def naive_supcon(z: torch.Tensor, labels: torch.Tensor, tau: float) -> float:
    """Khosla et al. L_sup^out written as the paper's double sum, one anchor at a time."""
    z = z / z.norm(dim=1, keepdim=True)
    terms = []
    for i in range(len(z)):
        pos = [p for p in range(len(z)) if p != i and labels[p] == labels[i]]
        if not pos:
            continue
        denom = sum(math.exp(float(z[i] @ z[a]) / tau) for a in range(len(z)) if a != i)
        terms.append(-sum(math.log(math.exp(float(z[i] @ z[p]) / tau) / denom) for p in pos) / len(pos))
    return sum(terms) / len(terms)


def test_supcon_loss_matches_naive_double_loop():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(12, 8, generator=g, dtype=torch.float64) * 3
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 3, 4])  # label 4: anchor without a positive
    for tau in (0.1, 0.5, 1.0):
        assert float(supcon_loss(z, labels, tau)) == pytest.approx(naive_supcon(z, labels, tau), rel=1e-9)


def test_supcon_loss_lower_for_clustered_embeddings():
    g = torch.Generator().manual_seed(1)
    centres = torch.eye(4, 16) * 5
    labels = torch.arange(4).repeat_interleave(6)
    clustered = centres[labels] + 0.1 * torch.randn(24, 16, generator=g)
    shuffled = clustered[torch.randperm(24, generator=g)]
    assert float(supcon_loss(clustered, labels, 0.1)) < float(supcon_loss(shuffled, labels, 0.1))
    # gradients flow, and a batch without any positive pair gives a zero loss
    z = clustered.clone().requires_grad_(True)
    supcon_loss(z, labels, 0.1).backward()
    assert z.grad is not None and torch.isfinite(z.grad).all() and z.grad.abs().sum() > 0
    assert float(supcon_loss(clustered[:4], torch.arange(4), 0.1)) == 0.0


def test_pseudo_label_noise_modes():
    rng = np.random.default_rng(0)
    blobs = [rng.normal(0, 0.02, (10, 8)) + np.eye(8)[k] for k in range(3)]
    outlier = -np.ones((1, 8))
    v = np.vstack(blobs + [outlier])
    for mode in ("nearest", "own", "drop"):
        lab, n_clusters, n_noise = pseudo_labels(v, min_cluster_size=5, noise=mode)
        assert n_clusters == 3 and n_noise == 1
        expected = {"nearest": {0, 1, 2}, "own": {3}, "drop": {-1}}[mode]
        assert int(lab[-1]) in expected
        assert len(set(lab[:30].tolist())) == 3
    with pytest.raises(ConfigError):
        pseudo_labels(v, noise="bogus")


@pytest.fixture
def reindex_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_PLAYGROUND_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def records():
    from engine.corpora import load_corpus

    return load_corpus("clinic_records").texts


FAST = dict(max_steps=4, max_length=64)  # a few steps already separate the topics


@pytest.mark.slow
def test_reindex_clinic_records_separates_topics_and_caches(records, minilm, reindex_cache):
    seen = []
    res = contrastive_reindex(records, minilm, progress=lambda s, d, t: seen.append(s), **FAST)
    n = len(records)
    assert res.doc_vectors.shape == (n, 384) and res.doc_vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(res.doc_vectors, axis=1), 1.0, atol=1e-4)
    assert res.labels.shape == (n,) and res.n_clusters >= 2
    assert res.labels.min() >= 0  # noise="nearest" labels every chunk
    assert len(set(res.labels.tolist())) == res.n_clusters
    assert res.steps == 4 and len(res.losses) >= 1 and all(np.isfinite(res.losses))
    before, after = res.separation_before, res.separation_after
    assert after["silhouette"] > before["silhouette"]
    assert after["gap"] > before["gap"]
    assert res.projection_before.shape == res.projection_after.shape == (n, 2)
    assert res.model_id.startswith(minilm.model_id + "+supcon:")
    assert {"embed", "cluster", "train", "encode"} <= set(seen)
    assert not res.from_cache
    # the shared, process-wide model is untouched: the original embeddings do not change
    orig = minilm._doc_model().encode(records[:3], convert_to_numpy=True, normalize_embeddings=True)
    cached, _ = minilm.encode_documents(records[:3])
    assert np.allclose(orig, cached / np.linalg.norm(cached, axis=1, keepdims=True), atol=1e-5)
    assert all(p.requires_grad for p in minilm._doc_model().parameters())

    t = time.perf_counter()
    again = contrastive_reindex(records, minilm, **FAST)
    assert time.perf_counter() - t < 2.0 and again.from_cache
    assert np.array_equal(again.doc_vectors, res.doc_vectors) and np.array_equal(again.labels, res.labels)
    assert again.separation_after == res.separation_after and again.model_id == res.model_id
    assert list(reindex_cache.joinpath("reindex").glob("*.npz"))


def test_reindex_is_deterministic_for_a_seed(records, minilm, reindex_cache):
    kw = dict(max_steps=2, max_length=48, batch_size=16, seed=3, cache=False, min_cluster_size=3)
    a = contrastive_reindex(records[:64], minilm, **kw)
    b = contrastive_reindex(records[:64], minilm, **kw)
    assert np.array_equal(a.labels, b.labels)
    assert np.allclose(a.doc_vectors, b.doc_vectors, atol=1e-6)
    assert a.losses == pytest.approx(b.losses, rel=1e-6)


def test_reindex_rejects_non_sentence_transformer_retrievers(records):
    from engine.embedders import make_retriever

    with pytest.raises(ConfigError, match="sentence-transformers"):
        contrastive_reindex(records, make_retriever("bm25"))


def test_reindex_rejects_bad_parameters(records, minilm):
    with pytest.raises(ConfigError):
        contrastive_reindex(records, minilm, noise="bogus")
    with pytest.raises(ConfigError):
        contrastive_reindex(records, minilm, temperature=0)
    with pytest.raises(ConfigError, match="cluster"):
        contrastive_reindex(records[:20], minilm, min_cluster_size=30)


def test_separation_metrics_on_hand_made_clusters():
    v = np.array([[1, 0], [0.99, 0.1], [0, 1], [0.1, 0.99]], dtype=np.float32)
    m = separation_metrics(v, np.array([0, 0, 1, 1]))
    assert m["silhouette"] > 0.8 and m["intra"] > 0.99 and abs(m["inter"]) < 0.2 and m["ratio"] > 5
    assert m["gap"] == pytest.approx(m["intra"] - m["inter"])
