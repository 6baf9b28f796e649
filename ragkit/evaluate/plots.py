"""The few figures the lessons share."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ragkit.evaluate.runners import Evaluation


def metric_bars(results: Mapping[str, Mapping[str, float]], metrics: Sequence[str], *, title: str = ""):
    """Grouped bars: one group per metric, one bar per pipeline. Taught in lessons/01_bag_of_words.ipynb."""
    names = list(results)
    width = 0.8 / len(names)
    fig, ax = _pyplot().subplots(figsize=(7, 3.5))
    for offset, name in enumerate(names):
        positions = np.arange(len(metrics)) + offset * width
        values = [results[name][metric] for metric in metrics]
        bars = ax.bar(positions, values, width, label=name)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks(np.arange(len(metrics)) + width * (len(names) - 1) / 2, metrics)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (higher is better)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def ladder(rungs: Mapping[str, Evaluation], metrics: Sequence[str], *, title: str = ""):
    """Each rung's scores (left) beside its time per query on a log scale (right), first rung on top.

    Taught in lessons/08_evaluation.ipynb."""
    names = list(rungs)
    rows = np.arange(len(names))
    height = 0.8 / len(metrics)
    fig, (scores, times) = _pyplot().subplots(1, 2, figsize=(10, 0.42 * len(names) + 1.4), sharey=True,
                                        gridspec_kw={"width_ratios": [2.2, 1]})
    for offset, metric in enumerate(metrics):
        bars = scores.barh(rows + offset * height, [rungs[name].means[metric] for name in names], height, label=metric)
        scores.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
    scores.set_yticks(rows + height * (len(metrics) - 1) / 2, names)
    scores.invert_yaxis()
    scores.set_xlim(0, 1.1)
    scores.set_xlabel("score (higher is better)")
    scores.legend(fontsize=8, loc="lower right")
    milliseconds = [rungs[name].seconds_per_query * 1000 for name in names]
    bars = times.barh(rows + height * (len(metrics) - 1) / 2, milliseconds, 0.5, color="grey")
    times.bar_label(bars, labels=[f"{ms:,.0f}" for ms in milliseconds], fontsize=7, padding=2)
    times.set_xscale("log")
    times.set_xlabel("ms per query (log scale)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def gain_chart(gains: Mapping[str, object], *, title: str = ""):
    """Each gain's mean (a dot) and 95% interval (a bar) against a line at 0, first gain on top: a bar that
    crosses the line is within chance. Takes significance.PairedDifference values.

    Taught in lessons/08_evaluation.ipynb."""
    names = list(gains)
    rows = np.arange(len(names))
    means, lows, highs = (np.array([getattr(gains[name], end) for name in names]) for end in ("mean", "low", "high"))
    beyond = (lows > 0) | (highs < 0)
    fig, ax = _pyplot().subplots(figsize=(8, 0.4 * len(names) + 1.2))
    ax.errorbar(means, rows, xerr=[means - lows, highs - means], fmt="none", ecolor="grey", capsize=3)
    ax.scatter(means, rows, c=["tab:blue" if out else "grey" for out in beyond], zorder=3)
    ax.axvline(0, color="black", linewidth=0.8)
    for row, (mean, high) in enumerate(zip(means, highs)):
        ax.annotate(f"{mean:+.3f}", (high, row), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(rows, names)
    ax.invert_yaxis()
    ax.set_xlabel(f"gain in {gains[names[0]].metric}, with its 95% interval (blue: beyond chance)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def loss_curves(runs: Mapping[str, Sequence[float]], *, window: int = 20, title: str = ""):
    """Each run's training loss per step (a moving mean over `window` steps drawn over it), on shared axes.

    Taught in lessons/09_specialists.ipynb."""
    fig, ax = _pyplot().subplots(figsize=(7, 3.2))
    for name, losses in runs.items():
        line, = ax.plot(np.arange(1, len(losses) + 1), losses, alpha=0.35, linewidth=0.8)
        if len(losses) >= 2 * window:
            smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
            ax.plot(np.arange(window, len(losses) + 1), smooth, color=line.get_color(),
                    label=f"{name} (mean of {window})")
        else:
            line.set_alpha(1.0)
            line.set_marker("o")
            line.set_label(name)
    ax.set_xlabel("training step (8 examples each)")
    ax.set_ylabel("loss on the answer tokens")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _pyplot():
    """matplotlib's pyplot, imported on first use: importing ragkit.evaluate stays 0.4 s quicker."""
    import matplotlib.pyplot as plt

    return plt
