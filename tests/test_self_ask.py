import pytest

from ragkit.corpus import Doc, Hit
from ragkit.errors import EmptyQueryError
from ragkit.passages import NOT_IN_PASSAGES
from ragkit.reason.self_ask import closest_sentence, find_bridge, resolve_references, self_ask
from tests.fakes import HashingEmbedder, ScriptedChat, ScriptedReader

DOCS = {d.id: d for d in [
    Doc("nut", "The Nutcracker is a ballet. Its music was composed by Tchaikovsky in 1892.", title="The Nutcracker"),
    Doc("tch", "Tchaikovsky was born in Votkinsk. He studied law first.", title="Tchaikovsky"),
    Doc("vot", "Votkinsk is a town in Udmurtia.", title="Votkinsk")]}
QUESTION = "Where was the composer of The Nutcracker born?"
PLAN = "1. Who composed The Nutcracker?\n2. Where was #1 born?"


def routed_search(routes):
    """A retriever that returns the docs of the first route the query starts with, and records the queries."""
    def search(query, *, k):
        search.queries.append(query)
        ids = next((ids for key, ids in routes if query.startswith(key)), ())
        return [Hit(DOCS[i], 1.0 - n / 10) for n, i in enumerate(ids)][:k]

    search.queries = []
    return search


def test_a_later_step_is_searched_with_what_the_earlier_step_found():
    search = routed_search([("Where", ["tch", "vot"]), ("Who composed", ["nut"])])
    result = self_ask(QUESTION, search, decomposer=ScriptedChat(PLAN), embedder=HashingEmbedder(), k=2)
    assert [s.step for s in result.steps] == ["Who composed The Nutcracker?", "Where was #1 born?"]
    bridge = result.steps[0].bridge
    assert bridge in ("The Nutcracker is a ballet.", "Its music was composed by Tchaikovsky in 1892.")
    assert search.queries == [f"Who composed The Nutcracker? {QUESTION}", f"Where was {bridge} born? {QUESTION}"]
    assert result.steps[0].bridge_from == "sentence" and result.warnings == ()
    assert [h.id for h in result.evidence(3)] == ["nut", "tch", "vot"]  # interleaved, each passage once


def test_the_question_is_appended_only_when_asked():
    search = routed_search([("Who composed", ["nut"])])
    self_ask(QUESTION, search, decomposer=ScriptedChat("1. Who composed The Nutcracker?"), embedder=HashingEmbedder(),
             append_question=False)
    assert search.queries == ["Who composed The Nutcracker?"]


def test_a_reader_answer_is_the_bridge_and_none_falls_back_to_a_sentence():
    search = routed_search([("", ["nut"])])
    reader = ScriptedReader((" Tchaikovsky ", 0))
    assert find_bridge("Who composed it?", search("x", k=1), HashingEmbedder(), reader) == ("Tchaikovsky", "reader")
    assert reader.calls == [("Who composed it?", ["nut"])]
    for nothing in ("", NOT_IN_PASSAGES):
        bridge, source = find_bridge("Who composed it?", search("x", k=1), HashingEmbedder(), ScriptedReader(nothing))
        assert source == "sentence" and bridge in DOCS["nut"].text


def test_a_step_reference_resolves_to_the_readers_answer_or_the_closest_sentence_with_a_warning():
    search = routed_search([("Where", ["tch", "vot"]), ("Who composed", ["nut"])])
    reader = ScriptedReader(("Tchaikovsky", 0), ("Votkinsk", 0))
    result = self_ask(QUESTION, search, decomposer=ScriptedChat(PLAN), embedder=HashingEmbedder(), reader=reader)
    assert search.queries[1] == f"Where was Tchaikovsky born? {QUESTION}"
    assert [(s.bridge, s.bridge_from) for s in result.steps] == [("Tchaikovsky", "reader"), ("Votkinsk", "reader")]
    assert reader.calls[0] == ("Who composed The Nutcracker?", ["nut"]) and result.warnings == ()
    search = routed_search([("Where", ["tch", "vot"]), ("Who composed", ["nut"])])
    result = self_ask(QUESTION, search, decomposer=ScriptedChat(PLAN), embedder=HashingEmbedder(),
                      reader=ScriptedReader(NOT_IN_PASSAGES))
    assert result.steps[0].bridge_from == "sentence" and result.steps[0].bridge in DOCS["nut"].text
    assert search.queries[1] == f"Where was {result.steps[0].bridge} born? {QUESTION}"
    assert "step 1: the reader (scripted reader) found no answer; #1 is the closest sentence" in result.warnings


