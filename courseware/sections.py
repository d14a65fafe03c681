"""A course notebook's three parts, found by their headings: the main line, the ``## Exercises``
section (with the Summary and the references), and the appendix (``## Appendix: the measurements
behind the claims``), which holds the evidence behind the main line's claims. Autograde runs the
Exercises section alone and stops at the appendix; the slide decks leave the appendix out; the
website gives it a page of its own. Plain Python (no torch), so that every edition's build can use it.

Each function takes a notebook's ``cells`` (nbformat nodes or plain dicts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["EXERCISES_HEADING", "APPENDIX_HEADING", "exercises_start", "appendix_start", "exercise_cells"]

EXERCISES_HEADING = "## Exercises"
APPENDIX_HEADING = "## Appendix: the measurements behind the claims"


def _heading_cell(cells: Sequence[Any], heading: str) -> int | None:
    heading = heading.lower()
    for i, cell in enumerate(cells):
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if cell["cell_type"] == "markdown" and any(line.strip().lower() == heading for line in source.splitlines()):
            return i
    return None


def exercises_start(cells: Sequence[Any]) -> int | None:
    """Index of the cell that opens the ``## Exercises`` section (None if there is none)."""
    return _heading_cell(cells, EXERCISES_HEADING)


def appendix_start(cells: Sequence[Any]) -> int | None:
    """Index of the cell that opens the appendix (None if there is none). The Exercises section
    ends there: autograde never runs the appendix."""
    return _heading_cell(cells, APPENDIX_HEADING)


def exercise_cells(cells: Sequence[Any]) -> list:
    """The cells autograde runs: from the ``## Exercises`` heading (the first cell when there is none)
    up to the appendix (the end when there is none)."""
    start = exercises_start(cells) or 0
    end = appendix_start(cells[start:])
    return list(cells[start:]) if end is None else list(cells[start:start + end])
