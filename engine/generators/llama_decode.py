"""Greedy decoding of a llama.cpp model that copies fast: reference lookup, only the logit rows it reads,
prefix reuse across calls, and token streaming.

Why: an extraction round is a model asked to repeat its context. Plain decoding pays one full forward
pass per output token, although most of those tokens are already in the prompt. This decoder guesses
the next tokens by *looking them up in the text so far* (prompt + answer) and checks the whole guess in
one batched forward pass, keeping the longest prefix the model itself would have produced.

Sources: Yang et al. 2023, "Inference with Reference: Lossless Acceleration of Large Language Models"
(LLMA: copy spans from the retrieved reference, verify them in parallel); Saxena 2023, "Prompt Lookup
Decoding" (the n-gram lookup in the prompt); Leviathan et al. 2023, "Fast Inference from Transformers
via Speculative Decoding" (greedy verification is lossless).

What it guarantees, and how:

* **The same tokens as llama-cpp-python's greedy ``create_chat_completion``** (temperature 0; its
  ``repeat_penalty`` defaults to 1.0, i.e. none): each position's token is the argmax of the model's
  logits, after llama.cpp's repeat penalty when one is set (``logit / p`` when positive, else
  ``logit · p``, for every token among the last ``penalty_last_n`` generated — the penalty sampler's
  rule, on float32 logits as the sampler computes it). A guessed token is kept only if it *is* that
  argmax. (Logits of a
  batched pass can differ from one-token passes in the last bits; on a near-tie the argmax can then
  differ. The test suite and ``bench/bench_extraction.py`` compare the two paths token for token.)
* **Only the rows it reads**: llama.cpp computes the vocabulary projection only for positions whose
  ``logits`` flag is set in the batch; the prompt needs one row, a guess of k tokens needs k + 1.
  (``logits_all=True``, which llama-cpp-python's own lookup decoding needs, projects every prompt
  position: 150k-word vocabulary × hundreds of tokens — slower than not guessing at all.)
* **Prefix reuse that never changes an answer**: a pass's numbers depend in the last bits on which tokens
  it evaluates together (a prompt that is wholly cached, re-fed one token, gave a different greedy answer
  than the same prompt evaluated fresh). So prompts are evaluated in passes aligned on multiples of
  ``reuse_block`` (512 = llama-cpp-python's batch) and the KV cache keeps only whole blocks of the longest
  common prefix with the previous call: an answer depends on its prompt alone, never on what another
  session or round asked before (``tests/engine/test_sessions.py``). ``reuse_block = 0`` reuses any
  prefix, as llama-cpp-python does (no faster on the demo: 6 rounds 32.5-33.6 s vs 32.6-36.6 s).
* **Streaming**: ``on_text(delta)`` is called with each new piece of text as tokens are accepted
  (UTF-8 sequences split across tokens are held back until complete).

Choices (each a parameter of :class:`LookupSettings`): the longest suffix n-gram searched is
``ngram_max`` tokens (down to ``ngram_min``), its most recent earlier occurrence wins, and the guess is
the ``draft_max`` tokens that followed it there. A guess whose first token fails costs one batched pass
instead of a single-token one; ``draft_max`` = 0 turns lookup off (plain greedy, still one row per step).
"""

from __future__ import annotations

import codecs
import ctypes
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..errors import ConfigError

TextCallback = Callable[[str], None]


@dataclass(frozen=True)
class LookupSettings:
    """Knobs of the reference-lookup guess (see the module docstring)."""

    draft_max: int = 12  # tokens guessed per step (0 = no lookup: plain greedy)
    ngram_max: int = 4  # longest suffix n-gram looked up
    ngram_min: int = 2  # shortest suffix n-gram looked up
    repeat_penalty: float = 1.0  # llama.cpp's repeat penalty (1.0 = none, llama-cpp-python's default)
    penalty_last_n: int = 64  # window of generated tokens it applies to
    reuse_block: int = 512  # prompts are evaluated, and reused, in aligned blocks of this many tokens (0 = any)

    def __post_init__(self) -> None:
        if self.draft_max < 0:
            raise ConfigError("draft_max must be ≥ 0")
        if not 1 <= self.ngram_min <= self.ngram_max:
            raise ConfigError("need 1 ≤ ngram_min ≤ ngram_max")
        if self.repeat_penalty <= 0:
            raise ConfigError("repeat_penalty must be > 0")
        if self.reuse_block < 0:
            raise ConfigError("reuse_block must be ≥ 0")


@dataclass
class DecodeStats:
    """What one generation cost: tokens, forward passes, rows projected, guesses made and kept."""

    prompt_tokens: int = 0
    reused_prefix: int = 0  # prompt tokens found in the KV cache (not evaluated again)
    completion_tokens: int = 0
    forward_passes: int = 0  # llama_decode calls
    tokens_evaluated: int = 0  # tokens fed to the model (prompt suffix + steps + guesses)
    guessed: int = 0  # tokens proposed by lookup
    accepted: int = 0  # of which the model confirmed
    seconds_prompt: float = 0.0
    seconds: float = 0.0
    first_token_seconds: float = 0.0
    finish_reason: str = "length"
    extra: dict = field(default_factory=dict)

    def as_info(self) -> dict:
        """The statistics as the JSON-able ``info`` of a Generation (decoder, passes, guesses, timings)."""
        return {
            "decoder": "lookup",
            "reused_prefix": self.reused_prefix,
            "forward_passes": self.forward_passes,
            "tokens_evaluated": self.tokens_evaluated,
            "guessed": self.guessed,
            "guess_accepted": self.accepted,
            "seconds_prompt": round(self.seconds_prompt, 4),
            "first_token_seconds": round(self.first_token_seconds, 4),
            "finish_reason": self.finish_reason,
        }


