"""A sentence that compares two things sits next to an assert that would fail if the comparison were wrong.

The second half of issue 27's "make it stay true" (the first is ``test_quoted_numbers.py``). A sentence written
before a re-run can keep a comparison the new outputs no longer support ("the GRU is not faster" beside a printed
38.5 ms against 90.1 ms). This test reads the committed notebooks only and applies one rule.

**What counts as a comparison.** A sentence of a markdown cell (speaker notes included: a lecturer says them) that
contains ``faster``, ``slower``, ``larger``, ``smaller``, ``bigger``, ``better``, ``worse``, ``higher``, ``lower``,
``longer`` or ``shorter`` followed by ``than``, or a factor ("3×", "6.7 times", "five times", "several times", "an
order of magnitude", "twice", "half") followed by one of those words, by ``more``, ``fewer`` or ``less``, or by ``as``
and an adjective ("3× faster", "five times longer", "twice as fast"). A bare threshold ("more than 1 nat", "words
seen fewer than five times") is not a comparison of two results and is not read. Maths (``$...$``), code spans and blocks, links' addresses and HTML comments are not read.
Questions (sentences that end in "?") are not claims. The title and introduction (before the first ``##``
section), ``## Exercises`` (prompts, checked by their own check cells), ``## Summary`` (a recap of what was checked
above) and the references are not read.

**What counts as next to.** The nearest code cell before the markdown cell or the nearest one after it holds an
``assert`` whose condition orders two values (``<``, ``>``, ``<=``, ``>=``) or ranks them (``min``, ``max``,
``sorted``, ``argmin``, ``argmax``). The test cannot tell that this assert checks *that* sentence; it makes an
unchecked comparison visible, and the reader of the pair judges the rest.

**Claims that no cell can check** (a paper's measurement, a property of hardware) carry a marker right after the
sentence: ``<!-- not measured here: where it comes from -->``. Every marker must name its source.

``KNOWN`` lists the comparisons that had no assert when this test was written, per notebook, so that the test
passes while they are fixed; fixing one means removing its entry (a stale entry fails the test).
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from notebook_utils import NOTEBOOKS, read

WINDOW = 1  # code cells on each side: the nearest one before the sentence's cell and the nearest one after

ADJECTIVE = r"(?:faster|slower|larger|smaller|bigger|better|worse|higher|lower|longer|shorter)"
FACTOR = r"(?:\d+(?:\.\d+)?\s?(?:×|x\b|times)|(?:two|three|four|five|six|seven|eight|nine|ten|several|many|a few)\s+times" \
         r"|an order of magnitude|twice|half)"
CLAIM = re.compile(rf"\b{ADJECTIVE}\s+than\b|{FACTOR}\s+(?:as\s+)?(?:{ADJECTIVE}|more|fewer|less|fast|slow|large|small|long)\b",
                   re.IGNORECASE)
MARKER = re.compile(r"<!--\s*not measured here:\s*(\S[^>]*?)\s*-->")
COMMENT = re.compile(r"<!--.*?-->", re.S)
FENCE = re.compile(r"```.*?```", re.S)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\([^)]*\)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
SKIPPED_SECTIONS = ("## exercises", "## summary", "### references")
RANKING = {"min", "max", "sorted", "argmin", "argmax"}

# Comparisons without an assert next to them when this test was written: notebook -> [(cell, sentence)].
# The cell number is where the sentence was; entries are matched by notebook and sentence.
KNOWN: dict[str, list[tuple[int, str]]] = {}


def sentences(markdown: str) -> list[tuple[str, bool]]:
    """(sentence as read, has a "not measured here" marker) for each sentence of a markdown cell."""
    text = FENCE.sub(" ", markdown)
    out: list[tuple[str, bool]] = []
    for piece in SENTENCE_END.split(text):
        marked = bool(MARKER.match(piece.lstrip()))
        if marked and out:  # a marker opens the text after the sentence it belongs to
            out[-1] = (out[-1][0], True)
            marked = False
        marked = marked or bool(MARKER.search(piece))
        read_ = LINK.sub("]", CODE_SPAN.sub(" ", MATH.sub(" ", COMMENT.sub(" ", piece))))
        out.append((" ".join(read_.split()), marked))
    return out


def claims(markdown: str) -> list[str]:
    """The comparisons of a markdown cell that need an assert: not questions, not marked."""
    return [s for s, marked in sentences(markdown) if CLAIM.search(s) and not marked and not s.endswith("?")]


def compares(source: str) -> bool:
    """Does this code hold an assert that orders or ranks two values?"""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return any(re.match(r"\s*assert\b.*[<>]", line) for line in lines)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for sub in ast.walk(node.test):
            if isinstance(sub, ast.Compare) and any(isinstance(op, (ast.Lt, ast.Gt, ast.LtE, ast.GtE)) for op in sub.ops):
                return True
            if isinstance(sub, ast.Call):
                name = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(sub.func, "id", "")
                if name in RANKING:
                    return True
    return False


def read_cells(nb) -> list[int]:
    """Indices of the markdown cells whose comparisons are read (see the module docstring)."""
    cells, started, skipping = [], False, False
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        headings = [line.strip().lower() for line in cell.source.splitlines() if line.startswith("#")]
        for h in headings:
            if h.startswith("## ") or h.startswith("### references"):
                started = True
                skipping = h.startswith(SKIPPED_SECTIONS)
        if started and not skipping:
            cells.append(i)
    return cells


def unchecked(nb) -> list[tuple[int, str]]:
    """(cell, sentence) for every comparison with no ordering assert in the WINDOW nearest code cells on either side."""
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    checked = {i for i in code if compares(nb.cells[i].source)}
    found = []
    for i in read_cells(nb):
        before = [j for j in code if j < i][-WINDOW:]
        after = [j for j in code if j > i][:WINDOW]
        if checked & set(before + after):
            continue
        found += [(i, s) for s in claims(nb.cells[i].source)]
    return found


def test_markers_name_their_source():
    for path in NOTEBOOKS:
        for i, cell in enumerate(read(path).cells):
            if cell.cell_type == "markdown" and "not measured here" in cell.source:
                bad = [m for m in re.findall(r"<!--\s*not measured here.*?-->", cell.source, re.S) if not MARKER.fullmatch(m)]
                assert not bad, f"{path.name} cell {i}: a marker without its source: {bad}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_every_comparison_has_an_assert_next_to_it(path):
    known = {s for _, s in KNOWN.get(path.name[:2], [])}
    new = [f"cell {i}: '{s}'" for i, s in unchecked(read(path)) if s not in known]
    assert not new, (f"{path.name}: comparisons with no assert that orders two values in the nearest code cell on "
                     f"either side (add one that would fail if the sentence were wrong, or mark a literature figure "
                     f"<!-- not measured here: source -->):\n  " + "\n  ".join(new))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_known_unchecked_comparisons_are_still_there(path):
    still = {s for _, s in unchecked(read(path))}
    stale = [f"cell {i}: '{s}'" for i, s in KNOWN.get(path.name[:2], []) if s not in still]
    assert not stale, f"{path.name}: KNOWN lists comparisons that are fixed or gone; remove them:\n  " + "\n  ".join(stale)


def _notebook(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(c[1]) if c[0] == "md" else nbformat.v4.new_code_cell(c[1]) for c in cells]
    return nb


def test_the_rule_on_a_synthetic_notebook():
    timing = ("code", "t_gru, t_attn = 0.0385, 0.0901\nprint(t_gru, t_attn)")
    nb = _notebook(("md", "# Title\n\nAttention is faster than a GRU, as the intro says."),       # intro: not read
                   ("md", "## Timing"), timing,
                   ("md", "Here the GRU is faster than attention at T = 2048. It is 2.3× faster. Is it faster than "
                          "the table says? `x is faster than y` in code is not a claim."),
                   ("md", "## Later"), ("code", "x = 1"), ("code", "y = 2"), ("code", "z = 3"),
                   ("md", "FlashAttention-2 is about 2× faster than FlashAttention.<!-- not measured here: Dao, 2023 --> "
                          "The rule holds where $x \\text{ is larger than } y$."),
                   ("md", "## Summary\n\nThe GRU was faster than attention."))
    assert unchecked(nb) == [(3, "Here the GRU is faster than attention at T = 2048."), (3, "It is 2.3× faster.")]
    nb.cells[2].source += "\nassert t_gru < t_attn  # the GRU, faster here"
    assert unchecked(nb) == []                                       # the assert sits next to the claim
    nb.cells.insert(3, nbformat.v4.new_code_cell("a = 1"))
    assert len(unchecked(nb)) == 2                                   # now two code cells away: too far
    nb.cells[3].source = "assert max([t_gru, t_attn]) == t_attn"     # a ranking counts too
    assert unchecked(nb) == []
    nb.cells[3].source = "assert t_gru == 0.0385"                    # an equality does not order anything
    assert len(unchecked(nb)) == 2
