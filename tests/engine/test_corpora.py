import json

import pytest

from engine.corpora import chunk_documents, load_corpus, read_file
from engine.errors import ConfigError, CorpusError
from engine.queries import load_queries
from engine.types import Document


def test_clinic_handbook_is_complete(handbook):
    assert len(handbook) >= 150
    for d in handbook.documents:
        assert 60 <= len(d.text.split()) <= 120, d.id
    qs = load_queries("clinic_handbook")
    assert len(qs) >= 60
    ids = set(handbook.ids)
    for q in qs:
        assert q.metadata["gold_ids"] and set(q.metadata["gold_ids"]) <= ids


def test_handbook_gold_passages_are_retrievable(minilm, handbook):
    """The questions are answerable from their gold passage: MiniLM finds it in the top 5 for most."""
    from engine.store import RunStore, shared_base_index

    qs = load_queries("clinic_handbook")
    with RunStore(shared_base_index(handbook, minilm)) as store:
        res = store.search([q.text for q in qs], 5)
    hit = sum(bool(set(q.metadata["gold_ids"]) & {h.doc_id for h in r.hits}) for q, r in zip(qs, res))
    assert hit / len(qs) >= 0.8


def test_user_files_load(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"id": "x1", "text": "alpha text", "source": "s"}\n\n{"text": "beta"}\n')
    (tmp_path / "b.csv").write_text("id,text\nc1,gamma row\nc2,delta row\n")
    (tmp_path / "c.txt").write_text("plain text file")
    (tmp_path / "d.md").write_text("# Title\n\nmarkdown body")
    c = load_corpus(str(tmp_path))
    assert {"x1", "a-3", "c1", "c2", "c", "d"} <= set(c.ids)
    assert c.documents[c.ids.index("x1")].metadata["source"] == "s"
    one = load_corpus(str(tmp_path / "b.csv"))
    assert one.ids == ["c1", "c2"] and one.fingerprint != c.fingerprint


def test_pdf_through_llama_index(tmp_path):
    pdf = _tiny_pdf("Warfarin needs INR monitoring")
    p = tmp_path / "doc.pdf"
    p.write_bytes(pdf)
    c = load_corpus(str(p))
    assert "Warfarin needs INR monitoring" in c.documents[0].text


def _tiny_pdf(text: str) -> bytes:
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        None,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    stream = f"BT /F1 12 Tf 10 100 Td ({text}) Tj ET".encode()
    objs[3] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    out, offs = b"%PDF-1.4\n", []
    for i, o in enumerate(objs, 1):
        offs.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offs)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return out


def test_chunking_with_sentence_splitter():
    long = Document("long", " ".join(f"Sentence number {i} talks about blood pressure." for i in range(200)))
    short = Document("short", "A short note.")
    out = chunk_documents([long, short], chunk_size=64, chunk_overlap=8)
    parts = [d for d in out if d.metadata.get("parent_id") == "long"]
    assert len(parts) > 5 and parts[0].id == "long#c0"
    assert any(d.id == "short" for d in out)
    with pytest.raises(CorpusError, match="overlap"):
        chunk_documents([long], chunk_size=32, chunk_overlap=32)


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("empty.jsonl", b"", "the file is empty"),
        ("bin.txt", b"\x00\x01\x02binary", "binary"),
        ("latin.txt", "caf\xe9".encode("latin-1"), "not valid UTF-8"),
        ("bad.jsonl", b'{"text": "ok"}\n{"text": broken}\n', "line 2 is not valid JSON"),
        ("notext.jsonl", b'{"id": 1}\n', "line 1 has no non-empty 'text' field"),
        ("cols.csv", b"a,b\n1,2\n", "needs a 'text' column"),
        ("x.docx", b"PK..", "unsupported file type"),
    ],
)
def test_bad_files_get_clear_errors(tmp_path, name, content, message):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(CorpusError, match=message):
        load_corpus(str(p))


def test_missing_and_empty_corpora(tmp_path):
    with pytest.raises(CorpusError, match="not found"):
        load_corpus("no-such-corpus")
    (tmp_path / "blank.txt").write_text("   \n")
    with pytest.raises(CorpusError, match="empty"):
        load_corpus(str(tmp_path / "blank.txt"))
    empty_dir = tmp_path / "nothing-here"
    empty_dir.mkdir()
    with pytest.raises(CorpusError, match="has no"):
        load_corpus(str(empty_dir))


def test_oversized_upload_is_refused(tmp_path):
    from engine import corpora

    with pytest.raises(CorpusError, match="over the"):
        read_file(tmp_path / "big.txt", b"x" * (corpora.MAX_UPLOAD_BYTES + 1))


