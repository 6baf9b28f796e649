import pytest

from ragkit.corpus import Doc, Hit
from ragkit.search.follow_up import follow_up_queries, follow_up_search

DOCS = {d.id: d for d in [
    Doc("nut", "The Nutcracker is a ballet. Its music is by Tchaikovsky.", title="The Nutcracker"),
    Doc("tch", "Tchaikovsky was born in Votkinsk. He studied law.", title="Tchaikovsky"),
    Doc("vot", "Votkinsk is a town in Udmurtia.", title="Votkinsk")]}


def routed_search(routes):
    """A retriever returning the docs of the first route whose words the query contains; it records the queries."""
    def search(query, *, k):
        search.queries.append(query)
        ids = next((ids for key, ids in routes if key in query), ())
        return [Hit(DOCS[i], 1.0 - n / 10) for n, i in enumerate(ids)][:k]

    search.queries = []
    return search


def test_follow_up_queries_add_each_top_hits_title_and_first_sentence():
    hits = [Hit(DOCS["nut"], 1.0), Hit(DOCS["tch"], 0.5), Hit(DOCS["vot"], 0.1)]
    assert follow_up_queries("Who?", hits, follow=2) == ["Who? The Nutcracker. The Nutcracker is a ballet",
                                                         "Who? Tchaikovsky. Tchaikovsky was born in Votkinsk"]
    assert follow_up_queries("Who?", hits, follow=0) == []


def test_a_follow_up_reaches_the_passage_the_first_hit_names():
    search = routed_search([("ballet", ["vot", "tch"]), ("Nutcracker", ["nut"])])
    hits = follow_up_search(search, "Where was the composer of The Nutcracker born?", k=3)
    assert [h.id for h in hits] == ["nut", "vot", "tch"]  # the first ranking's 1st, then the follow-up's
    assert len(search.queries) == 2  # one hit found, so one follow-up


def test_follow_up_search_cuts_at_k_and_refuses_a_bad_depth():
    search = routed_search([("ballet", ["vot", "tch"]), ("Nutcracker", ["nut"])])
    assert [h.id for h in follow_up_search(search, "The Nutcracker", k=1)] == ["nut"]
    with pytest.raises(ValueError, match="depth"):
        follow_up_search(search, "The Nutcracker", depth=0)
