"""benchmarks/hotpotqa_fusion.py: the links read off paragraph text, the weighted fusion, the choice on train."""

from pathlib import Path

import pytest

from benchmarks import hotpotqa_data
from benchmarks import hotpotqa_fusion as fusion
from ragkit.corpus import Doc, Hit, Question
from tests.fakes import stub_setting

DOCS = [
    Doc("p0", "Kiss and Tell is a 1945 comedy film starring Shirley Temple.", title="Kiss and Tell (1945 film)"),
    Doc("p1", "Shirley Temple was an American actress and diplomat.", title="Shirley Temple"),
    Doc("p2", "Temple Bar is a district of Dublin. Kiss and Tell was not filmed there.", title="Temple Bar"),
    Doc("p3", "It is a novel by Stephen King.", title="It"),
    Doc("p4", "A town in Shirley Templeton county.", title="Templeton"),
]


def hits(*ids):
    by_id = {doc.id: doc for doc in DOCS}
    return [Hit(by_id[doc_id], 1.0) for doc_id in ids]


def test_a_link_is_a_whole_title_mentioned_without_its_disambiguation():
    links = fusion.Links(DOCS)
    assert [doc.id for doc in links.mentioned(DOCS[0])] == ["p1"]
    assert [doc.id for doc in links.mentioned(DOCS[2])] == ["p0"]  # "Kiss and Tell", not "(1945 film)"
    assert links.mentioned(DOCS[4]) == []  # "Templeton" is its own title; "Shirley Templeton" is not "Shirley Temple"


def test_short_titles_are_not_links():
    links = fusion.Links(DOCS)
    assert "It" not in links.by_key and fusion.link_key("Kiss and Tell (1945 film)") == "Kiss and Tell"


def test_the_linked_ranking_follows_the_top_hits_and_orders_by_dense_rank():
    links = fusion.Links(DOCS)
    linked = fusion.linked_ranking(hits("p2", "p0"), links, {"p1": 3, "p0": 9}, sources=2)
    assert [hit.id for hit in linked] == ["p1"]  # p0 is a source itself, so only p1 is new
    # p0 is ranked already but is no source: being linked boosts it
    assert [hit.id for hit in fusion.linked_ranking(hits("p2", "p0"), links, {}, sources=1)] == ["p0"]
    assert fusion.linked_ranking(hits("p3"), links, {}, sources=1) == []


def test_evidence_without_links_is_the_weighted_fusion_and_with_links_adds_the_mentioned():
    legs = fusion.Legs(hits("p2", "p3", "p4"), hits("p4", "p2", "p3"))
    plain = fusion.evidence(legs, fusion.Setting(60, 1.0, 0, 0.0), fusion.Links(DOCS))
    assert [hit.id for hit in plain] == ["p2", "p4", "p3"]
    dense_heavy = fusion.evidence(legs, fusion.Setting(60, 3.0, 0, 0.0), fusion.Links(DOCS))
    assert dense_heavy[0].id == "p4"
    linked = fusion.evidence(legs, fusion.Setting(60, 1.0, 1, 1.0), fusion.Links(DOCS))
    assert "p0" in [hit.id for hit in linked]  # Temple Bar mentions Kiss and Tell


def test_the_grid_starts_with_plain_rrf_and_holds_each_setting_once():
    grid = fusion.grid()
    assert grid[0] == fusion.Setting(60, 1.0, 0, 0.0)
    assert len(grid) == len(set(grid))
    assert str(grid[0]) == "k=60, dense weight 1, no links"


def test_balanced_weighs_each_type_the_same():
    questions = [Question("b1", "q", ("p0",), extra={"type": "bridge"}),
                 Question("b2", "q", ("p0",), extra={"type": "bridge"}),
                 Question("c1", "q", ("p0",), extra={"type": "comparison"})]
    values = {"b1": {"all gold": 1.0}, "b2": {"all gold": 1.0}, "c1": {"all gold": 0.0}}
    assert fusion.balanced(values, questions, "all gold") == pytest.approx(0.5)


