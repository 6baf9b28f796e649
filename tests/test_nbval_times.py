from tests.nbval_times import notebook_times, report

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="lessons.01_bag_of_words.ipynb" name="Cell 0" time="1.5" />
<testcase classname="lessons.01_bag_of_words.ipynb" name="Cell 1" time="2.0" />
<testcase classname="solutions.07_rethinking_with_retrieval.ipynb" name="Cell 0" time="200.25" />
</testsuite></testsuites>"""


def test_notebook_times_add_up_cells_per_notebook_in_run_order(tmp_path):
    path = tmp_path / "nbval.xml"
    path.write_text(JUNIT)
    times = notebook_times(str(path))
    assert times == {"lessons/01_bag_of_words.ipynb": 3.5, "solutions/07_rethinking_with_retrieval.ipynb": 200.25}
    lines = report(times).splitlines()
    assert lines[0].split() == ["4", "s", "lessons/01_bag_of_words.ipynb"]
    assert lines[1].endswith("(over 3 min)") and lines[2].split()[:4] == ["204", "s", "all", "2"]
