"""Tenant isolation against a real Chroma collection: the filter inside the vector search can return nothing of
another tenant whatever the query (tested with other tenants' own text as the query), the filter after the top-K
returns fewer results and the run counts the cut, no filter leaks; the split is seeded and by whole record; bad
inputs get one line."""

import pytest

from engine.config import ExtractionConfig
from engine.corpora import Corpus, corpus_from_documents, fingerprint, load_corpus
from engine.errors import ConfigError
from engine.events import TenantsAssigned, TenantScoped
from engine.generators import GENERATORS
from engine.runs.extraction import ExtractionRun
from engine.store import RunStore, shared_base_index
from engine.tenancy import TenantScope, assign_tenants, check_identity, source_of, tenants_of
from engine.types import Document


@pytest.fixture(scope="module")
def tenant_kb() -> Corpus:
    kb = load_corpus("clinic_records")
    docs = assign_tenants(kb.documents, 4, seed=0)
    return Corpus(kb.name, tuple(docs), fingerprint(docs), kb.stats)


@pytest.fixture(scope="module")
def gen():
    return GENERATORS.create("local", {"model": "smollm2-135m"})


def test_the_split_is_seeded_by_whole_record_and_named_tenant_n(tenant_kb):
    owners = tenants_of(tenant_kb.documents)
    assert set(owners.values()) == {"tenant-1", "tenant-2", "tenant-3", "tenant-4"}
    by_record: dict[str, set[str]] = {}
    for d in tenant_kb.documents:
        by_record.setdefault(source_of(d), set()).add(owners[d.id])
    assert all(len(t) == 1 for t in by_record.values())  # every chunk of a record with one tenant
    again = assign_tenants(load_corpus("clinic_records").documents, 4, seed=0)
    assert tenants_of(again) == owners
    assert tenants_of(assign_tenants(load_corpus("clinic_records").documents, 4, seed=1)) != owners
    assert tenant_kb.fingerprint != load_corpus("clinic_records").fingerprint  # its own index


def test_a_kb_that_names_its_tenants_keeps_them():
    docs = [Document(f"d{i}", f"record {i} text", {"tenant": "north" if i % 2 else "south"}) for i in range(6)]
    assert tenants_of(assign_tenants(docs, 2, seed=5)) == tenants_of(docs)
    half = docs[:3] + [Document("x", "no tenant here")]
    with pytest.raises(ConfigError, match="gives a tenant for some chunks but not for 1"):
        assign_tenants(half, 2, seed=0)


def test_inside_the_search_nothing_of_another_tenant_comes_back_even_for_its_own_text(tenant_kb, minilm):
    base = shared_base_index(tenant_kb, minilm)
    store = RunStore(base)
    owners = tenants_of(tenant_kb.documents)
    # the hardest queries: other tenants' chunks, verbatim (without a filter each finds itself at rank 1)
    foreign = [d for d in tenant_kb.documents if owners[d.id] != "tenant-1"][:40]
    queries = [d.text for d in foreign]
    unfiltered = store.search(queries, 5)
    assert all(r.hits[0].doc_id == d.id for r, d in zip(unfiltered, foreign))
    filtered = store.search(queries, 5, tenant="tenant-1")
    for r in filtered:
        assert len(r.hits) == 5 and all(owners[h.doc_id] == "tenant-1" for h in r.hits)
        assert r.store_agreed  # Chroma's where filter and the exact masked search agree
    assert store.fallbacks == 0
    store.close()


def test_a_tenant_with_fewer_chunks_than_k_gets_fewer_results(minilm):
    docs = [
        Document(f"d{i}", f"note {i} about blood pressure and sleep", {"tenant": "small" if i < 2 else "big"})
        for i in range(8)
    ]
    kb = corpus_from_documents("tiny-tenants", docs, chunk_size=None)
    store = RunStore(shared_base_index(kb, minilm))
    (res,) = store.search(["blood pressure"], 4, tenant="small")
    assert {h.doc_id for h in res.hits} == {"d0", "d1"} and [h.rank for h in res.hits] == [1, 2]
    assert res.store_agreed
    store.close()


def _run(mode: str, gen, rounds: int = 2) -> ExtractionRun:
    # short answers (a fixed 48-token budget, not one as long as the context): what is retrieved for whom is the
    # point here, not how much an answer copies
    cfg = ExtractionConfig(
        attack="zeng",
        rounds=rounds,
        attacker_llm="",
        max_tokens=48,
        answer_budget="fixed",
        top_k=3,
        tenants=4,
        tenant_filter=mode,
    )
    run = ExtractionRun(cfg, generator=gen)
    run.run()
    run.close()
    return run


