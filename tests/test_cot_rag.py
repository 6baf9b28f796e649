import json

import pytest

from ragkit.corpus import Doc, Hit
from ragkit.errors import EmptyQueryError
from ragkit.models.jobs import decomposer_messages
from ragkit.models.llm import ChatReply
from ragkit.models.replies import drop_repeats, list_grammar, parse_steps, steps_schema
from ragkit.passages import NOT_IN_PASSAGES
from ragkit.reason.cot_rag import (
    FALLBACK_WARNING,
    NO_CONTEXT_WARNING,
    NOT_FOUND,
    NOTHING_FOUND_WARNING,
    CoTResult,
    cited_steps,
    cot_rag,
    decompose,
    decompose_prompt,
    is_not_found,
)
from ragkit.reason.steps import Meter, keyword_query, safe_search, unique_hits
from ragkit.search.lexical import BM25Index
from ragkit.text import search_tokenize
from tests.fakes import JobChat, ScriptedChat, ScriptedReader

DOCS = [Doc("spire", "The cathedral spire is 123 metres tall.", title="Cathedral"),
        Doc("fort", "The fortress was founded in 1703 on a small island.", title="Fortress"),
        Doc("bridge", "The palace bridge opens at night for ships.", title="Bridge")]


def fixed_search(*ids):
    """A retriever that returns the given docs for any query, and records the queries."""
    by_id = {doc.id: doc for doc in DOCS}

    def search(query, *, k):
        search.queries.append(query)
        return [Hit(by_id[i], 1.0 - n / 10) for n, i in enumerate(ids)][:k]

    search.queries = []
    return search




def run(*replies, search=None, **options):
    chat = ScriptedChat(*replies)
    return cot_rag("When was the fortress with the tall spire founded?", search or fixed_search("fort", "spire"),
                   chat=chat, **options), chat


# --- the pipeline, with well-behaved replies --------------------------------------------------------

def test_the_pipeline_decomposes_retrieves_finds_and_cites():
    replies = ("1. Which fortress has a tall spire?\n2. When was the fortress founded?", "The fortress has the spire.",
               "It was founded in 1703.", "The fortress has the spire [S1] and was founded in 1703 [S2].")
    result, chat = run(*replies, k=2)
    assert [s.thought for s in result.steps] == ["Which fortress has a tall spire?", "When was the fortress founded?"]
    assert [s.sources for s in result.steps] == [("fort", "spire"), ("fort", "spire")]
    assert result.sources == ("fort", "spire") and result.total_chunks == 4
    assert [s.finding for s in result.steps] == ["The fortress has the spire.", "It was founded in 1703."]
    assert result.cited_steps() == (1, 2) and set(result.cited_steps()) <= {s.number for s in result.steps}
    assert result.gaps == () and result.warnings == ()
    assert len(chat.calls) == 4 and result.model == "scripted"
    assert result.tokens == sum(len(r.split()) for r in replies)  # ScriptedChat: words as completion tokens
    assert "[1] Fortress: The fortress was founded in 1703" in chat.calls[1][0][-1]["content"]
    assert "S2. When was the fortress founded? -> It was founded in 1703." in chat.calls[3][0][-1]["content"]


def test_auto_constraint_is_a_json_schema_for_models_without_grammars():
    result, chat = run(json.dumps({"steps": ["Which fortress?", "When founded?"]}), "x", "y", "[S1] [S2]")
    assert chat.calls[0][1]["json_schema"] == steps_schema(4)
    assert '{"steps": [' in chat.calls[0][0][2]["content"]  # the examples answer in JSON too
    assert [s.thought for s in result.steps] == ["Which fortress?", "When founded?"]


@pytest.mark.parametrize("constrain, key", [("grammar", "grammar"), ("json", "json_schema"), ("none", None)])
def test_the_constraint_can_be_chosen(constrain, key):
    _, chat = run("1. A step?", "f", "[S1]", constrain=constrain, max_steps=3)
    options = chat.calls[0][1]
    assert {"grammar", "json_schema"} & options.keys() == ({key} if key else set())
    if key == "grammar":
        assert options["grammar"] == list_grammar(3)


