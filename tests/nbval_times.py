"""Print each notebook's time under nbval from pytest's JUnit XML (make notebooks writes one); with
`--json docs/timings.json`, also record them there (the notebooks and the totals; the file's other entries are
kept), for `make docs` to write into the documents. Record only a run on the reference machine."""

from __future__ import annotations

import json
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


def record(times: dict[str, float], path: str) -> None:
    """Write the times (whole seconds) and their totals into a timings file such as docs/timings.json."""
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except FileNotFoundError:
        data = {}
    data["notebooks"] = {name: round(seconds) for name, seconds in times.items()}
    solutions = [seconds for name, seconds in times.items() if name.startswith("solutions/")]
    data["summary"] = {**data.get("summary", {}), "notebooks": len(times), "seconds": round(sum(times.values())),
                       "solutions_at_most_seconds": round(max(solutions, default=0))}
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=2)
        file.write("\n")


if __name__ == "__main__":
    times = notebook_times(sys.argv[1])
    print(report(times))
    if sys.argv[2:3] == ["--json"]:
        record(times, sys.argv[3])