def test_benchmark_data_by_name(data_dir):
    qs = load_queries("mirage:pubmedqa", limit=5)
    assert len(qs) == 5 and qs[0].metadata["options"]
    hc = load_corpus("healthcaremagic", limit=3)
    assert len(hc) >= 3
    enron = load_corpus("enron", limit=2, chunk_size=None)
    assert enron.documents[0].text.startswith("From:")
    pr = load_queries("poisonedrag:nq", limit=2)
    assert len(pr[0].metadata["adv_texts"]) == 5


def test_data_dir_errors(monkeypatch, tmp_path):
    monkeypatch.delenv("RAG_PLAYGROUND_DATA_DIR", raising=False)
    with pytest.raises(ConfigError, match="needs the benchmark data dir"):
        load_corpus("bioasq")
    with pytest.raises(ConfigError, match="does not exist"):
        load_queries("mirage:mmlu", data_dir=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="unknown MIRAGE set"):
        load_queries("mirage:nope", data_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="unknown query set"):
        load_queries("nope")


def test_query_files(tmp_path):
    (tmp_path / "q.txt").write_text("first question?\n\nsecond question?\n")
    assert [q.text for q in load_queries(str(tmp_path / "q.txt"))] == ["first question?", "second question?"]
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "third?"}) + "\n")
    assert load_queries(str(tmp_path / "q.jsonl"))[0].text == "third?"
    (tmp_path / "q.json").write_text(json.dumps(["fourth?"]))
    assert load_queries(str(tmp_path / "q.json"))[0].text == "fourth?"
    with pytest.raises(ConfigError, match="at least 1"):
        load_queries(str(tmp_path / "q.txt"), limit=0)


def test_clinic_records_are_generated_deterministically():
    """The private knowledge base for extraction: >= 300 synthetic records with fake PII, regenerable."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    p = subprocess.run(
        [sys.executable, "corpora/clinic_records/generate.py", "--check"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    kb = load_corpus("clinic_records")
    assert len(kb) >= 300
    d = kb.documents[0]
    for field in ("name", "email", "phone", "dob", "diagnosis", "medication"):
        assert d.metadata[field] and (field in ("diagnosis", "medication") or str(d.metadata[field]) in d.text)
    assert len({doc.metadata["email"] for doc in kb.documents}) > 290


@pytest.mark.parametrize("retriever,limit", [("minilm", 254), ("e5-small", 510)])
def test_chunks_fit_the_retrievers_window_on_every_corpus(data_dir, retriever, limit):
    """Chunks are cut in the retriever's own tokens: none is longer than what the encoder reads (with the
    default chunk size), on the bundled and the benchmark corpora; without chunking the overflow is counted."""
    from engine.corpora import retriever_window
    from engine.embedders import make_retriever

    w = retriever_window(make_retriever(retriever))
    assert w.limit == limit
    for kb in ("clinic_records", "clinic_handbook", "healthcaremagic", "enron"):
        c = load_corpus(kb, data_dir=data_dir, chunk_size=512, chunk_overlap=0, window=w)
        assert c.stats == {"chunks": len(c), "retriever_max_tokens": limit, "over_window": 0, "retriever": retriever}
        assert max(w.count(c.texts)) <= limit
    whole = load_corpus("healthcaremagic", data_dir=data_dir, chunk_size=None, window=w)
    assert len(whole) == 1000 and whole.stats["over_window"] > 0  # reported, never silently truncated


def test_split_records_are_balanced_and_keep_their_text(minilm):
    from engine.corpora import retriever_window

    w = retriever_window(minilm)
    kb = load_corpus("clinic_records", window=w, chunk_overlap=0)  # as the extraction runs load it
    plain = {d.id: d.text for d in load_corpus("clinic_records").documents}
    pieces: dict[str, list[str]] = {}
    for d in kb.documents:
        if "#c" in d.id:
            pieces.setdefault(d.metadata["parent_id"], []).append(d.text)
    assert pieces, "some records are longer than MiniLM's 254 word pieces"
    sizes = w.count([t for ps in pieces.values() for t in ps])
    assert min(sizes) > w.limit // 4 and max(sizes) <= w.limit  # no 20-token scraps
    for parent, ps in pieces.items():
        assert " ".join(" ".join(ps).split()) == " ".join(plain[parent].split())  # nothing lost or repeated
    overlapping = load_corpus("clinic_records", window=w, chunk_overlap=32)
    sizes = w.count([d.text for d in overlapping.documents if "#c" in d.id])
    assert min(sizes) > w.limit // 4 and max(sizes) <= w.limit
    # a single 'sentence' longer than the window is still split, at word boundaries
    giant = Document("giant", " ".join(["haemoglobin"] * 900))
    out = chunk_documents([giant], chunk_size=512, chunk_overlap=0, window=w)
    assert len(out) > 1 and max(w.count([d.text for d in out])) <= w.limit
    # a sparse retriever reads everything: no window, the old token count
    from engine.corpora import retriever_window as rw
    from engine.embedders import make_retriever

    assert rw(make_retriever("bm25")) is None