def test_list_grammar_numbers_lines_in_order_up_to_the_limit():
    grammar = list_grammar(3)
    assert grammar.splitlines()[0] == 'root ::= "1. " line ("2. " line ("3. " line)?)?'
    assert 'line ::= [^\\n]{3,150} "\\n"' in grammar


def test_examples_longer_than_max_steps_are_left_out_of_the_prompt():
    assert len(decompose_prompt("q", max_steps=3)) == 6
    assert len(decompose_prompt("q", max_steps=2)) == 4
    assert len(decompose_prompt("q", max_steps=1)) == 2
    assert "at most 2 short questions" in decompose_prompt("q", max_steps=2)[0]["content"]


def test_carry_findings_adds_the_previous_finding_to_the_next_sub_query():
    search = fixed_search("fort")
    run("1. Which fortress has a spire?\n2. When was it founded?", "The fortress has the spire.", "1703.",
        "[S1][S2]", search=search, carry_findings=True)
    assert search.queries == ["Which fortress has a spire?", "When was it founded? The fortress has the spire."]


def test_trace_markdown_and_html_show_every_step():
    result, _ = run("1. Which fortress?\n2. When <b>founded</b>?", "The fortress.", NOT_FOUND, "Unknown [S2].")
    text = result.trace_markdown()
    for part in ("**Question:**", "**S1. Which fortress?**", "`fort`", "finding ⚠ gap", "**Answer:** Unknown [S2].",
                 "gaps: S2", "cited steps: S2"):
        assert part in text
    page = result.trace_html()
    assert page.startswith("<table") and page.count("<tr") == 3
    assert "&lt;b&gt;founded&lt;/b&gt;" in page and "<b>" not in page
    assert "background:#fde2e2" in page  # the gap row is shaded


def test_the_result_is_frozen():
    result, _ = run("1. A?", "f", "[S1]")
    assert isinstance(result, CoTResult)
    with pytest.raises(AttributeError):
        result.answer = "changed"


def routed_search(routes):
    """A retriever that returns the docs of the first route the query starts with."""
    by_id = {doc.id: doc for doc in DOCS}

    def search(query, *, k):
        ids = next(ids for key, ids in routes if query.startswith(key))
        return [Hit(by_id[i], 1.0) for i in ids][:k]

    return search


def test_a_reader_answers_from_the_steps_passages_instead_of_the_synthesis():
    reader = ScriptedReader(("1703", 1))
    search = routed_search([("Which", ["spire"]), ("When", ["fort", "spire"])])
    result, chat = run("1. Which fortress has a tall spire?\n2. When was the fortress founded?", "The spire.",
                       "In 1703.", search=search, reader=reader)
    assert result.answer == "1703" and len(chat.calls) == 3  # the plan and two findings: no synthesis
    assert reader.calls == [(result.question, ["spire", "fort"])]  # step 1's hits, then step 2's new ones
    assert result.cited_steps() == (2,) and result.reader_steps == (2,)  # the steps that retrieved "fort"
    assert result.model == "scripted (reader: scripted reader)" and result.warnings == ()
    assert "cited steps: S2" in result.trace_markdown()


def test_a_reader_that_finds_nothing_gives_its_abstention_and_a_warning():
    result, _ = run("1. Which fortress?", "The fortress.", reader=ScriptedReader(NOT_IN_PASSAGES))
    assert result.answer == NOT_IN_PASSAGES and result.cited_steps() == ()
    assert result.warnings == ("the reader (scripted reader) found no answer in the steps' passages",)


