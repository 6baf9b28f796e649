import json

import numpy as np
import pytest

from ragkit.corpus import Doc, Hit
from ragkit.errors import EmptyQueryError
from ragkit.models.llm import ChatReply
from ragkit.models.replies import step_key
from ragkit.models.rerankers import BiEncoderReranker, LLMScorer
from ragkit.passages import NOT_IN_PASSAGES
from ragkit.reason.chain_of_thought import cot_grammar, cot_prompt, parse_answer, parse_cot
from ragkit.reason.rwr import RwRResult, is_yes_no, rwr
from ragkit.reason.step_judge import parse_verdict, verdict_schema
from ragkit.reason.steps import keyword_query, safe_search
from ragkit.reason.voting import ReasoningPath, evidence_scorer, rwr_vote, self_consistency, tally, weighted_vote
from ragkit.search.lexical import BM25Index
from ragkit.text import answer_key, search_tokenize
from tests.fakes import HashingEmbedder, JobChat, ScriptedChat, ScriptedReader, stub_setting

DOCS = [Doc("spire", "The cathedral spire is 123 metres tall.", title="Cathedral"),
        Doc("fort", "The fortress was founded in 1703 on a small island.", title="Fortress"),
        Doc("bridge", "The palace bridge opens at night for ships.", title="Bridge")]
COT = "Step 1: The fortress was founded in 1703.\nStep 2: The fortress is on an island.\nSo the answer is 1703."


def verdict(name, correction=""):
    return json.dumps({"verdict": name, "corrected_step": correction})


def fixed_search(*ids):
    """A retriever that returns the given docs for any query, and records the queries."""
    by_id = {doc.id: doc for doc in DOCS}

    def search(query, *, k):
        search.queries.append(query)
        return [Hit(by_id[i], 1.0) for i in ids][:k]

    search.queries = []
    return search


def run(*replies, search=None, **options):
    chat = ScriptedChat(*replies)
    return rwr("When was the fortress founded?", search or fixed_search("fort"), chat=chat, **options), chat




class SeededChat(ScriptedChat):
    """A scripted model with a seed attribute, like LlamaCppChat: records the seed of each call."""

    seed = 42

    def chat(self, messages, **options):
        self.seeds = getattr(self, "seeds", []) + [self.seed]
        return super().chat(messages, **options)


class TableScorer:
    """Scores a step by a fixed table (0 for unknown steps)."""

    name = "table"

    def __init__(self, table):
        self.table = table

    def score(self, text, docs):
        return np.full(len(docs), self.table.get(text, 0.0))


# --- one chain of thought, checked step by step ----------------------------------------------------

def test_rwr_checks_each_step_and_answers_from_the_revised_steps():
    result, chat = run(COT, verdict("confirmed"), verdict("corrected", "The fortress is on a small island."),
                       "So the answer is 1703.", k=2)
    assert [s.original for s in result.steps] == ["The fortress was founded in 1703.", "The fortress is on an island."]
    assert [s.verdict for s in result.steps] == ["confirmed", "corrected"]
    assert result.steps[1].text == "The fortress is on a small island."
    assert result.corrected == 1 and result.total_steps == 2
    assert result.cot_answer == "1703" and result.answer == "1703"
    assert result.sources == ("fort",) and result.warnings == ()
    assert chat.calls[1][1]["json_schema"] == verdict_schema()
    assert "Verified so far:\n1. The fortress was founded in 1703.\n" in chat.calls[2][0][-1]["content"]
    assert "2. The fortress is on a small island." in chat.calls[3][0][-1]["content"]
    assert result.tokens == sum(len(str(c).split()) for c in [COT, verdict("confirmed"),
                                verdict("corrected", "The fortress is on a small island."), "So the answer is 1703."])


FIRST = "The fortress was founded in 1703."


