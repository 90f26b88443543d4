"""What a defense costs: multiple-choice accuracy (ACC) and faithfulness of answers to their context.

* **ACC** — share of multiple-choice questions whose parsed answer letter equals the gold one.
  MIRAGE sets carry their options; the bundled clinic-handbook questions have a free-text gold
  answer, so their options are that answer plus three other answers of the same question set,
  drawn with a seed (:func:`mc_options`; documented choice).
* **Faithfulness** — share of answer sentences supported by the retrieved context. A sentence is
  supported when at least ``support`` (default 0.5) of its content words (lower-cased, stemmed,
  stop words removed) occur in the context (lexical support, cheap and deterministic). With
  ``judge`` (any generator, e.g. through litellm) an LLM decides instead, sentence by sentence
  (yes/no). Answers with no sentence count as fully faithful (nothing unsupported was said).

ACC comes with its Wilson 95% interval (``acc_ci``). A long evaluation can keep a record (``record``: a JSONL
file, one graded question a line, appended as each is answered): run again with the same record and the
questions already answered are read back, not asked again.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from ..generators.base import Generator
from ..metrics.intervals import wilson
from ..progress import Progress
from ..types import Query
from .prompts import get_template
from .system import RagSystem

LETTERS = "ABCDEFGH"


def mc_options(query: Query, pool: Sequence[Query], seed: int = 0, n: int = 4) -> tuple[dict[str, str], str] | None:
    """(options, gold letter) for a query: its own options, or gold + distractors from ``pool``."""
    md = query.metadata
    opts = md.get("options")
    if opts and md.get("answer") in opts:
        return {str(k): str(v) for k, v in opts.items()}, str(md["answer"])
    gold = md.get("answer")
    if not isinstance(gold, str) or not gold.strip():
        return None
    others = sorted(
        {str(q.metadata.get("answer")) for q in pool if q.id != query.id and isinstance(q.metadata.get("answer"), str)}
        - {gold}
    )
    if len(others) < n - 1:
        return None
    rng = random.Random(f"{seed}:{query.id}")
    choices = rng.sample(others, n - 1) + [gold]
    rng.shuffle(choices)
    letters = LETTERS[:n]
    return dict(zip(letters, choices)), letters[choices.index(gold)]


def parse_choice(text: str, options: Mapping[str, str]) -> Optional[str]:
    """The option letter an answer commits to: a leading/standalone letter, or an option's text."""
    letters = "".join(options)
    t = text.strip()
    m = (
        re.match(rf"^\W*\(?([{letters}])\b", t)
        or re.search(rf"answer(?: is)?\W*\(?([{letters}])\b", t, re.I)
        or re.search(rf"(?<![A-Za-z])([{letters}])(?:[).:]|\s*$)", t)
    )
    if m:
        return m.group(1)
    low = t.lower()
    found = [k for k, v in options.items() if v.lower() in low]
    return found[0] if len(found) == 1 else None


_STOP = frozenset(
    """a an the and or of to in on for with by at from as is are was were be been being it its this that
these those you your i we he she they them his her our their not no do does did can could would should will may
might must have has had there here what which who whom when where why how than then so if but also just more most
very please yes about into over under""".split()
)


def _content_words(text: str) -> list[str]:
    from rouge_score.tokenize import tokenize
    from nltk.stem import porter  # rouge-score's own dependency

    stem = porter.PorterStemmer().stem
    return [stem(w) for w in tokenize(text, None) if w not in _STOP and len(w) > 1]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (split after . ! ? and at newlines); fragments under three words are dropped."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip().split()) >= 3]


def faithfulness(answer: str, context: Sequence[str], *, support: float = 0.5, judge: Generator | None = None) -> float:
    """Share of answer sentences supported by the context (see the module docstring)."""
    sents = split_sentences(answer)
    if not sents:
        return 1.0
    ctx = "\n".join(context)
    if judge is not None:
        ok = 0
        for s in sents:
            g = judge.chat(
                [
                    {"role": "system", "content": "You check facts. Reply yes or no only."},
                    {
                        "role": "user",
                        "content": f"Context:\n{ctx}\n\nClaim: {s}\n\nIs the claim supported by the context?",
                    },
                ],
                max_tokens=3,
            )
            ok += g.text.strip().lower().startswith("yes")
        return ok / len(sents)
    vocab = set(_content_words(ctx))
    supported = 0
    for s in sents:
        words = _content_words(s)
        if not words or sum(w in vocab for w in words) / len(words) >= support:
            supported += 1
    return supported / len(sents)


