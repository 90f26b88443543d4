"""Any JSON-over-HTTP RAG endpoint as a target, with optional ingest / delete endpoints for poisoning."""

from __future__ import annotations

import json

import time
import uuid
from typing import Any, Mapping, Sequence

from ..errors import ConfigError
from ..params import Params, param
from ..progress import Progress
from ..types import Document
from .base import ID_KEYS, TEXT_KEYS, SourceItem, Target, TargetReply, as_sources, timed_reply
from .credentials import check_headers, resolve_headers, secret_values
from .http_client import HttpClient, TargetError, check_url
from .json_path import extract, parse_path
from .templates import fill, fill_url, parse_body, uses

CONNECTION = "Connection"
KB_WRITE = "Knowledge-base write surface (poisoning)"
METHODS = ("POST", "GET", "PUT")


class RemoteParams(Params):
    """What every remote target shares: credentials by name, limits, and the optional write surface."""

    headers: Mapping[str, Any] | None = param(
        None,
        group=CONNECTION,
        help="Request headers as JSON; name "
        'credentials as ${VAR}, e.g. {"Authorization": "Bearer ${RAG_KEY}"}'
        " — the value comes from the environment or the app's key field",
    )
    timeout: float = param(60.0, min=1.0, max=3600.0, group=CONNECTION, help="Seconds for one whole response")
    retries: int = param(
        4,
        min=0,
        max=20,
        group=CONNECTION,
        help="Retries on 429 / 5xx / a dropped connection (exponential backoff, Retry-After honoured)",
    )
    max_retry_wait: float = param(
        60.0,
        min=0.0,
        max=3600.0,
        group=CONNECTION,
        help="Longest single wait a Retry-After may ask for (longer: the run stops)",
    )
    rate: float = param(2.0, min=0.01, max=1000.0, group=CONNECTION, help="Most requests a second (every kind)")
    max_requests: int = param(
        2000,
        min=1,
        max=10_000_000,
        group=CONNECTION,
        help="Request budget of one audit process (queries, plants, removals, retries)",
    )
    max_response_bytes: int = param(
        2_000_000,
        min=1024,
        max=500_000_000,
        group=CONNECTION,
        help="Largest response read; a bigger one is cut off and reported",
    )
    ingest_url: str = param(
        "", group=KB_WRITE, help="Endpoint that adds a document (enables poisoning), e.g. http://host/documents"
    )
    ingest_method: str = param("POST", choices=METHODS, group=KB_WRITE, help="HTTP method of ingest_url")
    ingest_body: str = param(
        '{"id": "{id}", "text": "{text}"}',
        group=KB_WRITE,
        help="JSON body of one plant: {id} (the audit's own id), {text}, {metadata}",
    )
    ingest_ids_path: str = param(
        "",
        group=KB_WRITE,
        help="Where the ingest response gives the stored id when the "
        "service assigns its own (blank: the audit's id is kept)",
    )
    delete_url: str = param(
        "", group=KB_WRITE, help="Endpoint that removes a document, with {id}, e.g. http://host/documents/{id}"
    )
    delete_method: str = param("DELETE", choices=("DELETE", "POST"), group=KB_WRITE, help="HTTP method of delete_url")
    delete_body: str = param("", group=KB_WRITE, help='JSON body of a removal (optional), e.g. {"ids": "{ids}"}')
    exists_url: str = param(
        "",
        group=KB_WRITE,
        help="Endpoint answering 200 while a document exists and 404 once removed, with {id} (verifies the cleanup)",
    )

    def validate(self) -> None:
        check_headers(self.headers)
        if self.ingest_url:
            check_url(self.ingest_url, what="ingest_url")
            parse_body(self.ingest_body, what="ingest_body", needs=("text",))
            if not self.delete_url:
                raise ConfigError("ingest_url needs delete_url: every planted document must be removable")
        if self.delete_url:
            check_url(self.delete_url, what="delete_url")
            if not (uses(self.delete_url, "id") or uses(self.delete_body, "id") or uses(self.delete_body, "ids")):
                raise ConfigError("delete_url: put {id} in the URL or {id}/{ids} in delete_body")
            parse_body(self.delete_body, what="delete_body")
        if self.exists_url:
            check_url(self.exists_url, what="exists_url")
            if not uses(self.exists_url, "id"):
                raise ConfigError("exists_url: put {id} in the URL")
        if self.ingest_ids_path:
            parse_path(self.ingest_ids_path)


