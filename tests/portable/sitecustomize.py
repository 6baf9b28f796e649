"""Test-harness modes that make this machine behave like another one. Python runs this file at start-up
only when a `make` test target puts tests/portable on PYTHONPATH; the ragkit library never reads these
variables, and no learner's run is affected.

HARNESS_EMBEDDING_NOISE=1e-2  every embedding vector moves by that share of its length, in a direction seeded
                              by its text (so the same text always gets the same vector). At 1e-2 cosines move
                              by 2.5e-4 (median) and a third of them change in the 3rd decimal, as between the
                              two CPUs of the recorded evidence (3 of lesson 02's 10 cosines); at 1e-3, 3% do
HARNESS_SCORE_NOISE=1e-3      every reranker score moves by that share of its size, seeded by query and document
                              (a cross-encoder trained and run on another CPU)
HARNESS_NOISE_SEED=0          another value moves every vector and score another way (another "CPU")
HARNESS_CHAT_SEED=7           the chat model samples with that seed, at temperature 0.5 or more, so that
                              every reply can change: the replies another CPU could give
HARNESS_CHAT_SHARE=0.3        only that share of the requests is reseeded (chosen by a digest of the request, so
                              the same request always gets the same treatment); the rest are answered greedily as
                              recorded. Another CPU flips some greedy replies, not all, and the model store
                              still answers the rest, so the run costs about that share of the chat calls
                              (more where a changed step changes every later prompt of its chain). Default 1.
HARNESS_CHAT_BATCH=16         instead of sampling, that share of the requests is answered greedily, as recorded,
                              by a twin of the model that reads prompts 16 tokens a batch: llama.cpp then sums in
                              another order, as another CPU's kernels do, and some greedy replies change
                              (benchmarks/greedy_batch.py: 28 of lesson 03's 56 multi-query replies at 64)
"""

import os
import zlib

NOISE = float(os.environ.get("HARNESS_EMBEDDING_NOISE") or 0)
SCORE_NOISE = float(os.environ.get("HARNESS_SCORE_NOISE") or 0)
NOISE_SEED = os.environ.get("HARNESS_NOISE_SEED") or "0"
CHAT_SEED = os.environ.get("HARNESS_CHAT_SEED")
CHAT_SHARE = float(os.environ.get("HARNESS_CHAT_SHARE") or 1)
CHAT_BATCH = int(os.environ.get("HARNESS_CHAT_BATCH") or 0)
CHAT_TEMPERATURE = 0.5


def _direction(shape, key: str):
    """Standard Gaussian noise, seeded by a text, so the same text is always moved the same way."""
    import numpy as np

    seed = zlib.crc32(f"{NOISE_SEED}\0{key}".encode("utf-8"))
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _identity(model) -> str:
    """The model's identity, as the model store names it."""
    from ragkit.models.cache import model_identity

    return model_identity(getattr(model, "inner", model))


class NoisyEmbedder:
    """An embedder whose unit vectors are moved by NOISE times their length in a direction seeded by the text."""

    def __init__(self, inner):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.identity = f"{_identity(inner)}, moved by {NOISE:g} ({NOISE_SEED})"

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_queries(self, texts):
        return self._perturb(self.inner.embed_queries(texts), texts, "query")

    def embed_passages(self, texts):
        return self._perturb(self.inner.embed_passages(texts), texts, "passage")

    @staticmethod
    def _perturb(rows, texts, role):
        import numpy as np

        from ragkit.models.embeddings import unit_rows

        rows = np.array(rows, dtype=np.float32)
        for row, text in zip(rows, texts):
            direction = _direction(row.shape, f"{role}\0{text}")
            row += direction * (NOISE * np.linalg.norm(row) / np.linalg.norm(direction))
        return unit_rows(rows) if len(rows) else rows


