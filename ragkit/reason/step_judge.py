"""Judging one reasoning step against retrieved evidence: confirmed (the evidence supports it), corrected (the
evidence contradicts it; the step rewritten by the evidence) or unverified (the evidence does not mention it).
A chat model answers a few-shot JSON prompt (schema-constrained where the backend allows); a judge specialist
(lesson 09) answers in its own prompt with supports / contradicts / unrelated, read as the same three verdicts.
Replies that break the rules (no JSON, an unknown verdict, a correction without text) are read safely, with a
warning. Taught in lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

from ragkit.corpus import Hit
from ragkit.models.jobs import judge_messages, parse_label
from ragkit.models.replies import clean_item, length_warning, step_key
from ragkit.passages import excerpts_text, passage_body, shorten
from ragkit.reason.few_shot import VERIFY_EXAMPLES
from ragkit.reason.steps import Meter, keyword_query, served_job
from ragkit.text import split_sentences

VERDICTS = ("confirmed", "corrected", "unverified")
JUDGE_VERDICTS = {"supports": "confirmed", "contradicts": "corrected", "unrelated": "unverified"}
VERIFY_SYSTEM = ("Check one reasoning step against the evidence. Verdicts: 'confirmed' if the evidence "
                 "supports the step; 'corrected' if the evidence contradicts it (then write the step "
                 "corrected by the evidence); 'unverified' if the evidence does not mention it. Reply "
                 'with JSON: {"verdict": "...", "corrected_step": "..."}.')


def verify_prompt(text: str, so_far: Sequence[str], hits: Sequence[Hit], *, max_chars: int = 400) -> list[dict]:
    """The few-shot verdict prompt: steps verified so far, the evidence, the step to check."""
    messages = [{"role": "system", "content": VERIFY_SYSTEM}]
    for done, evidence, step, verdict, correction in VERIFY_EXAMPLES:
        messages += [{"role": "user", "content": _verify_question(done, evidence, step)},
                     {"role": "assistant",
                      "content": json.dumps({"verdict": verdict, "corrected_step": correction})}]
    evidence = excerpts_text(hits, max_chars=max_chars)
    return messages + [{"role": "user", "content": _verify_question(so_far, evidence, text)}]


def _verify_question(so_far: Sequence[str], evidence: str, step: str) -> str:
    done = "\n".join(f"{i}. {s}" for i, s in enumerate(so_far, start=1)) or "(none)"
    return f"Verified so far:\n{done}\nEvidence:\n{evidence}\nStep: {step}"


def verdict_schema() -> dict:
    """JSON schema for {"verdict": one of VERDICTS, "corrected_step": string}."""
    return {"type": "object", "properties": {"verdict": {"enum": list(VERDICTS)},
                                             "corrected_step": {"type": "string", "maxLength": 200}},
            "required": ["verdict", "corrected_step"]}


def judge(text: str, so_far: Sequence[str], hits: Sequence[Hit], meter: Meter, *,
          max_chars: int = 400) -> tuple[str, str, list[str]]:
    """The model's verdict on one step and its correction, with the rules for bad replies applied."""
    if served_job(meter) == "judge":
        return specialist_verdict(text, hits, meter, max_chars=max_chars)
    reply = meter.chat(verify_prompt(text, so_far, hits, max_chars=max_chars), max_tokens=80,
                       json_schema=verdict_schema())
    verdict, correction, warnings = parse_verdict(reply.text)
    warnings = length_warning(reply, "judging the step") + warnings
    if verdict == "corrected" and not correction:
        return "unverified", "", warnings + ["the model said 'corrected' but gave no correction; kept the "
                                             "original step, marked unverified"]
    if verdict == "corrected" and step_key(correction) == step_key(text):
        return "unverified", "", warnings + ["the model's correction repeats the step; kept it, marked unverified"]
    return verdict, correction if verdict == "corrected" else "", warnings


def specialist_verdict(text: str, hits: Sequence[Hit], meter: Meter, *,
                       max_chars: int = 400) -> tuple[str, str, list[str]]:
    """A judge specialist's label as a verdict: supports confirms, unrelated leaves unverified, contradicts
    corrects the step to the evidence sentence sharing most words with it."""
    evidence = [shorten(passage_body(hit.doc.title, hit.doc.text), max_chars) for hit in hits]
    reply = meter.chat(judge_messages(text, evidence), max_tokens=4)
    label = parse_label(reply.text)
    warnings = length_warning(reply, "judging the step")
    if not label:
        return "unverified", "", warnings + [f"unknown verdict {shorten(reply.text or '', 60)!r}; marked unverified"]
    if label == "contradicts":
        return "corrected", overlapping_sentence(text, [hit.doc.text for hit in hits]), warnings
    return JUDGE_VERDICTS[label], "", warnings


def overlapping_sentence(text: str, passages: Sequence[str]) -> str:
    """The sentence of the passages that shares most keywords with the text (the first on a tie)."""
    wanted = set(keyword_query(text).lower().split())
    sentences = [sentence for passage in passages for sentence in split_sentences(passage)]
    return max(sentences, key=lambda s: len(wanted & set(keyword_query(s).lower().split())), default="")


def parse_verdict(text: str) -> tuple[str, str, list[str]]:
    """(verdict, correction, warnings) from a JSON reply or, failing that, a verdict word; never raises."""
    found = _json_object(text)
    if found is None:
        words = re.findall(r"\b(" + "|".join(VERDICTS) + r")\b", (text or "").lower())
        if words:
            return words[0], "", ["the verdict was not JSON; read the verdict word from the text"]
        return "unverified", "", [f"unknown verdict {shorten(text or '', 60)!r}; marked unverified"]
    raw = str(found.get("verdict", "")).strip()
    correction = clean_item(str(found.get("corrected_step") or found.get("correction") or ""))
    if raw.lower() not in VERDICTS:
        return "unverified", "", [f"unknown verdict {raw!r}; marked unverified"]
    return raw.lower(), correction, []


def _json_object(text: str) -> dict | None:
    for candidate in (text or "", *re.findall(r"\{.*?\}", text or "", flags=re.S)):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None
