"""The few figures the lessons share."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np


def metric_bars(results: Mapping[str, Mapping[str, float]], metrics: Sequence[str], *, title: str = ""):
    """Grouped bars: one group per metric, one bar per pipeline. Taught in lessons/01_bag_of_words.ipynb."""
    names = list(results)
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(7, 3.5))
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
