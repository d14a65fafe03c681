"""Repo-wide pytest hooks: print how long each notebook took under nbval."""

from __future__ import annotations

from collections import defaultdict

_notebook_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _notebook_seconds:
        return
    terminalreporter.section("notebook execution times")
    for path, secs in sorted(_notebook_seconds.items()):
        terminalreporter.write_line(f"{secs:7.1f} s  {path}")
