"""How a pipeline's run reads: the pieces every trace (cot_rag, self_ask, rwr, the votes) renders the same way."""

from __future__ import annotations

import html
from typing import Sequence

from ragkit.corpus import Hit
from ragkit.passages import shorten


def hit_lines(label: str, hits: Sequence[Hit]) -> list[str]:
    """A markdown line naming the hits with their scores, then each one quoted (shortened)."""
    named = ", ".join(f"`{h.id}` ({h.score:.3g})" for h in hits) or "nothing"
    return [f"- {label}: {named}", *[f"  > [{h.id}] {shorten(h.doc.text, 160)}" for h in hits]]


def warning_lines(warnings: Sequence[str]) -> list[str]:
    """The run's warnings as a markdown list under a heading (nothing if there are none)."""
    return ["", "**Warnings:**", *[f"- {w}" for w in warnings]] if warnings else []


def warning_html(warnings: Sequence[str]) -> str:
    """The run's warnings as a red HTML list (empty if there are none)."""
    items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
    return f"<ul style='color:#a33'>{items}</ul>" if items else ""


def table_cell(text: str) -> str:
    """Text shortened to fit one markdown table cell ('|' escaped, '(none)' when empty)."""
    return shorten(text, 80).replace("|", "\\|") or "(none)"


def html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, caption: str = "",
               row_styles: Sequence[str] = ()) -> str:
    """A small self-contained HTML table (cells escaped), for IPython.display.HTML."""
    style = "border:1px solid #ccc;padding:4px 6px;text-align:left;vertical-align:top"
    head = "".join(f'<th style="{style}">{html.escape(h)}</th>' for h in headers)
    body = []
    for i, row in enumerate(rows):
        extra = row_styles[i] if i < len(row_styles) else ""
        cells = "".join(f'<td style="{style}">{html.escape(str(c))}</td>' for c in row)
        body.append(f'<tr style="{extra}">{cells}</tr>')
    cap = f"<caption style='text-align:left'>{html.escape(caption)}</caption>" if caption else ""
    return (f'<table style="border-collapse:collapse;font-size:90%">{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")