class RemoteTarget(Target):
    """A target behind HTTP: one bounded :class:`HttpClient`, and the ingest / delete / exists endpoints."""

    def __init__(self, params: Params, **kw: Any) -> None:
        super().__init__(params, **kw)
        self.client: HttpClient | None = None
        self.session_id = ""

    def open(self, progress: Progress | None = None) -> None:
        if self.client is None:
            p = self.params
            self.client = HttpClient(
                headers=resolve_headers(p.headers, self.secrets),
                timeout=p.timeout,
                retries=p.retries,
                max_retry_wait=p.max_retry_wait,
                rate=p.rate,
                max_requests=p.max_requests,
                max_bytes=p.max_response_bytes,
                secrets=tuple(secret_values(p.headers, self.secrets)) + self._extra_secrets(),
            )
            self.session_id = f"audit-{uuid.uuid4().hex[:12]}"
        super().open(progress)

    def _extra_secrets(self) -> tuple[str, ...]:
        return ()

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        super().close()

    def _http(self) -> HttpClient:
        if self.client is None:
            self.open()
        return self.client

    @property
    def can_write(self) -> bool:
        return bool(self.params.ingest_url)

    @property
    def can_verify(self) -> bool:
        return bool(self.params.exists_url)

    def ingest(self, docs: Sequence[Document]) -> list[str]:
        if not self.can_write:
            return super().ingest(docs)
        p = self.params
        template = parse_body(p.ingest_body, what="ingest_body")
        out = []
        for d in docs:
            values = {"id": d.id, "text": d.text, "metadata": dict(d.metadata)}
            r = self._http().request(
                p.ingest_method, fill_url(p.ingest_url, values), body=fill(template, values), what="planting a document"
            )
            if p.ingest_ids_path:
                got = extract(r.json(what="the ingest response"), p.ingest_ids_path, what="ingest_ids_path")
                out.append(str(got[0] if isinstance(got, list) and got else got))
            else:
                out.append(d.id)
        return out

    def remove(self, ids: Sequence[str]) -> None:
        if not self.params.delete_url:
            return super().remove(ids)
        p = self.params
        template = parse_body(p.delete_body, what="delete_body")
        per_id = uses(p.delete_url, "id") or uses(p.delete_body, "id")
        batches = [[i] for i in ids] if per_id else [list(ids)]
        for batch in batches:
            values = {"id": batch[0] if batch else "", "ids": batch}
            self._http().request(
                p.delete_method,
                fill_url(p.delete_url, values),
                body=fill(template, values) if template is not None else None,
                allow_404=True,
                what="removing a planted document",
            )

    def exists(self, ids: Sequence[str]) -> list[bool] | None:
        if not self.can_verify:
            return None
        return [
            self._http()
            .request(
                "GET", fill_url(self.params.exists_url, {"id": i}), allow_404=True, what="checking a planted document"
            )
            .status
            != 404
            for i in ids
        ]

    def _contexts(self, body: Any) -> list[SourceItem]:
        p = self.params
        if not p.contexts_path:
            return []
        found = extract(body, p.contexts_path, what="contexts_path")
        return as_sources(
            found,
            (p.context_text_key,) if p.context_text_key else TEXT_KEYS,
            (p.context_id_key,) if p.context_id_key else ID_KEYS,
        )


