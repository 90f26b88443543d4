"""The one way the engine talks to a remote target: polite, bounded, and only to the host the user named.

Every request of an HTTP or OpenAI-compatible target goes through :class:`HttpClient`:

* **rate cap** — at most ``rate`` requests a second (default 2: gentle on a production service), shared by
  every request of the target (queries, plants, removals, retries);
* **budget cap** — at most ``max_requests`` requests in all; past it the run stops with a line saying so
  (its finished rounds are kept, like any other stop);
* **retries** — 429, 500, 502, 503 and 504 are retried with exponential backoff (1, 2, 4 … s), honouring a
  ``Retry-After`` header (seconds or an HTTP date) up to ``max_retry_wait``; a connection that drops after
  the service has answered once is retried the same way. A service never reached (connection refused, no
  such host) fails at once, not after minutes;
* **timeout** — no answer within ``timeout`` seconds (whole response, not per read) is one clear line;
* **size cap** — a response over ``max_response_bytes`` is cut off unread and reported;
* **redirects** — followed only within the same scheme, host and port (at most 3); a redirect anywhere else
  is refused, so the engine never sends the query or the credentials to a host the user did not name;
* **errors** — 401/403 say the credentials were refused, other statuses give the first 200 characters of
  the body; every message is scrubbed of the credentials (:func:`engine.secrets.scrub`).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping
from urllib.parse import urljoin, urlsplit

from ..errors import EngineError
from ..retry import retry_after
from ..secrets import scrub
from .json_path import preview

RETRY_STATUSES = (429, 500, 502, 503, 504)
USER_AGENT = "rag-playground-audit/1"


class TargetError(EngineError):
    """The target failed: unreachable, refused, timed out, over a cap, or answered something unreadable."""


class BudgetSpent(TargetError):
    """The target's request budget (``max_requests``) is spent."""


def origin(url: str) -> str:
    """``scheme://host:port`` of a URL (the unit the redirect rule compares)."""
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme, 0)
    return f"{u.scheme}://{(u.hostname or '').lower()}:{port}"


def check_url(url: str, *, what: str) -> None:
    """An http(s) URL with a host, else one ConfigError naming the parameter."""
    from ..errors import ConfigError

    u = urlsplit((url or "").strip())
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ConfigError(f"{what}: {url!r} is not an http:// or https:// URL with a host")


