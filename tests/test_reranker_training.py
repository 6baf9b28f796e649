"""ragkit.train.reranker: the course cross-encoder is keyed by all that decides its weights, retrained when the key
changes, and loaded by ragkit.models from its folder alone."""

import json
import re

import pytest

from ragkit.corpus import Doc
from ragkit.errors import CorpusError
from ragkit.models import resolve
from ragkit.models.resolve import course_reranker_dir
from ragkit.train import reranker as reranker_training
from ragkit.train.reranker import TrainingConfig, TrainReport, course_key, train_course_reranker, training_code

DOCS = [Doc("d1", "Sick leave: tell your lead.", title="Leave"), Doc("d2", "Expenses within 30 days.")]


@pytest.fixture
def pairs_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"query": "sick?", "doc_id": "d1", "label": 1, "group": 0, "split": "train"}\n')
    return path


def key(pairs_file, config=TrainingConfig(), docs=DOCS):
    return course_key(config, pairs_file, docs=docs)


def test_the_key_is_stable_and_the_folder_fixed(pairs_file, tmp_path):
    assert key(pairs_file) == key(pairs_file) == key(pairs_file, TrainingConfig(), list(DOCS))
    assert re.fullmatch(r"[0-9a-f]{12}", key(pairs_file))
    assert course_reranker_dir() == tmp_path / "cache" / "course-reranker"


def test_a_change_of_the_training_code_changes_the_key(pairs_file, monkeypatch):
    before = key(pairs_file)
    monkeypatch.setattr(reranker_training, "training_code", lambda: training_code().replace("log_softmax", "sigmoid"))
    assert key(pairs_file) != before


def test_the_keyed_code_is_what_trains_and_not_the_whole_module():
    code = training_code()
    assert "def _listwise_loss(" in code and "def _trainable(" in code and "def train_cross_encoder(" in code
    assert "def heldout_accuracy(" not in code and "def course_key(" not in code


@pytest.mark.parametrize("package", ["torch", "transformers", "sentence-transformers"])
def test_a_new_library_version_changes_the_key(pairs_file, monkeypatch, package):
    before = key(pairs_file)
    real = reranker_training.package_version
    monkeypatch.setattr(reranker_training, "package_version",
                        lambda name: "999.0" if name == package else real(name))
    assert key(pairs_file) != before


@pytest.mark.parametrize("change", [{"frozen_layers": 2}, {"epochs": 2}, {"learning_rate": 1e-4}])
def test_a_config_change_changes_the_key(pairs_file, change):
    assert key(pairs_file, TrainingConfig(**change)) != key(pairs_file)


def test_new_pairs_or_new_doc_texts_change_the_key(pairs_file):
    before = key(pairs_file)
    assert key(pairs_file, docs=[DOCS[0], Doc("d2", "Expenses within 60 days.")]) != before
    pairs_file.write_text(pairs_file.read_text().replace("sick?", "ill?"))
    assert key(pairs_file) != before


def test_missing_pairs_are_a_clear_error(tmp_path):
    with pytest.raises(CorpusError, match="cannot read the training pairs"):
        course_key(TrainingConfig(), tmp_path / "absent.jsonl", docs=DOCS)


def test_the_folder_is_reused_while_its_key_holds_and_retrained_when_it_changes(pairs_file, monkeypatch):
    trained = []

    def fake_training(pairs, docs, out_dir, *, config, threads, progress, key):
        trained.append(key)
        report = TrainReport(out_dir, 1.0, 3, len(pairs), 1.8, 0.9)
        out_dir.mkdir(parents=True, exist_ok=True)
        reranker_training._write_report(report, config, out_dir, key)
        return report

    monkeypatch.setattr(reranker_training, "train_cross_encoder", fake_training)
    first = train_course_reranker(docs=DOCS, progress=False)
    again = train_course_reranker(docs=DOCS, progress=False)
    assert (first.reused, again.reused, len(trained)) == (False, True, 1)
    assert again.steps == 3 and again.path == course_reranker_dir()
    changed = train_course_reranker(docs=DOCS, config=TrainingConfig(epochs=2), progress=False)
    assert not changed.reused and len(trained) == 2 and trained[0] != trained[1]


def test_loading_reads_the_length_the_folder_was_trained_with(pairs_file, fresh_models, monkeypatch):
    folder = course_reranker_dir()
    folder.mkdir(parents=True)
    (folder / "training.json").write_text(json.dumps({"config": {"max_length": 64}, "key": "abc"}))
    built = {}
    monkeypatch.setattr(resolve, "CrossEncoderReranker", lambda path, **options: built.update(options) or path)
    monkeypatch.delenv("RAGKIT_MODEL_CACHE", raising=False)  # the reranker itself, not a cache around it
    assert fresh_models.reranker("course") == folder and built["max_length"] == 64
