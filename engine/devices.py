"""Which accelerator a model runs on: ``auto`` picks CUDA, then Apple's MPS, then the CPU.

Embedders, the re-ranker (a registered retriever) and the SupCon fine-tuning of contrastive reindexing take
a ``device`` parameter; local generation takes ``n_gpu_layers`` instead (llama.cpp offloads that many layers
when it was built with GPU support). A device that is named but not present is one clear error, never a
silent fall-back to the CPU.
"""

from __future__ import annotations

import re

from .errors import ConfigError

DEVICE_HELP = "auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps"
_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def check_device(spec: str) -> None:
    """Refuse a device name that is none of ``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``."""
    if not _PATTERN.match(str(spec).strip()):
        raise ConfigError(f"device {spec!r} is not one of {DEVICE_HELP}")


def resolve_device(spec: str = "auto") -> str:
    """The torch device for ``spec``: ``auto`` → ``cuda`` when a CUDA GPU is visible, else ``mps`` when
    Apple's Metal backend is, else ``cpu``; a named device that is not available is a ConfigError."""
    spec = str(spec or "auto").strip()
    check_device(spec)
    if spec == "cpu":
        return "cpu"
    import torch

    cuda = torch.cuda.is_available()
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if spec == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if spec.startswith("cuda"):
        if not cuda:
            raise ConfigError(f"device {spec!r}: no CUDA GPU is visible to torch here (use auto or cpu)")
        if ":" in spec and int(spec.split(":")[1]) >= torch.cuda.device_count():
            raise ConfigError(f"device {spec!r}: only {torch.cuda.device_count()} CUDA device(s) here")
        return spec
    if not mps:
        raise ConfigError("device 'mps': Apple's Metal backend is not available here (use auto or cpu)")
    return "mps"