class NgramLookup:
    """Incremental index of a token sequence: the continuation of its suffix's latest earlier occurrence."""

    def __init__(self, ngram_min: int, ngram_max: int) -> None:
        self.nmin, self.nmax = ngram_min, ngram_max
        self.seq: list[int] = []
        self.last: dict[tuple[int, ...], int] = {}  # n-gram → end index (exclusive) of its latest occurrence
        self.prev: dict[tuple[int, ...], int] = {}  # … and of the one before (when the latest is the suffix)

    def extend(self, tokens: Sequence[int]) -> None:
        """Append tokens to the sequence and index every n-gram that ends at each of them."""
        for t in tokens:
            self.seq.append(int(t))
            end = len(self.seq)
            for n in range(self.nmin, min(self.nmax, end) + 1):
                g = tuple(self.seq[end - n : end])
                if g in self.last:
                    self.prev[g] = self.last[g]
                self.last[g] = end

    def guess(self, k: int) -> list[int]:
        """Up to ``k`` tokens that followed the longest suffix n-gram where it occurred before."""
        end = len(self.seq)
        if k <= 0:
            return []
        for n in range(min(self.nmax, end), self.nmin - 1, -1):
            g = tuple(self.seq[end - n : end])
            pos = self.last.get(g)
            if pos == end:  # the suffix itself: take the occurrence before it
                pos = self.prev.get(g)
            if pos is not None and pos < end:
                return self.seq[pos : pos + k]
        return []


def _penalized_argmax(row: np.ndarray, history: Sequence[int], penalty: float) -> int:
    """llama.cpp's penalties sampler (repeat only) then greedy: first index of the maximum."""
    if penalty == 1.0 or not history:
        return int(np.argmax(row))
    ids = np.fromiter(set(history), dtype=np.int64)
    r = row.copy()
    v = r[ids]
    p = np.float32(penalty)
    r[ids] = np.where(v <= 0, v * p, v / p)
    return int(np.argmax(r))


