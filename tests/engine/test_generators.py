"""Generators with real models: SmolLM2-135M in-process (llama.cpp) and litellm against a real
llama.cpp OpenAI-compatible server on loopback."""

import time

import pytest

from engine.errors import ConfigError, EngineError, ModelUnavailableError
from engine.generators import GENERATORS, check_gguf, resolve_model
from helpers import free_port


def test_local_model_is_verified_and_generates_reproducibly():
    path = resolve_model("smollm2-135m")
    assert path.name.endswith(".gguf")
    gen = GENERATORS.create("local", {"max_tokens": 24})
    a = gen.complete("The capital of France is")
    b = gen.complete("The capital of France is")
    assert a.text == b.text and a.text.strip()
    assert a.prompt_tokens > 0 and 0 < a.completion_tokens <= 24
    c = gen.chat(
        [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What organ pumps blood?"}]
    )
    assert c.text.strip() and c.completion_tokens > 0


def test_corrupt_or_mismatched_model_files_are_refused(tmp_path, monkeypatch):
    bad = tmp_path / "fake.gguf"
    bad.write_bytes(b"NOPE" + b"\0" * 100)
    with pytest.raises(ModelUnavailableError, match="not a GGUF model file"):
        check_gguf(bad)
    with pytest.raises(ModelUnavailableError, match="not a GGUF model file"):
        GENERATORS.create("local", {"model": str(bad)}).complete("hi")
    good = resolve_model("smollm2-135m")
    with pytest.raises(ModelUnavailableError, match="does not match the pinned"):
        check_gguf(good, "0" * 64)
    with pytest.raises(ModelUnavailableError, match="unknown local model"):
        resolve_model("no-such-model")


def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EngineError, match="OPENAI_API_KEY"):
        GENERATORS.create("litellm", {"model": "openai/gpt-4o-mini"}).chat([{"role": "user", "content": "hi"}])
    monkeypatch.delenv("MY_PLAYGROUND_KEY", raising=False)
    with pytest.raises(EngineError, match="MY_PLAYGROUND_KEY"):
        GENERATORS.create("litellm", {"model": "anthropic/claude-x", "api_key_env": "MY_PLAYGROUND_KEY"}).chat(
            [{"role": "user", "content": "hi"}]
        )
    with pytest.raises(ConfigError, match="provider string"):
        GENERATORS.create("litellm", {"model": "gpt"})


def test_unreachable_server_retries_then_fails_clearly():
    gen = GENERATORS.create(
        "litellm",
        {
            "model": "openai/nothing",
            "api_base": f"http://127.0.0.1:{free_port()}/v1",
            "retries": 2,
            "backoff": 0.01,
            "timeout": 5,
        },
    )
    t = time.perf_counter()
    with pytest.raises(EngineError, match="gave up after 3 attempts"):
        gen.chat([{"role": "user", "content": "hi"}])
    assert time.perf_counter() - t < 60


def test_litellm_chat_and_text_completion_against_a_local_server(llama_server):
    chat = GENERATORS.create("litellm", {"model": "openai/smol", "api_base": llama_server, "max_tokens": 16})
    out = chat.chat([{"role": "user", "content": "Name one fruit."}])
    assert out.text.strip() and out.prompt_tokens > 0 and out.completion_tokens > 0
    text = GENERATORS.create(
        "litellm", {"model": "text-completion-openai/smol", "api_base": llama_server, "max_tokens": 12}
    )
    out2 = text.complete("Aspirin is a drug that")
    assert out2.text.strip() and out2.completion_tokens > 0


def test_litellm_logprobs_from_the_local_server(llama_server):
    import litellm

    r = litellm.completion(
        model="openai/smol",
        api_base=llama_server,
        api_key="sk-local",
        max_tokens=5,
        messages=[{"role": "user", "content": "Say yes."}],
        logprobs=True,
        top_logprobs=2,
        temperature=0,
    )
    content = (
        r.choices[0].logprobs["content"] if isinstance(r.choices[0].logprobs, dict) else r.choices[0].logprobs.content
    )
    top = content[0]["top_logprobs"] if isinstance(content[0], dict) else content[0].top_logprobs
    # the two most likely tokens (llama.cpp adds the sampled token when it is not among them)
    assert content and len(top) >= 2
