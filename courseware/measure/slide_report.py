"""How the notebooks present as slides: slide counts, lines per page, speaker-note minutes.

The notebooks carry reveal.js/RISE slideshow metadata (``cell.metadata.slideshow.slide_type``).
This script reads it back and estimates how tall every page of the deck is, in *lines*, so that
``tests/courseware/editions/test_slides.py`` can check that no page overflows a 1280x720 slide. Usage::

    python -m courseware slide-report                      # one row per notebook
    python -m courseware slide-report --pages notebooks/04_scaled_dot_product_attention.ipynb

What a line is (one line of code in nbconvert's reveal template is 23 px of the slide's 700;
the calibration is described in tests/courseware/editions/test_slides.py):

- a code cell: its source lines, plus 1 for the cell's padding; each output adds 1, plus its text
  lines (wrapped at 80 characters) or, for a PNG, its height in
  px / 20 (images wider than 860 px first shrunk to that width);
- a markdown cell: 1 line for its margins plus, per non-blank source line, ceil(len / 55)
  lines (a ``# `` heading 3 and other headings 2 per 55 characters, a table row 2), all times 1.3,
  since a rendered markdown line is taller than a line of code;
- ``skip`` and ``notes`` cells count nothing; ``slide`` and ``subslide`` start a new page;
  ``fragment`` and ``-`` cells count on the page they belong to.
"""

from __future__ import annotations

import argparse
import base64
import math
import re
import struct
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from courseware.sections import appendix_start  # noqa: E402
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

SLIDE_TYPES = {"slide", "subslide", "fragment", "skip", "notes", "-"}
LINE_PX = 23           # one code line in the reveal template, in px of the 700-px-high slide
MAX_IMAGE_WIDTH = 860  # px: wider figures are shrunk to the width of the slide's output area
IMAGE_PX_PER_LINE = 20  # an image's px (at that width) per counted line, from the fit below
MD_CHARS = 55          # characters of markdown per rendered line
MD_LINE = 1.3          # a rendered markdown line is taller than a code line
OUT_CHARS = 80         # characters of text output per rendered line
TIME_RE = re.compile(r"\*\*Lecture time:\*\*\s*(\d+)\s*min")   # a lecturer's minutes (the headings' are a reader's)


def slide_type(cell) -> str:
    return cell.metadata.get("slideshow", {}).get("slide_type", "-")


def png_size(b64: str) -> tuple[int, int]:
    raw = base64.b64decode(b64[:64])
    width, height = struct.unpack(">II", raw[16:24])
    return width, height


def image_lines(b64: str) -> int:
    w, h = png_size(b64)
    return math.ceil(h * min(1.0, MAX_IMAGE_WIDTH / w) / IMAGE_PX_PER_LINE)


def markdown_lines(source: str) -> float:
    total = 1.0   # the cell's margins
    for line in source.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith("# "):
            total += 3 * math.ceil(len(s) / MD_CHARS)
        elif s.startswith("#"):
            total += 2 * math.ceil(len(s) / MD_CHARS)
        elif s.startswith("|"):
            total += 2 if set(s) - set("|-: ") else 0   # the |---| row draws nothing
        else:
            total += math.ceil(len(s) / MD_CHARS)
    return MD_LINE * total


def output_lines(output) -> float:
    if output.output_type == "stream":
        text = output.get("text", "")
    elif output.output_type == "error":
        text = "\n".join(output.get("traceback", []))
    else:
        data = output.get("data", {})
        if "image/png" in data:
            return 1 + image_lines(data["image/png"])
        if "application/vnd.jupyter.widget-view+json" in data:
            return 1   # a live widget in RISE; an empty box in a static deck
        text = data.get("text/plain", "")
    lines = [ln for ln in text.splitlines() if "\r" not in ln]   # progress bars overwrite themselves
    return 1 + sum(max(1, math.ceil(len(ln) / OUT_CHARS)) for ln in lines)


def cell_lines(cell) -> float:
    if cell.cell_type == "markdown":
        return markdown_lines(cell.source)
    if cell.cell_type == "code":
        return 1 + len(cell.source.splitlines()) + sum(output_lines(o) for o in cell.get("outputs", []))
    return 0.0


def pages(nb) -> list[dict]:
    """The deck's pages in order: {'kind': 'slide'|'subslide', 'cells': [indices], 'lines': float}."""
    result: list[dict] = []
    end = appendix_start(nb.cells)   # the decks leave the appendix out (courseware/editions/build_decks.py)
    for i, cell in enumerate(nb.cells[:end]):
        kind = slide_type(cell)
        if kind in ("skip", "notes"):
            if kind == "notes" and result:
                result[-1]["notes"].append(i)
            continue
        if kind in ("slide", "subslide") or not result:
            result.append({"kind": "slide" if not result else kind, "cells": [], "lines": 0.0, "notes": []})
        result[-1]["cells"].append(i)
        result[-1]["lines"] += cell_lines(cell)
    return result


def slides(nb) -> list[list[dict]]:
    """Pages grouped by slide: each slide is its first page followed by its subslides."""
    grouped: list[list[dict]] = []
    for page in pages(nb):
        if page["kind"] == "slide" or not grouped:
            grouped.append([])
        grouped[-1].append(page)
    return grouped


def note_minutes(nb) -> list[int]:
    return [int(m) for c in nb.cells if slide_type(c) == "notes" for m in TIME_RE.findall(c.source)]


def title(cell) -> str:
    first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
    return first[:70]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, default=NOTEBOOKS)
    parser.add_argument("--pages", action="store_true", help="list every page with its line count")
    args = parser.parse_args(argv)
    print(f"{'notebook':<40} {'slides':>6} {'pages':>6} {'max lines':>9} {'notes':>5} {'minutes':>7}")
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=4)
        ps = pages(nb)
        n_notes = sum(slide_type(c) == "notes" for c in nb.cells)
        print(f"{path.name:<40} {len(slides(nb)):>6} {len(ps):>6} {max(p['lines'] for p in ps):>9.1f} "
              f"{n_notes:>5} {sum(note_minutes(nb)):>7}")
        if args.pages:
            for k, p in enumerate(ps):
                first = nb.cells[p["cells"][0]]
                print(f"   {k:3d} {p['kind']:<8} {p['lines']:5.1f}  cells {p['cells'][0]}-{p['cells'][-1]}  "
                      f"{title(first) if first.cell_type == 'markdown' else '[code] ' + title(first)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
