"""One notation across the course (NOTATION.md): the shape comments of the notebooks and of utils/
and the notebooks' equations use B, S, T, D, H, d_k, N, V, never the spellings the table replaced
(d or h for the model width and the number of heads, d_h/dh for a head's width, H for an RNN's
state width, N/Nq for numbers of keys and queries, L for the number of layers). Also: S, not T, for
the source length of the RNN notebooks; the additive score written one way, v . tanh(s W_s + h W_h),
with Bahdanau's column-vector form only where a cell maps it; and every notebook's link to the table
resolves from inside notebooks/."""

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
    (re.compile(r"\bc\s*=\s*h_T\b"), "c = h_T (the source has length S: notebook 02's context is [h_S; h_1])"),
    (re.compile(r"a_\{t,\s*T\}"), "a_{t,T} (attention weights run over the source positions 1..S)"),
]
# Bahdanau's column-vector form of the additive score (v_a^T tanh(U s + W h)): the notebooks write
# v . tanh(s W_s + h W_h), and the column form only in a cell that maps one to the other
COLUMN_ADDITIVE = re.compile(r"v_a\^\\top|\\tanh\(\s*U\b")
MAPPING_CELL = "column vectors"
# ... and from code, comments included
RETIRED_IN_CODE = [(re.compile(r"\bd_h\b"), "d_h (a head's width is d_k)")]
# notebooks 02-03 have no heads: an H there would be an RNN's state width, an E an embedding width
RNN_NOTEBOOKS = ("02", "03")
RETIRED_IN_RNN_CODE = [(re.compile(r"\b[EH]\b"), "E or H as a size (D_emb and D: H counts heads, E is the score matrix)")]
# shapes written in the text, outside maths: checked where a head's symbols are taught (elsewhere h is an
# RNN state in a signature such as gru_step(x_t, h, gru), and d an exercise's argument name)
TEXT_SHAPES_CHECKED = ("05",)
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
        if COLUMN_ADDITIVE.search(math) and MAPPING_CELL not in source:
            bad.append(f"${math}$: the additive score is v \\cdot \\tanh(s W_s + h W_h) (map the column form once)")
    return bad


def offending_code(source: str, notebook: str = "") -> list[str]:
    rules = RETIRED_IN_CODE + (RETIRED_IN_RNN_CODE if notebook in RNN_NOTEBOOKS else [])
    return [f"{line.strip()}: {why}" for line in source.splitlines() for pat, why in rules if pat.search(line)]


def offending_text_shapes(source: str) -> list[str]:
    text = re.sub(r"\$\$?[^$]+\$\$?", " ", source)
    return [f"({inner}) in the text" for inner in SHAPE.findall(text)
            if {part.strip().strip("`") for part in inner.split(",")} & RETIRED_IN_SHAPES]


def test_the_detectors_catch_the_old_spellings():
    assert offending_shapes("x = torch.randn(B, T, d)  # (B, T, d)")
    assert offending_shapes("q = split(x)  # (B, h, T, d_h)")
    assert offending_shapes("s = rnn(x)  # (B, T, H), (B, S, 2H)")
    assert not offending_shapes("x = torch.randn(B, T, D)  # (B, T, D), weights (B, H, Tq, Tk)")
    assert not offending_shapes("y = f(x)  # the mean (d of them is wrong) is fine here")
    assert offending_math(r"each head has $d_h = d/h$ dimensions")
    assert offending_math(r"The paper uses $h = 8$ heads")
    assert not offending_math(r"$d_k = D/H$, $d_{ff} = 2048$, $\frac{\partial L}{\partial x}$, $H = 8$")
    assert offending_math(r"Without attention the decoder used $c = h_T$ at every step.")
    assert offending_math(r"the weights $a_{t,1}, \dots, a_{t,T}$ can all be computed at once")
    assert offending_math(r"| additive | $v_a^\top \tanh(U s + W h)$ | $U$, $W$, $v_a$ |")
    assert offending_math(r"Implement $e_{i} = v^\top \tanh(U s + W h_i + b)$")
    assert not offending_math(r"$e_{t,i} = v \cdot \tanh(s_{t-1} W_s + h_i W_h)$, $c = h_S$, $a_{t,S}$, $x_1, \dots, x_T$")
    assert not offending_math(r"In column vectors, $v_a^\top \tanh(W_a s + U_a h)$: its $W_a$ is our $W_s^\top$")
    assert offending_code("        self.h, self.d_h = num_heads, d_model // num_heads")
    assert offending_code("B, S, E, H = 4, 7, 5, 6", "02") and not offending_code("B, T, D, H = 2, 6, 16, 4", "05")
    assert offending_code("def forward(self, H, mask, tgt_in):  # H (B, S, D)", "03")
    assert offending_text_shapes("`split_heads` turns (B, T, d) into (B, h, T, d/h)")
    assert offending_text_shapes("broadcastable to `(B, h, Tq, Tk)`")
    assert not offending_text_shapes("turns (B, T, D) into (B, H, T, d_k), weights `(B, H, Tq, Tk)`, $(B, h)$")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_uses_the_notation_table(path):
    nb = read(path)
    number = path.name[:2]
    bad = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            bad += offending_shapes(cell.source) + offending_code(cell.source, number)
        elif "Speaker notes" not in cell.source:
            bad += offending_math(cell.source)
            if number in TEXT_SHAPES_CHECKED:
                bad += offending_text_shapes(cell.source)
    assert not bad, "retired symbols (see NOTATION.md):\n" + "\n".join(bad)
    intro = "".join(c.source for c in nb.cells[:4] if c.cell_type == "markdown")
    # (the student edition's address, in a student-only comment, is tested in tests/courseware/editions)
    links = [link for link in re.findall(r"\]\(([^)]*NOTATION\.md)\)", intro) if not link.startswith("http")]
    assert links, "the introduction should link the notation table (../NOTATION.md)"
    assert all((path.parent / link).is_file() for link in links), f"{links} must resolve from {path.parent.name}/"


@pytest.mark.parametrize("path", sorted((ROOT / "utils").glob("*.py")), ids=lambda p: p.name)
def test_utils_comments_use_the_notation_table(path: Path):
    bad = offending_shapes(path.read_text())
    assert not bad, "retired symbols in shape comments (see NOTATION.md):\n" + "\n".join(bad)


# a head's width has one spelling in utils, the scripts, the tests and the notebooks: d_k (issue 43)
HEAD_WIDTH = re.compile(r"\bd_head\b|\bdh\b")
HEAD_WIDTH_EXCEPTIONS = {"test_notation.py"}


@pytest.mark.parametrize("path", sorted([*(ROOT / "utils").rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
                                         *(ROOT / "scripts").rglob("*.py"), *NOTEBOOKS]),
                         ids=lambda p: p.name)
def test_a_heads_width_is_spelled_d_k(path: Path):
    if path.name in HEAD_WIDTH_EXCEPTIONS:
        return
    text = "\n".join(c.source for c in read(path).cells) if path.suffix == ".ipynb" else path.read_text()
    bad = [line.strip() for line in text.splitlines() if HEAD_WIDTH.search(line)]
    assert not bad, "a head's width is d_k (NOTATION.md), not d_head or dh:\n" + "\n".join(bad)
