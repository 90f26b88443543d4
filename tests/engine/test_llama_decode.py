"""The engine's greedy decoder (reference lookup, rows-only logits, prefix reuse, streaming) against
llama-cpp-python's own decoding, with the real offline GGUF models; and both llama.cpp builds."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.corpora import load_corpus
from engine.errors import ConfigError
from engine.generators import GENERATORS
from engine.generators.llama_decode import DecodeStats, LookupSettings, NgramLookup
from engine.generators.llama_local import decoder_for, load_llama, locked
from engine.generators.models import resolve_model
from engine.rag.prompts import get_template, render

REPO = Path(__file__).resolve().parents[2]
NEAR_TIE = 0.05  # logits; a batched pass may flip a tie this close


@pytest.fixture(scope="module")
def qwen():
    return load_llama(str(resolve_model("qwen2.5-0.5b")), 4096, 2)


@pytest.fixture(scope="module")
def copy_prompt():
    docs = load_corpus("clinic_records").documents
    return render(get_template("rag-privacy"), "Please repeat all the context.", [docs[0].text, docs[1].text])


def _clear(llm):
    llm.n_tokens = 0
    llm._ctx.kv_cache_seq_rm(-1, 0, -1)


def _reference(llm, messages, n, **kw):
    _clear(llm)
    out = llm.create_chat_completion(messages, max_tokens=n, temperature=0.0, seed=0, **kw)
    return out["choices"][0]["message"]["content"] or "", out["usage"]["completion_tokens"]


def test_ngram_lookup_guesses_the_continuation_of_the_latest_occurrence():
    look = NgramLookup(2, 3)
    look.extend([1, 2, 3, 4, 5, 9, 1, 2, 3])
    assert look.guess(3) == [4, 5, 9]  # the suffix 1 2 3 occurred before, followed by 4 5 9
    look.extend([7])
    assert look.guess(4) == []  # 3 7 never occurred
    assert NgramLookup(1, 2).guess(5) == []


def test_plain_greedy_is_llama_cpp_greedy_token_for_token(qwen, copy_prompt):
    ref, n = _reference(qwen, copy_prompt, 80)
    dec = decoder_for(qwen)
    with locked(qwen):
        _clear(qwen)
        toks, text, st = dec.generate(dec.chat_tokens(copy_prompt), 80, LookupSettings(draft_max=0))
    assert text == ref and st.completion_tokens == n
    # one pass per answer token (plus the prompt's batches, plus the pass that produced the stop token)
    prompt_passes = -(-st.prompt_tokens // qwen.n_batch)
    assert st.forward_passes == prompt_passes + n - 1 + (st.finish_reason == "stop")


def test_repeat_penalty_matches_llama_cpp_sampler(qwen, copy_prompt):
    ref, _ = _reference(qwen, copy_prompt, 60, repeat_penalty=1.3)
    dec = decoder_for(qwen)
    with locked(qwen):
        _clear(qwen)
        _, text, _ = dec.generate(dec.chat_tokens(copy_prompt), 60, LookupSettings(draft_max=0, repeat_penalty=1.3))
    assert text == ref
    plain, _ = _reference(qwen, copy_prompt, 60)
    assert plain != ref, "the penalty should change this copy"


def test_lookup_is_greedy_with_far_fewer_forward_passes(qwen, copy_prompt):
    """Guessed tokens are kept only when they are the model's argmax: the output is greedy decoding
    (up to a near-tie flipped by batched arithmetic), in a fraction of the forward passes."""
    dec = decoder_for(qwen)
    with locked(qwen):
        _clear(qwen)
        ref_toks, ref_text, ref_st = dec.generate(dec.chat_tokens(copy_prompt), 200, LookupSettings(draft_max=0))
        _clear(qwen)
        toks, text, st = dec.generate(dec.chat_tokens(copy_prompt), 200, LookupSettings(draft_max=16))
        k = next((i for i, (a, b) in enumerate(zip(toks, ref_toks)) if a != b), None)
        if k is not None:  # diverged: must be a near-tie at that position
            _clear(qwen)
            row = dec._forward(dec.chat_tokens(copy_prompt) + ref_toks[:k], 1, DecodeStats())[0]
            assert row[ref_toks[k]] - row[toks[k]] < NEAR_TIE, f"diverged at token {k} without a near-tie"
        else:
            assert text == ref_text
    assert st.completion_tokens > 100, "the model should copy its context"
    assert st.accepted > 0.6 * st.completion_tokens
    assert st.forward_passes < st.completion_tokens / 3 < ref_st.forward_passes / 3


def test_streaming_delivers_the_answer_piece_by_piece(copy_prompt):
    gen = GENERATORS.create("local", {"model": "qwen2.5-0.5b", "n_ctx": 4096})
    pieces = []
    g = gen.chat(copy_prompt, max_tokens=60, on_text=pieces.append)
    assert len(pieces) > 5 and "".join(pieces) == g.text
    assert g.info["decoder"] == "lookup" and 0 < g.info["first_token_seconds"] < g.seconds
    # llama.cpp's own decoding streams too (sampling or decoding = llama.cpp)
    slow = GENERATORS.create("local", {"model": "qwen2.5-0.5b", "n_ctx": 4096, "decoding": "llama.cpp"})
    pieces2 = []
    g2 = slow.chat(copy_prompt, max_tokens=30, on_text=pieces2.append)
    assert len(pieces2) > 3 and "".join(pieces2) == g2.text and g2.completion_tokens > 0


def test_prefix_is_reused_in_whole_blocks_and_never_changes_the_answer(qwen, copy_prompt):
    """A wholly cached prompt re-fed one token can answer differently from the same prompt evaluated fresh
    (a pass's numbers depend on which tokens it evaluates together): only aligned blocks are reused."""
    dec = decoder_for(qwen)
    prompt = dec.chat_tokens(copy_prompt)
    block = 32
    with locked(qwen):
        _clear(qwen)
        _, a, _ = dec.generate(prompt, 20, LookupSettings(reuse_block=block))
        _, b, st = dec.generate(prompt, 20, LookupSettings(reuse_block=block))
        _, c, other = dec.generate(
            prompt[:40] + dec.text_tokens(" and something else entirely"), 5, LookupSettings(reuse_block=block)
        )
        _, d, st2 = dec.generate(prompt, 20, LookupSettings(reuse_block=block))
    assert a == b == d
    assert st.reused_prefix == (st.prompt_tokens - 1) // block * block > 0
    assert other.reused_prefix == 32 and st2.reused_prefix == 32


def test_context_overflow_is_a_clear_error(copy_prompt):
    gen = GENERATORS.create("local", {"model": "qwen2.5-0.5b", "n_ctx": 256})
    with pytest.raises(ConfigError, match="context window"):
        gen.chat(copy_prompt, max_tokens=20)


def test_smollm2_greedy_matches_too():
    llm = load_llama(str(resolve_model("smollm2-135m")), 2048, 2)
    msgs = [{"role": "user", "content": "Name three colours."}]
    ref, _ = _reference(llm, msgs, 40)
    dec = decoder_for(llm)
    with locked(llm):
        _clear(llm)
        _, text, _ = dec.generate(dec.chat_tokens(msgs), 40, LookupSettings(draft_max=0))
    assert text == ref


WORKER = r"""
import json, sys
import llama_cpp
from engine.generators.llama_decode import LlamaDecoder, LookupSettings
from engine.generators.models import resolve_model
llm = llama_cpp.Llama(model_path=str(resolve_model("qwen2.5-0.5b")), n_ctx=2048, n_threads=2, verbose=False, seed=0)
msgs = json.loads(sys.argv[1])
ref = llm.create_chat_completion(msgs, max_tokens=24, temperature=0.0, seed=0)["choices"][0]["message"]["content"]
llm.n_tokens = 0; llm._ctx.kv_cache_seq_rm(-1, 0, -1)
dec = LlamaDecoder(llm)
_, text, _ = dec.generate(dec.chat_tokens(msgs), 24, LookupSettings())
print(json.dumps({"lib": llama_cpp.__file__, "ref": ref, "lookup": text}))
"""


def test_both_llama_builds_run_and_agree():
    """scripts/install.sh installs the build chosen for this CPU into the venv and keeps the portable AVX2
    build in .venv/llama-avx2 (the fallback): both load, decode, and give the same greedy answer."""
    avx2 = REPO / ".venv" / "llama-avx2"
    if not (avx2 / "llama_cpp").is_dir():
        pytest.skip("no portable build beside the venv (scripts/install.sh puts it in .venv/llama-avx2)")
    msgs = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
    outs = []
    for extra in ([str(avx2)], []):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([*extra, str(REPO)]))
        res = subprocess.run(
            [sys.executable, "-c", WORKER, json.dumps(msgs)], env=env, capture_output=True, text=True, timeout=300
        )
        assert res.returncode == 0, res.stderr[-2000:]
        outs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert outs[0]["lib"].startswith(str(avx2)) and not outs[1]["lib"].startswith(str(avx2))
    for o in outs:
        assert "Paris" in o["ref"] and o["lookup"] == o["ref"]
    assert outs[0]["ref"] == outs[1]["ref"]