def test_unique_hits_keeps_each_passage_once_in_step_order_up_to_the_limit():
    docs = [Doc(f"d{n}", "text") for n in range(8)]
    lists = [[Hit(docs[0], 1.0), Hit(docs[1], 0.9)], [Hit(docs[1], 0.8), Hit(docs[2], 0.7)],
             [Hit(d, 0.5) for d in docs[3:]]]
    assert [h.id for h in unique_hits(lists)] == ["d0", "d1", "d2", "d3", "d4"]
    assert [h.score for h in unique_hits(lists, limit=2)] == [1.0, 0.9] and unique_hits([[], []]) == []


# --- bad LLM output: visible, never a crash, never a silent substitution -------------------------------

def test_no_steps_falls_back_to_the_question_and_says_so():
    result, chat = run("Sure! I can help with that.", "Founded in 1703.", "In 1703 [S1].")
    assert [s.thought for s in result.steps] == [result.question]
    assert FALLBACK_WARNING in result.warnings
    assert len(chat.calls) == 3


def test_an_empty_reply_falls_back_too():
    result, _ = run("", "f", "[S1]")
    assert len(result.steps) == 1 and FALLBACK_WARNING in result.warnings


def test_a_repeated_step_is_dropped_with_a_warning():
    result, _ = run("1. When was it founded?\n2. when was it founded\n3. Who built it?", "a", "b", "[S1] [S2]")
    assert [s.thought for s in result.steps] == ["When was it founded?", "Who built it?"]
    assert "step 2 repeated step 1; dropped it" in result.warnings


def test_a_reply_looping_to_the_token_limit_is_cut_and_said():
    loop = "1. Who built it?\n" + "2. Who built it?\n" * 40 + "3. Who bu"
    chat = ScriptedChat(ChatReply(loop, "m", 10, 120, finish_reason="length"), "They did.", "They did [S1].")
    result = cot_rag("Who built the fortress?", fixed_search("fort"), chat=chat)
    assert [s.thought for s in result.steps] == ["Who built it?", "Who bu"]
    assert result.warnings[0] == "the model hit the token limit while decomposing the question: its reply was cut off"
    assert "step 2 repeated step 1; dropped it" in result.warnings
    assert "... and 37 more repeated steps dropped" in result.warnings
    assert result.tokens == 130 + 2 + 3 + 3  # the cut reply, then the fakes count a token per word


def test_more_steps_than_allowed_are_cut_with_a_warning():
    result, _ = run("1. A?\n2. B?\n3. C?", "f", "[S1]", max_steps=2)
    assert len(result.steps) == 2 and "kept the first 2 of 3 steps" in result.warnings


def test_a_retriever_that_returns_nothing_gives_not_found_without_asking_the_model():
    result, chat = run("1. Who built it?", "Nobody knows [S1].", search=lambda query, *, k: [])
    step = result.steps[0]
    assert step.excerpts == () and step.finding == NOT_FOUND and not step.found
    assert "step 1: the retriever returned nothing for 'Who built it?'" in result.warnings
    assert NO_CONTEXT_WARNING in result.warnings
    assert len(chat.calls) == 2  # decomposition and synthesis only
    assert result.total_chunks == 0 and result.gaps == (1,)


def test_a_junk_sub_query_that_the_retriever_refuses_is_skipped_with_a_warning():
    bm25 = BM25Index(DOCS, tokenizer=search_tokenize)
    result, _ = run("1. What is it?\n2. When was the fortress founded?", "Founded in 1703.", "In 1703 [S2].",
                    search=bm25.search)
    assert result.steps[0].excerpts == () and result.steps[1].sources[0] == "fort"
    assert any(w.startswith("step 1: skipped retrieval for the query 'What is it?'") for w in result.warnings)
    assert NO_CONTEXT_WARNING not in result.warnings


def test_findings_that_say_not_found_become_gaps_and_are_flagged():
    result, _ = run("1. A?\n2. B?", "Not found in context.", "not found in context", "Unknown [S1] [S2].")
    assert result.gaps == (1, 2)
    assert NOTHING_FOUND_WARNING in result.warnings


