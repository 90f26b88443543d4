"""RAGFort intra-class protection: constrained cascade generation (draft + verifier, llama.cpp, CPU).

Source: RAGFort (extraction defence for RAG), section "Intra-class Protection: Constrained Cascade
Generation". A lightweight draft model proposes γ tokens with distributions q_t; a stronger verifier
model computes p_t at the same positions and each proposal passes the approximate rejection rule
(derived in the paper via Lemma 1)::

    r̂(x_<t, z) = 1  ⇔  max_y q_t(y) < max_y p_t(y) − α·D_TV(p_t, q_t) + η·q_t(z)/p_t(z)

On rejection the verifier supplies a substitute token. The paper's constrained objective bounds the
rejection budget (r·D_TV ≤ B, multiplier α) and the sensitive-content ratio ((1−r)·q_t(z)/p_t(z) ≤ C,
multiplier η).

Choices the paper leaves open, and what this implementation does:

* Notation: as in the paper, q_t is the DRAFT model's next-token distribution and p_t the VERIFIER's;
  both are full-vocabulary softmaxes of the raw logits (temperature 1, no top-k/top-p).
  D_TV(p, q) = ½·Σ_y |p(y) − q(y)|. In q_t(z)/p_t(z) the denominator is floored at ``eps`` (1e-12).
* Sensitive token z: the token that would continue verbatim copying of a protected (retrieved) chunk:
  the longest suffix of the tokens generated so far (at least ``min_match`` tokens, default 3) that
  occurs verbatim in a protected chunk's token sequence; z is the chunk token right after it (longest
  match wins; ties go to the first chunk / first occurrence). Only the generated tokens are matched,
  not the prompt: the ChatML prompt always ends with ``<|im_start|>assistant\\n``, which no chunk
  contains, so the first ``min_match`` copied tokens are never flagged. Each chunk is indexed twice,
  as tokenized alone and with a leading space (BPE merges the space into the first word mid-text).
  No match → z = None and the η term is 0.
  With ``copy_window`` = W > 0 (:class:`CopyTracker`), a copy once detected is followed through
  deviations: z stays the chunk token the copy expects next while the output keeps re-joining the
  chunk within W tokens (substituted or skipped tokens), and is dropped after W misses in a row.
  Without it one suppression breaks the exact match, copying resumes ``min_match`` tokens later and
  the output stays a near-verbatim copy (measured: ROUGE-L recall of the copied HealthCareMagic chunk
  0.69 at W = 0 vs 0.17 at W = 4, same prompt, α = 1). W = 0 is the plain exact-suffix definition.
* Substitute token: on rejection the verifier's greedy token with z suppressed (p(z) := 0), whenever
  a z exists — also when η = 0. ``suppressed`` counts the rejections where z existed and was the
  verifier's own argmax, i.e. where the suppression changed the emitted token.
* Draft: greedy (its argmax), so max_y q_t(y) = q_t(proposed token). The whole cascade is
  deterministic.
* Bonus token: none taken unconditionally from the verifier. Per block the verifier evaluates the
  pending context tokens plus the first γ−1 proposals in ONE ``eval()``; its γ logit rows judge all γ
  proposals (the row a standard speculative decoder would use for its bonus token judges the last
  proposal instead). So every emitted token passes the rule (no unprotected channel), a fully accepted
  block yields γ tokens for γ verifier rows, and the rule that always accepts reproduces the draft's
  greedy output exactly while the rule that always rejects (η = 0, no z) reproduces the verifier's.
* Decoder defaults: γ = 4, α = 0.3, η = 0.5, min_match = 3, copy_window = 0 (the paper gives no values).
  The cascade *defense* (``engine.defenses.cascade``) uses its own measured defaults: α = 0, γ = 2,
  copy_window = 4 — see its docstring for why.
  Note the sign: a larger α means FEWER rejections; α → +∞ never rejects, α → −∞ always rejects.
* Stop: ``<|im_end|>``, ``<|endoftext|>`` or the model's EOS (not part of the text nor of the counts),
  or ``max_tokens``.
* Chat formatting: ChatML (``<|im_start|>role\\n…<|im_end|>\\n`` … ``<|im_start|>assistant\\n``), with
  no default system message added; the template markers are tokenized with special tokens enabled and
  the message contents without, so text in a message cannot inject control tokens.
* FLOPs: ≈ 2 × parameters × tokens evaluated (forward pass only, attention term ignored).
  ``flops_verifier_only`` = 2 × verifier params × (prompt_tokens + completion_tokens). The cascade does
  not save verifier FLOPs (the verifier still sees every token, plus discarded proposals); it saves
  sequential verifier passes (wall time) and makes copying of protected text harder.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError
from .llama_decode import DecodeStats
from .llama_local import decoder_for, load_llama, locked
from .models import n_params, resolve_model


# --------------------------------------------------------------------------- the rule
def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """D_TV(p, q) = ½ Σ_y |p(y) − q(y)| of two full-vocabulary probability vectors."""
    return 0.5 * float(np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum())


def reject(p: np.ndarray, q: np.ndarray, z: int | None, alpha: float, eta: float, eps: float = 1e-12) -> bool:
    """RAGFort's approximate rejection rule (section "Intra-class Protection: Constrained Cascade
    Generation", via Lemma 1): True (reject the draft token) iff

        max_y q(y) < max_y p(y) − α·D_TV(p, q) + η·q(z)/p(z)

    ``p``: the verifier's distribution, ``q``: the draft's, ``z``: the token continuing a verbatim copy
    of protected text (None → the η term is 0); p(z) is floored at ``eps``.
    """
    p = np.asarray(p)
    q = np.asarray(q)
    ratio = 0.0 if z is None else float(q[z]) / max(float(p[z]), eps)
    rhs = float(p.max()) - alpha * total_variation(p, q) + (eta * ratio if eta else 0.0)
    return bool(float(q.max()) < rhs)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable softmax of a logit vector, in float64."""
    x = np.asarray(logits, dtype=np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


# --------------------------------------------------------------------------- copy detection
class CopyIndex:
    """n-gram index of protected token sequences, built once per generation, queried per token."""

    def __init__(self, protected_token_seqs: Sequence[Sequence[int]], min_match: int) -> None:
        if min_match < 1:
            raise ConfigError("min_match must be ≥ 1")
        self.min_match = min_match
        self.seqs = [list(map(int, s)) for s in protected_token_seqs]
        self.index: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        for si, s in enumerate(self.seqs):
            for i in range(len(s) - min_match):  # the n-gram must have a continuation token
                self.index.setdefault(tuple(s[i : i + min_match]), []).append((si, i))

    def continuation(self, generated_ids: Sequence[int]) -> int | None:
        """z: the protected token that follows the longest verbatim match (≥ ``min_match`` tokens) of the generated
        suffix; None when nothing matches."""
        m = self.min_match
        if len(generated_ids) < m or not self.index:
            return None
        hits = self.index.get(tuple(int(t) for t in generated_ids[-m:]))
        if not hits:
            return None
        best_len, best_z = -1, None
        n = len(generated_ids)
        for si, i in hits:
            s = self.seqs[si]
            length = m
            while length < n and i + m - length - 1 >= 0 and s[i + m - length - 1] == generated_ids[n - length - 1]:
                length += 1
            if length > best_len:
                best_len, best_z = length, s[i + m]
        return best_z


class CopyTracker:
    """Follows which protected chunk the output is copying, across small deviations (one per generation).

    A copy starts when the last ``min_match`` generated tokens occur verbatim in a protected sequence
    (:class:`CopyIndex`); from then on a pointer into that sequence survives deviations: a generated
    token equal to the expected one advances it, one found within the next ``window`` tokens of the
    chunk moves it past that token (the output skipped words), anything else counts as a miss, and
    ``window`` misses in a row end the copy. ``z`` is the chunk token the pointer expects next.

    Why: with z defined by the exact suffix alone, one suppressed token breaks the match and copying
    resumes ``min_match`` tokens later, so the output stays a near-verbatim copy with every few tokens
    changed (ROUGE-L recall of the chunk well above 0.5). Following the copy through deviations keeps
    z defined until the output really stops copying. ``window = 0`` is the exact-suffix definition.
    The exact longest-suffix match, when there is one, still decides z (so ``window`` only adds cases).
    """

    def __init__(self, index: CopyIndex, window: int = 0) -> None:
        if window < 0:
            raise ConfigError("the copy-tracking window must be ≥ 0")
        self.index, self.window = index, int(window)
        self.generated: list[int] = []
        self.pointers: dict[int, list[int]] = {}  # sequence → [next expected position, misses in a row]

    def push(self, token: int) -> None:
        """Record one emitted token (the output is append-only)."""
        t = int(token)
        self.generated.append(t)
        if not self.window:
            return
        seqs = self.index.seqs
        for si in list(self.pointers):
            pos, misses = self.pointers[si]
            s = seqs[si]
            ahead = s[pos : pos + self.window + 1]
            if t in ahead:
                self.pointers[si] = [pos + ahead.index(t) + 1, 0]
            elif misses + 1 >= self.window:
                del self.pointers[si]
            else:
                self.pointers[si] = [pos, misses + 1]
            if si in self.pointers and self.pointers[si][0] >= len(s):
                del self.pointers[si]  # the chunk is finished: nothing left to continue
        m = self.index.min_match
        if len(self.generated) >= m:
            for si, i in self.index.index.get(tuple(self.generated[-m:]), ()):
                self.pointers[si] = [i + m, 0]

    def z(self) -> int | None:
        """The token that would continue the copy now, or None."""
        exact = self.index.continuation(self.generated)
        if exact is not None or not self.pointers:
            return exact
        si, (pos, _) = min(self.pointers.items(), key=lambda kv: (kv[1][1], kv[0]))
        return self.index.seqs[si][pos]


def copy_continuation(
    generated_ids: Sequence[int], protected_token_seqs: Sequence[Sequence[int]], min_match: int
) -> int | None:
    """The token z that continues the longest suffix (≥ ``min_match`` tokens) of ``generated_ids``
    found verbatim in any protected token sequence, or None. Longest match wins; ties go to the first
    sequence / occurrence. For repeated queries build a :class:`CopyIndex` once instead."""
    return CopyIndex(protected_token_seqs, min_match).continuation(generated_ids)


def longest_common_run(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest contiguous run shared by two token sequences (verbatim copy length)."""
    best = 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                cur[j + 1] = prev[j] + 1
                if cur[j + 1] > best:
                    best = cur[j + 1]
        prev = cur
    return best


# --------------------------------------------------------------------------- decoder
@dataclass(frozen=True)
class CascadeOutput:
    """One cascade (or single-model greedy) generation with its accounting.

    ``accepted`` / ``rejected``: rule decisions over the emitted tokens (accepted + rejected ==
    completion_tokens == len(decisions) for the cascade; both 0 for single-model greedy).
    ``suppressed``: rejections where z existed and was the verifier's argmax (the emitted token was
    changed by the suppression). ``*_tokens_evaluated``: tokens fed to each model's ``eval()``,
    including re-evaluation after rewinds and discarded proposals. FLOPs ≈ 2 × params × tokens.
    """

    text: str
    completion_tokens: int
    accepted: int
    rejected: int
    suppressed: int
    decisions: tuple[str, ...]
    prompt_tokens: int
    draft_tokens_evaluated: int
    verifier_tokens_evaluated: int
    flops_draft: float
    flops_verifier: float
    flops_verifier_only: float
    seconds: float
    tokens: tuple[int, ...] = ()

    @property
    def acceptance_rate(self) -> float:
        """Accepted / (accepted + rejected) draft tokens; 0.0 when the draft proposed none."""
        n = self.accepted + self.rejected
        return self.accepted / n if n else 0.0


def _rewind(llm: Any, n: int) -> None:
    """Drop everything after the first ``n`` evaluated tokens (token count and KV cache)."""
    if n < llm.n_tokens:
        llm.n_tokens = n
        llm._ctx.kv_cache_seq_rm(-1, n, -1)


def _eval(llm: Any, tokens: Sequence[int], rows: int | None = None) -> np.ndarray:
    """Evaluate ``tokens`` after the cached ones; returns the logit rows of the last ``rows`` of them
    (all when None). llama.cpp projects only those positions onto the vocabulary."""
    return decoder_for(llm)._forward(list(tokens), len(tokens) if rows is None else int(rows), DecodeStats())


class CascadeDecoder:
    """Constrained cascade generation (RAGFort): draft ``qwen2.5-0.5b``, verifier ``qwen2.5-1.5b``.

    See the module docstring for the rule, the definition of z and every open choice.
    """

    def __init__(
        self,
        draft: str = "qwen2.5-0.5b",
        verifier: str = "qwen2.5-1.5b",
        gamma: int = 4,
        alpha: float = 0.3,
        eta: float = 0.5,
        min_match: int = 3,
        n_ctx: int = 4096,
        n_threads: int = 2,
        copy_window: int = 0,
        n_gpu_layers: int = 0,
    ) -> None:
        if gamma < 1:
            raise ConfigError("gamma (draft tokens per block) must be ≥ 1")
        if min_match < 1:
            raise ConfigError("min_match must be ≥ 1")
        self.gamma, self.alpha, self.eta, self.min_match = int(gamma), float(alpha), float(eta), int(min_match)
        if copy_window < 0:
            raise ConfigError("copy_window must be ≥ 0")
        self.copy_window = int(copy_window)
        self.n_ctx = int(n_ctx)
        dpath, vpath = str(resolve_model(draft)), str(resolve_model(verifier))
        if dpath == vpath:
            raise ConfigError("the draft and the verifier must be different model files")
        self.draft_name, self.verifier_name = draft, verifier
        self.draft = load_llama(dpath, self.n_ctx, n_threads, n_gpu_layers=n_gpu_layers)
        self.verifier = load_llama(vpath, self.n_ctx, n_threads, n_gpu_layers=n_gpu_layers)
        self._check_shared_vocab()
        self.draft_params = n_params(self.draft)
        self.verifier_params = n_params(self.verifier)
        special = {
            self._tok(s, special=True)[0]
            for s in ("<|im_end|>", "<|endoftext|>")
            if len(self._tok(s, special=True)) == 1
        }
        self.stop_ids = frozenset(special | {int(self.verifier.token_eos())})

    # ---- tokenizer -------------------------------------------------------------------
    def _check_shared_vocab(self) -> None:
        d, v = self.draft, self.verifier
        if d.n_vocab() != v.n_vocab():
            raise ConfigError(
                f"draft and verifier vocabularies differ ({d.n_vocab()} vs {v.n_vocab()} tokens); "
                f"a cascade needs one shared tokenizer"
            )
        n = v.n_vocab()
        with locked(d, v):
            for i in sorted(set(np.linspace(0, n - 1, 1024).astype(int).tolist()) | {int(v.token_eos())}):
                if d.detokenize([i], special=True) != v.detokenize([i], special=True):
                    raise ConfigError(
                        f"draft and verifier tokenizers differ at token id {i}; a cascade needs one shared tokenizer"
                    )

    def _tok(self, text: str, special: bool = False) -> list[int]:
        return self.verifier.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def format_chat(self, messages: Sequence[dict]) -> list[int]:
        """ChatML prompt tokens: template markers as special tokens, message contents as plain text."""
        ids: list[int] = []
        for m in messages:
            role, content = m.get("role"), m.get("content")
            if not isinstance(role, str) or not isinstance(content, str):
                raise ConfigError("each message needs a string 'role' and 'content'")
            ids += self._tok(f"<|im_start|>{role}\n", special=True) + self._tok(content)
            ids += self._tok("<|im_end|>\n", special=True)
        return ids + self._tok("<|im_start|>assistant\n", special=True)

    def protected_token_seqs(self, protected: Sequence[str]) -> list[list[int]]:
        """Token sequences of the non-empty protected chunks, each tokenised twice (as given and after a space) so
        a copy is found whichever way it starts."""
        seqs = []
        for chunk in protected:
            if chunk and chunk.strip():
                seqs.append(self._tok(chunk))
                seqs.append(self._tok(" " + chunk.lstrip()))
        return seqs

    def _detok(self, tokens: Sequence[int]) -> str:
        return self.verifier.detokenize(list(tokens)).decode("utf-8", errors="replace")

    def _check_room(self, prompt: list[int], max_tokens: int) -> None:
        if max_tokens < 1:
            raise ConfigError("max_tokens must be ≥ 1")
        if len(prompt) + max_tokens + self.gamma + 1 > self.n_ctx:
            raise ConfigError(
                f"prompt ({len(prompt)} tokens) + max_tokens ({max_tokens}) does not fit the "
                f"context window n_ctx={self.n_ctx}"
            )

    # ---- cascade ------------------------------------------------------------------------
    def generate(self, messages: list[dict], protected: Sequence[str] = (), max_tokens: int = 128) -> CascadeOutput:
        """Generate an answer with the constrained cascade; ``protected``: the retrieved chunks whose
        verbatim continuation is suppressed."""
        t0 = time.perf_counter()
        prompt = self.format_chat(messages)
        self._check_room(prompt, max_tokens)
        tracker = CopyTracker(CopyIndex(self.protected_token_seqs(protected), self.min_match), self.copy_window)
        d, v = self.draft, self.verifier
        out: list[int] = []
        decisions: list[str] = []
        accepted = rejected = suppressed = d_eval = v_eval = 0
        with locked(d, v):  # llama.cpp contexts are not re-entrant
            _rewind(d, 0)
            _rewind(v, 0)
            ctx = list(prompt)
            done = False
            while not done and len(out) < max_tokens:
                g = min(self.gamma, max_tokens - len(out))
                # 1. the draft proposes up to g greedy tokens, keeping q for each
                feed = ctx[d.n_tokens :]
                d_eval += len(feed)
                logits = _eval(d, feed, 1)[-1]
                props: list[int] = []
                qs: list[np.ndarray] = []
                for i in range(g):
                    tok = int(np.argmax(logits))
                    props.append(tok)
                    qs.append(softmax(logits))
                    if i == g - 1 or tok in self.stop_ids:
                        break
                    d_eval += 1
                    logits = _eval(d, [tok], 1)[-1]
                # 2. the verifier scores every proposed position in one eval()
                kv0 = v.n_tokens
                feed = ctx[kv0:] + props[:-1]
                v_eval += len(feed)
                vrows = _eval(v, feed, len(props))
                # 3. accept until the first rejection
                emitted: list[int] = []
                for i, (tok, q) in enumerate(zip(props, qs)):
                    vlogits = vrows[i]
                    z = tracker.z()
                    rejected_here = reject(softmax(vlogits), q, z, self.alpha, self.eta)
                    was_z = False
                    if rejected_here:  # the verifier's own choice, never the repeated token z
                        tok = int(np.argmax(vlogits))
                        was_z = z is not None and tok == z
                        if was_z:
                            masked = vlogits.copy()
                            masked[z] = -np.inf
                            tok = int(np.argmax(masked))
                    emitted.append(tok)
                    if tok in self.stop_ids:
                        done = True
                        break
                    tracker.push(tok)
                    if rejected_here:
                        rejected += 1
                        suppressed += was_z
                        decisions.append("verifier")
                        break
                    accepted += 1
                    decisions.append("draft")
                ctx += emitted
                out += [t for t in emitted if t not in self.stop_ids]
                # 4. both caches keep what is still valid: the new context minus its last token
                keep = len(ctx) - 1
                _rewind(d, min(d.n_tokens, keep))
                _rewind(v, min(v.n_tokens, keep))
        return self._output(out, prompt, decisions, accepted, rejected, suppressed, d_eval, v_eval, t0)

    def _output(self, out, prompt, decisions, accepted, rejected, suppressed, d_eval, v_eval, t0) -> CascadeOutput:
        return CascadeOutput(
            text=self._detok(out),
            completion_tokens=len(out),
            accepted=accepted,
            rejected=rejected,
            suppressed=suppressed,
            decisions=tuple(decisions),
            prompt_tokens=len(prompt),
            draft_tokens_evaluated=d_eval,
            verifier_tokens_evaluated=v_eval,
            flops_draft=2.0 * self.draft_params * d_eval,
            flops_verifier=2.0 * self.verifier_params * v_eval,
            flops_verifier_only=2.0 * self.verifier_params * (len(prompt) + len(out)),
            seconds=time.perf_counter() - t0,
            tokens=tuple(out),
        )

    # ---- single-model baselines ------------------------------------------------------------
    def greedy(self, messages: list[dict], max_tokens: int = 128, model: str = "verifier") -> CascadeOutput:
        """Plain greedy decoding with one of the two models (``"verifier"`` or ``"draft"``), one token
        per eval() after the prompt: the baseline the cascade is compared with."""
        if model not in ("verifier", "draft"):
            raise ConfigError("model must be 'verifier' or 'draft'")
        t0 = time.perf_counter()
        prompt = self.format_chat(messages)
        self._check_room(prompt, max_tokens)
        llm = self.verifier if model == "verifier" else self.draft
        out: list[int] = []
        n_eval = 0
        with locked(llm):
            _rewind(llm, 0)
            feed = list(prompt)
            while len(out) < max_tokens:
                n_eval += len(feed)
                tok = int(np.argmax(_eval(llm, feed, 1)[-1]))
                if tok in self.stop_ids:
                    break
                out.append(tok)
                feed = [tok]
        name = "verifier" if model == "verifier" else "draft"
        res = self._output(
            out,
            prompt,
            [name] * len(out),
            0,
            0,
            0,
            n_eval if model == "draft" else 0,
            n_eval if model == "verifier" else 0,
            t0,
        )
        return res
