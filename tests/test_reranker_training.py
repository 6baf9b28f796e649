"""ragkit.reranker_training: the course cross-encoder's cache folder is named by all that decides the model."""

import re

import pytest

from ragkit import reranker_training
from ragkit.corpus import Doc
from ragkit.reranker_training import TrainingConfig, course_reranker_dir, training_code

DOCS = [Doc("d1", "Sick leave: tell your lead.", title="Leave"), Doc("d2", "Expenses within 30 days.")]


@pytest.fixture
def pairs_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"query": "sick?", "doc_id": "d1", "label": 1, "group": 0, "split": "train"}\n')
    return path


def folder(pairs_file, config=TrainingConfig(), docs=DOCS):
    return course_reranker_dir(config, pairs_file, docs=docs)


def test_the_folder_is_stable_and_keeps_its_name_pattern(pairs_file, tmp_path):
    path = folder(pairs_file)
    assert path == folder(pairs_file) == folder(pairs_file, TrainingConfig(), list(DOCS))
    assert path.parent == tmp_path / "cache" and re.fullmatch(r"course-reranker-[0-9a-f]{12}", path.name)


def test_a_change_of_the_training_code_names_a_new_folder(pairs_file, monkeypatch):
    before = folder(pairs_file)
    monkeypatch.setattr(reranker_training, "training_code", lambda: training_code().replace("log_softmax", "sigmoid"))
    assert folder(pairs_file) != before


def test_the_code_that_is_keyed_holds_the_loss_and_the_frozen_layers():
    code = training_code()
    assert "def _listwise_loss(" in code and "def _trainable(" in code and "def train_cross_encoder(" in code


@pytest.mark.parametrize("package", ["torch", "transformers", "sentence-transformers"])
def test_a_new_library_version_names_a_new_folder(pairs_file, monkeypatch, package):
    before = folder(pairs_file)
    real = reranker_training.package_version
    monkeypatch.setattr(reranker_training, "package_version",
                        lambda name: "999.0" if name == package else real(name))
    assert folder(pairs_file) != before


@pytest.mark.parametrize("change", [{"frozen_layers": 2}, {"epochs": 2}, {"learning_rate": 1e-4}])
def test_a_config_change_names_a_new_folder(pairs_file, change):
    assert folder(pairs_file, TrainingConfig(**change)) != folder(pairs_file)


def test_new_pairs_or_new_doc_texts_name_a_new_folder(pairs_file):
    before = folder(pairs_file)
    assert folder(pairs_file, docs=[DOCS[0], Doc("d2", "Expenses within 60 days.")]) != before
    pairs_file.write_text(pairs_file.read_text().replace("sick?", "ill?"))
    assert folder(pairs_file) != before


def test_missing_pairs_are_a_clear_error(tmp_path):
    from ragkit.errors import CorpusError

    with pytest.raises(CorpusError, match="cannot read the training pairs"):
        course_reranker_dir(TrainingConfig(), tmp_path / "absent.jsonl", docs=DOCS)