def test_the_choice_takes_links_when_they_find_the_second_paragraph():
    question = Question("b1", "Which job had the actress of Kiss and Tell?", ("p0", "p1"), extra={"type": "bridge"})
    legs = {"b1": fusion.Legs(hits("p0", "p2", "p3", "p4"), hits("p2", "p0", "p4", "p3"))}
    chosen, tried = fusion.choose(legs, [question], fusion.Links(DOCS), fusion.StageRecorder())
    assert chosen.links >= 1 and tried[0]["balanced all gold"] == 1.0
    assert min(row["balanced all gold"] for row in tried) == 0.0  # no-link settings miss p1


def test_per_question_values_score_all_gold_and_recall():
    question = Question("b1", "q", ("p0", "p1"))
    assert fusion.per_question_values(hits("p0", "p3"), question) == {"all gold": 0.0, "gold recall": 0.5}
    assert fusion.per_question_values(hits("p1", "p0"), question) == {"all gold": 1.0, "gold recall": 1.0}


def write_hotpot(folder: Path) -> None:
    """dev500 and train100 files in their layouts, both over the same five paragraphs."""
    import json

    folder.mkdir()
    (folder / hotpotqa_data.CORPUS_FILE).write_text("".join(json.dumps({"_id": d.id, "title": d.title,
                                                                        "text": d.text}) + "\n" for d in DOCS))
    dev = [{"id": "b1", "question": "Which actress starred in Kiss and Tell?", "answer": "Shirley Temple",
            "supporting_pids": ["p0", "p1"], "type": "bridge"},
           {"id": "c1", "question": "Is Temple Bar in Dublin, and is It a novel?", "answer": "yes",
            "supporting_pids": ["p2", "p3"], "type": "comparison"}]
    (folder / hotpotqa_data.QUESTIONS_FILE).write_text("".join(json.dumps(row) + "\n" for row in dev))
    (folder / hotpotqa_data.TRAIN_CORPUS).write_text("".join(json.dumps({"_id": d.id, "title": d.title,
                                                                         "sentences": [d.text]}) + "\n"
                                                             for d in DOCS))
    train = [{"_id": "t1", "question": "Who starred in the 1945 comedy film?", "answer": "Shirley Temple",
              "type": "bridge", "supporting_facts": [["Kiss and Tell (1945 film)", 0], ["Shirley Temple", 0]]},
             {"_id": "t2", "question": "Which is in Dublin, Temple Bar or Templeton?", "answer": "Temple Bar",
              "type": "comparison", "supporting_facts": [["Temple Bar", 0], ["Templeton", 0]]}]
    (folder / hotpotqa_data.TRAIN_QUESTIONS).write_text(json.dumps(train))


def test_a_whole_run_chooses_on_train_and_scores_dev_with_gains_over_the_hybrid(tmp_path, monkeypatch):
    import json

    from benchmarks import harness
    from tests.fakes import HashingEmbedder

    write_hotpot(tmp_path / "hotpotqa")
    monkeypatch.setattr(harness, "CACHE_ROOT", tmp_path / "cache")
    stub_setting(monkeypatch, "embedder", lambda *a, **k: HashingEmbedder())
    assert fusion.main(["--data", str(tmp_path / "hotpotqa"), "--results-dir", str(tmp_path / "results")]) == 0
    result = json.loads((tmp_path / "results" / "hotpotqa-fusion.json").read_text())
    rungs = [row["rung"] for row in result["rows"]]
    assert rungs[:3] == ["BM25 alone", "dense e5 alone", fusion.HYBRID] and rungs[-1].startswith("chosen on train100")
    assert all(row["questions"] == 2 for row in result["rows"])
    assert len(result["extra"]["train100_settings_best_first"]) == len(fusion.grid())
    assert result["significance"]["bases"] == [fusion.HYBRID]
    assert [row["id"] for row in result["significance"]["per_question"]["BM25 alone"]] == ["b1", "c1"]
