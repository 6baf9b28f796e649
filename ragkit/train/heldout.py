"""A specialist's held-out score: the chat model run on a job's held-out records, its replies scored against
their answers, before and after training (each job in its own measure).

Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ragkit.evaluate.metrics import exact_match, mean, roc_auc, token_f1
from ragkit.generate.reader_specialist import reader_reply
from ragkit.models.jobs import LABELS, MAX_STEPS, PARSERS, RESTORED, parse_decomposition
from ragkit.models.llm import ChatModel, ChatReply
from ragkit.models.replies import clean_item, marked_lines
from ragkit.models.rerankers import RelevanceJudge, yes_scores
from ragkit.models.specialists import job_of
from ragkit.search.rewrite import parse_questions, questions_schema


def decomposition_scores(predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]], *,
                         stopped: Sequence[bool] | None = None) -> dict[str, float]:
    """Step-level agreement with gold decompositions.

    step_f1: per question, token F1 of the i-th predicted step with the i-th gold step, summed over positions
    and divided by the longer list's length (a missing or extra step scores 0), averaged over questions;
    right_count: share with as many steps as gold; stopped: share of replies that ended by themselves within
    MAX_STEPS numbered lines; mean_steps and gold_mean_steps.

    Taught in lessons/09_specialists.ipynb.
    """
    _same_length(predicted, gold)
    per_question = [sum(token_f1(p, g) for p, g in zip(steps, truth)) / max(len(steps), len(truth), 1)
                    for steps, truth in zip(predicted, gold)]
    scores = {"n": len(gold), "step_f1": mean(per_question),
              "right_count": mean([len(p) == len(g) for p, g in zip(predicted, gold)]),
              "mean_steps": mean([len(p) for p in predicted]), "gold_mean_steps": mean([len(g) for g in gold])}
    if stopped is not None:
        scores["stopped"] = mean(list(stopped))
    return scores


def label_scores(predicted: Sequence[str], gold: Sequence[str], *, labels: Sequence[str]) -> dict[str, float]:
    """Accuracy, the majority-class baseline, the share of unreadable replies, and accuracy per gold label.

    Taught in lessons/09_specialists.ipynb.
    """
    _same_length(predicted, gold)
    counts = Counter(gold)
    scores = {"n": len(gold), "accuracy": mean([p == g for p, g in zip(predicted, gold)]),
              "majority": max(counts.values()) / len(gold) if gold else float("nan"),
              "unreadable": mean([p not in labels for p in predicted])}
    for label in labels:
        if counts[label]:
            scores[f"accuracy[{label}]"] = mean([p == g for p, g in zip(predicted, gold) if g == label])
    return scores


def reader_scores(predicted: Sequence[str], records: Sequence[dict]) -> dict[str, float]:
    """Exact match and token F1 against each record's answer, overall, per source and per kind of answer.

    Taught in lessons/09_specialists.ipynb.
    """
    _same_length(predicted, records)
    gold = [r["answer"].strip() for r in records]
    scores = {"n": len(gold), "em": mean([exact_match(p, g) for p, g in zip(predicted, gold)]),
              "f1": mean([token_f1(p, g) for p, g in zip(predicted, gold)])}
    for field in ("source", "kind"):
        for value in sorted({r[field] for r in records}):
            chosen = [(p, g) for p, g, r in zip(predicted, gold, records) if r[field] == value]
            scores[f"f1[{value}]"] = mean([token_f1(p, g) for p, g in chosen])
    return scores


def asked_with(job: str, record: dict) -> dict:
    """The options a pipeline asks the job's record with: the relevance judge for its P(yes) (a reranker ranks
    by it); the rewriter as ragkit.search.rewrite asks it (a question list in multi_query's schema, a keyword query
    on one line)."""
    if job == "relevance":
        return {"logprobs": RelevanceJudge.TOP}
    if job == "rewriter":
        return {"json_schema": questions_schema()} if record["form"] == "questions" else {"stop": ["\n"]}
    return {}


def rewrite_agreement(reply: str, record: dict) -> float:
    """How far a rewriter reply matches its record: exact text for a diacritics restoration, else token F1 with
    the kept rewrite (a questions reply read as rewrite.multi_query reads it)."""
    if record["source"].startswith(RESTORED):
        return float(" ".join(reply.split()) == record["answer"])
    if record["form"] == "questions":
        return token_f1(" ".join(parse_questions(reply)[0]), " ".join(parse_questions(record["answer"])[0]))
    return token_f1(clean_item(reply), record["answer"])


def rewriter_scores(replies: Sequence[str], records: Sequence[dict]) -> dict[str, float]:
    """Agreement with the held-out records overall and by kind (keywords, questions, restore), and the share of
    questions replies from which no question could be read.

    Taught in lessons/09_specialists.ipynb.
    """
    _same_length(replies, records)
    kinds = ["restore" if r["source"].startswith(RESTORED) else r["form"] for r in records]
    agreement = [rewrite_agreement(reply, r) for reply, r in zip(replies, records)]
    scores = {"n": len(records), "agreement": mean(agreement)}
    for kind in sorted(set(kinds)):
        scores[f"agreement[{kind}]"] = mean([a for a, k in zip(agreement, kinds) if k == kind])
    questions = [reply for reply, kind in zip(replies, kinds) if kind == "questions"]
    if questions:
        scores["unreadable[questions]"] = mean([not parse_questions(reply)[0] for reply in questions])
    return scores


def _same_length(predicted: Sequence, gold: Sequence) -> None:
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold answers")


def heldout_scores(chat: ChatModel, records: Sequence[dict], *, job: str) -> dict[str, float]:
    """Run the chat model on the records' prompts and score its replies against their answers.

    Taught in lessons/09_specialists.ipynb.
    """
    spec = job_of(job)
    replies = [chat.chat(r["messages"], max_tokens=spec.max_tokens, **asked_with(job, r)) for r in records]
    if job == "decomposer":
        gold = [parse_decomposition(r["answer"]) for r in records]
        stopped = [reply.finish_reason == "stop" and len(marked_lines(reply.text)) <= MAX_STEPS for reply in replies]
        return decomposition_scores([parse_decomposition(reply.text) for reply in replies], gold, stopped=stopped)
    if job == "reader":
        return reader_scores([reader_reply(reply.text, r["passages"])[0] for reply, r in zip(replies, records)],
                             records)
    if job == "rewriter":
        return rewriter_scores([reply.text for reply in replies], records)
    labels = ("yes", "no") if job in ("answerer", "relevance") else LABELS
    scores = label_scores([PARSERS[job](reply.text) for reply in replies], [r["answer"] for r in records],
                          labels=labels)
    if job == "relevance":  # and on the hard pairs alone (a BM25 or look-alike negative), as a reranker meets them
        scores["auc"] = yes_auc(replies, [r["answer"] == "yes" for r in records])
        hard = [(reply, r["answer"] == "yes") for reply, r in zip(replies, records) if r.get("negative") != "random"]
        scores["auc[hard]"] = yes_auc(*zip(*hard)) if hard else float("nan")
    return scores


def yes_auc(replies: Sequence[ChatReply], relevant: Sequence[bool]) -> float:
    """ROC AUC of the replies' P(yes) as the relevance judge scores them (ragkit.models.rerankers.yes_scores)."""
    return roc_auc(yes_scores(replies)[0], relevant)
