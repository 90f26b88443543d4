"""A defended RAG system: retrieve → defenses by stage → prompt → generate, with every step reported."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ..corpora import Corpus
from ..defenses import Chunk, Defense, DefenseAction, DefenseContext
from ..embedders.base import Retriever
from ..errors import ConfigError
from ..generators.base import Generation, Generator, TextCallback
from ..progress import Progress
from ..store import BaseIndex, RunStore, StoreSettings, shared_base_index
from ..tenancy import TenantScope
from .prompts import PromptTemplate, get_template, render


@dataclass(frozen=True)
class RagAnswer:
    """One question through the pipeline: what was retrieved, what the generator saw, what it said."""

    question: str
    retrieved: tuple[Chunk, ...]  # the raw top-K
    context: tuple[Chunk, ...]  # after retrieval- and context-stage defenses
    messages: tuple[Mapping[str, str], ...]
    answer: str
    generation: Optional[Generation]
    blocked_by: str = ""  # the defense that refused the query, if any
    actions: tuple[DefenseAction, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    context_tokens: int = 0  # generator tokens of the chunks in the context
    answer_budget: int = 0  # the most tokens the answer was allowed
    tenant_dropped: tuple[str, ...] = ()  # other tenants' chunks a post-top-K tenant filter cut (mode "after")

    @property
    def recoverable_tokens(self) -> int:
        """Context tokens the answer could at most reproduce (the budget caps what an answer can copy)."""
        return min(self.context_tokens, self.answer_budget)


ANSWER_BUDGETS = ("context", "fixed")


def covering_budget(context_tokens: int, floor: int) -> int:
    """An answer budget that covers the retrieved context: its tokens + 10% + 32 (room for the model's own
    framing: headers, numbering), never below ``floor``."""
    return max(int(floor), -(-11 * int(context_tokens) // 10) + 32)


def screen_query(
    question: str, defenses: Sequence[Defense], ctx: DefenseContext
) -> tuple[list[DefenseAction], Defense | None]:
    """Query stage: each query-stage defense's action, and the defense that blocked the question (else None)."""
    actions: list[DefenseAction] = []
    for d in (d for d in defenses if d.stage == "query"):
        a = d.check_query(question, ctx)
        actions.append(a)
        if a.action == "blocked":
            return actions, d
    return actions, None


def defend_context(
    question: str, retrieved: Sequence[Chunk], defenses: Sequence[Defense], ctx: DefenseContext
) -> tuple[list[Chunk], list[DefenseAction]]:
    """Retrieval stage (filters) then context stage (rewrites) over the retrieved chunks: what the generator
    will see, and what each defense did."""
    context, actions = list(retrieved), []
    for stage, hook in (("retrieval", "filter"), ("context", "rewrite")):
        for d in (d for d in defenses if d.stage == stage):
            context, a = getattr(d, hook)(question, context, ctx)
            actions.append(a)
    return context, actions


def prompt_additions(defenses: Sequence[Defense]) -> tuple[list[str], list[DefenseAction]]:
    """Prompt stage: the text each prompt-stage defense adds to the system prompt, and its action."""
    ds = [d for d in defenses if d.stage == "prompt"]
    return [d.system_prompt() for d in ds], [d.action("system-prompt") for d in ds]


def defended_generation(
    question: str,
    messages: Sequence[dict],
    retrieved: Sequence[Chunk],
    context: Sequence[Chunk],
    defenses: Sequence[Defense],
    ctx: DefenseContext,
    generator: Any,
    max_tokens: int,
    on_text: TextCallback | None = None,
) -> tuple[Generation, list[DefenseAction]]:
    """Generation stage: the last generation-stage defense answers (with the retrieved chunks as protected text),
    else the generator; then the output stage screens the answer. Returns the generation (its text as screened)
    and the defenses' actions. With an output-stage defense on, nothing is streamed before the screen: ``on_text``
    gets the screened answer in one piece."""
    gen_stage = [d for d in defenses if d.stage == "generation"]
    out_stage = [d for d in defenses if d.stage == "output"]
    stream = None if out_stage else on_text
    actions: list[DefenseAction] = []
    if not gen_stage:
        gen = generator.chat(messages, max_tokens=max_tokens, on_text=stream)
    else:
        d = gen_stage[-1]
        gen = d.generate(messages, retrieved, ctx, max_tokens, question=question, context=context)
        if stream is not None and gen.text:
            stream(gen.text)
        actions.append(d.action("generated", **{k: v for k, v in gen.info.items() if k != "decisions"}))
    if out_stage:
        import dataclasses

        text = gen.text
        for d in out_stage:
            text, a = d.screen_answer(question, text, retrieved, ctx)
            actions.append(a)
        gen = dataclasses.replace(gen, text=text)
        if on_text is not None and text:
            on_text(text)
    return gen, actions


