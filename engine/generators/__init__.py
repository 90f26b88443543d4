"""Generator registry: offline local GGUF models (llama.cpp) and any provider through litellm."""
from ..registry import Registry
from .base import Generation, Generator
from .litellm_gen import LiteLLMGenerator
from .llama_local import LlamaCppGenerator
from .models import MODELS, check_gguf, resolve_model

GENERATORS: Registry[Generator] = Registry("generator")
GENERATORS.register("local")(LlamaCppGenerator)
GENERATORS.register("litellm")(LiteLLMGenerator)

__all__ = ["GENERATORS", "Generation", "Generator", "LiteLLMGenerator", "LlamaCppGenerator", "MODELS", "check_gguf",
           "resolve_model"]
