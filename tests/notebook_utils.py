"""Shared helpers for the notebook tests."""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
KERNEL = "attention-course"
BEGIN = "### BEGIN SOLUTION"


def read(path: Path):
    return nbformat.read(path, as_version=4)


def heading_index(nb, title: str) -> int | None:
    """Index of the markdown cell that opens the ``## title`` section."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and any(
            line.strip().lower() == f"## {title}".lower() for line in cell.source.splitlines()
        ):
            return i
    return None


def is_check(cell) -> bool:
    return cell.cell_type == "code" and cell.source.lstrip().startswith("# CHECK")


def exercise_cells(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and BEGIN in c.source]