def test_the_three_modes_in_an_extraction_run(gen):
    runs = {m: _run(m, gen) for m in ("inside", "after", "none")}
    for mode, run in runs.items():
        (assigned,) = [e for e in run.events if isinstance(e, TenantsAssigned)]
        assert assigned.identity == "tenant-1" and assigned.mode == mode and len(assigned.tenants) == 4
        scoped = [e for e in run.events if isinstance(e, TenantScoped)]
        assert [e.round for e in scoped] == [1, 2]
    inside, after, none = (runs[m].summary()["tenancy"] for m in ("inside", "after", "none"))
    assert inside["cross_tenant_chunks"] == 0 and inside["cross_tenant_rounds"] == 0.0
    assert inside["tenant_dropped_rounds"] == 0 and inside["cross_tenant_leaked_chunks"] == 0
    # the same generic query without a filter: three quarters of the KB is another tenant's
    assert none["cross_tenant_chunks"] > 0 and none["cross_tenant_rounds"] > 0
    lo, hi = none["cross_tenant_rounds_ci"]
    assert lo <= none["cross_tenant_rounds"] <= hi
    # after the top-K: nothing foreign reaches the context, but the results came back short
    assert after["cross_tenant_chunks"] == 0 and after["tenant_dropped_rounds"] > 0
    cut = [e for e in runs["after"].events if isinstance(e, TenantScoped) and e.dropped_ids]
    gens = {e.round: e for e in runs["after"].events if e.kind == "generated"}
    assert all(len(gens[e.round].context_ids) == 3 - len(e.dropped_ids) for e in cut)
    assert "tenancy" not in ExtractionRun(ExtractionConfig(attack="zeng", rounds=1)).summary().to_dict()


def test_a_killed_and_resumed_multi_tenant_run_equals_an_uninterrupted_one(gen, tmp_path):
    cfg = ExtractionConfig(
        attack="zeng",
        rounds=2,
        attacker_llm="",
        max_tokens=48,
        answer_budget="fixed",
        top_k=3,
        tenants=3,
        tenant_filter="none",
    )
    whole = ExtractionRun(cfg, generator=gen)
    whole.run()
    whole.close()
    run = ExtractionRun(cfg, generator=gen, out_dir=tmp_path)
    run.prepare()
    run.step(1)
    run.close()  # stopped after round 1: the folder holds its events
    resumed = ExtractionRun.resume(run.out_dir, generator=gen)
    resumed.run()
    resumed.close()
    assert len([e for e in resumed.events if isinstance(e, TenantsAssigned)]) == 1
    assert resumed.tenancy.owners == whole.tenancy.owners
    assert [e.round for e in resumed.events if isinstance(e, TenantScoped)] == [1, 2]
    assert resumed.summary()["tenancy"] == whole.summary()["tenancy"]


def test_bad_tenant_inputs_get_one_line():
    with pytest.raises(ConfigError, match="1 tenant isolates nothing"):
        ExtractionConfig(tenants=1)
    with pytest.raises(ConfigError, match="apply to a multi-tenant knowledge base"):
        ExtractionConfig(identity="tenant-2")
    with pytest.raises(ConfigError, match="tenant_filter"):
        ExtractionConfig(tenants=2, tenant_filter="sideways")
    with pytest.raises(ConfigError, match="enforces its own tenancy"):
        ExtractionConfig(target="http", target_params={"url": "http://127.0.0.1:1/q"}, kb="", tenants=2)
    with pytest.raises(ConfigError, match=r"identity 'tenant-9' has no documents .*tenant-1, tenant-2"):
        check_identity("tenant-9", {"a": "tenant-1", "b": "tenant-2"})
    with pytest.raises(ConfigError, match="leaves a tenant with no documents"):
        assign_tenants([Document("a", "x"), Document("b", "y")], 3, seed=0)
    with pytest.raises(ConfigError, match=r"identity 'nobody' has no documents"):
        ExtractionRun(ExtractionConfig(attack="zeng", rounds=1, tenants=2, identity="nobody")).prepare()
    assert "tenants" not in ExtractionConfig().to_dict()  # one owner: the record of runs before tenancy
    assert ExtractionConfig().config_hash() == ExtractionConfig(tenants=0).config_hash()
    assert TenantScope("t", "inside", {}).foreign(["injected"]) == []  # an injected document is nobody's


