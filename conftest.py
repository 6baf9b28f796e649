"""nbval settings for lessons/ and solutions/: stderr (progress bars, warnings) is not compared."""


def pytest_collectstart(collector):
    """Skip comparing stderr streams in notebook cells."""
    if hasattr(collector, "skip_compare"):
        collector.skip_compare = tuple(collector.skip_compare) + ("stderr",)
