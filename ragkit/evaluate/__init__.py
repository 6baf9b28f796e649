"""ragkit.evaluate: how good a pipeline is, measured on gold questions, with how sure we can be.

| module | what it holds | taught in |
|---|---|---|
| `metrics` | one ranking or answer scored: recall@k, MRR, nDCG, exact match, token F1 | 01 |
| `runners` | a pipeline run on every gold question, its metrics averaged | 01 |
| `tables` | results as aligned text tables | 01 |
| `plots` | results as charts | 01 |
| `significance` | bootstrap intervals of a score and of a gain (a box in 03; 04 and 08 build it up) | 03 |
| `reading` | a reader scored: exact match, F1, groundedness | 08 |
"""

from ragkit.evaluate.metrics import (
                                     all_gold_at_k,
                                     answers_of,
                                     contains_gold,
                                     exact_match,
                                     hit_at_k,
                                     mean,
                                     ndcg_at_k,
                                     precision_at_k,
                                     recall_at_k,
                                     reciprocal_rank,
                                     relevance_of,
                                     roc_auc,
                                     supporting_evidence_recall,
                                     token_f1,
)
from ragkit.evaluate.plots import gain_chart, ladder, loss_curves, metric_bars
from ragkit.evaluate.reading import content_words, evaluate_reader, groundedness
from ragkit.evaluate.runners import Evaluation, evaluate_answers, evaluate_pipeline, evaluate_retrieval
from ragkit.evaluate.significance import bootstrap_interval, gain_rows, pair_gain_rows, paired_bootstrap
from ragkit.evaluate.tables import format_seconds, format_table, table_rows

__all__ = ["all_gold_at_k", "answers_of", "contains_gold", "exact_match", "hit_at_k", "mean", "ndcg_at_k",
           "precision_at_k", "recall_at_k", "reciprocal_rank", "relevance_of", "roc_auc", "supporting_evidence_recall",
           "token_f1", "gain_chart", "ladder", "loss_curves", "metric_bars", "content_words", "evaluate_reader",
           "groundedness",
           "Evaluation", "evaluate_answers", "evaluate_pipeline", "evaluate_retrieval", "bootstrap_interval",
           "gain_rows", "pair_gain_rows", "paired_bootstrap", "format_seconds", "format_table", "table_rows"]