def test_references_to_missing_or_empty_steps_are_dropped_with_a_note():
    assert resolve_references("Where was #1 born?", ["Tchaikovsky"]) == ("Where was Tchaikovsky born?", [])
    text, notes = resolve_references("Compare #1 and #3", ["A", ""])
    assert text == "Compare A and" and notes == ["#3 refers to no earlier step that found something; dropped it"]
    assert resolve_references("Where was # 2 born?", ["A", ""])[1]  # found nothing: not a silent blank


def test_each_reference_resolves_to_its_own_step_not_the_first():
    assert resolve_references("Is #2 older than #1?", ["Tchaikovsky", "Votkinsk", "1840"]) == (
        "Is Votkinsk older than Tchaikovsky?", [])
    assert resolve_references("When was #3 founded?", ["A", "B", "Udmurtia"])[0] == "When was Udmurtia founded?"


def test_a_step_without_hits_finds_nothing_and_says_so():
    search = routed_search([("Who composed", ["nut"])])
    result = self_ask(QUESTION, search, decomposer=ScriptedChat("1. Which ballet?\n2. Who composed #1?"),
                      embedder=HashingEmbedder())
    assert result.steps[0].hits == () and result.steps[0].bridge == ""
    assert any("#1 refers to no earlier step" in w for w in result.warnings)
    assert any("returned nothing" in w for w in result.warnings)


def test_an_unreadable_plan_falls_back_to_the_question():
    search = routed_search([("Where", ["nut"])])
    result = self_ask(QUESTION, search, decomposer=ScriptedChat(""), embedder=HashingEmbedder())
    assert [s.step for s in result.steps] == [QUESTION]
    assert any("used the question itself" in w for w in result.warnings)


def test_closest_sentence_is_the_one_the_embedder_ranks_first():
    embedder = HashingEmbedder()
    texts = [DOCS["nut"].text, DOCS["tch"].text]
    picked = closest_sentence("Tchaikovsky was born where", texts, embedder)
    assert picked == "Tchaikovsky was born in Votkinsk."
    assert closest_sentence("anything", [], embedder) == "" and closest_sentence(" ", texts, embedder) == ""


def test_a_titled_bridge_names_the_passage_its_sentence_comes_from():
    embedder = HashingEmbedder()
    hits = [Hit(DOCS["nut"], 1.0), Hit(DOCS["tch"], 0.5)]
    bridge, source = find_bridge("Tchaikovsky was born where", hits, embedder, titled=True)
    assert (bridge, source) == ("Tchaikovsky: Tchaikovsky was born in Votkinsk.", "sentence")
    assert find_bridge("Tchaikovsky was born where", hits, embedder)[0] == "Tchaikovsky was born in Votkinsk."


def test_the_evidence_leads_with_the_questions_own_hits_when_asked():
    search = routed_search([("Where", ["tch", "vot"]), ("Who composed", ["nut"])])
    result = self_ask(QUESTION, search, decomposer=ScriptedChat(PLAN), embedder=HashingEmbedder(), k=2,
                      question_first=1)
    assert search.queries[-1] == QUESTION and [h.id for h in result.question_hits] == ["tch", "vot"]
    assert [h.id for h in result.evidence(3)] == ["tch", "nut", "vot"]  # the question's 1st, then the steps'
    plain = self_ask(QUESTION, routed_search([("Where", ["tch", "vot"]), ("Who composed", ["nut"])]),
                     decomposer=ScriptedChat(PLAN), embedder=HashingEmbedder(), k=2)
    assert plain.question_hits == () and [h.id for h in plain.evidence(3)] == ["nut", "tch", "vot"]


def test_bad_arguments_are_refused():
    with pytest.raises(EmptyQueryError):
        self_ask("  ", routed_search([]), decomposer=ScriptedChat(PLAN), embedder=HashingEmbedder())
    with pytest.raises(ValueError):
        self_ask(QUESTION, routed_search([]), decomposer=ScriptedChat(PLAN), embedder=HashingEmbedder(), k=0)
    with pytest.raises(ValueError, match="question_first"):
        self_ask(QUESTION, routed_search([]), decomposer=ScriptedChat(PLAN), embedder=HashingEmbedder(),
                 question_first=-1)


def test_cot_rag_plans_with_the_decomposer_and_answers_with_the_chat_model():
    from ragkit.reason.cot_rag import cot_rag

    planner, chat = ScriptedChat(PLAN), ScriptedChat("Tchaikovsky composed it.")
    search = routed_search([("", ["nut"])])
    result = cot_rag(QUESTION, search, chat=chat, decomposer=planner, k=1)
    assert len(planner.calls) == 1 and len(chat.calls) == 3  # the plan; two findings and the answer
    assert [s.thought for s in result.steps] == ["Who composed The Nutcracker?", "Where was #1 born?"]
    assert result.model == "scripted" and result.tokens == len(PLAN.split()) + 3 * 3