def _membership(mode: str, gen, **kw):
    from engine.config import MembershipConfig
    from engine.runs.membership import MembershipRun

    cfg = MembershipConfig(
        members=6, non_members=2, max_tokens=8, top_k=1, attack="direct", attack_params={"max_chars": 300}, seed=1,
        tenants=2, tenant_filter=mode,
    )  # fmt: skip
    return MembershipRun(cfg, generator=gen, **kw)


def test_membership_across_tenants_sees_nothing_of_another_tenant_inside_the_search(gen, tmp_path):
    """The direct question carries its whole record, so without a filter every member's record comes back — also
    another tenant's; inside the vector search no question's context holds another tenant's chunk and no other
    tenant's member has its record retrieved (by construction); the summary splits the members by owner; a
    stopped and resumed experiment deals the same tenants and ends with the same numbers."""
    from engine.events import MembershipScored
    from engine.views.membership import record_rows, tenancy_lines

    runs = {}
    for mode in ("inside", "none"):
        runs[mode] = _membership(mode, gen)
        runs[mode].run()
        runs[mode].close()
    inside, none = (runs[m].summary()["tenancy"] for m in ("inside", "none"))
    assert inside["identity"] == none["identity"] == "tenant-1" and inside["tenants"] == 2
    assert inside["own_members"] + inside["foreign_members"] == 6 and inside["foreign_members"] > 0
    assert inside["cross_tenant_rounds"] == 0.0 and inside["foreign_members_retrieved"] == 0.0
    owners = runs["inside"].tenancy.owners
    for e in (e for e in runs["inside"].events if isinstance(e, TenantScoped)):
        assert not e.foreign_ids
    for e in (e for e in runs["inside"].events if e.kind == "retrieved"):
        assert all(owners[d] == "tenant-1" for d in e.doc_ids)
    assert none["foreign_members_retrieved"] > 0 and none["cross_tenant_rounds"] > 0
    rows = record_rows(runs["none"].events)
    assert {r["tenant"] for r in rows} <= {"own (tenant-1)", "tenant-2", "—"}
    assert all((r["tenant"] == "—") == (r["in the KB"] == "non-member") for r in rows)
    assert any("members of other tenants" in line for line in tenancy_lines(runs["none"].summary().to_dict()))
    run = _membership("inside", gen, out_dir=tmp_path)
    run.prepare()
    run.step(3)
    run.close()
    from engine.runs.membership import MembershipRun

    again = MembershipRun.resume(run.out_dir, generator=gen)
    assert again.tenancy.owners == owners
    again.run()
    again.close()
    assert again.summary()["tenancy"] == inside
    scores = [(e.record_id, e.score) for e in again.events if isinstance(e, MembershipScored)]
    assert scores == [(e.record_id, e.score) for e in runs["inside"].events if isinstance(e, MembershipScored)]


def test_bad_tenant_inputs_of_a_membership_run_get_one_line():
    from engine.config import MembershipConfig
    from engine.runs.membership import MembershipRun

    with pytest.raises(ConfigError, match="1 tenant isolates nothing"):
        MembershipConfig(tenants=1)
    with pytest.raises(ConfigError, match="apply to a multi-tenant knowledge base"):
        MembershipConfig(tenant_filter="none")
    with pytest.raises(ConfigError, match=r"identity 'clinic-9' has no documents"):
        MembershipRun(MembershipConfig(members=2, non_members=1, tenants=2, identity="clinic-9")).prepare()
    assert "tenants" not in MembershipConfig().to_dict()


def test_a_member_indexed_in_two_chunks_is_counted_with_its_tenant():
    """Members are whole records (``rec-0002``), a tenant's list holds chunk ids (``rec-0002#c1``, ``#c2``): the
    summary counted such a member with no tenant at all (6 + 10 of 20 members in a 4-tenant run)."""
    from engine.events import MembershipScored, TenantsAssigned
    from engine.runs.membership import tenant_membership

    ev = [
        TenantsAssigned(
            seq=0,
            run_id="t",
            identity="tenant-1",
            mode="inside",
            tenants={"tenant-1": ("rec-0001", "rec-0002#c1", "rec-0002#c2"), "tenant-2": ("rec-0003#c1", "rec-0004")},
        )
    ]
    ev += [
        MembershipScored(seq=i + 1, run_id="t", round=i, record_id=r, member=True, score=s)
        for i, (r, s) in enumerate([("rec-0001", 1.0), ("rec-0002", 1.0), ("rec-0003", 0.0), ("rec-0004", 1.0)])
    ]
    scored = [e for e in ev if isinstance(e, MembershipScored)]
    out = tenant_membership(ev, scored, [0.0, 0.5], seed=0)
    assert (out["own_members"], out["foreign_members"]) == (2, 2)
