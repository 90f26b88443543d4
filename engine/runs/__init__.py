"""Runs: the poisoning and extraction runners over the typed events of :mod:`engine.events`."""

from ..events import EVENT_TYPES, Event, event_from_dict, event_to_json, read_jsonl, write_jsonl
from .poisoning import PoisoningRun, summarize

__all__ = [
    "EVENT_TYPES",
    "Event",
    "PoisoningRun",
    "event_from_dict",
    "event_to_json",
    "read_jsonl",
    "summarize",
    "write_jsonl",
]