@dataclass(frozen=True)
class UtilityItem:
    """One honest question graded: options, gold and predicted letters (None without options), the answer and
    its faithfulness."""

    query_id: str
    question: str
    options: Mapping[str, str]
    gold: Optional[str]
    predicted: Optional[str]
    answer: str
    faithfulness: float
    blocked: bool


def read_record(record: Path | None) -> dict[str, UtilityItem]:
    """The questions a record already holds, by query id (a line cut short by a kill is skipped: that
    question is asked again)."""
    if record is None or not record.is_file():
        return {}
    done: dict[str, UtilityItem] = {}
    for line in record.read_text(encoding="utf-8").splitlines():
        try:
            item = UtilityItem(**json.loads(line))
        except (ValueError, TypeError):
            continue
        done[item.query_id] = item
    return done


def evaluate_utility(
    system: RagSystem,
    queries: Sequence[Query],
    *,
    seed: int = 0,
    limit: int | None = None,
    judge: Generator | None = None,
    max_tokens: int = 48,
    progress: Progress | None = None,
    record: str | Path | None = None,
    stop: Callable[[], bool] | None = None,
) -> dict:
    """ACC (with its Wilson interval) and faithfulness of ``system`` over ``queries`` (multiple choice where
    options exist); ``record`` keeps each graded question and resumes from it (see the module docstring).
    When ``stop()`` turns true, the evaluation ends before its next question and the result says
    ``stopped: True`` (its figures then cover only the questions answered)."""
    mcq = get_template("mcq")
    path = Path(record) if record is not None else None
    done = read_record(path)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            with path.open("a", encoding="utf-8") as f:  # a line cut short by a kill stays alone (and skipped)
                f.write("\n")
    items: list[UtilityItem] = []
    todo = list(queries)[: limit or None]
    halted = False
    for i, q in enumerate(todo):
        item = done.get(q.id)
        if item is None and stop is not None and stop():
            halted = True
            break
        if item is None:
            mc = mc_options(q, queries, seed)
            opts, gold = mc if mc else ({}, None)
            ans = system.answer(q.text, options=opts or None, template=mcq if opts else None, max_tokens=max_tokens)
            pred = parse_choice(ans.answer, opts) if opts else None
            faith = 1.0 if ans.blocked_by else faithfulness(ans.answer, [c.text for c in ans.context], judge=judge)
            item = UtilityItem(q.id, q.text, opts, gold, pred, ans.answer, faith, bool(ans.blocked_by))
            if path is not None:
                with path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(asdict(item)) + "\n")
        items.append(item)
        if progress:
            progress("answering", i + 1, len(todo))
    graded = [it for it in items if it.gold is not None]
    correct = sum(it.predicted == it.gold for it in graded)
    return {
        "acc": correct / len(graded) if graded else None,
        "acc_ci": list(wilson(correct, len(graded))) if graded else None,
        "faithfulness": sum(it.faithfulness for it in items) / len(items) if items else None,
        "n": len(items),
        "n_graded": len(graded),
        "blocked": sum(it.blocked for it in items),
        "items": items,
        "stopped": halted,
    }


def defended_utility(
    c: Any,
    corpus: str,
    queries: str,
    limit: int | None,
    *,
    progress: Progress | None = None,
    record: str | Path | None = None,
    stop: Callable[[], bool] | None = None,
) -> dict:
    """ACC and faithfulness on ``queries`` over ``corpus`` of the RAG system a run config ``c`` describes (its
    retriever, chunking, generator, defenses, top-K, template, answer length, seed and data dir — an extraction or
    a membership config): the utility a defense configuration keeps, measured the same way for every run kind.
    ``record`` and ``stop``: see :func:`evaluate_utility`."""
    from ..queries import load_queries
    from .configured import configured_system

    data_dir = c.data_dir or None
    system = configured_system(c, corpus)
    try:
        system.build(progress=progress)
        u = evaluate_utility(
            system,
            load_queries(queries, data_dir=data_dir),
            seed=c.seed,
            limit=limit,
            progress=progress,
            record=record,
            stop=stop,
        )
    finally:
        system.close()
    return {k: u[k] for k in ("acc", "acc_ci", "faithfulness", "n", "n_graded", "blocked", "stopped")}
