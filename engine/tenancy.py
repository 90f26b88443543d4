"""Multi-tenant knowledge bases: every chunk belongs to a tenant, a query runs as one tenant (its identity), and
retrieval enforces (or fails to enforce) that a tenant sees only its own chunks.

Three retrieval modes (:data:`TENANT_FILTERS`), the three ways a real deployment is built:

* ``inside`` — the filter is part of the vector search (Chroma ``where={"tenant": identity}``, and the same mask
  in the engine's exact scoring): the top-K is taken among the tenant's own chunks only. Correct: another
  tenant's chunk cannot reach the context, whatever the query.
* ``after`` — the top-K is taken over every tenant's chunks, then the other tenants' are dropped: fewer than K
  results whenever a foreign chunk ranked high, so nothing foreign reaches the context, but how many came back
  tells the attacker that another tenant holds something close to the query (a side channel the run counts as
  ``tenant_dropped``);
* ``none`` — no filter: the misconfiguration (the metadata exists, the query ignores it).

Tenants come from the knowledge base itself where its documents carry a ``tenant`` field (a JSONL/CSV column
becomes metadata); otherwise :func:`assign_tenants` splits the KB into ``n`` tenants by source record (every
chunk of one record goes to the same tenant; records dealt round-robin in a seeded order: ``tenant-1`` …
``tenant-n``). The OWASP AI security and privacy guide (issue #211) names retrieval-scope enforcement as a gap
no red-teaming tool tests directly; this module makes it measurable: the cross-tenant retrieval rate and the
other tenants' chunks recovered in answers, each with a Wilson interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from .errors import ConfigError
from .metrics.catalog import MK
from .metrics.intervals import wilson
from .types import TENANT_KEY, Document

if TYPE_CHECKING:
    from .corpora import Corpus

TENANT_FILTERS = ("inside", "after", "none")
OBSERVED = "target"  # an audit target's tenancy: enforced (or not) by the target itself, only observed here
FILTER_WORDS = {  # each mode in a few words, for a form
    "inside": "inside the vector search",
    "after": "after the top-K",
    "none": "not at all",
    OBSERVED: "by the target itself",
}


def filter_label(mode: str) -> str:
    """A tenant filter mode as every view names it: its name and its few words ("none (not at all)")."""
    words = FILTER_WORDS.get(mode)
    return f"{mode} ({words})" if words else str(mode)


FILTER_SENTENCES = {  # "This deployment …": each mode as a sentence's predicate
    "inside": "filters inside the vector search",
    "after": "filters after the top-K",
    "none": "has no tenant filter at all",
    OBSERVED: "leaves the filtering to the target itself",
}


def source_of(doc: Document) -> str:
    """The record a chunk was cut from (its ``parent_id``; the chunk itself when it was not split)."""
    return str(doc.metadata.get("parent_id") or doc.id)


def assign_tenants(docs: Sequence[Document], n: int, seed: int) -> list[Document]:
    """``docs`` with a tenant each: kept where the documents already carry one (all of them must), else
    ``tenant-1`` … ``tenant-n`` dealt round-robin over the source records in an order drawn from ``seed``."""
    given = [d.tenant for d in docs]
    if any(t is not None for t in given):
        missing = sum(t is None for t in given)
        if missing:
            raise ConfigError(
                f"the knowledge base gives a tenant for some chunks but not for {missing}: give one for every "
                "document (a 'tenant' field) or none (then tenants: N splits it)"
            )
        return list(docs)
    if n < 2:
        raise ConfigError(f"tenants: a knowledge base without a tenant field needs at least 2 tenants, got {n}")
    sources = list(dict.fromkeys(source_of(d) for d in docs))
    if len(sources) < n:
        raise ConfigError(f"tenants: {n} tenants for {len(sources)} records leaves a tenant with no documents")
    order = np.random.default_rng([seed, 0x7E4A]).permutation(len(sources))
    owner = {sources[int(i)]: f"tenant-{pos % n + 1}" for pos, i in enumerate(order)}
    return [Document(d.id, d.text, {**d.metadata, TENANT_KEY: owner[source_of(d)]}) for d in docs]


def tenants_of(docs: Iterable[Document]) -> dict[str, str]:
    """Chunk id → tenant, for the chunks that carry one."""
    return {d.id: t for d in docs if (t := d.tenant) is not None}


def check_identity(identity: str, owners: Mapping[str, str]) -> str:
    """The identity the queries run as ('' = the first tenant by name); refused with the tenants listed when it
    owns no chunk of the knowledge base."""
    names = sorted(set(owners.values()), key=_natural)
    if not names:
        raise ConfigError("no chunk of the knowledge base carries a tenant")
    who = identity or names[0]
    if who not in names:
        shown = ", ".join(names[:12]) + (f", … ({len(names)} tenants)" if len(names) > 12 else "")
        raise ConfigError(f"identity {who!r} has no documents in this knowledge base (its tenants: {shown})")
    return who


def _natural(name: str) -> tuple:
    head, _, tail = name.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (name, 0)


@dataclass(frozen=True)
class TenantScope:
    """Who the queries run as and how retrieval enforces it: ``identity`` (a tenant), ``mode`` (one of
    :data:`TENANT_FILTERS`) and every chunk's owner."""

    identity: str
    mode: str
    owners: Mapping[str, str]

    def __post_init__(self) -> None:
        if self.mode not in TENANT_FILTERS + (OBSERVED,):
            raise ConfigError(f"tenant_filter must be one of {', '.join(TENANT_FILTERS)}, got {self.mode!r}")

    def foreign(self, doc_ids: Iterable[str]) -> list[str]:
        """The ids among ``doc_ids`` that belong to another tenant (chunks without an owner, e.g. an attacker's
        injected document, are nobody's and not counted)."""
        return [d for d in doc_ids if self.owners.get(d, self.identity) != self.identity]

    def own(self, doc_ids: Iterable[str]) -> list[str]:
        """The ids among ``doc_ids`` the identity may see."""
        return [d for d in doc_ids if self.owners.get(d, self.identity) == self.identity]


