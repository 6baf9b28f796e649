"""ragkit.train.records.relevance: the relevance judge's training records, from small fake copies of
the training files."""

import json

import pytest

from ragkit.errors import CorpusError
from ragkit.models.jobs import SYSTEMS
from ragkit.train.records.relevance import build_records, source_files

ABSTRACTS = {"d1": ("Aspirin", "Aspirin lowers fever in adults."), "d2": ("Fever", "Fever is a raised body heat."),
             "d3": ("Aspirin dose", "Aspirin dose for fever in children."), "d4": ("Coffee", "Coffee has caffeine."),
             "d5": ("Sleep", "Sleep restores the brain.")}
CLAIMS = {"1": "Aspirin lowers fever.", "2": "Sleep restores the brain.", "3": "Coffee has no caffeine.",
          "9": "Coffee has no caffeine."}  # 9 is a test claim; train claim 3 has the same text
PARAGRAPHS = [["Paris", ["Paris is the capital of France."]], ["Seine", ["The Seine flows through Paris."]],
              ["Lyon", ["Lyon is a city in France."]], ["Rhone", ["The Rhone flows through Lyon."]],
              ["Berlin", ["Berlin is in Germany."]]]

SQUAD = [{"id": f"squad1.1-train/Nile/{i}/0", "question": question, "title": "Nile", "context": context,
          "answers": [{"text": answer, "answer_start": context.find(answer), "occurrences": 1}]}
         for i, (question, context, answer) in enumerate((
             ("How long is the Nile?", "The Nile is 6,650 km long. It flows north.", "6,650 km"),
             ("Where does the Nile end?", "The Nile ends in the Mediterranean. Its delta is long.", "Mediterranean"),
             ("Who built dams on the Nile?", "Egypt built the Aswan dams on the Nile.", "Egypt"),
             ("What crosses the Nile?", "Bridges cross the Nile in Cairo.", "Bridges"),
             ("What lives in the Nile?", "Crocodiles live in the Nile.", "Crocodiles")))]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def jsonl(rows):
    return "".join(json.dumps(row) + "\n" for row in rows)


def write_training_data(root):
    """Tiny SciFact, HotpotQA and StrategyQA training files in data/benchmarks' layout."""
    write(root / "scifact/queries.jsonl", jsonl({"_id": qid, "text": text} for qid, text in CLAIMS.items()))
    write(root / "scifact/corpus.jsonl", jsonl({"_id": d, "title": t, "text": x} for d, (t, x) in ABSTRACTS.items()))
    write(root / "scifact/qrels/train.tsv", "query-id\tcorpus-id\tscore\n1\td1\t1\n2\td5\t1\n3\td4\t1\n")
    write(root / "scifact/qrels/test.tsv", "query-id\tcorpus-id\tscore\n9\td4\t1\n")
    hotpot = {"_id": "h1", "question": "Which river flows through the capital of France?", "answer": "Seine",
              "context": PARAGRAPHS, "supporting_facts": [["Paris", 0], ["Seine", 0]], "type": "bridge"}
    write(root / "hotpotqa/train100_hipporag.json", json.dumps([hotpot]))
    train = [{"qid": qid, "question": question, "answer": answer, "facts": [fact], "term": ""}
             for qid, question, answer, fact in (
                 ("s1", "Do cats purr?", True, "Cats purr when content."),
                 ("s3", "Do cats fly?", False, "Cats cannot fly at all."),
                 ("s2", "Can dogs purr?", False, "Dogs bark loudly at cats."),
                 ("dev", "Do cows fly?", False, "Cows cannot fly."))]
    write(root / "strategyqa/strategyqa_train.json", json.dumps(train))
    write(root / "strategyqa/dev200_qids.json", json.dumps(["dev"]))
    facts = [{"_id": f"{s['qid']}_f0", "qid": s["qid"], "text": s["facts"][0]} for s in train]
    write(root / "strategyqa/facts_corpus.jsonl", jsonl(facts))
    write(root / "reader/squad_train_sample.jsonl", jsonl(SQUAD))
    return root