@pytest.mark.parametrize("reply, expected, text", [
    (verdict("confirmed"), "confirmed", FIRST),
    (verdict("Corrected", " It was founded in 1704. "), "corrected", "It was founded in 1704."),
    (verdict("unverified", "It was founded in 1704."), "unverified", FIRST),  # a correction without 'corrected'
    ('{"verdict": "true"}', "unverified", FIRST),
    ("The step is confirmed.", "confirmed", FIRST),
    ("The step is corrected.", "unverified", FIRST),  # a verdict word gives no correction
    (verdict("corrected", ""), "unverified", FIRST),
    (verdict("corrected", "the fortress was founded in 1703"), "unverified", FIRST),
    ("", "unverified", FIRST),
])
def test_each_verdict_reply_gives_the_documented_verdict_and_step_text(reply, expected, text):
    result, _ = run(COT, reply, verdict("confirmed"), "So the answer is 1703.")
    step = result.steps[0]
    assert (step.verdict, step.text, step.original) == (expected, text, FIRST)
    assert step.corrected == (text if expected == "corrected" else "")
    assert result.corrected == (expected == "corrected")


@pytest.mark.parametrize("mode, first_query", [("keywords", "fortress founded 1703"),
                                               ("step", "The fortress was founded in 1703.")])
def test_queries_without_an_llm(mode, first_query):
    search = fixed_search("fort")
    _, chat = run(COT, verdict("confirmed"), search=search, query=mode)
    assert search.queries[0] == first_query
    assert len(chat.calls) == 4  # chain, two verdicts, answer: no query calls


def test_queries_written_by_the_llm_and_an_empty_one_falls_back_visibly():
    search = fixed_search("fort")
    result, chat = run(COT, "fortress founding year", verdict("confirmed"), "  ", verdict("confirmed"),
                       "So the answer is 1703.", search=search, query="llm")
    assert search.queries == ["fortress founding year", "fortress island"]
    assert "step 2: the model wrote an empty search query; used the step's keywords" in result.warnings
    assert chat.calls[1][1]["stop"] == ["\n"]


def test_grammar_is_used_when_asked_for_and_looks_right():
    _, chat = run(COT, verdict("confirmed"), constrain="grammar", max_steps=2)
    assert chat.calls[0][1]["grammar"] == cot_grammar(2)
    assert cot_grammar(2).splitlines()[0] == 'root ::= "Step 1: " line ("Step 2: " line)? tail'
    assert chat.calls[-1][1]["grammar"].startswith('root ::= "So the answer is "')
    _, chat = run(COT, verdict("confirmed"))  # auto: a model without grammars gets plain text
    assert "grammar" not in chat.calls[0][1]
    with pytest.raises(ValueError, match="plain text"):
        run(COT, constrain="json")


def test_examples_longer_than_max_steps_are_left_out_of_the_prompt():
    assert len(cot_prompt("q", max_steps=3)) == 6 and len(cot_prompt("q", max_steps=2)) == 4
    assert "at most 2 steps" in cot_prompt("q", max_steps=2)[0]["content"]


def test_trace_markdown_and_html_show_steps_verdicts_and_answers():
    result, _ = run(COT, verdict("confirmed"), verdict("corrected", "It is on a <small> island."),
                    "So the answer is 1703.")
    text = result.trace_markdown()
    for part in ("**Step 1** — ✔ confirmed: The fortress was founded in 1703.",
                 "- corrected to: It is on a <small>",
                 "`fort`", "**Chain-of-thought answer:** 1703", "corrected 1 of 2 steps"):
        assert part in text
    page = result.trace_html()
    assert page.count("<tr") == 3 and "&lt;small&gt;" in page and "background:#fff3cd" in page


# --- bad LLM output: visible, never a crash, never a silent substitution -------------------------------

def test_a_reply_without_step_lines_is_read_sentence_by_sentence_and_says_so():
    result, chat = run("I think it is 1703.", verdict("unverified"), "So the answer is 1703.")
    assert [s.original for s in result.steps] == ["I think it is 1703."]
    assert result.cot_answer == "" and result.answer == "1703"
    assert result.warnings[:2] == ("no 'So the answer is …' line in the reply: no answer was read",
                                   "no 'Step N:' lines in the reply; read its sentences as steps")
    assert isinstance(result, RwRResult) and len(chat.calls) == 3