def test_an_empty_finding_counts_as_not_found_and_says_so():
    result, _ = run("1. A?", "   ", "Unknown [S1].")
    assert result.steps[0].finding == NOT_FOUND
    assert "step 1: the model gave an empty finding; counted as 'not found in context'" in result.warnings


def test_citations_of_missing_steps_and_uncited_answers_are_flagged():
    result, _ = run("1. A?", "f", "It is so [S1] [S3, S4].")
    assert result.cited_steps() == (1, 3, 4)
    assert "the answer cites [S3], [S4], which are not steps" in result.warnings
    result, _ = run("1. A?", "f", "It was 1703.")
    assert "the answer cites no step: its claims cannot be traced to the findings" in result.warnings
    result, _ = run("1. A?", "f", "")
    assert "the model gave an empty answer" in result.warnings


def test_a_step_copied_from_the_prompts_example_is_flagged():
    result, _ = run("1. Which animal eats eucalyptus leaves?\n2. When was the fortress founded?", "a", "b", "[S2]")
    assert result.warnings[0].startswith("step 1 copies the prompt's example")


def test_a_step_that_borrows_the_examples_pattern_is_flagged():
    result, _ = run("1. Who built the fortress?\n2. How many legs does a king have?", "a", "b", "[S1]")
    assert result.warnings[0] == ("step 2 copies the prompt's example: 'How many legs does a king have?' uses "
                                  "'legs' from the example, not from the question")


def test_a_marker_word_the_question_itself_uses_is_not_flagged():
    chat = ScriptedChat("1. Which insect lives in the fortress?", "a", "[S1]")
    result = cot_rag("Which insect lives in the fortress?", fixed_search("fort"), chat=chat)
    assert not any("copies" in w for w in result.warnings)


def test_a_step_repeating_the_question_is_flagged():
    result, _ = run("1. When was the fortress with the tall spire founded?\n2. Which fortress?", "a", "b", "[S1]")
    assert "step 1 repeats the question verbatim" in result.warnings


def test_empty_question_and_bad_options_are_refused():
    with pytest.raises(EmptyQueryError):
        cot_rag("  ", fixed_search("fort"), chat=ScriptedChat("1. A?"))
    with pytest.raises(ValueError, match="max_steps"):
        cot_rag("q", fixed_search("fort"), chat=ScriptedChat("1. A?"), max_steps=0)
    with pytest.raises(ValueError, match="k must be"):
        cot_rag("q", fixed_search("fort"), chat=ScriptedChat("1. A?"), k=0)
    with pytest.raises(ValueError, match="constrain"):
        cot_rag("q", fixed_search("fort"), chat=ScriptedChat("1. A?"), constrain="regex")


# --- parsers and helpers ----------------------------------------------------------------------------

@pytest.mark.parametrize("text, steps", [
    ("1. A?\n2. B?", ["A?", "B?"]),
    ("Here are the steps:\n1) A?\n2) B?\nHope it helps.", ["A?", "B?"]),
    ("- A?\n* B?\n• C?", ["A?", "B?", "C?"]),
    ("Step 1: A?\nStep 2: B?", ["A?", "B?"]),
    ('{"steps": ["A?", "B?"]}', ["A?", "B?"]),
    ('Sure: {"steps": ["A?", "B?"]} done', ["A?", "B?"]),
    ('["A?", "B?"]', ["A?", "B?"]),
    ("What is A?\nsome chatter\nWhat is B?", ["What is A?", "What is B?"]),
    ("Sure!", []), ("", []), ("1. ...\n2. ?", []), ('{"steps": []}', []),
])
def test_parse_steps_reads_every_common_form(text, steps):
    assert parse_steps(text, max_steps=4)[0] == steps


def test_parse_steps_reads_broken_json_and_says_so():
    steps, warnings = parse_steps('{"steps": ["Which fortress?", "When was it founded?", "Which fo', max_steps=4)
    assert steps == ["Which fortress?", "When was it founded?"]
    assert warnings == ["the reply was broken JSON; read the quoted strings in it as steps"]


