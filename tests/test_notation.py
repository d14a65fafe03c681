"""One notation across the course (NOTATION.md): the shape comments of the notebooks and of utils/
and the notebooks' equations use B, S, T, D, H, d_k, N, V, never the spellings the table replaced
(d or h for the model width and the number of heads, d_h/dh for a head's width, H for an RNN's
state width, N/Nq for numbers of keys and queries, L for the number of layers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from notebook_utils import NOTEBOOKS, ROOT, read

# symbols NOTATION.md retired from shape comments such as "# (B, T, D)"
RETIRED_IN_SHAPES = {"d", "h", "d_h", "dh", "E", "Nq", "L", "2H", "H·d_h", "h·d_h"}
# ... and from the equations of the notebooks' text
RETIRED_IN_MATH = [
    (re.compile(r"(?<![\\\w])d(?![\w{])"), "d (the model width is D)"),
    (re.compile(r"d_h\b|d_\{h\}"), "d_h (a head's width is d_k)"),
    (re.compile(r"\bN_q\b"), "N_q (queries are counted by T_q)"),
    (re.compile(r"(?<![\\\w])h\s*=\s*\d"), "h = <number> (the number of heads is H)"),
    (re.compile(r"\\mathrm\{head\}_h"), "head_h (heads run 1..H)"),
]
SHAPE = re.compile(r"\(([^()]*,[^()]*)\)")


def shape_symbols(line: str) -> set[str]:
    if "#" not in line:
        return set()
    found = set()
    for inner in SHAPE.findall(line[line.index("#"):]):
        found |= {part.strip() for part in inner.split(",") if part.strip()}
    return found


def offending_shapes(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if shape_symbols(line) & RETIRED_IN_SHAPES]


def offending_math(source: str) -> list[str]:
    bad = []
    for math in re.findall(r"\$\$?([^$]+)\$\$?", source):
        bad += [f"${math}$: {why}" for pat, why in RETIRED_IN_MATH if pat.search(math)]
    return bad


def test_the_detectors_catch_the_old_spellings():
    assert offending_shapes("x = torch.randn(B, T, d)  # (B, T, d)")
    assert offending_shapes("q = split(x)  # (B, h, T, d_h)")
    assert offending_shapes("s = rnn(x)  # (B, T, H), (B, S, 2H)")
    assert not offending_shapes("x = torch.randn(B, T, D)  # (B, T, D), weights (B, H, Tq, Tk)")
    assert not offending_shapes("y = f(x)  # the mean (d of them is wrong) is fine here")
    assert offending_math(r"each head has $d_h = d/h$ dimensions")
    assert offending_math(r"The paper uses $h = 8$ heads")
    assert not offending_math(r"$d_k = D/H$, $d_{ff} = 2048$, $\frac{\partial L}{\partial x}$, $H = 8$")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_uses_the_notation_table(path):
    nb = read(path)
    bad = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            bad += offending_shapes(cell.source)
        elif "Speaker notes" not in cell.source:
            bad += offending_math(cell.source)
    assert not bad, "retired symbols (see NOTATION.md):\n" + "\n".join(bad)
    intro = "".join(c.source for c in nb.cells[:4] if c.cell_type == "markdown")
    assert "NOTATION.md" in intro, "the introduction should link the notation table (../NOTATION.md)"


@pytest.mark.parametrize("path", sorted((ROOT / "utils").glob("*.py")), ids=lambda p: p.name)
def test_utils_comments_use_the_notation_table(path: Path):
    bad = offending_shapes(path.read_text())
    assert not bad, "retired symbols in shape comments (see NOTATION.md):\n" + "\n".join(bad)