def test_an_empty_reply_gives_no_steps_and_two_warnings():
    result, _ = run("")
    assert result.steps == () and result.total_steps == 0 and result.corrected == 0
    assert result.warnings == ("no 'So the answer is …' line in the reply: no answer was read",
                               "no reasoning steps could be read from the reply: nothing was verified, and the "
                               "answer is the unverified chain-of-thought answer")


def test_an_answer_without_steps_is_kept_as_the_unverified_answer():
    result, _ = run("So the answer is 1703.")
    assert result.steps == () and result.answer == "1703"
    assert result.warnings[-1].startswith("no reasoning steps could be read")


def test_the_same_step_repeated_is_dropped_with_a_warning():
    text = "Step 1: It was founded in 1703.\nStep 2: It was founded in 1703.\nSo the answer is 1703."
    result, _ = run(text, verdict("confirmed"), "So the answer is 1703.")
    assert result.total_steps == 1 and "step 2 repeated step 1; dropped it" in result.warnings


def test_a_step_that_borrows_the_examples_subject_is_flagged():
    result, _ = run("Step 1: Koalas built the fortress in 1703.\nSo the answer is 1703.", verdict("unverified"), "1703")
    assert any(w.startswith("step 1 copies the prompt's example") and "'koalas'" in w for w in result.warnings)


def test_a_reply_looping_to_the_token_limit_is_cut_and_said():
    loop = "Step 1: The fortress is old.\n" + "Step 2: The fortress is old.\n" * 30 + "Step 3: The for"
    chat = ScriptedChat(ChatReply(loop, "m", 20, 160, finish_reason="length"), verdict("confirmed"),
                       "So the answer is 1703.")
    result = rwr("When was the fortress founded?", fixed_search("fort"), chat=chat)
    assert [s.original for s in result.steps] == ["The fortress is old.", "The for"]
    assert result.warnings[0] == ("the model hit the token limit while writing the chain of thought: "
                                  "its reply was cut off")
    assert "no 'So the answer is …' line in the reply: no answer was read" in result.warnings
    assert "... and 27 more repeated steps dropped" in result.warnings
    assert result.cot_answer == "" and result.answer == "1703"


def test_an_unknown_verdict_becomes_unverified_with_a_warning():
    result, _ = run(COT, verdict("probably"), verdict("confirmed"), "So the answer is 1703.")
    assert result.steps[0].verdict == "unverified"
    assert "step 1: unknown verdict 'probably'; marked unverified" in result.warnings


def test_a_correction_that_is_empty_keeps_the_original_step_marked_unverified():
    result, _ = run(COT, verdict("corrected", "  "), verdict("confirmed"), "So the answer is 1703.")
    step = result.steps[0]
    assert step.verdict == "unverified" and step.text == step.original == "The fortress was founded in 1703."
    assert result.corrected == 0
    assert ("step 1: the model said 'corrected' but gave no correction; kept the original step, marked unverified"
            in result.warnings)


def test_a_correction_that_repeats_the_step_is_not_counted_as_a_correction():
    result, _ = run(COT, verdict("corrected", "the fortress was founded in 1703"), verdict("confirmed"), "1703")
    assert result.steps[0].verdict == "unverified"
    assert "step 1: the model's correction repeats the step; kept it, marked unverified" in result.warnings


def test_a_retriever_that_returns_nothing_leaves_steps_unverified_without_asking():
    result, chat = run(COT, "So the answer is 1703.", search=lambda query, *, k: [])
    assert [s.verdict for s in result.steps] == ["unverified", "unverified"]
    assert "step 1: the retriever returned nothing for 'fortress founded 1703'; left unverified" in result.warnings
    assert result.warnings[-1] == "no step was confirmed or corrected by evidence: the answer rests on unverified steps"
    assert len(chat.calls) == 2  # the chain and the final answer only


def test_a_junk_query_the_retriever_refuses_is_skipped_with_a_warning():
    text = "Step 1: It is what it is.\nStep 2: The fortress was founded in 1703.\nSo the answer is 1703."
    bm25 = BM25Index(DOCS, tokenizer=search_tokenize)
    result, _ = run(text, verdict("confirmed"), "So the answer is 1703.", search=bm25.search, query="step")
    assert result.steps[0].evidence == () and result.steps[1].sources == ("fort",)
    assert any(w.startswith("step 1: skipped retrieval for the query 'It is what it is.'") for w in result.warnings)
    result, _ = run(text, verdict("confirmed"), "So the answer is 1703.", search=bm25.search)  # keywords: none left
    assert "step 1: the search query was empty; skipped retrieval; left unverified" in result.warnings


