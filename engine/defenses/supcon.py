"""RAGFort inter-class protection: structure-aware contrastive reindexing.

Source: RAGFort (defense against RAG knowledge-base extraction), section "Method > Key
Designs > 1. Inter-class Protection: Contrastive Reindexing" (shared/papers/
ragfort-extraction-defense.txt). Extraction attacks expand from one topic to the next by
semantic similarity; RAGFort re-indexes the knowledge base with a document encoder trained to
separate topics, so that a query aimed at one topic drifts less into neighbouring ones.

The three stages of the paper, as implemented here:

* Stage 1, HDBSCAN pseudo-labels: every chunk is embedded with the retriever's pretrained
  document encoder; HDBSCAN (on L2-normalised vectors, so Euclidean distance is monotone in
  cosine) partitions the chunks into C clusters and marks outliers as noise.
* Stage 2, SupCon contrastive learning: a *copy* of the retriever's SentenceTransformer is
  fine-tuned with the supervised contrastive loss L_sup (Khosla et al., "Supervised
  Contrastive Learning", NeurIPS 2020) on the pseudo-labels (see :func:`supcon_loss`).
* Stage 3, index replacement: all chunks are re-encoded with the fine-tuned copy; the query
  encoder (and the generator, which still reads the original chunk texts) stay unchanged.

Only the new document vectors are returned and cached; queries keep using
``retriever.encode_queries``. Nothing here mutates the process-wide cached model.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError
from ..paths import cache_dir
from ..progress import Progress

NOISE_MODES = ("own", "nearest", "drop")
_CACHE_VERSION = 1


# --------------------------------------------------------------------------- the loss


def supcon_loss(z: Any, labels: Any, temperature: float = 0.1) -> Any:
    """Supervised contrastive loss L_sup (RAGFort Stage 2; Khosla et al. 2020, eq. "L^sup_out").

    For each anchor i in the batch, with P(i) the other samples with the same label and
    A(i) all samples except i, and sim the cosine similarity::

        l_i = -1/|P(i)| * sum_{p in P(i)} log( exp(sim(z_i, z_p)/tau) / sum_{a in A(i)} exp(sim(z_i, z_a)/tau) )

    The result is the mean of l_i over the anchors that have at least one positive (anchors
    without a positive, e.g. singleton classes, still appear in the other anchors'
    denominators). ``z`` is (B, d) and need not be normalised; ``labels`` is (B,). Returns a
    scalar tensor (0 with grad if no anchor has a positive).
    """
    import torch
    import torch.nn.functional as F

    if temperature <= 0:
        raise ConfigError("temperature must be > 0")
    if z.dim() != 2:
        raise ValueError(f"z must be (batch, dim), got shape {tuple(z.shape)}")
    labels = labels.reshape(-1).to(z.device)
    if labels.shape[0] != z.shape[0]:
        raise ValueError("labels and z have different batch sizes")
    b = z.shape[0]
    zn = F.normalize(z, dim=1)
    logits = zn @ zn.T / temperature
    self_mask = torch.eye(b, dtype=torch.bool, device=z.device)
    # log of the denominator over A(i) = all a != i
    logits_a = logits.masked_fill(self_mask, float("-inf"))
    log_denom = torch.logsumexp(logits_a, dim=1, keepdim=True)
    log_prob = logits - log_denom
    pos = (labels[:, None] == labels[None, :]) & ~self_mask
    n_pos = pos.sum(dim=1)
    has_pos = n_pos > 0
    if not bool(has_pos.any()):
        return z.sum() * 0.0
    mean_log_prob_pos = (log_prob * pos).sum(dim=1)[has_pos] / n_pos[has_pos]
    return -mean_log_prob_pos.mean()


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)  # numpy fields: identity equality and hash
class ReindexResult:
    """Output of :func:`contrastive_reindex`.

    * ``doc_vectors``: (n, d) float32, the Stage-3 document vectors (L2-normalised when the
      retriever's similarity is cosine), in the order of the input texts.
    * ``labels``: (n,) pseudo-labels used for training; -1 = HDBSCAN noise left unlabelled
      (``noise="drop"``). With ``noise="own"`` each noise chunk has its own label >= n_clusters.
    * ``separation_before`` / ``separation_after``: the same metrics on the original and the
      reindexed document vectors, over the chunks of classes with >= 2 members (see
      :func:`separation_metrics`).
    * ``losses``: mean SupCon loss per epoch; ``steps``: optimiser steps taken.
    * ``projection_before`` / ``projection_after``: 2-D PCA coordinates (n, 2) for a cluster
      plot; PCA is fitted separately on each set of vectors, so axes are not comparable.
    * ``model_id``: base retriever id + hash of the parameters + corpus fingerprint.
    """

    doc_vectors: np.ndarray
    labels: np.ndarray
    n_clusters: int
    n_noise: int
    separation_before: dict
    separation_after: dict
    losses: tuple
    steps: int
    seconds: float
    model_id: str
    projection_before: np.ndarray
    projection_after: np.ndarray
    from_cache: bool = False
    params: dict | None = None


# --------------------------------------------------------------------------- helpers


def _normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def separation_metrics(vectors: np.ndarray, labels: np.ndarray) -> dict:
    """Topic separation of ``vectors`` under ``labels`` (cosine geometry).

    Only chunks whose label is >= 0 and shared by at least one other chunk count. Returns
    ``silhouette`` (sklearn, metric cosine), ``intra`` (mean pairwise cosine inside a
    cluster, averaged over clusters), ``inter`` (mean cosine between distinct cluster
    centroids, each centroid L2-normalised), ``gap`` = intra - inter and ``ratio`` =
    intra / inter (inf if inter <= 0), plus ``n`` and ``clusters`` counted.
    """
    from sklearn.metrics import silhouette_score

    labels = np.asarray(labels)
    uniq, counts = np.unique(labels[labels >= 0], return_counts=True)
    keep_labels = uniq[counts >= 2]
    mask = np.isin(labels, keep_labels)
    out = {
        "n": int(mask.sum()),
        "clusters": int(len(keep_labels)),
        "silhouette": float("nan"),
        "intra": float("nan"),
        "inter": float("nan"),
        "gap": float("nan"),
        "ratio": float("nan"),
    }
    if len(keep_labels) == 0:
        return out
    v = _normalize(vectors[mask])
    lab = labels[mask]
    if len(keep_labels) >= 2:
        out["silhouette"] = float(silhouette_score(v, lab, metric="cosine"))
    intras, cents = [], []
    for c in keep_labels:
        m = v[lab == c]
        k = len(m)
        s = m @ m.T
        intras.append(float((s.sum() - np.trace(s)) / (k * (k - 1))))
        cents.append(m.mean(axis=0))
    out["intra"] = float(np.mean(intras))
    if len(cents) >= 2:
        cn = _normalize(np.stack(cents))
        cs = cn @ cn.T
        k = len(cn)
        out["inter"] = float((cs.sum() - np.trace(cs)) / (k * (k - 1)))
        out["gap"] = out["intra"] - out["inter"]
        out["ratio"] = out["intra"] / out["inter"] if out["inter"] > 0 else float("inf")
    return out


def _pca2(x: np.ndarray) -> np.ndarray:
    from sklearn.decomposition import PCA

    if x.shape[0] < 2:
        return np.zeros((x.shape[0], 2), dtype=np.float32)
    n_comp = min(2, x.shape[0], x.shape[1])
    p = PCA(n_components=n_comp, random_state=0).fit_transform(x).astype(np.float32)
    if n_comp < 2:
        p = np.hstack([p, np.zeros((p.shape[0], 2 - n_comp), dtype=np.float32)])
    return p


def pseudo_labels(
    vectors: np.ndarray,
    *,
    min_cluster_size: int = 5,
    min_samples: int | None = None,
    noise: str = "nearest",
    selection: str = "eom",
) -> tuple[np.ndarray, int, int]:
    """Stage 1: HDBSCAN pseudo-labels on L2-normalised vectors.

    ``selection`` is HDBSCAN's cluster selection: ``eom`` (excess of mass, the library default)
    or ``leaf`` (the finest clusters of the tree). On topic-diverse dialogs (HealthCareMagic,
    MiniLM) ``eom`` finds 2–3 broad clusters and ``leaf`` ~30 topics, so the defense uses ``leaf``.

    Returns (labels, n_clusters, n_noise). Noise chunks (HDBSCAN label -1) are handled by
    ``noise``:

    * ``nearest``: assigned to the cluster whose (normalised) centroid is most cosine-similar;
    * ``own``: each becomes its own singleton class (labels n_clusters, n_clusters+1, ...); a
      singleton has no positive, so it is never an anchor but is a negative for everyone;
    * ``drop``: kept at -1; excluded from training (still re-encoded in Stage 3).
    """
    from sklearn.cluster import HDBSCAN

    if noise not in NOISE_MODES:
        raise ConfigError(f"noise must be one of {', '.join(NOISE_MODES)}, got {noise!r}")
    if min_cluster_size < 2:
        raise ConfigError("min_cluster_size must be >= 2")
    v = _normalize(vectors)
    if len(v) < min_cluster_size:
        raise ConfigError(
            f"contrastive reindexing needs at least min_cluster_size={min_cluster_size} chunks, got {len(v)}"
        )
    if selection not in ("eom", "leaf"):
        raise ConfigError(f"selection must be eom or leaf, got {selection!r}")
    raw = HDBSCAN(
        min_cluster_size=min_cluster_size,
        min_samples=min_samples,
        metric="euclidean",
        cluster_selection_method=selection,
        copy=True,
    ).fit_predict(v.astype(np.float64))
    n_clusters = int(raw.max() + 1) if raw.size else 0
    noise_idx = np.flatnonzero(raw < 0)
    labels = raw.copy()
    if n_clusters and len(noise_idx):
        if noise == "nearest":
            cents = _normalize(np.stack([v[raw == c].mean(axis=0) for c in range(n_clusters)]))
            labels[noise_idx] = np.argmax(v[noise_idx] @ cents.T, axis=1)
        elif noise == "own":
            labels[noise_idx] = n_clusters + np.arange(len(noise_idx))
    return labels.astype(np.int64), n_clusters, int(len(noise_idx))


def _batches(labels: np.ndarray, batch_size: int, per_class: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch of class-balanced batches: groups of ``per_class`` same-label chunks.

    Each class is shuffled and cut into groups of ``per_class`` (a leftover of one joins the
    previous group, so every multi-member group has a positive); singletons (``noise="own"``)
    are groups of one, acting as negatives. Groups are shuffled and packed into batches of
    about ``batch_size``; every trainable chunk appears once per epoch.
    """
    groups: list[np.ndarray] = []
    for c in np.unique(labels[labels >= 0]):
        idx = rng.permutation(np.flatnonzero(labels == c))
        if len(idx) == 1:
            groups.append(idx)
            continue
        parts = [idx[i : i + per_class] for i in range(0, len(idx), per_class)]
        if len(parts) > 1 and len(parts[-1]) == 1:
            parts[-2] = np.concatenate([parts[-2], parts[-1]])
            parts.pop()
        groups.extend(parts)
    order = rng.permutation(len(groups))
    batches, cur, size = [], [], 0
    for g in order:
        grp = groups[g]
        if size and size + len(grp) > batch_size:
            batches.append(np.concatenate(cur))
            cur, size = [], 0
        cur.append(grp)
        size += len(grp)
    if cur:
        batches.append(np.concatenate(cur))
    # a batch whose labels are all distinct has no positive: it contributes no loss, skip it
    return [b for b in batches if len(np.unique(labels[b])) < len(b)]


def _st_model(retriever: Any) -> Any:
    """The retriever's SentenceTransformer document encoder, or ConfigError."""
    getter = getattr(retriever, "_doc_model", None)
    if not getattr(retriever, "dense", False) or getter is None:
        raise ConfigError(
            f"contrastive reindexing needs a sentence-transformers retriever (minilm, mpnet or a "
            f"sentence-transformers model); {getattr(retriever, 'name', type(retriever).__name__)!r} "
            f"is not one (BM25 has no encoder; e5-small is a fixed 4-bit model "
            f"that cannot be fine-tuned)"
        )
    model = getter()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:  # pragma: no cover
        raise ConfigError("contrastive reindexing needs the sentence-transformers package") from None
    if not isinstance(model, SentenceTransformer):
        raise ConfigError(
            f"retriever {getattr(retriever, 'name', '?')!r}: its document encoder is not a "
            f"SentenceTransformer; contrastive reindexing cannot fine-tune it"
        )
    return model


def _trainable_params(model: Any, train_layers: int | None) -> list:
    """Parameters to fine-tune: all, or (``train_layers`` = k) only the top k transformer layers
    and everything after them (pooling/dense heads); the embeddings and lower layers are frozen,
    so backpropagation stops early (about 1.5-2x cheaper steps on CPU). The copy is private, so
    freezing never touches the shared model."""
    import re

    named = list(model.named_parameters())
    if train_layers is None:
        return [p for _, p in named]
    layer_of = {n: int(m.group(1)) for n, _ in named if (m := re.search(r"\.layer\.(\d+)\.", n))}
    if not layer_of:
        return [p for _, p in named]  # unknown architecture: train everything
    first = max(layer_of.values()) + 1 - train_layers
    keep = []
    for n, p in named:
        if n in layer_of:
            train = layer_of[n] >= first
        else:  # embeddings (before the stack) freeze; anything else (pooler, heads) trains
            train = "embeddings" not in n
        p.requires_grad_(train)
        if train:
            keep.append(p)
    return keep


def _features(model: Any, batch: list[str], device: str = "cpu") -> dict:
    """Tokenised model inputs on ``device`` (``preprocess`` in sentence-transformers >= 6, ``tokenize`` before)."""
    import torch

    fn = getattr(model, "preprocess", None) or model.tokenize
    feats = fn(batch)
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in feats.items()}


