"""nbval settings for lessons/ and solutions/: how each cell's output is compared (tests/nbval_compare.py:
cell_tolerances reads the marker kept in the cell's metadata, comparison_in_run decides what a chat cell gets in
this run, texts_match compares), and stderr (progress bars, warnings) is not compared."""

from __future__ import annotations

import os

from tests import chat_fingerprint
from tests.nbval_compare import EXACT, cell_tolerances, comparison_in_run, marked_source, texts_match

_not_compared: list[str] = []  # chat cells left to their invariants because the chat model replies differently


def pytest_collectstart(collector):
    """Skip comparing stderr streams in notebook cells."""
    if hasattr(collector, "skip_compare"):
        collector.skip_compare = tuple(collector.skip_compare) + ("stderr",)


def pytest_configure(config):
    """Compare notebook outputs by the cell's marker when nbval is on."""
    if getattr(config.option, "nbval", False):
        from nbval.plugin import IPyNbCell

        IPyNbCell.compare_outputs = _compare_outputs(IPyNbCell.compare_outputs)


def _compare_outputs(exact_compare):
    def compare_outputs(cell, test, ref, skip_compare=None):
        marked, *tolerances = cell_tolerances(marked_source(cell.cell))
        kind = comparison_in_run(marked, os.environ, chat_fingerprint.replies_as_recorded)
        if kind == EXACT:
            return exact_compare(cell, test, ref, skip_compare)
        if kind is None:
            _not_compared.append(cell.reportinfo()[2])
            return True
        return _compare_with_tolerance(cell, test, ref, kind, tolerances, skip_compare)
    return compare_outputs


def _compare_with_tolerance(cell, test, ref, kind: str, tolerances, skip_compare) -> bool:
    """nbval's comparison, with texts_match in place of string equality."""
    from nbval.plugin import transform_streams_for_comparison

    skip = skip_compare or cell.parent.skip_compare
    expected, actual = (_flatten(cell, transform_streams_for_comparison(outputs), skip) for outputs in (ref, test))
    cell.comparison_traceback = []
    if expected.keys() != actual.keys():
        cell.comparison_traceback.append(f"output fields differ: {sorted(expected)} vs {sorted(actual)}")
        return False
    for key, old_values in expected.items():
        new_values = actual[key]
        if len(old_values) != len(new_values):
            cell.comparison_traceback.append(f"{len(old_values)} outputs of {key!r} expected, got {len(new_values)}")
            return False
        for old, new in zip(old_values, new_values):
            same, why = (texts_match(old, new, kind, *tolerances) if isinstance(old, str) and isinstance(new, str)
                         else (old == new, ""))
            if not same:
                cell.format_output_compare(key, old, new)
                cell.comparison_traceback.append(f"compared as {kind}: {why}")
                return False
    return True


def _flatten(cell, outputs, skip) -> dict[str, list]:
    """{output field or MIME type: [sanitized values]}, as nbval groups them."""
    flat: dict[str, list] = {}
    for output in outputs:
        for key, value in output.items():
            if key in skip:
                continue
            items = value.items() if key == "data" else [(key, value)]
            for field, content in items:
                if field not in skip:
                    flat.setdefault(field, []).append(cell.sanitize(content))
    return flat


def pytest_terminal_summary(terminalreporter):
    """Say which chat cells were left to their invariants, and why."""
    if _not_compared:
        terminalreporter.write_line(
            f"{len(_not_compared)} chat-model cells were not compared with the committed outputs: "
            f"{chat_fingerprint.difference()}; the cells after them asserted what holds for any reply.")