def test_an_empty_final_answer_keeps_the_cot_answer_and_says_so():
    result, _ = run(COT, verdict("confirmed"), verdict("confirmed"), "")
    assert result.answer == "1703"
    assert "the model gave no final answer; kept the chain-of-thought answer" in result.warnings


def test_empty_question_and_bad_options_are_refused():
    with pytest.raises(EmptyQueryError):
        rwr("", fixed_search("fort"), chat=ScriptedChat(COT))
    with pytest.raises(ValueError, match="max_steps"):
        rwr("q", fixed_search("fort"), chat=ScriptedChat(COT), max_steps=0)
    with pytest.raises(ValueError, match="query must be"):
        rwr("q", fixed_search("fort"), chat=ScriptedChat(COT), query="bm25")
    with pytest.raises(EmptyQueryError):
        rwr_vote(" ", fixed_search("fort"), chat=ScriptedChat(COT), scorer=TableScorer({}))
    with pytest.raises(ValueError, match="paths"):
        rwr_vote("q", fixed_search("fort"), chat=ScriptedChat(COT), scorer=TableScorer({}), paths=0)


# --- parsers -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, steps, answer", [
    (COT, ["The fortress was founded in 1703.", "The fortress is on an island."], "1703"),
    ("1. A is B.\n2. B is C.\nSo the answer is: C", ["A is B.", "B is C."], "C"),
    ("Step 1: A is B.\nStep 2: So the answer is yes.", ["A is B."], "yes"),
    ("Step 1: A is B.\nThe answer is \"Paris\".", ["A is B."], "Paris"),
    ("A is B. B is C. So the answer is C.", ["A is B.", "B is C."], "C"),
    ("", [], ""),
])
def test_parse_cot_reads_steps_and_strips_the_answer(text, steps, answer):
    parsed_steps, parsed_answer, _ = parse_cot(text, max_steps=4)
    assert (parsed_steps, parsed_answer) == (steps, answer)


def test_parse_cot_says_when_it_read_sentences_and_when_it_cut():
    _, _, warnings = parse_cot("A is B. B is C. So the answer is C.", max_steps=4)
    assert warnings == ["no 'Step N:' lines in the reply; read its sentences as steps"]
    steps, _, warnings = parse_cot("Step 1: a.\nStep 2: b.\nStep 3: c.\nSo the answer is d.", max_steps=2)
    assert steps == ["a.", "b."] and warnings == ["kept the first 2 of 3 steps"]


@pytest.mark.parametrize("text, expected", [
    (verdict("confirmed"), ("confirmed", "", [])),
    (verdict("Corrected", " It is 1704. "), ("corrected", "It is 1704.", [])),
    ('{"verdict": "true"}', ("unverified", "", ["unknown verdict 'true'; marked unverified"])),
    ("The step is confirmed.", ("confirmed", "", ["the verdict was not JSON; read the verdict word from the text"])),
    ("yes", ("unverified", "", ["unknown verdict 'yes'; marked unverified"])),
    ("", ("unverified", "", ["unknown verdict ''; marked unverified"])),
])
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


@pytest.mark.parametrize("text, answer", [("So the answer is 1703.", "1703"), ("the answer is: \"Paris\"", "Paris"),
                                          ("1703!", "1703"), ("", ""), ("So the answer is", "")])
def test_parse_answer(text, answer):
    assert parse_answer(text) == answer


# --- the vote ------------------------------------------------------------------------------------------

def path_text(fact, answer):
    return f"Step 1: {fact}\nSo the answer is {answer}."


