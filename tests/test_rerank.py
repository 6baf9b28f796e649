import json

import numpy as np
import pytest

from ragkit.corpus import Doc, Hit
from ragkit.errors import BackendError, ConfigError, CorpusError, EmptyQueryError, ModelNotFound
from ragkit.models.llm import ChatReply
from ragkit.models.rerankers import (
    CrossEncoderReranker,
    FlagCrossEncoderReranker,
    LLMReranker,
    RelevanceJudge,
    parse_score,
    yes_probability,
)
from ragkit.search.rerank import rerank
from ragkit.train.reranker import (
    TrainingConfig,
    heldout_accuracy,
    query_groups,
    split_of,
    train_cross_encoder,
    training_pairs,
)
from tests.fakes import ScriptedChat

DOCS = [Doc(f"{topic}-{i}", f"{topic} rule number {i}", topic=topic) for topic in ("sick", "vpn") for i in range(4)]


class LengthReranker:
    name = "length"

    def score(self, query, docs):
        return np.array([len(doc.text) for doc in docs], dtype=float)


def hits(*docs):
    return [Hit(doc, 1.0) for doc in docs]


def test_rerank_orders_by_the_new_scores_and_cuts_to_k():
    docs = [Doc("a", "x"), Doc("b", "xxx"), Doc("c", "xx")]
    assert [h.id for h in rerank("q", hits(*docs), LengthReranker(), k=2)] == ["b", "c"]


def test_rerank_ties_keep_the_first_stage_order():
    docs = [Doc("first", "aa"), Doc("second", "bb"), Doc("longest", "ccc"), Doc("third", "dd")]
    assert [h.id for h in rerank("q", hits(*docs), LengthReranker())] == ["longest", "first", "second", "third"]


def test_rerank_of_zero_documents_is_empty():
    assert rerank("q", [], LengthReranker()) == []


def test_rerank_refuses_an_empty_query():
    with pytest.raises(EmptyQueryError):
        rerank("", hits(Doc("a", "x")), LengthReranker())


def test_llm_reranker_reads_json_scores_and_counts_unreadable_replies():
    chat = ScriptedChat('{"score": 7}', "no idea", '{"score": 2}')
    scorer = LLMReranker(chat)
    assert scorer.score("q", DOCS[:3]).tolist() == [7.0, 0.0, 2.0]
    assert scorer.unreadable == 1
    assert chat.calls[0][1]["json_schema"]["properties"]["score"]["enum"] == list(range(11))


def first_tokens(*pairs):
    return ChatReply(text=pairs[0][0] if pairs else "", model="scripted", top_logprobs=tuple(pairs))


def test_the_relevance_judge_scores_p_yes_in_its_own_prompt_and_counts_replies_with_neither_word():
    chat = ScriptedChat(first_tokens(("Yes", np.log(0.6)), ("No", np.log(0.2)), (" yes", np.log(0.2))),
                        first_tokens(("no", np.log(0.9)), ("yes", np.log(0.1))), first_tokens(("The", 0.0)))
    judge = RelevanceJudge(chat)
    np.testing.assert_allclose(judge.score("sick days?", DOCS[:3]), [0.8, 0.1, 0.5], rtol=1e-6)
    assert judge.unreadable == 1
    messages, options = chat.calls[0]
    assert options == {"max_tokens": 1, "logprobs": RelevanceJudge.TOP}
    assert messages[-1]["content"] == "Query: sick days?\nPassage: sick rule number 0"


def test_the_relevance_judge_refuses_a_backend_without_token_probabilities_and_an_empty_query():
    with pytest.raises(BackendError, match="no token probabilities"):
        RelevanceJudge(ScriptedChat("yes")).score("q", DOCS[:1])
    ended_at_once = RelevanceJudge(ScriptedChat(""))  # an empty reply has no first token to give probabilities of
    assert ended_at_once.score("q", DOCS[:2]).tolist() == [0.5, 0.5] and ended_at_once.unreadable == 2
    # llama.cpp gives none for a first token that is part of a character; the other replies still count
    partial = RelevanceJudge(ScriptedChat(ChatReply("\ufffd", "m"), first_tokens(("yes", 0.0))))
    assert partial.score("q", DOCS[:2]).tolist() == [0.5, 1.0] and partial.unreadable == 1
    # every reply part of a character (as for a Chinese query): an English probe shows the backend gives them
    chinese = ScriptedChat(ChatReply("\ufffd", "m"), ChatReply("\ufffd", "m"), first_tokens(("yes", 0.0)))
    assert RelevanceJudge(chinese).score("q", DOCS[:2]).tolist() == [0.5, 0.5]
    assert chinese.calls[-1][0] == RelevanceJudge.PROBE and len(chinese.calls) == 3
    with pytest.raises(EmptyQueryError):
        RelevanceJudge(ScriptedChat("yes")).score(" ", DOCS[:1])


@pytest.mark.parametrize("pairs, probability", [([("YES", -1.0)], 1.0), ([(" no", -0.1)], 0.0),
                                                ([("Maybe", -0.1)], None), ([], None)])
def test_yes_probability_reads_both_words_in_any_case_and_spacing(pairs, probability):
    assert yes_probability(pairs) == probability


