"""Any hosted or local LLM through litellm: OpenAI, Anthropic, Ollama, any OpenAI-compatible server."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace
from typing import Any, Optional, Sequence

from ..errors import ConfigError, EngineError
from ..secrets import register_secret, scrub
from ..params import Params, param
from ..retry import retry_after_of
from .base import Generation, Generator, Message, TextCallback

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map at run time


class LiteLLMGenerator(Generator):
    """Any litellm provider string (``openai/gpt-4o-mini``, ``anthropic/…``, ``ollama/…``, or
    ``openai/NAME`` + ``api_base`` for an OpenAI-compatible server); keys come from the environment.

    Source: litellm (BerriAI). Retries with exponential backoff on 429, 5xx, timeouts and connection
    errors; token usage is recorded per call. A missing key is one clear error naming the variable.
    """

    hosted = True

    class Params(Params):
        model: str = param("openai/gpt-4o-mini", help="litellm model string (provider/model)")
        api_base: str = param("", help="Base URL of an OpenAI-compatible server (optional)")
        api_key_env: str = param("", help="Environment variable holding the key (default: the provider's own)")
        temperature: float = param(0.0, min=0.0, max=2.0, help="Sampling temperature")
        max_tokens: int = param(256, min=1, max=8192, help="Tokens generated per answer")
        timeout: float = param(60.0, min=1.0, max=600.0, help="Seconds per request")
        retries: int = param(3, min=0, max=10, help="Retries on 429 / 5xx / timeouts / connection errors")
        backoff: float = param(1.0, min=0.0, max=60.0, help="First retry delay in seconds (doubles each retry)")
        max_retry_wait: float = param(
            60.0,
            min=0.0,
            max=3600.0,
            help="Longest wait a 429's Retry-After may ask for (longer: the run stops, resumable)",
        )

        def validate(self) -> None:
            if "/" not in self.model and not self.api_base:
                raise ConfigError("model: use a litellm provider string such as openai/gpt-4o-mini")

    def __init__(self, params: Params, *, api_key: str | None = None) -> None:
        super().__init__(params)
        # a key typed into the app lives only here (this object, this session): it is not a
        # parameter, so it never reaches a manifest, an event, an export or a cache
        self._api_key = api_key or None
        register_secret(self._api_key)
        for name, value in os.environ.items():  # keys litellm may read from the environment
            if name.endswith(("_API_KEY", "_API_TOKEN", "_ACCESS_TOKEN")):
                register_secret(value)

    def __repr__(self) -> str:
        return f"LiteLLMGenerator({self.params.model!r}, key={'set' if self._api_key else 'from environment'})"

    def _key_kwargs(self) -> dict[str, Any]:
        p = self.params
        if self._api_key:
            return {"api_key": self._api_key}
        if p.api_key_env:
            key = os.environ.get(p.api_key_env)
            if not key:
                raise EngineError(f"missing API key: set the environment variable {p.api_key_env}")
            return {"api_key": key}
        if p.api_base:  # local OpenAI-compatible servers take any key
            return {"api_key": os.environ.get("OPENAI_API_KEY", "sk-local")}
        import litellm

        check = litellm.validate_environment(p.model)
        if not check.get("keys_in_environment", True):
            missing = ", ".join(check.get("missing_keys", [])) or "the provider's API key"
            raise EngineError(f"missing API key for {p.model}: set the environment variable {missing}")
        return {}

    def _call(self, fn_name: str, **kw: Any) -> Any:
        import litellm

        p = self.params
        retryable = (
            litellm.RateLimitError,
            litellm.InternalServerError,
            litellm.ServiceUnavailableError,
            litellm.APIConnectionError,
            litellm.Timeout,
            litellm.BadGatewayError,
        )
        litellm.suppress_debug_info = True
        # our loop is the only retry layer (the provider SDK's own retries would multiply it)
        base = {
            "model": p.model,
            "temperature": p.temperature,
            "timeout": p.timeout,
            "max_retries": 0,
            **self._key_kwargs(),
        }
        if p.api_base:
            base["api_base"] = p.api_base
        delay = p.backoff
        for attempt in range(p.retries + 1):
            try:
                return getattr(litellm, fn_name)(**base, **kw)
            except retryable as e:
                if attempt == p.retries:
                    raise EngineError(
                        scrub(
                            f"{p.model}: gave up after {p.retries + 1} attempts "
                            f"({type(e).__name__}: {str(e).splitlines()[0][:200]})"
                        )
                    ) from None
                asked = retry_after_of(e)
                if asked is not None and asked > p.max_retry_wait:
                    raise EngineError(
                        f"{p.model}: the provider asks to wait {asked:.0f} s (Retry-After), more than "
                        f"max_retry_wait={p.max_retry_wait:g} s; try later or raise it"
                    ) from None
                time.sleep(asked if asked is not None else delay)
                delay *= 2
            except litellm.AuthenticationError:
                raise EngineError(f"{p.model}: the API key was rejected (check the key in your environment)") from None
            except litellm.NotFoundError:
                raise EngineError(f"{p.model}: model not found at the provider") from None
            except litellm.ContextWindowExceededError as e:
                raise EngineError(
                    scrub(
                        f"{p.model}: the prompt does not fit the model's context window "
                        f"({str(e).splitlines()[0][:160]}); lower top-k, the chunk size or the "
                        f"answer budget"
                    )
                ) from None
            except (
                litellm.BadRequestError,
                litellm.UnprocessableEntityError,
                litellm.PermissionDeniedError,
                litellm.APIError,
            ) as e:
                raise EngineError(
                    scrub(
                        f"{p.model}: the server refused the request ({type(e).__name__}: "
                        f"{str(e).splitlines()[0][:200]})"
                    )
                ) from None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> Optional[float]:
        """US dollars of one call from litellm's bundled price map (None when the model is not priced)."""
        import litellm

        try:
            a, b = litellm.cost_per_token(
                model=self.params.model, prompt_tokens=int(prompt_tokens), completion_tokens=int(completion_tokens)
            )
        except Exception:  # noqa: BLE001 - unpriced / unknown models raise various errors
            return None
        return float(a) + float(b)

    def _capped(self, text: str, max_tokens: int) -> tuple[str, int]:
        """The answer kept (at most :func:`answer_cap` characters) and how many characters were dropped: a server
        that ignores ``max_tokens`` cannot fill the memory or the disk."""
        cap = answer_cap(max_tokens)
        return (text, 0) if len(text) <= cap else (text[:cap], len(text) - cap)

    def _generation(self, out: Any, text: str, t0: float, max_tokens: int = 0) -> Generation:
        text, dropped = self._capped(text or "", max_tokens or self.params.max_tokens)
        usage = getattr(out, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = self.cost(pt, ct)
        info = ({} if cost is None else {"cost_usd": cost}) | ({"dropped_chars": dropped} if dropped else {})
        return Generation(
            text=text,
            prompt_tokens=pt,
            completion_tokens=ct,
            model=self.params.model,
            seconds=time.perf_counter() - t0,
            info=info,
        )

    def _stream(self, fn_name: str, on_text: TextCallback, t0: float, **kw: Any) -> Generation:
        """A streamed call: every piece goes to ``on_text`` as it arrives; usage from the final chunk."""
        pieces: list[str] = []
        usage, got, size = None, False, 0
        cap = answer_cap(kw.get("max_tokens") or self.params.max_tokens)
        stream = self._call(fn_name, stream=True, stream_options={"include_usage": True}, **kw)
        try:
            for chunk in stream:
                usage = getattr(chunk, "usage", None) or usage
                if not getattr(chunk, "choices", None):
                    continue
                got = True
                c = chunk.choices[0]
                delta = getattr(c, "delta", None)
                piece = getattr(delta, "content", None) if delta is not None else getattr(c, "text", None)
                if piece:
                    pieces.append(piece)
                    size += len(piece)
                    on_text(piece)
                    if size > cap:  # the server ignores max_tokens: stop reading, keep the capped text
                        break
        except Exception as e:  # noqa: BLE001 - a stream broken half-way: one clear error, never a traceback
            raise EngineError(
                scrub(
                    f"{self.params.model}: the answer stream broke off ({type(e).__name__}: "
                    f"{str(e).splitlines()[0][:200] if str(e) else ''})"
                )
            ) from None
        if not got:
            raise EngineError(f"{self.params.model}: the server streamed no answer (no choices)")
        return self._generation(SimpleNamespace(usage=usage), "".join(pieces), t0, kw.get("max_tokens") or 0)

    def chat(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, on_text: Optional[TextCallback] = None
    ) -> Generation:
        """One chat completion through litellm, streamed to ``on_text`` when given."""
        t0 = time.perf_counter()
        kw = {"messages": list(messages), "max_tokens": max_tokens or self.params.max_tokens}
        if on_text is not None:
            return self._stream("completion", on_text, t0, **kw)
        out = self._call("completion", **kw)
        return self._generation(out, self._answer(out, chat=True), t0, kw["max_tokens"])

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        stop: Sequence[str] = (),
        on_text: Optional[TextCallback] = None,
    ) -> Generation:
        """One text completion through litellm, streamed to ``on_text`` when given."""
        t0 = time.perf_counter()
        kw = {
            "prompt": prompt,
            "max_tokens": max_tokens or self.params.max_tokens,
            **({"stop": list(stop)} if stop else {}),
        }
        if on_text is not None:
            return self._stream("text_completion", on_text, t0, **kw)
        out = self._call("text_completion", **kw)
        return self._generation(out, self._answer(out, chat=False), t0, kw["max_tokens"])

    def _answer(self, out: Any, *, chat: bool) -> str:
        """The text of a response; no choices, or a null content, is a failed call (the run keeps its finished
        rounds and says how to resume), never an empty answer counted as a completed round."""
        choices = getattr(out, "choices", None) or []
        if not choices:
            raise EngineError(f"{self.params.model}: the server returned no answer (an empty choices list)")
        text = getattr(choices[0].message, "content", None) if chat else getattr(choices[0], "text", None)
        if text is None:
            reason = getattr(choices[0], "finish_reason", None) or "none given"
            raise EngineError(
                f"{self.params.model}: the server returned no text (content null, finish reason {reason})"
            )
        return str(text)


def answer_cap(max_tokens: int) -> int:
    """Characters of an answer kept: 32 a token of the budget (a token is 3–5 characters), at least 4,096."""
    return max(4096, 32 * int(max_tokens or 0))
