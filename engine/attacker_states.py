"""The extraction agent's state after every round, stored as deltas.

An agent's state grows with the run (RAG-Thief's long-term memory, Worm's embeddings of every chunk it
extracted and its drift history). Writing the whole state after every round made the events log grow with the
square of the rounds: a 200-round Worm run wrote 287 MB (4.3 MB as deltas), nearly all of it the same vectors
again. So an ``attacker_state`` event carries, for every list that only grew since the previous round (its old items
unchanged, new ones at the end), just the new items under ``appended``; everything else is written whole in
``state``. The full state of a round is the fold of the events up to it (:func:`full_states`); the first
event of a run, and every event of runs written before this format, are whole (``appended`` empty), so old
logs read unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Iterator, Mapping

from .events import AttackerState, Event


def state_delta(previous: Mapping[str, Any] | None, state: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list]]:
    """(whole part, appended part) of ``state`` relative to ``previous`` (both JSON-ready): a list value that
    starts with the previous round's list goes to the appended part as its new items only."""
    whole: dict[str, Any] = {}
    appended: dict[str, list] = {}
    for key, value in state.items():
        old = previous.get(key) if previous is not None else None
        if isinstance(value, list) and isinstance(old, list) and len(value) >= len(old) and value[: len(old)] == old:
            appended[key] = value[len(old) :]
        else:
            whole[key] = value
    return whole, appended


def apply_delta(previous: Mapping[str, Any] | None, event: AttackerState) -> dict[str, Any]:
    """The full state after ``event``, given the full state before it."""
    full = dict(event.state)
    for key, items in event.appended.items():
        if previous is None or not isinstance(previous.get(key), (list, tuple)):
            raise ValueError(
                f"attacker_state of round {event.round} appends to {key!r}, which the previous "
                f"state does not hold: the events log is missing an earlier round"
            )
        full[key] = list(previous[key]) + list(items)
    return full


def _folded(events: Iterable[Event]) -> Iterator[tuple[Event, dict[str, Any] | None, dict[str, Any] | None]]:
    """Every event with, for an ``attacker_state``, the full states before and after it (else None, None)."""
    current: dict[str, Any] | None = None
    for e in events:
        if isinstance(e, AttackerState):
            before, current = current, apply_delta(current, e)
            yield e, before, current
        else:
            yield e, None, None


def full_states(events: Iterable[Event]) -> dict[int, dict[str, Any]]:
    """Round → the agent's full state after it, folded over the run's ``attacker_state`` events."""
    return {e.round: after for e, _, after in _folded(events) if after is not None}


def last_state(events: Iterable[Event]) -> tuple[str, int, dict[str, Any]]:
    """(agent, round, full state) after the last ``attacker_state`` event; ("", 0, {}) before the first."""
    last = ("", 0, {})
    for e, _, after in _folded(events):
        if after is not None:
            last = (e.agent, e.round, after)
    return last


def as_deltas(events: Iterable[Event]) -> list[Event]:
    """The same events with every ``attacker_state`` rewritten as a delta against the round before (a log
    written whole, before this format, shrinks to the size it would have had; nothing else changes and
    :func:`full_states` gives the same states)."""
    out: list[Event] = []
    for e, before, after in _folded(events):
        if after is not None:
            whole, appended = state_delta(before, after)
            e = replace(e, state=whole, appended=appended)
        out.append(e)
    return out