@pytest.mark.model
def test_the_relevance_judge_with_the_real_model_gets_probabilities_from_llama_cpp(local_chat):
    scores = RelevanceJudge(local_chat).score("How many sick days?", DOCS[:2])
    assert ((scores >= 0) & (scores <= 1)).all() and len(set(scores.tolist())) == 2


@pytest.mark.parametrize("text, score", [('{"score": 10}', 10.0), ("8/10", 8.0), ("score: 3.5", 3.5),
                                         ('{"score": 11}', None), ("none", None), ("", None), ("[1]", 1.0)])
def test_parse_score(text, score):
    assert parse_score(text) == score


def test_training_pairs_have_one_positive_and_same_topic_negatives():
    pairs = training_pairs([{"query": "sick rule 1", "doc_id": "sick-1"}], DOCS, same_topic=2, other_topic=1)
    assert [p["label"] for p in pairs] == [1, 0, 0, 0]
    assert {p["doc_id"].split("-")[0] for p in pairs[1:3]} == {"sick"}
    assert pairs[3]["doc_id"].startswith("vpn")
    assert len({p["doc_id"] for p in pairs}) == 4


def test_training_pairs_refuse_an_unknown_doc():
    with pytest.raises(CorpusError, match="unknown doc"):
        training_pairs([{"query": "q", "doc_id": "nope"}], DOCS)


def test_split_is_stable_and_roughly_fifteen_percent():
    queries = [f"question {i}" for i in range(2000)]
    share = sum(split_of(q) == "heldout" for q in queries) / len(queries)
    assert 0.12 < share < 0.18
    assert split_of("Question 7") == split_of("question 7")


def test_heldout_accuracy_counts_ordered_pairs():
    pairs = training_pairs([{"query": "q", "doc_id": "sick-0"}], DOCS, same_topic=3, other_topic=0)
    assert heldout_accuracy(LengthReranker(), pairs, DOCS) == 0.0  # all texts equally long: no pair won
    longer = [Doc("sick-0", "a much longer text than the others")] + DOCS[1:]
    assert heldout_accuracy(LengthReranker(), pairs, longer) == 1.0


def test_committed_pairs_match_the_queries_they_are_built_from():
    from ragkit.corpus import load_docs, read_jsonl
    from ragkit.train.reranker import PAIRS_FILE, QUERIES_FILE

    rebuilt = training_pairs(read_jsonl(QUERIES_FILE), load_docs())
    assert read_jsonl(PAIRS_FILE) == rebuilt
    assert len(rebuilt) >= 2000
    assert len(query_groups(rebuilt)) == len(read_jsonl(QUERIES_FILE))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A cross-encoder trained for two steps: real weights, real save, real loading."""
    queries = [{"query": f"{d.topic} rule {d.id[-1]}", "doc_id": d.id} for d in DOCS]
    out = tmp_path_factory.mktemp("ce") / "model"
    report = train_cross_encoder(training_pairs(queries, DOCS, same_topic=1, other_topic=1), DOCS, out,
                                 config=TrainingConfig(groups_per_batch=4, max_length=32), threads=1,
                                 progress=False)
    return report


@pytest.mark.model
def test_training_saves_a_model_and_its_report(tiny_model):
    assert tiny_model.steps == 2 and tiny_model.pairs == 24
    saved = json.loads((tiny_model.path / "training.json").read_text())
    assert saved["config"]["max_length"] == 32
    assert not tiny_model.path.with_name("model.partial").exists()


@pytest.mark.model
def test_flag_reranker_and_cross_encoder_load_it_and_agree(tiny_model):
    st = CrossEncoderReranker(tiny_model.path, threads=1).score("sick rule 1", DOCS[:3])
    flag = FlagCrossEncoderReranker(tiny_model.path, threads=1).score("sick rule 1", DOCS[:3])
    assert st.shape == (3,) and ((st > 0) & (st < 1)).all()
    np.testing.assert_allclose(st, flag, atol=1e-4)
    assert CrossEncoderReranker(tiny_model.path, threads=1).score("q", []).shape == (0,)


@pytest.mark.model
def test_both_cross_encoders_show_the_word_pieces_their_model_reads(tiny_model):
    st, flag = CrossEncoderReranker(tiny_model.path, threads=1), FlagCrossEncoderReranker(tiny_model.path, threads=1)
    pieces = st.tokens("Sick leave rules")
    assert pieces == flag.tokens("Sick leave rules") and "".join(p.lstrip("#") for p in pieces) == "sickleaverules"
    assert len(st.tokens("Sick leave " * 200)) == 400  # the whole text: the max_length cut comes when scoring


@pytest.mark.model
def test_llm_reranker_with_the_real_model_gives_scores_in_range(local_chat):
    scores = LLMReranker(local_chat).score("How many sick days?", DOCS[:2])
    assert ((scores >= 0) & (scores <= 10)).all()


def test_reranker_settings_say_what_to_do(fresh_models, monkeypatch, tmp_path):
    with pytest.raises(ConfigError, match="bge-reranker-base"):
        fresh_models.reranker("ce")
    with pytest.raises(ConfigError, match="unknown reranker"):
        fresh_models.reranker("cohere")
    with pytest.raises(ModelNotFound, match="no model directory"):
        fresh_models.reranker(f"flag:{tmp_path}/missing")
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path))
    with pytest.raises(ModelNotFound, match="make reranker"):
        fresh_models.reranker("course")
