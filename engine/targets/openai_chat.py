"""An OpenAI-compatible chat endpoint with retrieval behind it (many RAG servers expose one) as a target."""

from __future__ import annotations

import json
import time
from typing import Any, Mapping

from ..errors import ConfigError
from ..params import param
from .base import TargetReply, timed_reply
from .credentials import resolve
from .http import RemoteParams, RemoteTarget
from .http_client import TargetError, check_url
from .json_path import parse_path, preview

ANSWER_CAP = 200_000  # characters of an answer kept (a service that ignores max_tokens cannot fill the disk)


class OpenAIChatTarget(RemoteTarget):
    """An OpenAI-compatible ``/chat/completions`` endpoint that retrieves before it answers.

    Source: the OpenAI Chat Completions API shape, as served by RAG front ends (Open WebUI, AnythingLLM,
    LlamaIndex / LangChain servers, llama.cpp's and vLLM's servers for a plain model). Each query is one
    user message (optionally after ``system_prompt``); the answer is ``choices[0].message.content``. Where the
    server returns its sources in the response (a ``sources`` list, ``citations``, …), ``contexts_path``
    reads them. The key is named by ``api_key_env`` (sent as ``Authorization: Bearer``), never stored.
    """

    class Params(RemoteParams):
        base_url: str = param(
            "http://127.0.0.1:8000/v1",
            help="The server's OpenAI-compatible base URL (…/v1; /chat/completions is appended)",
        )
        model: str = param("rag", help="Model name the server expects")
        api_key_env: str = param("", help="Name of the variable holding the key (sent as Bearer); blank: none")
        system_prompt: str = param("", help="A system message before each query (blank: none)")
        max_tokens: int = param(512, min=1, max=32768, help="max_tokens of each answer")
        temperature: float = param(0.0, min=0.0, max=2.0, help="Sampling temperature (0: repeatable answers)")
        extra_body: Mapping[str, Any] | None = param(
            None, help="Extra JSON fields of each request (e.g. the server's retrieval switches)"
        )
        contexts_path: str = param(
            "",
            help="Where the response lists the retrieved sources, if it does, e.g. "
            "sources or choices[0].message.context.citations[*].content",
        )
        context_text_key: str = param("", help="Key of a source object's text (blank: text, content, …)")
        context_id_key: str = param("", help="Key of a source object's id (blank: id, doc_id, source, …)")

        def validate(self) -> None:
            super().validate()
            check_url(self.base_url, what="base_url")
            if self.api_key_env and not self.api_key_env.replace("_", "").isalnum():
                raise ConfigError(
                    "api_key_env: the name of an environment variable (letters, digits, _), not the key itself"
                )
            if self.contexts_path:
                parse_path(self.contexts_path)

    @property
    def reports_contexts(self) -> bool:
        return bool(self.params.contexts_path)

    def _url(self) -> str:
        base = self.params.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    def endpoint(self) -> str:
        return self._url()

    def _key(self) -> str:
        name = self.params.api_key_env
        return resolve("${" + name + "}", self.secrets, what="api_key_env") if name else ""

    def _extra_secrets(self) -> tuple[str, ...]:
        key = self._key()
        return (key,) if key else ()

    def open(self, progress=None) -> None:
        if self.client is None:
            super().open(progress)
            key = self._key()
            if key:
                self.client.headers["Authorization"] = f"Bearer {key}"
            name = self.params.api_key_env
            self.client.credentials_hint = (
                f"check the key in ${name} (sent as Authorization: Bearer)"
                if name
                else "no key was sent: name the variable that holds it in api_key_env"
            )
        else:
            super().open(progress)

    def request_preview(self, text: str) -> str:
        p = self.params
        key = f"with header Authorization (Bearer ${p.api_key_env}) and " if p.api_key_env else "with "
        return f"POST {self._url()} {key}body {json.dumps(self._body(text), ensure_ascii=False)}"

    def _body(self, text: str) -> dict[str, Any]:
        p = self.params
        messages = ([{"role": "system", "content": p.system_prompt}] if p.system_prompt else []) + [
            {"role": "user", "content": text}
        ]
        return {
            **dict(p.extra_body or {}),
            "model": p.model,
            "messages": messages,
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "stream": False,
        }

    def query(self, text: str, *, session: str = "") -> TargetReply:
        p = self.params
        t0 = time.perf_counter()
        body = self._body(text)
        r = self._http().request("POST", self._url(), body=body, what="the chat request")
        data = r.json(what="the chat answer")
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise TargetError(
                f"the chat answer from {self._url()} has no choices[0].message (not an OpenAI-shaped "
                f"response); it began: {preview(json.dumps(data, default=str))}"
            ) from None
        refused = content is None
        usage = data.get("usage") or {}
        return timed_reply(
            t0,
            ("" if content is None else str(content))[:ANSWER_CAP],
            self._contexts(data),
            self.reports_contexts,
            status=r.status,
            model=str(data.get("model", p.model)),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=str(choice.get("finish_reason") or ""),
            empty_content=refused,
        )
