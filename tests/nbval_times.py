"""Print each notebook's time under nbval from pytest's JUnit XML (make notebooks writes one)."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

LESSON_LIMIT_S = 180  # course rule: each notebook at most 3 minutes under nbval
COURSE_LIMIT_S = 900  # and the whole course at most 15 minutes


def notebook_times(junit_xml: str) -> dict[str, float]:
    """Seconds per notebook: the sum of its cells' times (kernel start-up not included), in run order."""
    times: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        notebook = case.get("classname", "").replace(".", "/", 1)  # "lessons.06_cot_rag.ipynb"
        times[notebook] += float(case.get("time", 0))
    return dict(times)


def report(times: dict[str, float]) -> str:
    """One line per notebook, flagging those over the limit, then the total."""
    lines = [f"{seconds:7.0f} s  {name}{'  (over 3 min)' if seconds > LESSON_LIMIT_S else ''}"
             for name, seconds in times.items()]
    total = sum(times.values())
    lines.append(f"{total:7.0f} s  all {len(times)} notebooks{'  (over 15 min)' if total > COURSE_LIMIT_S else ''}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(notebook_times(sys.argv[1])))
