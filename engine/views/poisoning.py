"""What the poisoning lab shows of a round's answer, from the run's events (pure data)."""

from __future__ import annotations

import re
from typing import Any, Sequence

from ..events import AnswerScored, ContextDefended, DefenseApplied, Event, Generated, Retrieved


def item_segments(text: str, items: Sequence[str]) -> list[tuple[str, bool]]:
    """``text`` cut into (piece, marked) pairs, marked = an occurrence of one of ``items`` (case-insensitive,
    any whitespace), so the page can highlight the attacker's information in an answer."""
    pats = [
        r"\s+".join(re.escape(w) for w in it.split()) for it in sorted(set(items), key=len, reverse=True) if it.strip()
    ]
    if not pats:
        return [(text, False)] if text else []
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in re.finditer("|".join(pats), text, flags=re.IGNORECASE):
        if m.start() > pos:
            out.append((text[pos : m.start()], False))
        out.append((m.group(0), True))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], False))
    return out


def answer_view(events: Sequence[Event], round_: int) -> dict[str, Any] | None:
    """The answer of one attacked question and its verdict: text, marked segments, goal, matched items,
    whether it carries the target, the judge's verdict, model and seconds; None when the round has no answer."""
    gen = next((e for e in events if isinstance(e, Generated) and e.round == round_), None)
    if gen is None:
        return None
    sc = next((e for e in events if isinstance(e, AnswerScored) and e.round == round_), None)
    matched = sc.matched if sc else ()
    return {
        "answer": gen.text,
        "segments": item_segments(gen.text, matched),
        "goal": sc.goal if sc else (),
        "matched": matched,
        "carried": bool(sc and sc.carried),
        "judge": sc.judge if sc else "",
        "poison_in_context": bool(sc and sc.poison_in_context),
        "model": gen.model,
        "seconds": gen.seconds,
        # jamming: the same question answered without its blocker (engine.metrics.poisoning.denial_verdict)
        "clean_answer": (gen.info or {}).get("clean_answer"),
        "clean_refused": bool((gen.info or {}).get("clean_refused")),
        "clean_recall": (gen.info or {}).get("clean_recall"),
    }


def defense_view(events: Sequence[Event], round_: int) -> dict[str, Any] | None:
    """What the defenses did to one question's top-K: per defense its action and the ids it dropped (poisons
    marked), what reached the generator, and whether the poison did; None when no defense ran."""
    kept = next((e for e in events if isinstance(e, ContextDefended) and e.round == round_), None)
    if kept is None:
        return None
    ret = next((e for e in events if isinstance(e, Retrieved) and e.round == round_), None)
    poison = set(ret.target_ids) if ret else set()
    acts = []
    for e in events:
        if isinstance(e, DefenseApplied) and e.round == round_:
            dropped = tuple(str(x) for x in (e.detail or {}).get("dropped", ()))
            acts.append(
                {
                    "defense": e.defense,
                    "stage": e.stage,
                    "action": e.action,
                    "dropped": dropped,
                    "poison_dropped": bool(poison & set(dropped)),
                }
            )
    return {
        "actions": acts,
        "kept": kept.kept_ids,
        "blocked_by": kept.blocked_by,
        "poison_passed": bool(poison & set(kept.kept_ids)),
        "poison_retrieved": bool(ret and any(ret.is_poison)),
    }