def test_a_well_supported_minority_answer_wins_the_weighted_vote():
    chat = ScriptedChat(path_text("It was built in 1800.", "1800"), path_text("It was built in 1800.", "1800"),
                        path_text("It was founded in 1703.", "1703"))
    scorer = TableScorer({"It was built in 1800.": 0.1, "It was founded in 1703.": 0.9})
    result = rwr_vote("When was the fortress founded?", fixed_search("fort"), chat=chat, paths=3, scorer=scorer)
    assert result.answer == "1703" and result.majority_answer == "1800"
    assert [p.support for p in result.paths] == pytest.approx([0.1, 0.1, 0.9])
    assert result.votes == (("1703", 0.9, 1), ("1800", 0.2, 2))
    assert result.scorer == "table" and all(call[1]["temperature"] == 0.7 for call in chat.calls)
    assert "| 1703 | 0.900 | 1 |" in result.trace_markdown()
    assert result.trace_html().count("background:#e2f5e2") == 1


def test_the_embedding_scorer_needs_no_llm_and_gives_supports_in_0_1():
    chat = ScriptedChat(path_text("The fortress was founded in 1703.", "1703"),
                        path_text("Ships sail at noon.", "noon"))
    result = rwr_vote("When was the fortress founded?", BM25Index(DOCS, tokenizer=search_tokenize).search, chat=chat,
                      paths=2, scorer="embedding", embedder=HashingEmbedder(), k=2)
    assert len(chat.calls) == 2  # only the two sampled paths
    assert all(0.0 <= p.support <= 1.0 for p in result.paths)
    assert result.paths[0].support > result.paths[1].support and result.answer == "1703"
    assert result.paths[0].evidence[0][0].id == "fort"


def test_a_path_without_evidence_has_zero_support_and_all_zero_falls_back_to_majority():
    chat = ScriptedChat(path_text("a b.", "x"), path_text("c d.", "y"), path_text("e f.", "y"))
    result = rwr_vote("q", lambda query, *, k: [], chat=chat, paths=3, scorer=TableScorer({}))
    assert [p.support for p in result.paths] == [0.0, 0.0, 0.0]
    assert result.answer == result.majority_answer == "y"
    assert "no path had any supporting evidence: the weighted vote fell back to the majority answer" in result.warnings
    assert "path 1 step 1: the retriever returned nothing for 'b'" in result.warnings


def test_paths_without_an_answer_are_left_out_of_the_vote():
    chat = ScriptedChat("Step 1: It was founded in 1703.", path_text("It was founded in 1703.", "1703"))
    result = rwr_vote("q", fixed_search("fort"), chat=chat, paths=2, scorer=TableScorer({"It was founded in 1703.": 1}))
    assert result.answer == "1703" and result.votes == (("1703", 1.0, 1),)
    assert "path 1 gave no answer; left out of the vote" in result.warnings


def test_no_answer_anywhere_gives_an_empty_answer_and_says_so():
    result = rwr_vote("q", fixed_search("fort"), chat=ScriptedChat(""), paths=2, scorer=TableScorer({}))
    assert result.answer == "" and result.votes == ()
    assert "no path gave an answer: there is nothing to vote on" in result.warnings
    assert "no path had readable steps: nothing could be checked against evidence" in result.warnings


def test_identical_samples_are_flagged_and_a_seeded_backend_gets_one_seed_per_path():
    result = self_consistency("q", chat=ScriptedChat(path_text("a b.", "x")), paths=3)
    assert result.answer == "x" and result.votes == (("x", 3.0, 3),)
    assert any(w.startswith("all 3 sampled paths are identical") for w in result.warnings)
    chat = SeededChat(path_text("a b.", "x"), path_text("c d.", "y"), path_text("e f.", "y"))
    result = self_consistency("q", chat=chat, paths=3, seed=7)
    assert chat.seeds == [7, 8, 9] and chat.seed == 42  # restored afterwards
    assert result.answer == result.majority_answer == "y" and result.scorer == "majority (no evidence)"


def test_self_consistency_normalises_answers_before_counting():
    chat = ScriptedChat(path_text("a.", "Yes, it does"), path_text("b.", "yes"), path_text("c.", "No"))
    result = self_consistency("q", chat=chat, paths=3)
    assert result.answer == "Yes, it does" and result.votes[0][2] == 2