def cross_tenant_summary(
    owners: Mapping[str, str],
    identity: str,
    contexts: Sequence[Sequence[str]],
    recovered: Iterable[str],
    dropped: Sequence[int] = (),
) -> dict[str, object]:
    """The run's cross-tenant numbers from what reached each answered round's context (``contexts``) and the
    chunks its answers recovered: the share of rounds whose context held another tenant's chunk (with its Wilson
    interval), the distinct foreign chunks that reached a context, the foreign chunks an answer reproduced as a
    share of all foreign chunks (with its interval), and ``tenant_dropped_rounds``: rounds whose results a
    post-top-K filter cut (``dropped``: chunks cut per round; the side channel of the ``after`` mode)."""
    scope = TenantScope(identity, "none", owners)
    answered = list(contexts)
    hit_rounds = sum(1 for c in answered if scope.foreign(c))
    reached = {d for c in answered for d in scope.foreign(c)}
    foreign_total = sum(1 for t in owners.values() if t != identity)
    leaked = set(scope.foreign(recovered))
    return {
        MK.CROSS_TENANT_ROUNDS: hit_rounds / len(answered) if answered else 0.0,
        MK.CROSS_TENANT_ROUNDS + "_ci": list(wilson(hit_rounds, len(answered))),
        MK.CROSS_TENANT_CHUNKS: len(reached),
        MK.CROSS_TENANT_LEAKED: len(leaked) / foreign_total if foreign_total else 0.0,
        MK.CROSS_TENANT_LEAKED + "_ci": list(wilson(len(leaked), foreign_total)),
        "cross_tenant_leaked_chunks": len(leaked),
        "foreign_chunks": foreign_total,
        "tenant_dropped_rounds": sum(1 for n in dropped if n > 0),
    }


def tenant_corpus(corpus: "Corpus", n: int, identity: str, mode: str, seed: int) -> tuple["Corpus", TenantScope]:
    """``corpus`` with every chunk's tenant (:func:`assign_tenants`: the same split on resume, by the seed) and
    the scope the queries run in: ``identity`` checked against the tenants, ``mode`` one of :data:`TENANT_FILTERS`."""
    from .corpora import Corpus, fingerprint

    docs = assign_tenants(corpus.documents, n, seed)
    scoped = Corpus(corpus.name, tuple(docs), fingerprint(docs), corpus.stats)
    owners = tenants_of(scoped.documents)
    return scoped, TenantScope(check_identity(identity, owners), mode, owners)


def owners_of(assigned: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Chunk id → tenant, from a ``tenants_assigned`` event's ``tenants`` (tenant → its chunk ids)."""
    return {d: t for t, ids in assigned.items() for d in ids}
