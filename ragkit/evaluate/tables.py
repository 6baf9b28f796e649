"""Results as aligned text tables, stable under nbval: one row per pipeline, one column per metric.

Taught in lessons/01_bag_of_words.ipynb.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragkit.evaluate.runners import Evaluation


def table_rows(results: Mapping[str, Evaluation | Mapping[str, float]], *, label: str = "pipeline",
               timing: bool = False) -> list[dict]:
    """{name: evaluation or means} as rows for format_table, one column per metric (blank if missing).

    With timing, a last column gives each Evaluation's time per query with its unit, as nbval's sanitizer
    expects of a duration."""
    rows = [{label: name, **(result.means if isinstance(result, Evaluation) else result)}
            for name, result in results.items()]
    columns = list(dict.fromkeys(column for row in rows for column in row))
    table = [{column: row.get(column, "") for column in columns} for row in rows]
    if timing:
        for row, result in zip(table, results.values()):
            row["time/query"] = format_seconds(result.seconds_per_query) if isinstance(result, Evaluation) else ""
    return table


def format_seconds(seconds: float) -> str:
    """A duration for a table: "840 ms" below 10 s, "12.3 s" above."""
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def format_table(rows: Sequence[dict], *, digits: int = 3) -> str:
    """Rows of dicts as an aligned text table, floats rounded (stable under nbval)."""
    if not rows:
        return "(no rows)"
    columns = list(rows[0])
    cells = [[f"{row[c]:.{digits}f}" if isinstance(row[c], float) else str(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)
