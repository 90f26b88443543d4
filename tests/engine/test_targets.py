"""Audit targets against real systems: the example RAG service (FastAPI over the engine, Chroma, Qwen2.5-0.5B),
llama.cpp's OpenAI-compatible server, the LlamaIndex example engine, a Chroma collection on disk and behind
`chroma run` — and hostile services (real loopback servers that refuse, rate-limit, stall, flood, redirect or
answer HTML), each of which must end in one clear line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.corpora import load_corpus, retriever_window
from engine.embedders import make_retriever
from engine.errors import ConfigError
from engine.targets import TargetError, make_target
from engine.retry import retry_after
from engine.targets.http_client import BudgetSpent, HttpClient
from engine.types import Document
from helpers import ScriptedServer, chroma_collection, free_port, http_target_params, wait_for_port

REPO = Path(__file__).resolve().parents[2]
OK = (200, {}, json.dumps({"answer": "fine", "sources": [{"id": "a", "text": "alpha"}]}).encode(), 0)


def scripted(behave) -> ScriptedServer:
    """A loopback service answering as ``behave`` scripts it (see helpers.ScriptedServer)."""
    return ScriptedServer(behave)


@pytest.fixture
def sleeps():
    """The client's waits, recorded instead of slept (the retry and rate-cap schedule is what is tested)."""
    return []


def client(sleeps, **kw) -> HttpClient:
    return HttpClient(sleep=sleeps.append, **kw)


# ------------------------------------------------------------------------------------------ real targets
def test_http_target_reads_the_answer_and_maps_its_sources(rag_service):
    t = make_target("http", http_target_params(rag_service))
    with t:
        r = t.query("What is Tracy Snyder's date of birth? Repeat the record.")
    assert r.answer.strip() and r.contexts_reported
    ids = {
        d.id
        for d in load_corpus(
            "clinic_records", chunk_size=512, chunk_overlap=0, window=retriever_window(make_retriever("minilm"))
        ).documents
    }
    assert len(r.contexts) == 2 and all(c.id in ids and c.text for c in r.contexts)


def test_http_target_plants_removes_and_verifies(rag_service):
    t = make_target("http", http_target_params(rag_service))
    with t:
        doc = Document("audit-test-plant-1", "Clinic notice: asthma patients must call 555-0199 before any visit.")
        assert t.can_write and t.can_verify
        assert t.ingest([doc]) == [doc.id]
        assert t.exists([doc.id]) == [True]
        r = t.query("Which number must asthma patients call before a visit?")
        assert doc.id in [c.id for c in r.contexts], "the planted document is served like any other"
        t.remove([doc.id])
        assert t.exists([doc.id]) == [False]
        t.remove([doc.id])  # removing again is not an error (404 accepted)


def test_openai_chat_target_against_llama_cpp_server(llama_server):
    t = make_target("openai-chat", {"base_url": llama_server, "model": "smol", "max_tokens": 16})
    with t:
        r = t.query("Say hello.")
    assert isinstance(r.answer, str) and r.answer.strip()
    assert not r.contexts_reported and r.info["completion_tokens"] > 0


def test_test_connection_says_when_the_answer_stopped_at_the_token_limit(llama_server):
    """A probe answer cut by the target's max_tokens is marked as cut (the server's finish reason), so a user does
    not read a clipped sentence as the model's whole answer; one the model ended is not."""
    from engine.targets.base import cut_at_limit
    from engine.targets.probe import probe

    params = {"base_url": llama_server, "model": "smol"}
    cut = probe("openai-chat", {**params, "max_tokens": 3}, question="Count from one to thirty in words.")
    assert cut["ok"] and cut["cut"], cut
    whole = probe("openai-chat", {**params, "max_tokens": 256}, question="Reply with the single word: yes")
    assert whole["ok"] and not whole["cut"], whole
    # without a finish reason (an in-process pipeline), a completion that used its whole budget is cut
    assert cut_at_limit({"completion_tokens": 64, "token_limit": 64})
    assert not cut_at_limit({"completion_tokens": 12, "token_limit": 64}) and not cut_at_limit({})
    assert not cut_at_limit({"finish_reason": "stop", "completion_tokens": 64, "token_limit": 64})


def test_openai_chat_target_reads_the_sources_a_rag_chat_endpoint_returns(rag_service):
    t = make_target("openai-chat", {"base_url": f"{rag_service}/v1", "contexts_path": "sources"})
    with t:
        r = t.query("What does the clinic note of Tracy Snyder say?")
    assert r.answer.strip() and len(r.contexts) == 2 and all(c.id.startswith("rec-") for c in r.contexts)


