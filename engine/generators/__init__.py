"""Generator registry: offline local GGUF models (llama.cpp) and any provider through litellm."""

from ..registry import Registry
from .base import Generation, Generator
from .litellm_gen import LiteLLMGenerator
from .llama_local import LlamaCppGenerator
from .models import MODELS, check_gguf, resolve_model

GENERATORS: Registry[Generator] = Registry("generator")
GENERATORS.register("local")(LlamaCppGenerator)
GENERATORS.register("litellm")(LiteLLMGenerator)


def packaged_generator() -> str:
    """The registered generator whose models come with their packages (the offline model menu)."""
    return next(n for n in GENERATORS.names() if GENERATORS.get(n).packaged_models)


def hosted_generator() -> str:
    """The registered generator that reaches a provider's model by a model string and an API key."""
    return next(n for n in GENERATORS.names() if GENERATORS.get(n).hosted)


def plugin_generators() -> list[str]:
    """Generators beyond the packaged-model and the hosted one (each shown with its own parameter form)."""
    return [n for n in GENERATORS.names() if n not in (packaged_generator(), hosted_generator())]


__all__ = [
    "GENERATORS",
    "Generation",
    "Generator",
    "LiteLLMGenerator",
    "LlamaCppGenerator",
    "MODELS",
    "check_gguf",
    "hosted_generator",
    "packaged_generator",
    "plugin_generators",
    "resolve_model",
]
