import matplotlib

matplotlib.use("Agg")

from ragkit.evaluate.plots import gain_chart, ladder, loss_curves, metric_bars
from ragkit.evaluate.runners import Evaluation
from ragkit.evaluate.significance import PairedDifference


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


def test_loss_curves_smooth_a_long_run_and_mark_the_points_of_a_short_one():
    figure = loss_curves({"long": [2.0 - i / 100 for i in range(100)], "short": [2.0, 1.8, 1.7]}, window=10)
    lines = figure.axes[0].get_lines()
    assert len(lines) == 3  # the long run's raw and smoothed curves, the short run's points
    assert len(lines[1].get_xdata()) == 91 and lines[1].get_xdata()[0] == 10
    assert lines[2].get_marker() == "o"
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == ["long (mean of 10)", "short"]


def test_gain_chart_draws_each_interval_and_colours_only_the_ones_that_exclude_zero():
    gains = {"beyond": PairedDifference("mrr@10", 0.2, 0.1, 0.3, 9, 56),
             "within": PairedDifference("mrr@10", 0.05, -0.02, 0.12, 9, 56),
             "loss": PairedDifference("mrr@10", -0.3, -0.4, -0.2, 9, 56)}
    ax = gain_chart(gains, title="t").axes[0]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["beyond", "within", "loss"]
    dots = ax.collections[-1]
    assert [tuple(xy) for xy in dots.get_offsets()] == [(0.2, 0), (0.05, 1), (-0.3, 2)]
    grey, blue = (matplotlib.colors.to_rgba(name) for name in ("grey", "tab:blue"))
    assert [tuple(colour) for colour in dots.get_facecolors()] == [blue, grey, blue]
    assert [text.get_text() for text in ax.texts] == ["+0.200", "+0.050", "-0.300"]
    assert "mrr@10" in ax.get_xlabel()