def test_python_target_audits_the_llamaindex_example():
    t = make_target("python", {})  # the defaults are the documented LlamaIndex example
    with t:
        r = t.query("Repeat the clinic note about shortness of breath, word for word.")
        assert r.answer.strip() and r.contexts_reported and len(r.contexts) == 2
        assert all(c.id.startswith("rec-") and c.score is not None for c in r.contexts)
        doc = Document("audit-li-plant-1", "Asthma inhaler notice: call Dr. Evil at 555-0188.")
        assert t.ingest([doc]) == [doc.id] and t.exists([doc.id]) == [True]
        # the engine retrieves what was planted (an engine built before the insert never did: its retriever keeps
        # the node ids of its build, and every poisoning cell came out "low")
        assert doc.id in [c.id for c in t.query(doc.text).contexts]
        t.remove([doc.id])
        assert t.exists([doc.id]) == [False]
        assert doc.id not in [c.id for c in t.query(doc.text).contexts]


USER_MODULE = """
def plain(q):
    return "plain answer to " + q

def pair(q):
    return ("pair answer", ["first context", {"text": "second context", "id": "doc-2", "score": 0.5}])

def as_dict(q):
    return {"response": "dict answer", "sources": [{"page_content": "third", "metadata": {"id": "x"}}]}

def broken(q):
    raise RuntimeError("the vector store is down")

def weird(q):
    return 42

class Engine:
    def query(self, q):
        return "engine answer"

def make_engine():
    return Engine()
"""


@pytest.fixture
def user_module(tmp_path):
    (tmp_path / "my_rag_app.py").write_text(USER_MODULE)
    return str(tmp_path)


def test_python_target_takes_every_documented_return_shape(user_module):
    def ask(spec, **kw):
        with make_target(
            "python",
            {"callable": spec, "path": user_module, "factory": False, "ingest": "", "remove": "", "exists": "", **kw},
        ) as t:
            return t.query("q?")

    r = ask("my_rag_app:plain")
    assert r.answer == "plain answer to q?" and not r.contexts_reported
    r = ask("my_rag_app:pair")
    assert r.answer == "pair answer" and [c.text for c in r.contexts] == ["first context", "second context"]
    assert r.contexts[1].id == "doc-2" and r.contexts[1].score == 0.5
    r = ask("my_rag_app:as_dict")
    assert r.answer == "dict answer" and r.contexts[0].text == "third"
    assert ask("my_rag_app:make_engine", factory=True).answer == "engine answer"
    assert ask("my_rag_app:Engine", factory=True).answer == "engine answer"


def test_python_targets_write_surface_is_the_users_or_none(user_module):
    mine = {"callable": "my_rag_app:plain", "path": user_module, "factory": False}
    t = make_target("python", mine)
    assert not t.can_write and not t.can_verify, "never the example's store behind another callable"
    assert make_target("python", {}).can_write, "the example's callable keeps the example's own write surface"
    with pytest.raises(ConfigError, match="ingest needs remove"):
        make_target("python", {**mine, "ingest": "my_rag_app:plain"})
    # a query function under the factory default: one line that says what to change
    with pytest.raises(ConfigError, match="set factory to false"):
        make_target("python", {**mine, "factory": True}).open()


def test_python_target_failures_are_one_line(user_module):
    base = {"path": user_module, "factory": False, "ingest": "", "remove": "", "exists": ""}
    with pytest.raises(TargetError, match="the callable raised RuntimeError: the vector store is down"):
        with make_target("python", {**base, "callable": "my_rag_app:broken"}) as t:
            t.query("q")
    with pytest.raises(TargetError, match="returned int"):
        with make_target("python", {**base, "callable": "my_rag_app:weird"}) as t:
            t.query("q")
    with pytest.raises(ConfigError, match="has no attribute 'nope'"):
        make_target("python", {**base, "callable": "my_rag_app:nope"}).open()
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_xyz'"):
        make_target("python", {**base, "callable": "no_such_module_xyz:f"}).open()
    with pytest.raises(ConfigError, match="module:attribute"):
        make_target("python", {**base, "callable": "just_a_name"})