def _cache_key(model_id: str, texts: Sequence[str], params: dict) -> str:
    h = hashlib.sha256()
    h.update(f"supcon-v{_CACHE_VERSION}\0{model_id}\0".encode())
    h.update(json.dumps(params, sort_keys=True).encode())
    for t in texts:
        h.update(b"\1")
        h.update(hashlib.sha256(t.encode("utf-8")).digest())
    return h.hexdigest()


def _corpus_fingerprint(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(hashlib.sha256(t.encode("utf-8")).digest())
    return h.hexdigest()


def _save(path_base: str, r: ReindexResult) -> None:
    # temporary names of this process's own: two processes training the same key at once each write whole files
    tmp_npz, tmp_json = f"{path_base}.{os.getpid()}.tmp.npz", f"{path_base}.{os.getpid()}.json.tmp"
    np.savez(
        tmp_npz,
        doc_vectors=r.doc_vectors,
        labels=r.labels,
        projection_before=r.projection_before,
        projection_after=r.projection_after,
    )
    meta = {
        "n_clusters": r.n_clusters,
        "n_noise": r.n_noise,
        "separation_before": r.separation_before,
        "separation_after": r.separation_after,
        "losses": list(r.losses),
        "steps": r.steps,
        "seconds": r.seconds,
        "model_id": r.model_id,
        "params": r.params,
        "version": _CACHE_VERSION,
    }
    with open(tmp_json, "w") as f:
        json.dump(meta, f)
    os.replace(tmp_npz, path_base + ".npz")
    os.replace(tmp_json, path_base + ".json")  # json last: its presence marks a complete entry


def _load(path_base: str, n: int) -> ReindexResult | None:
    try:
        with open(path_base + ".json") as f:
            meta = json.load(f)
        with np.load(path_base + ".npz") as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError):
        return None
    if meta.get("version") != _CACHE_VERSION or arrays["doc_vectors"].shape[0] != n:
        return None
    return ReindexResult(
        doc_vectors=arrays["doc_vectors"].astype(np.float32),
        labels=arrays["labels"],
        n_clusters=meta["n_clusters"],
        n_noise=meta["n_noise"],
        separation_before=meta["separation_before"],
        separation_after=meta["separation_after"],
        losses=tuple(meta["losses"]),
        steps=meta["steps"],
        seconds=meta["seconds"],
        model_id=meta["model_id"],
        projection_before=arrays["projection_before"],
        projection_after=arrays["projection_after"],
        from_cache=True,
        params=meta.get("params"),
    )