@pytest.mark.parametrize("text, shape", [('{"steps": 3}', '"steps" is a number'),
                                         ('{"steps": [{"q": "Which fortress?"}]}', '"steps" is a list of objects')])
def test_parse_steps_reads_nothing_from_json_of_the_wrong_shape_and_says_so(text, shape):
    assert parse_steps(text, max_steps=4) == ([], [f"the reply was valid JSON of the wrong shape: {shape}, not a "
                                                   "list of strings"])


def test_parse_steps_reads_a_numbered_list_with_a_citation_as_a_list():
    assert parse_steps("1. Which fortress? [1]\n2. When was it founded?", max_steps=4) == (
        ["Which fortress? [1]", "When was it founded?"], [])


def test_cited_steps_reads_every_citation_form():
    assert cited_steps("A [S1], B [S2, S3] and [S1][s4]; [1] is no step; S5 is bare.") == (1, 2, 3, 4)
    assert cited_steps("") == ()


@pytest.mark.parametrize("text, expected", [(NOT_FOUND, True), ("Not found in context.", True), ("", True),
                                            ("not found", True), ("It was founded in 1703.", False)])
def test_is_not_found(text, expected):
    assert is_not_found(text) is expected


def test_drop_repeats_ignores_case_and_punctuation_and_empties():
    assert drop_repeats(["A b?", "", "a B", "C"]) == (["A b?", "C"], ["step 3 repeated step 1; dropped it"])


def test_keyword_query_drops_stop_words():
    assert keyword_query("When was the fortress founded?") == "fortress founded"
    assert keyword_query("It is so.") == ""


def test_safe_search_never_raises_on_empty_or_refused_queries():
    assert safe_search(fixed_search("fort"), " ", k=2) == ([], "the search query was empty; skipped retrieval")
    hits, note = safe_search(BM25Index(DOCS, tokenizer=search_tokenize).search, "the of", k=2)
    assert hits == [] and note.startswith("skipped retrieval for the query 'the of'")


# --- the real model -------------------------------------------------------------------------------------

@pytest.mark.model
def test_cot_rag_with_the_real_model_keeps_its_invariants(local_chat):
    bm25 = BM25Index(DOCS, tokenizer=search_tokenize)
    result = cot_rag("How tall is the spire of the cathedral, and when was the fortress founded?", bm25.search,
                     chat=local_chat, max_steps=2, k=1, max_tokens=40)
    assert parse_steps(result.plan, max_steps=2)[0], "the model's plan parsed into no step"
    assert FALLBACK_WARNING not in result.warnings
    outside = set(result.cited_steps()) - {s.number for s in result.steps}
    assert not outside or any(w.startswith("the answer cites [S") for w in result.warnings)  # flagged, never hidden
    assert set(result.sources) <= {d.id for d in DOCS}
    assert result.tokens > 0 and result.model.endswith(".gguf")
    assert not any("broken JSON" in w or "no numbered list" in w for w in result.warnings)  # the grammar held


def test_a_decomposer_specialist_is_asked_in_its_own_prompt_without_constraints():
    question = "Who founded the city where the fortress stands?"
    planner = JobChat("decomposer", "1. Where does the fortress stand?\n2. Who founded #1?")
    steps, _, warnings = decompose(question, Meter(planner), max_steps=4, constrain="auto")
    assert planner.calls == [(decomposer_messages(question), {"max_tokens": 120})]
    assert steps == ["Where does the fortress stand?", "Who founded #1?"] and warnings == []


def test_a_specialist_plan_is_not_checked_against_few_shot_examples_it_never_saw():
    question = "How tall is the spire?"
    legs = "1. How many legs does the spire have?"  # 'legs' marks a copy of the few-shot examples
    _, _, general = decompose(question, ScriptedChat(legs), max_steps=4, constrain="none")
    _, _, specialist = decompose(question, JobChat("decomposer", legs), max_steps=4)
    assert any("copies the prompt's example" in w for w in general) and specialist == []