@dataclass(frozen=True)
class HttpResponse:
    """A complete response (body read in full, under the size cap)."""

    status: int
    body: bytes
    url: str
    seconds: float
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The body as text (UTF-8, undecodable bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")

    def json(self, *, what: str = "the response") -> Any:
        """The body parsed as JSON; an HTML page or any other non-JSON body is one TargetError with its start."""
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            kind = self.headers.get("content-type", "no content type")
            looks = " (an HTML page)" if self.text.lstrip()[:15].lower().startswith(("<!doctype", "<html")) else ""
            raise TargetError(
                scrub(f"{what} from {self.url} is not JSON{looks} ({kind}); it began: {preview(self.text)}")
            ) from None


class HttpClient:
    """Bounded, rate-capped requests with retries (see the module docstring)."""

    def __init__(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        retries: int = 4,
        max_retry_wait: float = 60.0,
        rate: float = 2.0,
        max_requests: int = 1000,
        max_bytes: int = 2_000_000,
        secrets: tuple[str, ...] = (),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        self.headers = {"User-Agent": USER_AGENT, **dict(headers or {})}
        self.timeout, self.retries, self.max_retry_wait = float(timeout), int(retries), float(max_retry_wait)
        self.rate, self.max_requests, self.max_bytes = float(rate), int(max_requests), int(max_bytes)
        self.secrets = tuple(s for s in secrets if s)
        self.sleep = sleep
        # what a 401 / 403 tells the user to check (a target whose key is not in its headers says where it is)
        self.credentials_hint = "check the headers' ${…} keys"
        self.sent = 0  # requests sent (retries and redirects included)
        self.waited = 0.0  # seconds spent waiting on the rate cap and retries
        self._reached: set[str] = set()  # origins that have answered at least once
        self._next_at = 0.0
        self._lock = threading.Lock()
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
            follow_redirects=False,
            trust_env=False,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _clean(self, text: str) -> str:
        return scrub(text, self.secrets)

    def _take_slot(self) -> None:
        """Wait for the rate cap, then count one request against the budget."""
        with self._lock:
            if self.sent >= self.max_requests:
                raise BudgetSpent(
                    f"the target's request budget is spent ({self.max_requests:,} requests, "
                    f"max_requests); raise it to go on"
                )
            now = time.monotonic()
            wait = max(0.0, self._next_at - now)
            self._next_at = max(now, self._next_at) + (1.0 / self.rate if self.rate > 0 else 0.0)
            self.sent += 1
        if wait > 0:
            self.waited += wait
            self.sleep(wait)

    def _send(self, method: str, url: str, body: Any) -> HttpResponse:
        """One request, its body read under the size cap and the whole-response deadline."""
        t0 = time.monotonic()
        kw: dict[str, Any] = {"headers": self.headers}
        if body is not None:
            kw["json"] = body
        with self._client.stream(method, url, **kw) as r:
            buf = bytearray()
            for chunk in r.iter_bytes():
                buf += chunk
                if len(buf) > self.max_bytes:
                    raise TargetError(
                        f"the response from {url} is larger than max_response_bytes="
                        f"{self.max_bytes:,}; it was cut off unread (raise the cap if the service "
                        f"really answers this much)"
                    )
                if time.monotonic() - t0 > self.timeout:
                    raise TargetError(
                        f"the response from {url} did not finish within timeout={self.timeout:g} s "
                        f"(it kept trickling in); raise timeout if the service is this slow"
                    )
            return HttpResponse(
                r.status_code,
                bytes(buf),
                str(r.url),
                time.monotonic() - t0,
                {k.lower(): v for k, v in r.headers.items()},
            )

    def request(
        self, method: str, url: str, *, body: Any = None, allow_404: bool = False, what: str = "the request"
    ) -> HttpResponse:
        """Send one request (rate cap, budget, retries, same-origin redirects); a 2xx response (or a 404 when
        ``allow_404``) is returned, anything else raises :class:`TargetError` with one clean line."""
        import httpx

        attempt, hops, started = 0, 0, time.monotonic()
        while True:
            self._take_slot()
            wait = None
            try:
                r = self._send(method, url, body)
            except httpx.TimeoutException as e:
                if isinstance(e, httpx.ConnectTimeout) and origin(url) not in self._reached:
                    raise TargetError(
                        self._clean(
                            f"cannot connect to {origin(url)} within "
                            f"{min(self.timeout, 10.0):g} s: is the address right and the "
                            f"service running?"
                        )
                    ) from None
                raise TargetError(
                    self._clean(
                        f"no answer from {url} within timeout={self.timeout:g} s; raise "
                        f"timeout if the service is this slow"
                    )
                ) from None
            except httpx.TransportError as e:
                reason = _reason(e)
                if origin(url) not in self._reached or attempt >= self.retries:
                    raise TargetError(
                        self._clean(
                            f"cannot connect to {origin(url)} ({reason})"
                            + ("" if origin(url) not in self._reached else f" after {attempt + 1} tries")
                        )
                    ) from None
                wait = min(2.0**attempt, self.max_retry_wait)
            else:
                self._reached.add(origin(url))
                if 300 <= r.status < 400 and r.headers.get("location"):
                    nxt = urljoin(url, r.headers["location"])
                    if origin(nxt) != origin(url):
                        raise TargetError(
                            self._clean(
                                f"{what}: {url} redirected to another host ({origin(nxt)}); not followed — the audit "
                                f"sends traffic only to the target you named (use the final URL if it is yours)"
                            )
                        )
                    hops += 1
                    if hops > 3:
                        raise TargetError(self._clean(f"{what}: more than 3 redirects from {url}"))
                    url = nxt
                    continue
                if 200 <= r.status < 300 or (allow_404 and r.status == 404):
                    return r
                if r.status in (401, 403):
                    raise TargetError(
                        self._clean(
                            f"{what}: {url} refused the credentials ({r.status} "
                            f"{'Unauthorized' if r.status == 401 else 'Forbidden'}): {self.credentials_hint}; "
                            f"the service said: {preview(r.text)}"
                        )
                    )
                if r.status not in RETRY_STATUSES:
                    raise TargetError(
                        self._clean(f"{what}: {url} answered {r.status}; the body began: {preview(r.text)}")
                    )
                if attempt >= self.retries:
                    spent = time.monotonic() - started
                    hint = f"; lower rate (now {self.rate:g} requests/s) or try later" if r.status == 429 else ""
                    raise TargetError(
                        self._clean(
                            f"{what}: {url} kept answering {r.status} ({attempt + 1} tries over {spent:.0f} s){hint}; "
                            f"the body began: {preview(r.text)}"
                        )
                    )
                asked = retry_after(r.headers.get("retry-after"))
                if asked is not None and asked > self.max_retry_wait:
                    raise TargetError(
                        self._clean(
                            f"{what}: {url} answered {r.status} and asks to wait {asked:.0f} s (Retry-After), more "
                            f"than max_retry_wait={self.max_retry_wait:g} s; try later or raise max_retry_wait"
                        )
                    )
                wait = asked if asked is not None else min(2.0**attempt, self.max_retry_wait)
            attempt += 1
            self.waited += wait
            self.sleep(wait)


def _reason(e: Exception) -> str:
    text = str(e) or type(e).__name__
    low = text.lower()
    if "refused" in low:
        return "connection refused: nothing listens there"
    if (
        "name or service not known" in low
        or "nodename nor servname" in low
        or "temporary failure in name" in low
        or "no address associated" in low
    ):
        return "no such host"
    return text.splitlines()[0][:200]
