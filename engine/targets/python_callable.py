"""A Python callable in the user's environment as a target: a LlamaIndex query engine, or any function.

``callable`` is ``module:attribute`` (the attribute may be dotted: ``app.rag:engine.query``). What it names
is used as follows: an object with ``query`` (a LlamaIndex query engine) is asked through ``query``, one with
``chat`` through ``chat``, anything else is called with the query text. With ``factory`` on, the attribute is
called with no arguments and what it returns is used (a function that builds the engine) — once, and again after
every ``ingest`` and ``remove`` (an engine built before a write may not search what it wrote).

What the call returns may be: a string (the answer); a pair ``(answer, contexts)``; a dict with the answer
under ``answer`` / ``response`` / ``output`` / ``text`` and contexts under ``contexts`` / ``sources`` /
``source_nodes``; or a LlamaIndex ``Response`` (``.response`` and ``.source_nodes``). Contexts may be strings,
dicts with a text and an id, or LlamaIndex nodes. The optional ``ingest`` / ``remove`` / ``exists`` callables
open the knowledge base to poisoning: ``ingest(docs)`` gets a list of ``{"id", "text", "metadata"}`` dicts
and may return the ids it stored them under, ``remove(ids)`` removes them, ``exists(ids)`` returns one bool
per id.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ConfigError
from ..params import Params, param
from ..progress import Progress
from ..secrets import scrub
from ..types import Document
from .base import ID_KEYS, TEXT_KEYS, Target, TargetReply, as_sources, timed_reply
from .http_client import TargetError

EXAMPLE_MODULE = "examples.llamaindex_rag"  # the documented LlamaIndex example: the default callable

KB_WRITE = "Knowledge-base write surface (poisoning)"
_ANSWER_KEYS = ("answer", "response", "output", "text", "result")
_CONTEXT_KEYS = ("contexts", "sources", "source_nodes", "context", "documents")


def _check_spec(spec: str, what: str) -> None:
    module, _, attr = (spec or "").partition(":")
    if not module.strip() or not attr.strip():
        raise ConfigError(f"{what}: write it as module:attribute, e.g. my_rag.app:query_engine")


def load_callable(spec: str, *, path: str = "", what: str = "callable") -> Any:
    """The object ``module:attr.sub`` names (``path`` is put first on ``sys.path``); an import that fails is
    one ConfigError with the reason."""
    _check_spec(spec, what)
    module_name, _, attr = spec.partition(":")
    if path:
        folder = str(Path(path).expanduser().resolve())
        if not Path(folder).is_dir():
            raise ConfigError(f"path: {path!r} is not a folder")
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        obj: Any = importlib.import_module(module_name.strip())
    except Exception as e:  # the user's module: any error it raises on import is theirs to see
        raise ConfigError(
            f"{what} {spec!r}: cannot import {module_name!r} ({type(e).__name__}: {scrub(str(e))[:300]})"
        ) from None
    for part in attr.strip().split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{what} {spec!r}: {module_name!r} has no attribute {part!r}")
        obj = getattr(obj, part)
    return obj


def normalise(result: Any) -> tuple[str, Any, bool]:
    """(answer, contexts or None, whether contexts were reported) from whatever a target callable returned."""
    if isinstance(result, str):
        return result, None, False
    if isinstance(result, tuple) and len(result) == 2:
        return str(result[0] if result[0] is not None else ""), result[1], True
    if isinstance(result, dict):
        answer = next((result[k] for k in _ANSWER_KEYS if k in result), None)
        if answer is None:
            raise TargetError(
                f"the callable returned a dict without an answer (keys: {', '.join(map(str, result))};"
                f" expected one of {', '.join(_ANSWER_KEYS)})"
            )
        key = next((k for k in _CONTEXT_KEYS if k in result), None)
        return str(answer), (result[key] if key else None), key is not None
    if hasattr(result, "response") and hasattr(result, "source_nodes"):  # LlamaIndex Response
        return str(result.response or ""), list(result.source_nodes or []), True
    if hasattr(result, "response"):  # a chat response
        return (
            str(result.response or ""),
            list(getattr(result, "source_nodes", None) or []),
            hasattr(result, "source_nodes"),
        )
    raise TargetError(
        f"the callable returned {type(result).__name__}; return a string, (answer, contexts), a dict "
        f"with 'answer', or a LlamaIndex Response"
    )


class PythonTarget(Target):
    """A Python callable (``module:attr``) — a LlamaIndex query engine or any ``query -> answer`` function.

    Source: this playground (DeepTeam's model callback, extended to contexts and a write surface). See the
    module docstring for what it may be and return; ``examples/llamaindex_rag.py`` is a documented LlamaIndex
    query engine over Chroma and a local GGUF model that this target audits.
    """

    server_side = True  # imports and calls code of the machine it runs on

    class Params(Params):
        callable: str = param(
            "examples.llamaindex_rag:build_query_engine",
            help="module:attribute of the engine or function (dotted attributes allowed); the "
            "default is the documented LlamaIndex example",
        )
        path: str = param("", help="Folder put first on the import path (blank: the current one)")
        factory: bool = param(
            True,
            help="Call the attribute once with no arguments to build the engine (off: "
            "the attribute is the engine or the query function itself)",
        )
        ingest: str = param(
            "",
            group=KB_WRITE,
            help="module:attribute of ingest(docs) (enables poisoning); blank: none — with the default callable, "
            "the example's own",
        )
        remove: str = param(
            "", group=KB_WRITE, help="module:attribute of remove(ids) (blank: the example's own with its callable)"
        )
        exists: str = param(
            "",
            group=KB_WRITE,
            help="module:attribute of exists(ids) -> list of bools (verifies the cleanup; blank: the example's own "
            "with its callable)",
        )

        def validate(self) -> None:
            _check_spec(self.callable, "callable")
            for name in ("ingest", "remove", "exists"):
                if getattr(self, name):
                    _check_spec(getattr(self, name), name)
            if self.ingest and not self.remove:
                raise ConfigError("ingest needs remove: every planted document must be removable")

        def hook(self, name: str) -> str:
            """The ``ingest`` / ``remove`` / ``exists`` callable in effect: the one given; blank with the example's
            callable, the example's own (never with another callable: the audit would plant into the example's
            store and report a clean result for yours)."""
            given = str(getattr(self, name) or "")
            if given or self.callable.partition(":")[0].strip() != EXAMPLE_MODULE:
                return given
            return f"{EXAMPLE_MODULE}:{name}"

    def __init__(self, params: Params, **kw: Any) -> None:
        super().__init__(params, **kw)
        self._fn: Callable[[str], Any] | None = None
        self._factory: Callable[[], Any] | None = None
        self._hooks: dict[str, Callable] = {}

    def open(self, progress: Progress | None = None) -> None:
        if self._fn is None:
            p = self.params
            obj = load_callable(p.callable, path=p.path)
            if p.factory:
                self._factory = obj
                obj = self._build()
            self._fn = self._query_function(obj)
            for name in ("ingest", "remove", "exists"):
                if p.hook(name):
                    self._hooks[name] = load_callable(p.hook(name), path=p.path, what=name)
        super().open(progress)

    def _build(self) -> Any:
        """The engine the factory returns; a factory that needs an argument is a query function (one line)."""
        import inspect

        assert self._factory is not None
        try:
            needs = [
                q
                for q in inspect.signature(self._factory).parameters.values()
                if q.default is q.empty and q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)
            ]
        except (TypeError, ValueError):  # a builtin or C callable without a signature: just call it
            needs = []
        if needs:
            raise ConfigError(
                f"callable {self.params.callable!r} takes {', '.join(q.name for q in needs)}: it looks like the "
                "query function itself — set factory to false (factory: true calls it once with no arguments to "
                "build the engine)"
            )
        return self._call(self._factory, "building the engine")

    def _query_function(self, obj: Any) -> Callable[[str], Any]:
        fn = getattr(obj, "query", None) or getattr(obj, "chat", None) or obj
        if not callable(fn):
            raise ConfigError(
                f"callable {self.params.callable!r} is a {type(obj).__name__}: neither callable nor an "
                "object with query() or chat()"
            )
        return fn

    def _rebuild(self) -> None:
        """After a write, ask the factory for the engine again: a LlamaIndex engine built by ``as_query_engine()``
        searches only the nodes its index held when it was built (``VectorIndexRetriever`` keeps their ids), so a
        document inserted later would never be retrieved by the engine built before it."""
        if self._factory is not None:
            self._fn = self._query_function(self._build())

    def close(self) -> None:
        self._fn = None
        self._factory = None
        self._hooks = {}
        super().close()

    def _call(self, fn: Callable, what: str, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as e:  # the user's code: report it in one line, keep the run resumable
            raise TargetError(f"{what}: the callable raised {type(e).__name__}: {scrub(str(e))[:300]}") from None

    def endpoint(self) -> str:
        return self.params.callable

    def request_preview(self, text: str) -> str:
        p = self.params
        call = f"{p.callable}()" if p.factory else p.callable
        return f"{call}.query({text!r}) (or the call itself, for a function)" if p.factory else f"{call}({text!r})"

    contexts_hint = (
        "return (answer, contexts), a dict with 'contexts' or 'sources', or a LlamaIndex Response (its source_nodes)"
    )

    @property
    def reports_contexts(self) -> bool:
        return True

    def query(self, text: str, *, session: str = "") -> TargetReply:
        if self._fn is None:
            self.open()
        t0 = time.perf_counter()
        answer, contexts, reported = normalise(self._call(self._fn, "the query", text))
        return timed_reply(t0, answer, as_sources(contexts, TEXT_KEYS, ID_KEYS), reported)

    @property
    def can_write(self) -> bool:
        return bool(self.params.hook("ingest"))

    @property
    def can_verify(self) -> bool:
        return bool(self.params.hook("exists"))

    def ingest(self, docs: Sequence[Document]) -> list[str]:
        if not self.can_write:
            return super().ingest(docs)
        if self._fn is None:
            self.open()
        got = self._call(
            self._hooks["ingest"],
            "planting documents",
            [{"id": d.id, "text": d.text, "metadata": dict(d.metadata)} for d in docs],
        )
        ids = [str(i) for i in got] if isinstance(got, (list, tuple)) else [d.id for d in docs]
        if len(ids) != len(docs):
            raise TargetError(f"ingest returned {len(ids)} id(s) for {len(docs)} document(s)")
        self._rebuild()
        return ids

    def remove(self, ids: Sequence[str]) -> None:
        if "remove" not in self._hooks and self.params.hook("remove"):
            self.open()
        if "remove" not in self._hooks:
            return super().remove(ids)
        self._call(self._hooks["remove"], "removing planted documents", list(ids))
        self._rebuild()

    def exists(self, ids: Sequence[str]) -> list[bool] | None:
        if "exists" not in self._hooks and self.params.hook("exists"):
            self.open()
        if "exists" not in self._hooks:
            return None
        got = self._call(self._hooks["exists"], "checking planted documents", list(ids))
        return [bool(x) for x in got]