def test_tally_and_weighted_vote_break_ties_by_count_then_order():
    votes = [("X", 0.5), ("Y", 0.25), ("Y", 0.25)]
    paths = [ReasoningPath(i, "", (), a, support=s) for i, (a, s) in enumerate(votes, 1)]
    assert tally(paths, [p.support for p in paths]) == [("Y", 0.5, 2), ("X", 0.5, 1)]
    assert weighted_vote(paths)[:2] == ("Y", "Y")


@pytest.mark.parametrize("answer, key", [("Yes, it does.", "yes"), ("no", "no"), ("The Fortress.", "fortress"),
                                         ("", ""), ("  ...", "")])
def test_answer_key(answer, key):
    assert answer_key(answer) == key


def test_evidence_scorer_is_chosen_by_one_argument():
    embedder = HashingEmbedder()
    scorer = evidence_scorer("embedding", embedder=embedder)
    assert isinstance(scorer, BiEncoderReranker)
    scores = scorer.score("fortress founded 1703", DOCS)
    assert scores.argmax() == 1 and scores.max() <= 1.0 + 1e-6
    assert evidence_scorer("cross-encoder", reranker=(ce := TableScorer({}))) is ce
    llm = evidence_scorer("llm", chat=ScriptedChat('{"score": 7}'))
    assert isinstance(llm, LLMScorer) and llm.score("x", DOCS[:1]).tolist() == pytest.approx([0.7])
    assert evidence_scorer(ce) is ce
    with pytest.raises(ValueError, match="scorer must be one of"):
        evidence_scorer("nli")
    with pytest.raises(TypeError, match="score"):
        evidence_scorer(object())


# --- the real model -------------------------------------------------------------------------------------

def recorded(monkeypatch, chat) -> list:
    """Every call made to the chat model from now on, as (messages, options, reply); the model is unchanged."""
    calls, ask = [], chat.chat

    def chat_and_record(messages, **options):
        reply = ask(messages, **options)
        calls.append((messages, options, reply))
        return reply

    monkeypatch.setattr(chat, "chat", chat_and_record)
    return calls


def expected_verdict(step: str, reply: str) -> tuple[str, str]:
    """(verdict, correction) the docs promise for a schema-constrained JSON reply, read with json alone (not with
    the parser under test): 'corrected' needs a new, non-empty step."""
    written = json.loads(reply)
    found, correction = written["verdict"], str(written.get("corrected_step") or "").strip().strip("\"'“”`").strip()
    if found != "corrected":
        return found, ""
    return ("corrected", correction) if correction and step_key(correction) != step_key(step) else ("unverified", "")


def evidence_ids(search, step: str, k: int) -> tuple[str, ...]:
    """The ids the step's keyword query retrieves."""
    return tuple(hit.id for hit in safe_search(search, keyword_query(step), k=k)[0])


def check_rwr_follows_its_replies(result, calls, search):
    """Steps, verdicts, corrections and answer are what the recorded replies say, through the documented rules."""
    (_, _, cot), *rest = calls
    steps, cot_answer, _ = parse_cot(cot.text, max_steps=2)
    assert [s.original for s in result.steps] == steps and result.cot_answer == cot_answer
    verdicts = [reply.text for _, options, reply in rest if options.get("json_schema") == verdict_schema()]
    judged = [s for s in result.steps if s.evidence]
    assert len(verdicts) == len(judged)  # a step without evidence costs no call
    assert all(s.sources == evidence_ids(search, s.original, 1) for s in result.steps)
    assert all((s.verdict, s.corrected) == ("unverified", "") for s in result.steps if not s.evidence)
    expected = [expected_verdict(s.original, text) for s, text in zip(judged, verdicts)]
    assert [(s.verdict, s.corrected) for s in judged] == expected
    assert result.corrected == sum(v == "corrected" for v, _ in expected)
    assert all(s.text == s.corrected != "" for s in result.steps if s.verdict == "corrected")
    assert result.tokens == sum(r.prompt_tokens + r.completion_tokens for _, _, r in calls)
    if not result.steps:
        assert len(calls) == 1 and result.answer == cot_answer
        return
    messages, _, final = calls[-1]
    assert messages[-1]["content"].endswith("\n".join(f"{s.number}. {s.text}" for s in result.steps))
    answer = parse_answer(final.text)
    assert result.answer == (answer or cot_answer)
    assert answer or "the model gave no final answer; kept the chain-of-thought answer" in result.warnings