class HttpTarget(RemoteTarget):
    """Any JSON-over-HTTP RAG endpoint: a body template with {query}, JSON paths to the answer and contexts.

    Source: this playground (the shape of promptfoo's and PyRIT's HTTP targets: a request template and a
    response path). The request is ``method url`` with ``body`` filled per query (``{query}``, and
    ``{session}`` for multi-turn services); the answer is read at ``answer_path`` and, where the service
    returns them, the retrieved contexts at ``contexts_path`` (a list of strings or of objects whose text and
    id are found under common names, or the keys given). Limits, retries and the redirect rule are those of
    :class:`~engine.targets.http_client.HttpClient`.
    """

    class Params(RemoteParams):
        url: str = param("http://127.0.0.1:8000/query", help="The RAG service's query endpoint")
        method: str = param("POST", choices=METHODS, help="HTTP method (GET: put {query} in the URL)")
        body: str = param(
            '{"question": "{query}"}',
            help="JSON body with {query} (and optionally {session}); values are inserted as JSON strings, never pasted",
        )
        answer_path: str = param(
            "answer", help="Where the answer text is in the response, e.g. data.answer or choices[0].message.content"
        )
        contexts_path: str = param(
            "",
            help="Where the retrieved contexts are, if the service returns them, e.g. "
            "sources or sources[*].text (blank: not reported)",
        )
        context_text_key: str = param("", help="Key of a context object's text (blank: text, content, page_content, …)")
        context_id_key: str = param("", help="Key of a context object's id (blank: id, doc_id, node_id, source, …)")
        session: str = param(
            "per-query",
            choices=("per-query", "per-run"),
            help="{session}: a new conversation for every query, or one for the whole run",
        )

        def validate(self) -> None:
            super().validate()
            check_url(self.url, what="url")
            if self.method == "GET":
                if not uses(self.url, "query"):
                    raise ConfigError("url: a GET target needs {query} in the URL, e.g. http://host/ask?q={query}")
            else:
                parse_body(self.body, what="body", needs=() if uses(self.url, "query") else ("query",))
            parse_path(self.answer_path)
            if self.contexts_path:
                parse_path(self.contexts_path)

    @property
    def reports_contexts(self) -> bool:
        return bool(self.params.contexts_path)

    def endpoint(self) -> str:
        return self.params.url

    def request_preview(self, text: str) -> str:
        p = self.params
        values = {"query": text, "session": "probe"}
        body = None if p.method == "GET" else fill(parse_body(p.body, what="body"), values)
        headers = ", ".join(sorted(dict(p.headers or {})))
        return (
            f"{p.method} {fill_url(p.url, values)}"
            + (f" with headers {headers}" if headers else "")
            + (f" and body {json.dumps(body, ensure_ascii=False)}" if body is not None else "")
        )

    def query(self, text: str, *, session: str = "") -> TargetReply:
        p = self.params
        t0 = time.perf_counter()
        sid = session or (self.session_id if p.session == "per-run" else f"audit-{uuid.uuid4().hex[:12]}")
        values = {"query": text, "session": sid}
        body = None if p.method == "GET" else fill(parse_body(p.body, what="body"), values)
        r = self._http().request(p.method, fill_url(p.url, values), body=body, what="the query")
        data = r.json(what="the answer")
        answer = extract(data, p.answer_path, what="answer_path")
        if isinstance(answer, (dict, list)):
            inside = (
                f"an object with keys {', '.join(map(str, list(answer)[:12]))}"
                if isinstance(answer, dict)
                else f"a list of {len(answer)}"
            )
            raise TargetError(
                f"answer_path {p.answer_path!r} leads to {inside}, not text: point it at the answer's text"
                + (f" (e.g. {p.answer_path}.{next(iter(answer))})" if isinstance(answer, dict) and answer else "")
            )
        return timed_reply(
            t0,
            "" if answer is None else str(answer),
            self._contexts(data),
            self.reports_contexts,
            status=r.status,
            http_seconds=round(r.seconds, 4),
        )