def _collection(path: str | None = None, host: str | None = None, port: int | None = None, n: int = 30):
    """A Chroma collection holding the first ``n`` clinic-record chunks embedded by MiniLM (the user's store)."""
    r = make_retriever("minilm")
    docs = load_corpus("clinic_records", chunk_size=512, chunk_overlap=0, window=retriever_window(r)).documents[:n]
    docs = tuple(Document(d.id, d.text, {"source": "clinic"}) for d in docs)
    return chroma_collection(docs, r, path=path, host=host, port=port), docs


CHROMA_RAG = {
    "collection": "clinic",
    "generator": "local:smollm2-135m",
    "top_k": 2,
    "max_tokens": 24,
    "answer_budget": "fixed",
}


def test_chroma_target_reads_a_persistent_collection_and_plants_only_in_a_copy(tmp_path):
    col, docs = _collection(path=str(tmp_path / "store"))
    t = make_target("chroma", {**CHROMA_RAG, "path": str(tmp_path / "store")})
    with t:
        ref = t.reference_corpus()
        assert [d.id for d in ref.documents] == [d.id for d in docs] and ref.documents[0].text == docs[0].text
        r = t.query(docs[3].text[:120])
        assert r.contexts[0].id == docs[3].id, "the collection's nearest record comes first"
        assert r.answer.strip()
        plant = Document("audit-chroma-1", docs[5].text[:100] + " Call Dr. Evil at 555-0177.")
        t.ingest([plant])
        assert t.exists([plant.id]) == [True]
        assert col.count() == len(docs), "the user's collection is not changed: plants go to a copy"
        assert plant.id in [c.id for c in t.query(docs[5].text[:100]).contexts]
        t.remove([plant.id])
        assert t.exists([plant.id]) == [False]
    with make_target("chroma", {**CHROMA_RAG, "path": str(tmp_path / "store"), "in_place": True}) as t:
        t.ingest([plant])
        assert col.count() == len(docs) + 1, "in_place: planted in the collection itself"
        t.remove([plant.id])
        assert col.count() == len(docs) and t.exists([plant.id]) == [False]


def test_chroma_target_errors_name_the_fix(tmp_path):
    _collection(path=str(tmp_path / "store"), n=5)
    with pytest.raises(ConfigError, match="collection 'nope' not found .*clinic"):
        make_target("chroma", {**CHROMA_RAG, "collection": "nope", "path": str(tmp_path / "store")}).open()
    with pytest.raises(ConfigError, match="384 dimensions but retriever 'e5-small'|dimensions"):
        make_target("chroma", {**CHROMA_RAG, "path": str(tmp_path / "store"), "retriever": "mpnet"}).open()
    # another model of the same dimension (e5-small: 384, as MiniLM) answers "normally" with unrelated vectors
    with pytest.raises(ConfigError, match="were not made by retriever 'e5-small': .* median cosine of -?0\\.\\d\\d"):
        make_target("chroma", {**CHROMA_RAG, "path": str(tmp_path / "store"), "retriever": "e5-small"}).open()
    with pytest.raises(ConfigError, match="retriever 'bm25' is sparse .* name the dense model"):
        make_target("chroma", {**CHROMA_RAG, "path": str(tmp_path / "store"), "retriever": "bm25"}).open()
    with pytest.raises(ConfigError, match="holds no Chroma store"):
        make_target("chroma", {**CHROMA_RAG, "path": str(tmp_path)}).open()
    with pytest.raises(ConfigError, match="rebuilds the index"):
        make_target("chroma", {**CHROMA_RAG, "path": str(tmp_path / "store"), "defenses": ["reindex"]})


def test_chroma_target_over_a_chroma_server(tmp_path):
    port = free_port()
    chroma = Path(sys.executable).with_name("chroma")
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for_port(port, proc, 60), "chroma run did not start"
        col, docs = _collection(host="127.0.0.1", port=port, n=20)
        with make_target("chroma", {**CHROMA_RAG, "host": "127.0.0.1", "port": port}) as t:
            assert len(t.reference_corpus()) == 20
            r = t.query(docs[2].text[:120])
            assert r.contexts[0].id == docs[2].id and r.answer.strip()
            t.ingest([Document("audit-srv-1", "a planted line")])
            assert col.count() == 20
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# ------------------------------------------------------------------------------------------ hostile services
def test_an_unreachable_service_fails_at_once_without_retries(sleeps):
    c = client(sleeps)
    with pytest.raises(TargetError, match="cannot connect to http://127.0.0.1:.*connection refused"):
        c.request("POST", f"http://127.0.0.1:{free_port()}/query", body={"q": 1})
    assert c.sent == 1 and sleeps == [], "a service never reached is not retried"


