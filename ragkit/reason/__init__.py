"""ragkit.reason: pipelines that reason in steps and retrieve for each.

| module | what it holds | taught in |
|---|---|---|
| `steps` | what every reasoning pipeline shares: its run, a meter of calls, a step's search | 06 |
| `few_shot` | the worked examples the prompts show | 06 |
| `trace` | a run as lines or an HTML table | 06 |
| `cot_rag` | CoT-RAG: decompose, retrieve per step, synthesize | 06 |
| `self_ask` | self-ask: search the steps in order, each answer filling the next | 09 |
| `chain_of_thought` | a chain of thought: prompt, grammar, parsing its steps and answer | 07 |
| `step_judge` | a step checked against evidence: confirmed, corrected or unverified | 07 |
| `rwr` | RwR: reason in steps, retrieve evidence for each, verify or correct, answer | 07 |
| `voting` | several chains voted on, weighted by their evidence | 07 |
"""

from ragkit.reason.chain_of_thought import cot_options, cot_prompt, parse_cot
from ragkit.reason.cot_rag import FALLBACK_WARNING, CoTResult, cot_rag, decompose, is_not_found
from ragkit.reason.rwr import RwRResult, rwr
from ragkit.reason.self_ask import SelfAskResult, search_in_order, self_ask
from ragkit.reason.step_judge import JUDGE_VERDICTS, VERDICTS, judge
from ragkit.reason.steps import Meter, keyword_query
from ragkit.reason.voting import SCORERS, evidence_scorer, rwr_vote, self_consistency, support_of, weighted_vote

__all__ = ["cot_options", "cot_prompt", "parse_cot", "FALLBACK_WARNING", "CoTResult", "cot_rag", "decompose",
           "is_not_found", "RwRResult", "rwr", "SelfAskResult", "search_in_order", "self_ask", "JUDGE_VERDICTS",
           "VERDICTS", "judge", "Meter", "keyword_query", "SCORERS", "evidence_scorer", "rwr_vote", "self_consistency",
           "support_of", "weighted_vote"]
