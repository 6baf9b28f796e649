import matplotlib

matplotlib.use("Agg")

from ragkit.evaluate import Evaluation  # noqa: E402
from ragkit.plots import ladder, metric_bars  # noqa: E402


def test_ladder_draws_one_bar_per_rung_and_metric_and_times_on_a_log_axis():
    rungs = {"BM25": Evaluation({"recall@5": 0.5, "mrr": 0.4}, seconds_per_query=0.002),
             "dense": Evaluation({"recall@5": 0.8, "mrr": 0.7}, seconds_per_query=0.02),
             "rerank": Evaluation({"recall@5": 0.75, "mrr": 0.69}, seconds_per_query=0.5)}
    fig = ladder(rungs, ["recall@5", "mrr"], title="t")
    scores, times = fig.axes
    assert [label.get_text() for label in scores.get_yticklabels()] == ["BM25", "dense", "rerank"]
    assert sorted(round(bar.get_width(), 2) for bar in scores.patches) == [0.4, 0.5, 0.69, 0.7, 0.75, 0.8]
    assert times.get_xscale() == "log"
    assert [round(bar.get_width(), 1) for bar in times.patches] == [2.0, 20.0, 500.0]


def test_metric_bars_labels_each_metric():
    fig = metric_bars({"a": {"recall@5": 0.5}, "b": {"recall@5": 0.25}}, ["recall@5"])
    assert [label.get_text() for label in fig.axes[0].get_xticklabels()] == ["recall@5"]
    assert len(fig.axes[0].patches) == 2