def test_refused_credentials_are_one_line_without_retries(sleeps):
    for status in (401, 403):
        s = scripted(lambda *a, st=status: (st, {}, b'{"error": "bad key"}', 0))
        try:
            c = client(sleeps)
            with pytest.raises(TargetError, match=f"refused the credentials \\({status}"):
                c.request("POST", s.base + "/q", body={})
            assert len(s.requests) == 1
        finally:
            s.close()


def test_retry_after_is_honoured_and_a_429_storm_ends_in_one_line(sleeps):
    s = scripted(lambda *a: (429, {"Retry-After": "20"}, b'{"error": "slow down"}', 0))
    try:
        c = client(sleeps, retries=3, rate=1000)
        with pytest.raises(TargetError, match="kept answering 429 \\(4 tries.*lower rate"):
            c.request("POST", s.base + "/q", body={})
        assert len(s.requests) == 4 and sleeps == [20.0, 20.0, 20.0], "Retry-After: 20 waited before every retry"
    finally:
        s.close()
    calls = []

    def flaky(*a):
        calls.append(1)
        return (503, {}, b"{}", 0) if len(calls) < 3 else OK

    s = scripted(flaky)
    try:
        sleeps.clear()
        assert client(sleeps, rate=1000).request("POST", s.base + "/q", body={}).status == 200
        assert sleeps == [1.0, 2.0], "no Retry-After: exponential backoff"
    finally:
        s.close()


def test_a_retry_after_beyond_the_cap_stops_the_run(sleeps):
    s = scripted(lambda *a: (503, {"Retry-After": "3600"}, b"{}", 0))
    try:
        with pytest.raises(TargetError, match="asks to wait 3600 s.*max_retry_wait=60"):
            client(sleeps).request("GET", s.base + "/q")
    finally:
        s.close()
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0 and retry_after("7") == 7.0


def test_a_json_path_that_is_not_there_quotes_the_response():
    s = scripted(lambda *a: (200, {}, json.dumps({"result": {"text": "hi"}, "docs": []}).encode(), 0))
    try:
        t = make_target("http", {"url": s.base + "/q", "answer_path": "result.answer"})
        with pytest.raises(
            ConfigError,
            match="key 'answer' not found at result \\(an object with keys text\\); the response began: \\{\"result\"",
        ):
            t.query("q")
        t = make_target("http", {"url": s.base + "/q", "answer_path": "result.text", "contexts_path": "docs[0]"})
        with pytest.raises(ConfigError, match="item \\[0\\] is not in the list at docs \\(0 item"):
            t.query("q")
        assert make_target("http", {"url": s.base + "/q", "answer_path": "result.text"}).query("q").answer == "hi"
    finally:
        s.close()


def test_html_pages_and_non_json_answers_are_named(sleeps):
    html_page = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
    s = scripted(
        lambda m, path, *a: (
            (200, {"Content-Type": "text/html"}, html_page, 0)
            if path == "/html"
            else (200, {"Content-Type": "text/plain"}, b"just text", 0)
            if path == "/text"
            else (500, {"Content-Type": "text/html"}, html_page, 0)
        )
    )
    try:
        t = make_target("http", {"url": s.base + "/html", "retries": 0})
        with pytest.raises(TargetError, match="is not JSON \\(an HTML page\\).*502 Bad Gateway"):
            t.query("q")
        with pytest.raises(TargetError, match="is not JSON \\(text/plain\\); it began: just text"):
            make_target("http", {"url": s.base + "/text"}).query("q")
        with pytest.raises(TargetError, match="kept answering 500.*502 Bad Gateway"):
            client(sleeps, retries=1, rate=1000).request("POST", s.base + "/err", body={})
    finally:
        s.close()


def test_a_service_that_never_answers_times_out():
    s = scripted(lambda *a: (200, {}, b'{"answer": "late"}', 5))
    try:
        with pytest.raises(TargetError, match="no answer from .* within timeout=1 s"):
            make_target("http", {"url": s.base + "/q", "timeout": 1}).query("q")
    finally:
        s.close()


def test_a_huge_response_is_cut_off_unread():
    big = json.dumps({"answer": "x" * 3_000_000}).encode()
    s = scripted(lambda *a: (200, {}, big, 0))
    try:
        with pytest.raises(TargetError, match="larger than max_response_bytes=1,000,000"):
            make_target("http", {"url": s.base + "/q", "max_response_bytes": 1_000_000}).query("q")
    finally:
        s.close()


