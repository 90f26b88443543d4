"""Carry a sentence-transformers folder to a machine without this repository's environment, under a transfer
size limit: ``pack`` stores its float32 tensors as float16 (half the bytes; integer tensors unchanged),
``restore`` turns them back into float32 there (the weights then differ from the original by float16 rounding
only: the same architecture and speed). Used for the GPU figures (``bench/bench_gpu.py``, docs/scale-out.md).

    .venv/bin/python bench/carry_model.py pack    SRC_FOLDER  PACKED_FOLDER
    python3          bench/carry_model.py restore PACKED_FOLDER  FLOAT32_FOLDER
"""

from __future__ import annotations

import shutil
import sys

import torch
from safetensors.torch import load_file, save_file

PACKED = "model16.safetensors"


def pack(src: str, dst: str) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("model.safetensors", "README.md"))
    sd = load_file(f"{src}/model.safetensors")
    save_file({k: (v.half() if v.dtype == torch.float32 else v).contiguous() for k, v in sd.items()}, f"{dst}/{PACKED}")
    print(f"packed {len(sd)} tensors as float16")


def restore(src: str, dst: str) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns(PACKED))
    sd = load_file(f"{src}/{PACKED}")
    save_file(
        {k: (v.float() if v.dtype == torch.float16 else v).contiguous() for k, v in sd.items()},
        f"{dst}/model.safetensors",
    )
    print(f"restored {len(sd)} tensors to float32")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("pack", "restore"):
        sys.exit(__doc__)
    {"pack": pack, "restore": restore}[sys.argv[1]](sys.argv[2], sys.argv[3])