def check_vote_follows_its_paths(vote, calls, search, scorer):
    """Each path is its sampled reply, its support the mean clipped best evidence score, the winner the best total."""
    assert len(calls) == len(vote.paths) == 2  # the embedding scorer asks no model
    for path, (_, _, reply) in zip(vote.paths, calls):
        steps, answer, _ = parse_cot(reply.text, max_steps=2)
        assert (path.text, list(path.steps), path.answer) == (reply.text, steps, answer)
        hits = [safe_search(search, keyword_query(step), k=1)[0] for step in steps]
        best = [float(np.clip(scorer.score(step, [h.doc for h in found]).max(), 0, 1)) if found else 0.0
                for step, found in zip(steps, hits)]
        assert path.evidence == tuple(map(tuple, hits))
        assert path.step_support == pytest.approx(best)
        assert path.support == pytest.approx(float(np.mean(best)) if best else 0.0)
    totals, counts = {}, {}
    for path in vote.paths:
        if answer_key(path.answer):
            totals[answer_key(path.answer)] = totals.get(answer_key(path.answer), 0.0) + path.support
            counts[answer_key(path.answer)] = counts.get(answer_key(path.answer), 0) + 1
    assert (vote.answer == "") == (not totals)
    if totals:
        assert counts[answer_key(vote.majority_answer)] == max(counts.values())
    if totals and max(totals.values()) > 0:
        assert totals[answer_key(vote.answer)] == pytest.approx(max(totals.values()))
    elif totals:
        assert vote.answer == vote.majority_answer


def test_the_real_model_checks_hold_for_scripted_replies(monkeypatch):
    search = BM25Index(DOCS, tokenizer=search_tokenize).search
    chat = ScriptedChat(COT, verdict("confirmed"), verdict("corrected", "It is on a small island."), "1703")
    calls = recorded(monkeypatch, chat)
    check_rwr_follows_its_replies(rwr("When?", search, chat=chat, max_steps=2, k=1), calls, search)
    chat = ScriptedChat(path_text("The fortress was founded in 1703.", "1703"), path_text("Ships sail.", "noon"))
    calls = recorded(monkeypatch, chat)
    vote = rwr_vote("When?", search, chat=chat, paths=2, max_steps=2, k=1, embedder=HashingEmbedder())
    check_vote_follows_its_paths(vote, calls, search, BiEncoderReranker(HashingEmbedder()))


@pytest.mark.model
def test_rwr_and_the_vote_with_the_real_model_follow_the_replies_it_gave(local_chat, monkeypatch):
    search = BM25Index(DOCS, tokenizer=search_tokenize).search
    question = "When was the fortress founded?"
    calls = recorded(monkeypatch, local_chat)
    result = rwr(question, search, chat=local_chat, max_steps=2, k=1, max_tokens=48)
    check_rwr_follows_its_replies(result, calls, search)
    assert result.model.endswith(".gguf")
    calls.clear()
    vote = rwr_vote(question, search, chat=local_chat, paths=2, max_steps=2, k=1, max_tokens=48,
                    scorer="embedding", embedder=HashingEmbedder())
    check_vote_follows_its_paths(vote, calls, search, BiEncoderReranker(HashingEmbedder()))


# --- with specialists: a judge that says supports / contradicts / unrelated, a yes/no answerer ---------------

def test_a_judge_specialist_labels_map_to_verdicts_and_contradicts_takes_the_evidence_sentence():
    judge = JobChat("judge", "supports", "contradicts")
    cot = "Step 1: The fortress was founded in 1703.\nStep 2: The fortress was founded in 1900.\nSo the answer is 1703."
    result, chat = run(cot, "So the answer is 1703.", judge=judge)
    assert [s.verdict for s in result.steps] == ["confirmed", "corrected"]
    assert result.steps[1].text == "The fortress was founded in 1703 on a small island."
    prompt = judge.calls[0][0]
    assert prompt[-1]["content"].startswith("Evidence:\n[1] Fortress: The") and prompt[-1]["content"].endswith(
        "Step: The fortress was founded in 1703.")
    assert len(chat.calls) == 2  # the chain and the answer: no verdict was asked of the chat model
    assert result.model == "scripted (judge: judge specialist)"


