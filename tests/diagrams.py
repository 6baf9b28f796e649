"""Each lesson's pipeline as a small diagram, boxes and arrows, drawn with matplotlib into lessons/figures/.

`make docs` draws them; every lesson and solution shows its own at the top (tests/test_diagrams.py checks both, and
that a drawing here matches the committed file). Run: python -m tests.diagrams [out_dir]
"""

from __future__ import annotations

import sys
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[1] / "lessons" / "figures"

# lesson -> (title, the stages of its pipeline left to right, what the lesson measures or adds underneath)
DIAGRAMS = {
    "00": ("one setting per backend",
           ["RAGKIT_* or\nragkit.toml", "load_settings()", "models.chat_model()\nmodels.embedder()",
            "a real model\non your CPU", "one chat call,\none embedding"],
           "the same notebooks on llama.cpp, Ollama, an OpenAI-compatible endpoint or a Qdrant server"),
    "01": ("bag of words and BM25",
           ["query", "tokens\n(fold, stem)", "inverted index\nBM25", "top k", "recall@k,\nMRR"],
           "the tokenizer ladder: whitespace, regex words, folding, stop words and stems"),
    "02": ("embeddings and hybrid search",
           ["query", "embedder\n(e5)", "vector store\ncosine", "RRF with\nBM25", "top k"],
           "a bi-encoder: query and documents embedded apart, compared by cosine"),
    "03": ("query rewriting",
           ["query", "chat model\nrewrites", "queries\n1..n", "search\neach", "RRF", "top k"],
           "one rewrite, or several questions as JSON, each searched and fused"),
    "04": ("bi-encoder, then cross-encoder",
           ["query", "stage 1\ntop 20", "cross-encoder\nreads pairs", "reorder", "top k"],
           "a model that reads query and document together, trained on the CPU"),
    "05": ("parent-child indexing",
           ["documents", "children\n(chunks)", "search\nchildren", "their\nparents", "top k"],
           "search small chunks, return the documents they come from"),
    "06": ("CoT-RAG",
           ["question", "decompose\ninto steps", "retrieve\nper step", "findings", "synthesize\nanswer"],
           "one search per step, and an answer that cites the steps' findings"),
    "07": ("Rethinking with Retrieval",
           ["question", "chain of\nthought", "evidence\nper step", "judge: confirm\nor correct", "answer"],
           "reason in steps, retrieve for each, verify or correct, then answer"),
    "08": ("the whole ladder, measured",
           ["gold\nquestions", "each\npipeline", "metrics\nand time", "gains with\n95% interval"],
           "what each rung bought, what it cost"),
    "09": ("teaching a small model one job",
           ["job\nrecords", "train /\nheld-out", "LoRA on\nthe CPU", "specialist", "held-out\nscore"],
           "the taught 135M beside the untaught models, on the earlier lessons' questions"),
}


def draw(lesson: str, out_dir: Path = FIGURES) -> Path:
    """Draw one lesson's diagram to out_dir/NN.png and return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    title, stages, note = DIAGRAMS[lesson]
    widths = [max(1.6, 0.11 * max(len(line) for line in stage.split("\n"))) for stage in stages]
    gap = 0.55
    total = sum(widths) + gap * (len(stages) - 1)
    fig, ax = plt.subplots(figsize=(total * 0.9, 1.9), dpi=100)
    x = 0.0
    for i, (stage, width) in enumerate(zip(stages, widths)):
        ax.add_patch(FancyBboxPatch((x, 0.0), width, 1.0, boxstyle="round,pad=0.05", facecolor="#eef3fb",
                                    edgecolor="#3b5b92", linewidth=1.2))
        ax.text(x + width / 2, 0.5, stage, ha="center", va="center", fontsize=9)
        if i:
            ax.annotate("", xy=(x - 0.05, 0.5), xytext=(x - gap + 0.05, 0.5),
                        arrowprops={"arrowstyle": "->", "color": "#3b5b92", "linewidth": 1.2})
        x += width + gap
    ax.text(total / 2, 1.45, f"lesson {lesson}: {title}", ha="center", fontsize=10, weight="bold")
    ax.text(total / 2, -0.45, note, ha="center", fontsize=8.5, style="italic", color="#444444")
    ax.set_xlim(-0.2, total + 0.2)
    ax.set_ylim(-0.75, 1.75)
    ax.axis("off")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{lesson}.png"
    fig.savefig(path, metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return path


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv else FIGURES
    for lesson in DIAGRAMS:
        print(draw(lesson, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
