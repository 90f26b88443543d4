"""A run is a sequence of typed, frozen, numbered events.

Events are appended to the run's log as they happen, written to JSONL (one object per line,
with its ``kind``), and read back for metrics, plots and the UI's step-through. Every field
is a JSON-friendly value (str, number, bool, tuples, dicts of those).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping

EVENT_TYPES: dict[str, type["Event"]] = {}


@dataclass(frozen=True)
class Event:
    """Base of every event: its number in the run (``seq``) and the run id; each subclass registers its ``kind``."""

    seq: int
    run_id: str
    kind: ClassVar[str] = "event"

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        EVENT_TYPES[cls.kind] = cls

    def to_dict(self) -> dict[str, Any]:
        """The event's fields plus its ``kind``, as a plain dict."""
        return {"kind": self.kind, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class RunStarted(Event):
    """First event of a run: the configuration and the manifest (seed, versions, corpus, retriever, commit)."""

    kind: ClassVar[str] = "run_started"
    config: Mapping[str, Any] = field(default_factory=dict)
    manifest: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class IndexBuilt(Event):
    """The index is ready: corpus size, retriever and its geometry, texts embedded now (not cached) and seconds."""

    kind: ClassVar[str] = "index_built"
    corpus: str = ""
    n_docs: int = 0
    retriever: str = ""
    model_id: str = ""
    similarity: str = ""
    dim: int = 0
    n_embedded_now: int = 0
    seconds: float = 0.0
    corpus_stats: Mapping[str, Any] = field(default_factory=dict)  # chunks, retriever_max_tokens, over_window


@dataclass(frozen=True)
class PoisonInjected(Event):
    """Poisons become visible: all at once at the start, or one query's poison for its round
    (one-at-a-time; removed again by the round's ``PoisonRemoved``)."""

    kind: ClassVar[str] = "poison_injected"
    doc_ids: tuple[str, ...] = ()
    query_ids: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    mode: str = ""


@dataclass(frozen=True)
class PoisonRemoved(Event):
    """A one-at-a-time poison taken out again at the end of its round."""

    kind: ClassVar[str] = "poison_removed"
    doc_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoundStarted(Event):
    """A round begins: one protected query of a poisoning run, or one attacker query of an extraction run."""

    kind: ClassVar[str] = "round_started"
    round: int = 0
    query_id: str = ""


@dataclass(frozen=True)
class QueryIssued(Event):
    """The query text sent to the system in this round."""

    kind: ClassVar[str] = "query_issued"
    round: int = 0
    query_id: str = ""
    text: str = ""


@dataclass(frozen=True)
class Retrieved(Event):
    """Top-K (exact) for one query, plus the exact full rank of every poison aimed at it."""

    kind: ClassVar[str] = "retrieved"
    round: int = 0
    query_id: str = ""
    doc_ids: tuple[str, ...] = ()
    scores: tuple[float, ...] = ()
    ranks: tuple[int, ...] = ()
    is_poison: tuple[bool, ...] = ()
    target_ids: tuple[str, ...] = ()  # poisons crafted for this query
    target_ranks: tuple[int, ...] = ()  # their exact ranks among all documents of the run
    store_agreed: bool = True  # Chroma's answer equalled the exact top-K


@dataclass(frozen=True)
class RoundEnded(Event):
    """A round is over; extraction runs add seconds by stage and the attacker's own LLM usage."""

    kind: ClassVar[str] = "round_ended"
    round: int = 0
    query_id: str = ""
    timings: Mapping[str, float] = field(default_factory=dict)  # seconds by stage (extraction runs)
    usage: Mapping[str, float] = field(default_factory=dict)  # the attacker's own LLM this round (calls, tokens, $)


@dataclass(frozen=True)
class DefenseApplied(Event):
    """A defense acted: at setup (round 0: the index stage) or on one round's query."""

    kind: ClassVar[str] = "defense_applied"
    round: int = 0
    defense: str = ""
    stage: str = ""
    action: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Generated(Event):
    """The system's answer to one query, the context it was given, and what it cost."""

    kind: ClassVar[str] = "generated"
    round: int = 0
    text: str = ""
    context_ids: tuple[str, ...] = ()
    blocked_by: str = ""
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    info: Mapping[str, Any] = field(default_factory=dict)
    context_tokens: int = 0  # generator tokens of the chunks in the context
    answer_budget: int = 0  # the most tokens the answer was allowed (min of the two: what it could copy)


@dataclass(frozen=True)
class PoisonsCrafted(Event):
    """The attack's poisons measured in the retriever's tokens: how many are longer than it reads (their
    tail, often the target, never reaches the embedding)."""

    kind: ClassVar[str] = "poisons_crafted"
    n: int = 0
    retriever_max_tokens: int = 0
    over_window: int = 0
    median_tokens: float = 0.0
    longest_tokens: int = 0
    # the poisons that contain their question verbatim (q ⊕ target, target ⊕ q, ...): the question's length and
    # how much of the rest — the attacker's text, the target — lies inside the window (None: none contain it)
    median_question_tokens: float | None = None
    attacker_text_embedded: float | None = None  # mean share of the attacker's tokens inside the window
    attacker_text_cut: int = 0  # poisons that lose part or all of it


@dataclass(frozen=True)
class ContextDefended(Event):
    """Poisoning with defenses: what of one question's top-K the defenses let through to the generator
    (``kept_ids``; empty when a query-stage defense blocked the question, named in ``blocked_by``)."""

    kind: ClassVar[str] = "context_defended"
    round: int = 0
    query_id: str = ""
    kept_ids: tuple[str, ...] = ()
    blocked_by: str = ""


@dataclass(frozen=True)
class AnswerScored(Event):
    """Poisoning with generation: whether one attacked question's answer repeats the attacker's target.

    ``goal`` is what the answer had to repeat (the target's items, or PoisonedRAG's wrong answer),
    ``matched`` the items it did repeat, ``carried`` = any matched (or the judge's yes when the goal is
    empty), ``judge`` the optional LLM judge's verdict ("" when no judge was asked)."""

    kind: ClassVar[str] = "answer_scored"
    round: int = 0
    query_id: str = ""
    poison_in_context: bool = False
    goal: tuple[str, ...] = ()
    matched: tuple[str, ...] = ()
    carried: bool = False
    judge: str = ""


@dataclass(frozen=True)
class LeakScored(Event):
    """What this round leaked, and the cumulative leakage metrics after it."""

    kind: ClassVar[str] = "leak_scored"
    round: int = 0
    recovered: tuple[str, ...] = ()
    recall: Mapping[str, float] = field(default_factory=dict)
    repeat_contexts: tuple[str, ...] = ()
    rouge_contexts: tuple[str, ...] = ()
    semantic: tuple[str, ...] = ()
    pii: tuple[str, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)
    canaries: tuple[str, ...] = ()  # chunks whose canary this round's answer carried for the first time


@dataclass(frozen=True)
class CanariesPlanted(Event):
    """Canaries planted in the knowledge base before the run (engine.canaries): chunk ids and their codes."""

    kind: ClassVar[str] = "canaries_planted"
    doc_ids: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    share: float = 0.0


@dataclass(frozen=True)
class TenantsAssigned(Event):
    """A multi-tenant run (engine/tenancy.py): the identity the attacker queries as, how retrieval enforces it
    (``mode``: inside, after or none) and every tenant's chunk ids."""

    kind: ClassVar[str] = "tenants_assigned"
    identity: str = ""
    mode: str = ""
    tenants: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class TenantScoped(Event):
    """One round of a multi-tenant run: the other tenants' chunks that reached the context (``foreign_ids``) and
    those a post-top-K filter cut from the results (``dropped_ids``: the ``after`` mode's side channel)."""

    kind: ClassVar[str] = "tenant_scoped"
    round: int = 0
    foreign_ids: tuple[str, ...] = ()
    dropped_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class AttackerState(Event):
    """The extraction agent's internal state after proposing this round's query, as a delta: ``state`` holds
    the values written whole, ``appended`` the new items of every list that only grew since the previous
    round. The full state is the fold of the run's events (:func:`engine.attacker_states.full_states`)."""

    kind: ClassVar[str] = "attacker_state"
    round: int = 0
    agent: str = ""
    state: Mapping[str, Any] = field(default_factory=dict)
    appended: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MembershipSplit(Event):
    """A membership experiment's split: the records probed as members (in the knowledge base) and as non-members
    (held out of it, or from the held-out corpus), in corpus order, and the size of the knowledge base built (in
    chunks)."""

    kind: ClassVar[str] = "membership_split"
    members: tuple[str, ...] = ()
    non_members: tuple[str, ...] = ()
    kb_size: int = 0
    held_out_from: str = ""  # the corpus the non-members came from ('' = held out of the kb by the seed)
    # what was split: "record" (a record cut into chunks is a member or a non-member whole; every run since
    # December 2026) or "chunk" (the index's documents, as earlier runs did: a non-member could keep a sibling
    # chunk in the index)
    unit: str = "chunk"


@dataclass(frozen=True)
class MembershipScored(Event):
    """One record's decision: whether it is a member (the truth), the attack's score and the questions it cost."""

    kind: ClassVar[str] = "membership_scored"
    round: int = 0
    record_id: str = ""
    member: bool = False
    score: float = 0.0
    queries: int = 0
    blocked: int = 0  # questions a defense refused
    retrieved: bool = False  # whether the record itself was in the top-K of one of its questions
    canaries: tuple[str, ...] = ()  # records whose canary the answers carried (config.canaries; else empty)


@dataclass(frozen=True)
class RunResumed(Event):
    """An interrupted run was read back and continues after ``from_round``."""

    kind: ClassVar[str] = "run_resumed"
    from_round: int = 0
    previous_status: str = ""
    dropped_bytes: int = 0  # a torn last line left by a crash, dropped when the run was read back


@dataclass(frozen=True)
class DetectorFitted(Event):
    """A detector fitted on clean anchors: its parameters, how many anchors, and the flagging threshold used
    with both candidates (in-sample, out-of-fold)."""

    kind: ClassVar[str] = "detector_fitted"
    detector: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    n_anchors: int = 0
    threshold: float = 0.0
    threshold_in_sample: float = 0.0
    threshold_out_of_fold: float = 0.0
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DetectorScored(Event):
    """Scores of held-out clean documents (label 0) and poisons (label 1)."""

    kind: ClassVar[str] = "detector_scored"
    detector: str = ""
    doc_ids: tuple[str, ...] = ()
    scores: tuple[float, ...] = ()
    labels: tuple[int, ...] = ()
    flagged: tuple[bool, ...] = ()


@dataclass(frozen=True)
class DetectorSkipped(Event):
    """A detector that could not be evaluated in this run (e.g. a sparse retriever, too few anchors), and why."""

    kind: ClassVar[str] = "detector_skipped"
    detector: str = ""
    reason: str = ""


@dataclass(frozen=True)
class CleanupChecked(Event):
    """Planted documents were removed from the target again: which (the ids the target stored them under), and
    whether the target confirmed them gone (``verified``: True, False, or None when it cannot tell)."""

    kind: ClassVar[str] = "cleanup_checked"
    round: int = 0
    doc_ids: tuple[str, ...] = ()
    verified: bool | None = None


@dataclass(frozen=True)
class RunEnded(Event):
    """Last event of a run: its status and the summary."""

    kind: ClassVar[str] = "run_ended"
    status: str = "completed"
    summary: Mapping[str, Any] = field(default_factory=dict)


def _jsonable(v: Any) -> Any:
    """Plain JSON values: tuples → lists, numpy scalars → Python, NaN → null."""
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if hasattr(v, "item") and callable(v.item):  # numpy scalars
        return _jsonable(v.item())
    return v


jsonable = _jsonable


def event_to_json(e: Event) -> str:
    """One event as a single JSON line (no newline): tuples as lists, NaN as null, numpy scalars as numbers."""
    return json.dumps(_jsonable(e.to_dict()), ensure_ascii=False)


def event_from_dict(d: Mapping[str, Any]) -> Event:
    """Rebuild an event from its dict (``kind`` picks the class); lists become tuples, unknown fields are dropped."""
    d = dict(d)
    cls = EVENT_TYPES[d.pop("kind")]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for k, v in d.items():
        if k in fields:
            kwargs[k] = tuple(v) if isinstance(v, list) else v
    return cls(**kwargs)


def write_jsonl(events: Iterable[Event], path) -> None:
    """Write ``events`` to ``path`` as JSONL, one event a line (overwrites the file)."""
    with open(path, "w", encoding="utf-8") as f:
        for e in events:
            f.write(event_to_json(e) + "\n")


def read_events(path) -> tuple[list[Event], int]:
    """The events of a run file (``events.jsonl``, or a gzipped ``events.jsonl.gz``) and how many bytes of a
    torn last line were dropped.

    A process killed while writing leaves a partial last line: it is dropped (every complete event is
    kept). Anything else — binary data, a damaged line before the end, an unknown event kind — raises
    :class:`RunFileError` with one clear line naming the file and the line.
    """
    from .errors import RunFileError

    try:
        if str(path).endswith(".gz"):  # a run kept gzipped in git, read without unpacking it beside
            import gzip

            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            raw = open(path, "rb").read()
    except OSError as e:
        raise RunFileError(f"{path}: cannot read the events file ({e.strerror or e})") from None
    if b"\x00" in raw[:65536]:
        raise RunFileError(f"{path}: not an events file (binary data)")
    lines = raw.split(b"\n")
    last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
    events: list[Event] = []
    dropped = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            d = json.loads(line.decode("utf-8"))
            if not isinstance(d, dict) or "kind" not in d:
                raise ValueError("not an event object")
            if d["kind"] not in EVENT_TYPES:
                raise RunFileError(f"{path}: line {i + 1} has an unknown event kind {str(d['kind'])[:40]!r}")
            events.append(event_from_dict(d))
        except RunFileError:
            raise
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            if i == last:  # a torn last line: the writer died mid-line
                dropped = len(line)
                continue
            raise RunFileError(
                f"{path}: line {i + 1} is damaged (not a complete event); the run cannot be read past it"
            ) from None
    return events, dropped


def read_jsonl(path) -> list[Event]:
    """The events of a run file (a torn last line is dropped; see :func:`read_events`)."""
    return read_events(path)[0]