class NoisyReranker:
    """A reranker whose scores are each moved by SCORE_NOISE times their size, seeded by the query and the doc."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.identity = f"{_identity(inner)}, moved by {SCORE_NOISE:g} ({NOISE_SEED})"

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def score(self, query, docs):
        import numpy as np

        from ragkit.corpus import passage_text

        scores = np.array(self.inner.score(query, docs), dtype=np.float32)
        for i, doc in enumerate(docs):
            step = _direction((), f"{query}\0{passage_text(doc)}")
            scores[i] += float(step) * SCORE_NOISE * max(abs(float(scores[i])), 1e-3)
        return scores


# The noise goes on top of the model store (RAGKIT_MODEL_CACHE): the store keeps the model's own vectors and
# scores, which `make notebooks` already computed, and every read moves them the same way; a perturbed run
# then computes only what no earlier run asked for.
def _install_embedding_noise():
    from functools import cache

    from ragkit.models import resolve

    resolve._embedder = cache(_moved(resolve._embedder.__wrapped__, NoisyEmbedder))


def _install_score_noise():
    from functools import cache

    from ragkit.models import resolve

    resolve._reranker = cache(_moved(resolve._reranker.__wrapped__, NoisyReranker))


def _moved(load, noisy):
    """load, with what it returns wrapped in noisy."""
    return lambda *args, **kwargs: noisy(load(*args, **kwargs))


def in_share(messages, options, mode: str) -> bool:
    """Whether this request is one of the share a chat mode changes (always the same for the same request)."""
    request = repr((messages, sorted(options.items(), key=lambda item: item[0])))
    return zlib.crc32(f"{mode}\0{request}".encode("utf-8")) % 1000 < CHAT_SHARE * 1000


def _install_chat_seed(offset: int):
    from ragkit.models.llm import LlamaCppChat

    chat = LlamaCppChat.chat
    # tests/chat_fingerprint.py folds this into its canary digest: a reseeded run never counts as the recorded one
    LlamaCppChat.harness = f"reseeded by {offset}, share {CHAT_SHARE:g}"

    def reseeded_chat(self, messages, **options):
        if not in_share(messages, options, CHAT_SEED):
            return chat(self, messages, **options)
        options["temperature"] = max(options.get("temperature", 0.0), CHAT_TEMPERATURE)
        self.seed += offset
        try:
            return chat(self, messages, **options)
        finally:
            self.seed -= offset

    LlamaCppChat.chat = reseeded_chat


def _install_chat_batch(batch: int):
    from ragkit.models.llm import LlamaCppChat

    init, chat = LlamaCppChat.__init__, LlamaCppChat.chat
    LlamaCppChat.harness = f"greedy at batch {batch}, share {CHAT_SHARE:g}"  # see _install_chat_seed

    def remembering_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.harness_arguments = args, kwargs

    def batched_chat(self, messages, **options):
        if not in_share(messages, options, f"batch {batch}"):
            return chat(self, messages, **options)
        twin = _twin(self, batch)
        twin.seed = self.seed
        return chat(twin, messages, **options)

    LlamaCppChat.__init__, LlamaCppChat.chat = remembering_init, batched_chat


def _twin(model, batch: int):
    """The same model, adapters and reply store, loaded again to read prompts batch tokens at a time (once)."""
    if getattr(model, "harness_twin", None) is None:
        args, kwargs = model.harness_arguments
        model.harness_twin = type(model)(*args, **{**kwargs, "batch": batch})
    return model.harness_twin


if NOISE:
    _install_embedding_noise()
if SCORE_NOISE:
    _install_score_noise()
if CHAT_SEED and CHAT_BATCH:
    raise SystemExit("tests/portable: set HARNESS_CHAT_SEED (sampled replies) or HARNESS_CHAT_BATCH (greedy "
                     "replies at another batch size), not both")
if CHAT_SEED:
    _install_chat_seed(int(CHAT_SEED))
if CHAT_BATCH:
    _install_chat_batch(CHAT_BATCH)