def test_a_judge_specialist_reply_that_is_no_label_leaves_the_step_unverified_with_a_warning():
    result, _ = run(COT, "So the answer is 1703.", judge=JobChat("judge", "maybe"))
    assert [s.verdict for s in result.steps] == ["unverified", "unverified"]
    assert any("unknown verdict 'maybe'" in w for w in result.warnings)


def test_an_answerer_specialist_reads_the_checked_steps_and_the_evidence():
    answerer = JobChat("answerer", "yes")
    result, _ = run(COT, judge=JobChat("judge", "supports", "unrelated"), answerer=answerer)
    facts = answerer.calls[0][0][-1]["content"]
    assert facts == ("Question: When was the fortress founded?\nFacts:\n1. The fortress was founded in 1703.\n"
                     "2. Fortress: The fortress was founded in 1703 on a small island.")
    assert result.answer == "yes" and result.tokens > 0
    assert "answerer: answerer specialist" in result.model


def test_the_roles_default_to_their_settings(monkeypatch):
    import ragkit.models.resolve
    import ragkit.models.roles

    roles = {"judge": JobChat("judge", "supports"), "answerer": JobChat("answerer", "no")}
    stub_setting(monkeypatch, "chat_model", lambda spec=None: ScriptedChat(COT))
    monkeypatch.setattr(ragkit.models.roles, "role_model", lambda role: roles[role])
    result = rwr("When was the fortress founded?", fixed_search("fort"))
    assert [s.verdict for s in result.steps] == ["confirmed", "confirmed"] and result.answer == "no"


# --- with a reader: it answers the questions that are not yes/no -----------------------------------------------

def routed_search(routes):
    """A retriever that returns the docs of the first route the query holds."""
    by_id = {doc.id: doc for doc in DOCS}

    def search(query, *, k):
        ids = next(ids for key, ids in routes if key in query)
        return [Hit(by_id[i], 1.0) for i in ids][:k]

    return search


def test_a_reader_answers_a_question_that_is_not_yes_no_from_the_steps_evidence():
    reader = ScriptedReader(("1703", 0))
    result, chat = run(COT, verdict("confirmed"), verdict("confirmed"), reader=reader, k=2,
                       search=routed_search([("1703", ["fort"]), ("island", ["spire", "fort"])]))
    assert result.answer == "1703" and result.cot_answer == "1703"
    assert len(chat.calls) == 3  # the chain and two verdicts: no final-answer call
    assert reader.calls == [("When was the fortress founded?", ["fort", "spire"])]  # each passage once, step order
    assert result.model == "scripted (reader: scripted reader)" and result.warnings == ()


def test_a_reader_that_finds_nothing_gives_its_abstention_and_a_warning():
    result, _ = run(COT, verdict("confirmed"), verdict("confirmed"), reader=ScriptedReader(NOT_IN_PASSAGES))
    assert result.answer == NOT_IN_PASSAGES
    assert result.warnings == ("the reader (scripted reader) found no answer in the evidence",)


def test_a_yes_no_question_keeps_the_answerer_when_a_reader_is_given():
    reader, chat = ScriptedReader("1703"), ScriptedChat(COT, verdict("confirmed"), verdict("confirmed"),
                                                         "So the answer is yes.")
    result = rwr("Was the fortress founded in 1703?", fixed_search("fort"), chat=chat, reader=reader)
    assert result.answer == "yes" and reader.calls == [] and len(chat.calls) == 4


@pytest.mark.parametrize("question, expected", [
    ("Was the fortress founded in 1703?", True), ("does it float?", True), ("Isn’t the spire tall?", True),
    ("\"Can koalas swim?\"", True), ("When was the fortress founded?", False), ("Which is taller?", False),
    ("Island or fortress?", False), ("", False)])
def test_a_yes_no_question_starts_with_an_auxiliary_verb(question, expected):
    assert is_yes_no(question) is expected