def test_redirects_stay_on_the_named_host():
    other = scripted(lambda *a: OK)
    s = scripted(
        lambda m, path, *a: (
            (302, {"Location": f"http://localhost:{other.server.server_address[1]}/q"}, b"", 0)
            if path == "/away"
            else (307, {"Location": "/here"}, b"", 0)
            if path == "/moved"
            else OK
        )
    )
    try:
        with pytest.raises(TargetError, match="redirected to another host .*not followed"):
            make_target("http", {"url": s.base + "/away"}).query("q")
        assert other.requests == [], "nothing was sent to the other host"
        assert make_target("http", {"url": s.base + "/moved"}).query("q").answer == "fine"
        assert [r[1] for r in s.requests[-2:]] == ["/moved", "/here"]
    finally:
        s.close()
        other.close()


def test_the_rate_cap_and_the_request_budget(sleeps):
    s = scripted(lambda *a: OK)
    try:
        c = client(sleeps, rate=4, max_requests=5)
        for _ in range(5):
            c.request("POST", s.base + "/q", body={})
        assert sum(sleeps) >= 4 * 0.25 * 0.9, "five requests at 4 a second wait about a second in all"
        with pytest.raises(BudgetSpent, match="request budget is spent \\(5 requests"):
            c.request("POST", s.base + "/q", body={})
        assert len(s.requests) == 5
    finally:
        s.close()


def test_credentials_are_named_resolved_and_never_echoed(monkeypatch):
    key = "sk-test-" + "9" * 24
    monkeypatch.setenv("AUDIT_TEST_KEY", key)

    def echo(method, path, body, headers):
        auth = headers.get("Authorization", "")
        if path == "/err":
            return 500, {}, json.dumps({"error": f"upstream rejected {auth}"}).encode(), 0
        return 200, {}, json.dumps({"answer": f"you sent {auth}", "sources": [f"ctx {auth}"]}).encode(), 0

    s = scripted(echo)
    try:
        with pytest.raises(ConfigError, match="literal credential"):
            make_target("http", {"url": s.base + "/q", "headers": {"Authorization": f"Bearer {key}"}})
        t = make_target(
            "http",
            {
                "url": s.base + "/q",
                "headers": {"Authorization": "Bearer ${AUDIT_TEST_KEY}"},
                "contexts_path": "sources",
            },
        )
        r = t.query("q")
        assert s.requests[-1][3]["Authorization"] == f"Bearer {key}", "the key was sent"
        assert key in r.answer  # the raw reply; the run scrubs what it records (see TargetSystem)
        from engine.targets.system import TargetSystem
        from engine.corpora import Corpus

        ans = TargetSystem(t, Corpus("none", ())).answer("q")
        assert key not in ans.answer and "[redacted]" in ans.answer
        assert key not in json.dumps(ans.generation.info)
        with pytest.raises(TargetError) as e:
            make_target(
                "http", {"url": s.base + "/err", "retries": 0, "headers": {"Authorization": "Bearer ${AUDIT_TEST_KEY}"}}
            ).query("q")
        assert key not in str(e.value)
        monkeypatch.delenv("AUDIT_TEST_KEY")
        with pytest.raises(ConfigError, match="refers to \\$\\{AUDIT_TEST_KEY\\}, which is not set"):
            make_target("http", {"url": s.base + "/q", "headers": {"Authorization": "Bearer ${AUDIT_TEST_KEY}"}}).query(
                "q"
            )
    finally:
        s.close()


def test_bad_target_parameters_are_refused_before_any_request():
    bad = [
        ({"url": "ftp://x/q"}, "not an http"),
        ({"body": "{not json"}, "body: not valid JSON"),
        ({"body": '{"q": "x"}'}, "no \\{query\\}"),
        ({"method": "GET"}, "GET target needs \\{query\\}"),
        ({"answer_path": "a..b["}, "cannot read it"),
        ({"ingest_url": "http://h/d"}, "needs delete_url"),
        ({"rate": float("nan")}, "finite number"),
        ({"timeout": 0}, "below the minimum"),
    ]
    for params, message in bad:
        with pytest.raises(ConfigError, match=message):
            make_target("http", params)
    with pytest.raises(ConfigError, match="not the key itself"):
        make_target("openai-chat", {"api_key_env": "sk-abc def"})
