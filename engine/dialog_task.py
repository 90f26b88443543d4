"""A knowledge base's own task: multiple-choice questions built from its dialog records.

RAGFort reports the accuracy of the defended system on the attacked knowledge base's own task (its table
"Impact on system performance": ACC before / after on HealthCareMagic, 61–70% undefended), without saying how
those questions were made. Our construction (a documented choice; query spec ``dialogs:<kb>``):

* A record that reads ``Patient: <question> Doctor: <reply>`` (or another pair of :data:`SPEAKERS`) gives one
  question: the first speaker's turn, asked as it is.
* Its options are four replies: the record's own (its opening :data:`OPTION_WORDS` words, after greeting
  sentences such as "Hello, thanks for your query") and those of the three records whose first turns are the
  most similar to this one (TF-IDF cosine over the KB's questions). These are hard distractors: other patients
  with the same complaint, answered differently, so the topic alone does not pick the right reply.
* The option order is shuffled with a seed per record; the gold letter and the record's id go in the metadata.

Closed-book the task is near chance (one in four). A RAG system that retrieves the record and reads it can answer
it, so the task measures both halves a defense may cost: retrieval (contrastive reindexing moves what the top-K
holds) and generation (a cascade or a summary rewrites what the model reads and writes). Replies are compared as
written; no model builds or grades the questions.
"""

from __future__ import annotations

import random
import re
from typing import Sequence

from .errors import CorpusError
from .types import Document, Query

PREFIX = "dialogs:"
SPEAKERS = (("Patient", "Doctor"), ("User", "Assistant"), ("Human", "Assistant"), ("Question", "Answer"))
OPTION_WORDS = 40  # words of each reply shown as an option
DISTRACTORS = 3
_GREETING = re.compile(
    r"\b(hi|hello|hey|dear|thanks?|thank you|welcome|greetings|regards|chat ?doctor|hcm)\b", re.IGNORECASE
)


def split_dialog(text: str) -> tuple[str, str] | None:
    """(first turn, reply) of a two-speaker record, or None when it is not one."""
    for ask, answer in SPEAKERS:
        m = re.match(rf"\s*{ask}\s*:\s*(.+?)\s+{answer}\s*:\s*(.+)\Z", text, re.DOTALL | re.IGNORECASE)
        if m and m.group(1).strip() and m.group(2).strip():
            return m.group(1).strip(), m.group(2).strip()
    return None


def reply_option(reply: str, words: int = OPTION_WORDS) -> str:
    """The opening ``words`` words of a reply, after up to three short greeting sentences ("Hi, thanks for
    the query."), ending in "…" when cut."""
    sentences = re.split(r"(?<=[.!?])\s+", reply.strip())
    for _ in range(3):
        if len(sentences) > 1 and len(sentences[0].split()) < 15 and _GREETING.search(sentences[0]):
            sentences = sentences[1:]
    ws = " ".join(sentences).split()
    return " ".join(ws[:words]) + (" …" if len(ws) > words else "")


def dialog_questions(
    documents: Sequence[Document], *, kb: str, seed: int = 0, option_words: int = OPTION_WORDS
) -> list[Query]:
    """One multiple-choice question per dialog record of ``documents`` (whole records, not chunks), in their
    order (see the module docstring). A KB without dialog records is one clear error."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    pairs = [(d, split_dialog(d.text)) for d in documents]
    dialogs = [(d, p[0], reply_option(p[1], option_words)) for d, p in pairs if p is not None]
    if len(dialogs) < DISTRACTORS + 1:
        labels = ", ".join(f"{a}: … {b}: …" for a, b in SPEAKERS)
        raise CorpusError(
            f"{kb}: {len(dialogs)} dialog record(s); the task '{PREFIX}{kb}' needs at least {DISTRACTORS + 1} "
            f"records that read like {labels}"
        )
    x = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform([q for _, q, _ in dialogs])
    out: list[Query] = []
    block = 256
    for start in range(0, len(dialogs), block):
        sims = (x[start : start + block] @ x.T).toarray()
        for row, i in enumerate(range(start, min(start + block, len(dialogs)))):
            doc, question, gold = dialogs[i]
            distractors: list[str] = []
            for j in sims[row].argsort()[::-1]:
                reply = dialogs[int(j)][2]
                if int(j) != i and reply != gold and reply not in distractors:
                    distractors.append(reply)
                    if len(distractors) == DISTRACTORS:
                        break
            choices = [gold, *distractors]
            random.Random(f"{seed}:{doc.id}").shuffle(choices)
            letters = "ABCD"[: len(choices)]
            out.append(
                Query(
                    f"task-{doc.id}",
                    question,
                    {
                        "options": dict(zip(letters, choices)),
                        "answer": letters[choices.index(gold)],
                        "gold_ids": (doc.id,),
                        "set": f"{PREFIX}{kb}",
                    },
                )
            )
    return out


def load_dialog_questions(spec: str, *, data_dir: str | None = None) -> list[Query]:
    """The questions of ``dialogs:<kb>``: the KB (a bundled name, a benchmark name or a path) read whole
    (unchunked) and turned into :func:`dialog_questions`."""
    from .corpora import load_corpus

    kb = spec[len(PREFIX) :].strip()
    if not kb:
        raise CorpusError(f"{spec!r}: name the knowledge base after '{PREFIX}' (e.g. {PREFIX}healthcaremagic)")
    corpus = load_corpus(kb, data_dir=data_dir, chunk_size=None)
    return dialog_questions(corpus.documents, kb=kb)