class RagSystem:
    """A knowledge base indexed under a retriever, a generator, a prompt template and defenses.

    Every system (one per run) searches through its own :class:`RunStore` over the shared,
    read-only base index (or over the run's own re-indexed copy when ``reindex`` is on), so runs
    never touch each other's collections.
    """

    def __init__(
        self,
        corpus: Corpus,
        retriever: Retriever,
        generator: Optional[Generator],
        defenses: Sequence[Defense] = (),
        *,
        top_k: int = 5,
        template: str | PromptTemplate = "rag-privacy",
        max_tokens: int = 128,
        settings: StoreSettings | None = None,
        run_id: str | None = None,
        answer_budget: str = "fixed",
        tenant: TenantScope | None = None,
    ) -> None:
        if len(corpus) == 0:
            raise ConfigError(f"the knowledge base {corpus.name!r} is empty: nothing to retrieve")
        self.corpus = corpus
        self.retriever = retriever
        self.generator = generator
        self.defenses = list(defenses)
        self.top_k = top_k
        self.template = template if isinstance(template, PromptTemplate) else get_template(template)
        self.max_tokens = max_tokens
        if answer_budget not in ANSWER_BUDGETS:
            raise ConfigError(f"answer_budget must be one of {', '.join(ANSWER_BUDGETS)}")
        self.answer_budget = answer_budget
        self.settings = settings
        self.run_id = run_id
        self.tenant = tenant  # multi-tenant KB: who asks and how retrieval enforces it (engine/tenancy.py)
        self.ctx = DefenseContext(corpus, retriever, generator, settings)
        self.index: BaseIndex | None = None
        self.store: RunStore | None = None
        self._text = {d.id: d.text for d in corpus.documents}
        if generator is None and not any(d.stage == "generation" for d in self.defenses):
            raise ConfigError("a RAG system needs a generator")

    def by_stage(self, stage: str) -> list[Defense]:
        """The defenses of one stage, in the order they were given."""
        return [d for d in self.defenses if d.stage == stage]

    def build(self, progress: Progress | None = None) -> list[DefenseAction]:
        """Index the knowledge base (cached), then let index-stage defenses replace the index."""
        self.ctx.progress = progress
        index = shared_base_index(self.corpus, self.retriever, settings=self.settings, progress=progress)
        actions = []
        for d in self.by_stage("index"):
            index, a = d.reindex(index, self.ctx)
            actions.append(a)
        self.index = index
        self.store = RunStore(index, settings=self.settings, run_id=self.run_id)
        return actions

    def close(self) -> None:
        """Drop the run's overlay store; the shared base index is kept."""
        if self.store is not None:
            self.store.close()

    def retrieve(self, question: str) -> list[Chunk]:
        """The raw top-K chunks for ``question``, before any defense (builds the index on first use); in a
        multi-tenant system, those its tenant filter lets through."""
        return self._retrieve(question)[0]

    def _retrieve(self, question: str) -> tuple[list[Chunk], tuple[str, ...]]:
        """The top-K as :meth:`retrieve` returns it, and the other tenants' chunks a post-top-K filter cut."""
        if self.store is None:
            self.build()
        scope = self.tenant
        inside = scope is not None and scope.mode == "inside"
        res = self.store.search([question], self.top_k, tenant=scope.identity if inside else None)[0]
        hits, dropped = list(res.hits), ()
        if scope is not None and scope.mode == "after":  # the filter applied to the finished top-K
            dropped = tuple(scope.foreign(h.doc_id for h in hits))
            hits = [h for h in hits if h.doc_id not in dropped]
        chunks = [
            Chunk(h.doc_id, self._text.get(h.doc_id) or self.store.text_of(h.doc_id), float(h.score), h.rank)
            for h in hits
        ]
        return chunks, dropped

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Generator tokens of ``texts`` (the generator's own tokenizer; an estimate for remote models)."""
        if self.generator is None:  # a generation-stage defense answers alone: estimate
            return sum(max(1, round(len(t.split()) * 4 / 3)) for t in texts if t.strip())
        return sum(self.generator.count_tokens(t) for t in texts)

    def answer(
        self,
        question: str,
        *,
        options: Mapping[str, str] | None = None,
        template: PromptTemplate | None = None,
        max_tokens: int | None = None,
        on_text: TextCallback | None = None,
    ) -> RagAnswer:
        """One question through the pipeline. ``on_text`` receives the answer piece by piece as it is
        generated (a refusal or a non-streaming defense delivers it in one piece)."""
        t0 = time.perf_counter()
        actions, blocker = screen_query(question, self.defenses, self.ctx)
        if blocker is not None:
            refusal = str(actions[-1].detail.get("refusal", ""))
            if on_text is not None and refusal:
                on_text(refusal)
            return RagAnswer(
                question,
                (),
                (),
                (),
                refusal,
                None,
                blocked_by=blocker.name,
                actions=tuple(actions),
                timings={"defenses": time.perf_counter() - t0},
            )
        t1 = time.perf_counter()
        retrieved, dropped = self._retrieve(question)
        t_retrieval = time.perf_counter() - t1
        context, acts = defend_context(question, retrieved, self.defenses, self.ctx)
        actions += acts
        extra, acts = prompt_additions(self.defenses)
        actions += acts
        messages = render(
            template or self.template, question, [c.text for c in context], options=options, extra_system=extra
        )
        t_def = time.perf_counter() - t0 - t_retrieval
        t2 = time.perf_counter()
        n = max_tokens or self.max_tokens
        context_tokens = self.count_tokens([c.text for c in context])
        if self.answer_budget == "context" and max_tokens is None:
            n = covering_budget(context_tokens, n)
        gen, acts = defended_generation(
            question, messages, retrieved, context, self.defenses, self.ctx, self.generator, n, on_text
        )
        actions += acts
        return RagAnswer(
            question,
            tuple(retrieved),
            tuple(context),
            tuple(messages),
            gen.text,
            gen,
            actions=tuple(actions),
            timings={"retrieval": t_retrieval, "defenses": t_def, "generation": time.perf_counter() - t2},
            context_tokens=context_tokens,
            answer_budget=n,
            tenant_dropped=dropped,
        )