# --------------------------------------------------------------------------- main entry


def contrastive_reindex(
    texts: Sequence[str],
    retriever: Any,
    *,
    min_cluster_size: int = 5,
    min_samples: int | None = None,
    noise: str = "nearest",
    epochs: int = 2,
    temperature: float = 0.1,
    batch_size: int = 32,
    lr: float = 2e-5,
    max_steps: int = 200,
    seed: int = 0,
    per_class: int = 4,
    train_layers: int | None = None,
    max_length: int | None = 128,
    selection: str = "eom",
    progress: Progress | None = None,
    cache: bool = True,
    device: str = "auto",
) -> ReindexResult:
    """RAGFort contrastive reindexing (Stages 1-3) of ``texts`` for a sentence-transformers retriever.

    Stage 1: ``retriever.encode_documents`` + HDBSCAN pseudo-labels (:func:`pseudo_labels`).
    Stage 2: a deep copy of the retriever's document SentenceTransformer is fine-tuned on ``device``
    (:func:`engine.devices.resolve_device`: ``auto`` = CUDA, then MPS, then the CPU; not part of the cache
    key) with :func:`supcon_loss` (AdamW, ``lr``), for ``epochs`` passes of class-balanced batches
    (``per_class`` chunks per class, about ``batch_size`` per batch), at most ``max_steps``
    optimiser steps in all. ``max_length`` truncates the *training* inputs (tokens; the topic of
    a chunk is in its opening, and 128 tokens make a CPU step ~3x cheaper than 256); ``train_layers``
    = k fine-tunes only the top k transformer layers (None = the whole encoder, as in the paper).
    Dropout stays on during training (the model is in train mode). Stage 3: every chunk is
    re-encoded, untruncated, with the fine-tuned copy (normalised if the retriever's similarity
    is cosine). Queries must keep using
    ``retriever.encode_queries`` (the paper leaves the query encoder unchanged).

    ``progress(stage, done, total)`` is called with stages ``embed``, ``cluster``, ``train``
    (done/total in steps) and ``encode``. With ``cache`` the result is stored under
    ``cache_dir("reindex")`` keyed by sha256(retriever.model_id, texts, params) and a repeat
    call loads it (``from_cache=True``, ``seconds`` = the original run time). Raises
    ConfigError for a retriever that is not sentence-transformers based (bm25, e5-small), bad
    parameters, or when HDBSCAN finds fewer than two clusters.
    """
    t0 = time.perf_counter()
    texts = [str(t) for t in texts]
    if not texts:
        raise ConfigError("contrastive reindexing needs at least one chunk")
    if noise not in NOISE_MODES:
        raise ConfigError(f"noise must be one of {', '.join(NOISE_MODES)}, got {noise!r}")
    if epochs < 1 or max_steps < 1 or batch_size < 2 or per_class < 2 or lr <= 0 or temperature <= 0:
        raise ConfigError("need epochs >= 1, max_steps >= 1, batch_size >= 2, per_class >= 2, lr > 0, temperature > 0")
    if train_layers is not None and train_layers < 1:
        raise ConfigError("train_layers must be >= 1 (or None to fine-tune every layer)")
    if max_length is not None and max_length < 8:
        raise ConfigError("max_length must be >= 8 tokens (or None for the model's own limit)")
    if per_class > batch_size:
        raise ConfigError("per_class must be <= batch_size")
    from ..devices import resolve_device

    dev = resolve_device(device)
    base = _st_model(retriever)  # raises ConfigError early for bm25 / e5-small
    similarity = retriever.similarity
    prefix = getattr(getattr(retriever, "params", None), "document_prefix", "") or ""
    params = {
        "min_cluster_size": min_cluster_size,
        "min_samples": min_samples,
        "noise": noise,
        "epochs": epochs,
        "temperature": temperature,
        "batch_size": batch_size,
        "lr": lr,
        "max_steps": max_steps,
        "seed": seed,
        "per_class": per_class,
        "train_layers": train_layers,
        "max_length": max_length,
        **({"selection": selection} if selection != "eom" else {}),
    }
    key = _cache_key(retriever.model_id, texts, params)
    path_base = str(cache_dir("reindex") / key[:40])
    if cache:
        hit = _load(path_base, len(texts))
        if hit is not None:
            return hit
    p_hash = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]
    model_id = f"{retriever.model_id}+supcon:{p_hash}:{_corpus_fingerprint(texts)[:12]}"

    def report(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(stage, done, total)

    # Stage 1 ------------------------------------------------------------------------
    report("embed", 0, len(texts))
    before, _ = retriever.encode_documents(texts)
    before = np.asarray(before, dtype=np.float32)
    if similarity == "cosine":
        before = _normalize(before)
    report("embed", len(texts), len(texts))
    report("cluster", 0, 1)
    labels, n_clusters, n_noise = pseudo_labels(
        before, min_cluster_size=min_cluster_size, min_samples=min_samples, noise=noise, selection=selection
    )
    report("cluster", 1, 1)
    if n_clusters < 2:
        raise ConfigError(
            f"HDBSCAN found {n_clusters} cluster(s) in {len(texts)} chunks ({n_noise} noise); "
            f"contrastive reindexing needs at least 2: lower min_cluster_size/min_samples"
        )

    # Stage 2 ------------------------------------------------------------------------
    import torch

    old_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 8)))
    losses: list[float] = []
    steps = 0
    try:
        lock = getattr(retriever, "_lock", None)
        if lock is not None:
            with lock:  # the shared model is used by other sessions; copy it in a quiet moment
                model = copy.deepcopy(base)
        else:
            model = copy.deepcopy(base)
        model.to(dev)
        full_length = model.max_seq_length
        if max_length is not None and full_length:
            model.max_seq_length = min(int(full_length), int(max_length))  # training inputs only
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        epoch_batches = [_batches(labels, batch_size, per_class, rng) for _ in range(epochs)]
        total = min(max_steps, sum(len(b) for b in epoch_batches))
        trainable = _trainable_params(model, train_layers)
        opt = torch.optim.AdamW(trainable, lr=lr)
        model.train()
        report("train", 0, total)
        for batches in epoch_batches:
            if steps >= max_steps:
                break
            ep = []
            for idx in batches:
                if steps >= max_steps:
                    break
                feats = _features(model, [prefix + texts[i] for i in idx], dev)
                z = model(feats)["sentence_embedding"]
                loss = supcon_loss(z, torch.as_tensor(labels[idx]), temperature)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                ep.append(float(loss.detach()))
                steps += 1
                report("train", steps, total)
            if ep:
                losses.append(float(np.mean(ep)))
        model.eval()
        model.max_seq_length = full_length  # Stage 3 encodes whole chunks, like the original index

        # Stage 3 --------------------------------------------------------------------
        report("encode", 0, len(texts))
        bs = int(getattr(getattr(retriever, "params", None), "batch_size", 32) or 32)
        with torch.inference_mode():
            after = model.encode(
                [prefix + t for t in texts],
                batch_size=bs,
                convert_to_numpy=True,
                show_progress_bar=False,
                normalize_embeddings=(similarity == "cosine"),
            )
        after = np.asarray(after, dtype=np.float32)
        report("encode", len(texts), len(texts))
        del model, opt
    finally:
        torch.set_num_threads(old_threads)

    result = ReindexResult(
        doc_vectors=after,
        labels=labels,
        n_clusters=n_clusters,
        n_noise=n_noise,
        separation_before=separation_metrics(before, labels),
        separation_after=separation_metrics(after, labels),
        losses=tuple(losses),
        steps=steps,
        seconds=time.perf_counter() - t0,
        model_id=model_id,
        projection_before=_pca2(before),
        projection_after=_pca2(after),
        from_cache=False,
        params=params,
    )
    if cache:
        try:
            _save(path_base, result)
        except OSError:
            pass  # a read-only cache must not lose the computed result
    return result


__all__ = ["ReindexResult", "contrastive_reindex", "supcon_loss", "pseudo_labels", "separation_metrics", "NOISE_MODES"]