def by_source(records, source):
    """The (title or text, answer) of the query's hard pairs."""
    return {(r["passage"][0] or r["passage"][1], r["answer"]) for r in records
            if r["source"] == source and r.get("negative") != "random"}


def test_each_relevant_passage_comes_with_as_many_bm25_hard_negatives_of_the_same_query(tmp_path):
    records, counts = build_records(root=write_training_data(tmp_path))
    # the uncited abstract BM25 ranks first for the claim is its negative
    assert by_source(records, "scifact:1") == {("Aspirin", "yes"), ("Aspirin dose", "no")}
    assert by_source(records, "hotpotqa:h1") == {("Paris", "yes"), ("Seine", "yes"), ("Lyon", "no"), ("Rhone", "no")}
    (positive, _), (negative, _) = sorted(by_source(records, "strategyqa:s1"), key=lambda pair: pair[1], reverse=True)
    assert positive == "Cats purr when content."
    assert negative in ("Dogs bark loudly at cats.", "Cats cannot fly at all.")
    assert by_source(records, "scifact:2") == set()  # no uncited abstract shares a word with it: left out
    hard_no = sum(n for key, n in counts.items() if " no " in key and "random" not in key)
    assert sum(n for key, n in counts.items() if " yes " in key) == hard_no


def test_each_query_also_meets_another_querys_relevant_passage_of_the_same_set(tmp_path):
    records, counts = build_records(root=write_training_data(tmp_path))
    easy = [r for r in records if r.get("negative") == "random"]
    sources = [r["source"] for r in easy]
    assert sources and len(sources) == len(set(sources))  # one a query
    positives = {(r["source"], r["passage"][1]) for r in records if r["answer"] == "yes"}
    for r in easy:
        assert r["answer"] == "no" and (r["source"], r["passage"][1]) not in positives
        assert any(p[1] == r["passage"][1] and p[0].split(":")[0] == r["source"].split(":")[0] for p in positives)
    assert sum(n for key, n in counts.items() if "random" in key) == len(easy)


def test_a_squad_question_gets_its_answer_window_and_another_paragraph_of_the_article(tmp_path):
    records, _ = build_records(root=write_training_data(tmp_path))
    pairs = {(r["passage"][1], r["answer"]) for r in records
             if r["query"] == "How long is the Nile?" and r.get("negative") != "random"}
    # the same title on both sides: only the content tells them apart; the negative never holds the answer
    assert ("The Nile is 6,650 km long. It flows north.", "yes") in pairs and len(pairs) == 2
    assert all(r["passage"][0] == "Nile" for r in records
               if r["source"].startswith("squad:") and r.get("negative") != "random")
    assert not any("6,650" in text for text, answer in pairs if answer == "no")


def test_test_claims_and_dev200_questions_never_become_training_records(tmp_path):
    records, _ = build_records(root=write_training_data(tmp_path))
    queries = {r["query"] for r in records}
    assert "Coffee has no caffeine." not in queries and "Do cows fly?" not in queries
    assert not any("Cows" in r["messages"][-1]["content"] for r in records)  # nor are dev200 facts negatives


def test_a_record_is_the_relevance_prompt_answered_yes_or_no_with_a_fixed_split(tmp_path):
    records, _ = build_records(root=write_training_data(tmp_path))
    again, _ = build_records(root=tmp_path)
    assert records == again
    record = next(r for r in records if r["source"] == "hotpotqa:h1" and r["passage"][0] == "Seine")
    assert record["messages"] == [{"role": "system", "content": SYSTEMS["relevance"]},
                                  {"role": "user", "content": "Query: Which river flows through the capital of "
                                   "France?\nPassage: Seine: The Seine flows through Paris."}]
    assert {r["answer"] for r in records} == {"yes", "no"} and {r["split"] for r in records} <= {"train", "heldout"}


def test_missing_training_data_is_named_with_the_setting(tmp_path):
    with pytest.raises(CorpusError, match="RAGKIT_EVALDATA") as caught:
        source_files(root=tmp_path)
    assert "scifact/qrels/train.tsv" in str(caught.value) and "hotpotqa_train_sample" not in str(caught.value)