class LlamaDecoder:
    """Greedy generation over one ``llama_cpp.Llama`` object (callers hold the model's lock)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.n_vocab = int(llm.n_vocab())
        self._formatter = None

    # ---- prompt -------------------------------------------------------------------------
    def chat_tokens(self, messages: Sequence[dict]) -> list[int]:
        """The prompt tokens ``create_chat_completion`` would evaluate for these messages (the GGUF's
        own Jinja chat template, tokenized the same way)."""
        llm = self.llm
        if self._formatter is None:
            from llama_cpp import llama_chat_format

            template = llm.metadata.get("tokenizer.chat_template")
            if not template:
                raise ConfigError("this GGUF model has no chat template; use complete() with a raw prompt")
            eos, bos = llm.token_eos(), llm.token_bos()
            self._formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
        res = self._formatter(messages=list(messages))
        return list(llm.tokenize(res.prompt.encode("utf-8"), add_bos=not res.added_special, special=True))

    def text_tokens(self, prompt: str) -> list[int]:
        """The prompt tokens ``create_completion`` would evaluate for a raw prompt."""
        return list(self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False))

    # ---- forward passes ----------------------------------------------------------------------
    def _rewind(self, n: int) -> None:
        llm = self.llm
        if n < llm.n_tokens:
            llm.n_tokens = n
        llm._ctx.kv_cache_seq_rm(-1, n, -1)

    def _forward(self, tokens: Sequence[int], rows: int, stats: DecodeStats, block: int = 0) -> np.ndarray:
        """Evaluate ``tokens`` after the cached ones; the logit rows of the last ``rows`` of them. With
        ``block``, in passes of ``block`` tokens (the caller starts at a multiple of it)."""
        import llama_cpp

        llm = self.llm
        n = len(tokens)
        if llm.n_tokens + n > llm.n_ctx():
            raise ConfigError(
                f"the prompt and answer need {llm.n_tokens + n} tokens, more than the model's "
                f"context window ({llm.n_ctx()}); lower top-k / the answer budget or raise n_ctx"
            )
        out = np.empty((rows, self.n_vocab), dtype=np.float32)
        got = 0
        nb = min(block, llm.n_batch) if block else llm.n_batch
        batch = llm._batch.batch
        for i in range(0, n, nb):
            chunk = tokens[i : i + nb]
            n_past = llm.n_tokens
            batch.n_tokens = len(chunk)
            want = []
            for j, t in enumerate(chunk):
                batch.token[j] = int(t)
                batch.pos[j] = n_past + j
                batch.seq_id[j][0] = 0
                batch.n_seq_id[j] = 1
                flag = i + j >= n - rows
                batch.logits[j] = flag
                if flag:
                    want.append(j)
            llm._ctx.decode(llm._batch)
            llm.input_ids[n_past : n_past + len(chunk)] = chunk
            llm.n_tokens += len(chunk)
            for j in want:
                ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, j)
                out[got] = np.ctypeslib.as_array(
                    ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(self.n_vocab,)
                )
                got += 1
            stats.forward_passes += 1
        stats.tokens_evaluated += n
        # llama-cpp-python's own generate() must replay before sampling from whatever logits we left
        llm._requires_eval = True
        return out

    def token_logprobs(self, tokens: Sequence[int]) -> np.ndarray:
        """Log-probability of each token after the first given the ones before it, in one pass from an empty
        cache (what a perplexity filter reads)."""
        if len(tokens) < 2:
            return np.zeros(0, dtype=np.float64)
        self._rewind(0)
        rows = self._forward(tokens, len(tokens), DecodeStats())[:-1].astype(np.float64)
        top = rows.max(axis=1)
        lse = top + np.log(np.exp(rows - top[:, None]).sum(axis=1))
        return rows[np.arange(len(tokens) - 1), np.asarray(tokens[1:])] - lse

    def _is_stop(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_token_is_eog(self.llm._model.vocab, int(token)))

    # ---- generation ------------------------------------------------------------------------------
    def generate(
        self,
        prompt: Sequence[int],
        max_tokens: int,
        settings: LookupSettings = LookupSettings(),
        on_text: Optional[TextCallback] = None,
    ) -> tuple[list[int], str, DecodeStats]:
        """Greedy tokens (stop token excluded), their text and the cost, for ``prompt`` tokens."""
        llm = self.llm
        t0 = time.perf_counter()
        stats = DecodeStats(prompt_tokens=len(prompt))
        prompt = [int(t) for t in prompt]
        if not prompt:
            raise ConfigError("empty prompt")
        n_ctx = llm.n_ctx()
        if len(prompt) >= n_ctx:
            raise ConfigError(
                f"the prompt has {len(prompt)} tokens, more than the model's context window "
                f"({n_ctx}); lower top-k or the chunk size, or raise n_ctx"
            )
        max_tokens = max(1, min(int(max_tokens), n_ctx - len(prompt)))
        # prefix reuse: keep the cached tokens the new prompt starts with (at least one token is re-fed,
        # so the last prompt position's logits are fresh). A pass's numbers depend, in the last bits, on
        # which tokens it evaluates together; so the prompt is evaluated in blocks aligned on multiples of
        # reuse_block and only whole blocks are reused: every prompt is computed the same way whatever the
        # previous call was (another session's, another round's) and its answer depends on it alone.
        cached = llm.input_ids[: llm.n_tokens].tolist()
        keep = 0
        for a, b in zip(cached, prompt[:-1]):
            if a != b:
                break
            keep += 1
        block = settings.reuse_block
        if block:
            keep -= keep % block
        self._rewind(keep)
        stats.reused_prefix = keep
        row = self._forward(prompt[keep:], 1, stats, block)[0]
        stats.seconds_prompt = time.perf_counter() - t0
        lookup = NgramLookup(settings.ngram_min, settings.ngram_max)
        lookup.extend(prompt)
        out: list[int] = []
        history: list[int] = []  # the penalty window: generated tokens, newest last
        decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")

        def emit(tok: int) -> bool:
            """Accept one token; False when it ends the generation."""
            if not out and not stats.first_token_seconds:
                stats.first_token_seconds = time.perf_counter() - t0
            if self._is_stop(tok):
                stats.finish_reason = "stop"
                return False
            out.append(tok)
            history.append(tok)
            if len(history) > settings.penalty_last_n:
                del history[0]
            lookup.extend([tok])
            if on_text is not None:
                piece = decoder.decode(llm.detokenize([tok]))
                if piece:
                    on_text(piece)
            return len(out) < max_tokens

        tok = _penalized_argmax(row, history, settings.repeat_penalty)
        going = emit(tok)
        while going:
            # feed the last accepted token plus a guess; row i judges the guess's i-th token
            room = min(settings.draft_max, max_tokens - len(out) - 1, n_ctx - llm.n_tokens - 2)
            guess = lookup.guess(room) if room > 0 else []
            stats.guessed += len(guess)
            base = llm.n_tokens
            rows = self._forward([tok] + guess, len(guess) + 1, stats)
            kept = 0
            for i in range(len(guess) + 1):
                tok = _penalized_argmax(rows[i], history, settings.repeat_penalty)
                going = emit(tok)
                if not going:
                    break
                if i < len(guess) and guess[i] == tok:
                    kept += 1
                    continue
                break
            stats.accepted += kept
            # the KV cache keeps the fed token and the confirmed guesses; the newest token is fed next step
            self._rewind(base + 1 + kept)
        stats.completion_tokens = len(out)
        text = llm.detokenize(out).decode("utf-8", errors="ignore")
        stats.seconds = time.perf_counter() - t0
        return out, text, stats
