"""Runs: typed events, the poisoning runner, JSONL export."""
from .events import EVENT_TYPES, Event, event_from_dict, event_to_json, read_jsonl, write_jsonl


def __getattr__(name: str):
    # the runner imports metrics, which import events: load it lazily to keep imports acyclic
    if name in ("PoisoningRun", "summarize"):
        from . import poisoning
        return getattr(poisoning, name)
    raise AttributeError(name)


__all__ = ["EVENT_TYPES", "Event", "PoisoningRun", "event_from_dict", "event_to_json", "read_jsonl", "summarize",
           "write_jsonl"]
