"""Every number the prose quotes is a number the notebook prints.

A sentence written before a re-run can keep an old figure ("38.20 BLEU" beside a printed 37.72); a learner
who trusts the text learns the old one. This test reads every markdown cell of every notebook (speaker
notes included: a lecturer reads them aloud) and finds the measured-looking numbers in it: decimals
(``0.835``, ``2.51``), numbers with thousands separators (``14,123``) and numbers with a unit that
marks a measurement (``1.71×``, ``57.5 %``, ``690 s``, ``38 ms``, ``14.1M``, ``33.7 BLEU``). Each must be
found in the notebook's own code or outputs, at the precision the text gives it (``3.31`` matches a printed
``3.3107``; ``57.5 %`` matches ``0.575``; ``14.1M`` matches ``14,123,456``).

Numbers that are not the notebook's measurements (a paper's table, a formula's constant, a section
number) are listed in ``QUOTED`` below with where they come from, per notebook, so that adding one is a
decision someone wrote down. Links, maths (``$...$``), HTML comments and places in a paper
("section 3.2", "eq. 6") are not read.
"""

from __future__ import annotations

import re

import pytest

from notebook_utils import NOTEBOOKS, read

# Numbers the prose quotes from outside the notebook's own outputs: notebook -> {number: source}.
QUOTED: dict[str, dict[str, str]] = {
    "01": {
        "10,000": "an upper bound on the vocabulary size, stated as a bound",
        "380,000": "the training set's token count, rounded (printed as the exact count)",
        "50,000": "GPT-2's merge count (Radford et al., 2019)",
        "30,000": "typical vocabulary sizes of real systems",
    },
    "02": {
        "1.8": "runs/rnn_full: the full-data run's wall time, from its log in runs/",
        "14.1": "runs/rnn_full: the full-data model's parameter count (its results.json)",
    },
    "03": {
        "33.7": "runs/additive_full: the README's results table",
    },
    "07": {
        "37,000": "the paper's BPE vocabulary (Vaswani et al., 2017, section 5.1)",
    },
    "08": {
        "13.8": "bentrevett/pytorch-seq2seq's reported BLEU (its README)",
        "28.3": "bentrevett/pytorch-seq2seq's reported BLEU (its README)",
        "36.5": "bentrevett/pytorch-seq2seq's reported BLEU (its README)",
    },
    "10": {
        "100,000": "a context length the speaker notes ask the room about",
        "80": "an A100's HBM, 40-80 GB (Dao et al., 2022, section 2.1)",
        "1.5": "an A100's HBM bandwidth, 1.5-2.0 TB/s (Dao et al., 2022, section 2.1)",
        "2.0": "an A100's HBM bandwidth, 1.5-2.0 TB/s (Dao et al., 2022, section 2.1)",
        "40.3": "HBM traffic of standard attention, GB (Dao et al., 2022, arXiv v2, Figure 2 left: seq. 1024, head dim. 64, "
                "16 heads, batch 64, A100, forward + backward)",
        "4.4": "HBM traffic of FlashAttention, GB (Dao et al., 2022, arXiv v2, Figure 2 left)",
        "41.7": "runtime of standard attention, ms (Dao et al., 2022, arXiv v2, Figure 2 left)",
        "7.3": "runtime of FlashAttention, ms (Dao et al., 2022, arXiv v2, Figure 2 left)",
        "75.2": "GFLOPs of FlashAttention, with recomputation (Dao et al., 2022, Figure 2 left)",
        "66.6": "GFLOPs of standard attention (Dao et al., 2022, Figure 2 left)",
    },
}

LINK = re.compile(r"\[[^\]]*\]\([^)]*\)|https?://\S+")
# "section 3.2", "sections 3.4 (shared embeddings), 5.3 and 5.4", "eq. 6", "Table 2": places in a paper
PLACE = re.compile(r"(?i)\b(?:sections?|§|eqs?\.|equations?|tables?|figures?|fig\.)\s+\d[\d.]*"
                   r"(?:\s*(?:\([^)]*\))?\s*(?:,|and|&)\s*\d[\d.]*)*")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
COMMENT = re.compile(r"<!--.*?-->", re.S)
# estimates, not measurements (tests/courseware/measure/test_section_minutes.py and tests/courseware/editions/test_slides.py check them): a section's
# "*≈ N min on your own*", a note's "**Lecture time:** N min", an exercise's "· about N min ·"
ESTIMATE = re.compile(r"\*≈ \d+ min on your own\*|\*\*Lecture time:\*\* \d+ min|·\s*about \d+ min\s*·")
# a decimal, a number with thousands separators, or an integer/decimal followed by a measuring unit
QUOTE = re.compile(r"(?<![\w.,/\\^_{-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+)"
                   r"(?:\s?(×|x\b|%|s\b|ms\b|µs\b|min\b|M\b|k\b|K\b|B\b|GB\b|MB\b|BLEU\b))?(?![\w.,]\d)")
SCALE = {"M": 1e6, "k": 1e3, "K": 1e3, "B": 1e9}
PERCENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?%")
PRINTED = re.compile(r"(?<![\w.])-?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:e[-+]?\d+)?)")


def quoted_numbers(markdown: str) -> list[tuple[str, str, str]]:
    """(number, unit, context) for each measured-looking number of a markdown cell."""
    text = ESTIMATE.sub(" ", COMMENT.sub(" ", markdown))
    text = PLACE.sub(" ", LINK.sub(" ", MATH.sub(" ", text)))
    found = []
    for m in QUOTE.finditer(text):
        number, unit = m.group(1), m.group(2) or ""
        if not ("." in number or "," in number or unit):
            continue
        found.append((number, unit, text[max(0, m.start() - 50): m.end() + 20].replace("\n", " ")))
    return found


def printed_values(nb) -> tuple[str, list[float]]:
    """The notebook's code and outputs as one text, and every number in it."""
    parts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        parts.append(cell.source)
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") if isinstance(out.get("text", ""), str) else "".join(out["text"]))
            for kind in ("text/plain", "text/markdown", "text/html", "text/latex"):
                data = out.get("data", {}).get(kind)
                if data:
                    parts.append(data if isinstance(data, str) else "".join(data))
    text = "\n".join(parts)
    values = []
    for m in PRINTED.finditer(text):
        try:
            values.append(float(m.group(1).replace(",", "")))
        except ValueError:
            pass
    return text, values


def matches(number: str, unit: str, text: str, values: list[float]) -> bool:
    """Is the quoted number printed, at the precision the prose gives it?"""
    if number in text and unit != "%":
        return True
    x = float(number.replace(",", ""))
    decimals = len(number.split(".")[1]) if "." in number else 0
    candidates = [(x, 0.5 * 10 ** -decimals)]
    if unit == "%":
        # a percentage is printed as one ("83 %", "83.0%") or as a fraction (0.83), not as any 83 in the outputs
        # (a sentence said 83 % beside a printed 77 % and passed: 83 was printed elsewhere)
        printed = (float(p) for p in PERCENT.findall(text))
        fractions = (v for v in values if v <= 1)
        return any(abs(v - x) <= 0.5 * 10 ** -decimals * (1 + 1e-9) for v in printed) or any(
            abs(v - x / 100) <= 0.5 * 10 ** -(decimals + 2) * (1 + 1e-9) for v in fractions)
    if unit in SCALE:
        candidates.append((x * SCALE[unit], 0.5 * 10 ** -decimals * SCALE[unit]))
    return any(abs(v - want) <= tol * (1 + 1e-9) for want, tol in candidates for v in values)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_every_number_the_prose_quotes_is_printed(path):
    nb = read(path)
    text, values = printed_values(nb)
    known = QUOTED.get(path.name[:2], {})
    missing, used = [], set()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for number, unit, context in quoted_numbers(cell.source):
            if number in known:
                used.add(number)
            elif not matches(number, unit, text, values):
                missing.append(f"cell {i}: {number}{unit} in '…{context}…'")
    assert not missing, (f"{path.name}: numbers in the prose that no cell prints (re-run and update the sentence, "
                         f"or list a literature figure in QUOTED with its source):\n  " + "\n  ".join(missing))
    assert not set(known) - used, f"{path.name}: QUOTED lists numbers the prose no longer has: {set(known) - used}"


def test_the_check_finds_a_stale_number():
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print(f'{bleu:.2f}')", outputs=[nbformat.v4.new_output("stream", text="37.72\n")]),
        nbformat.v4.new_markdown_cell("The model reaches 38.20 BLEU, about 1.5× the RNN, in 690 s."),
        nbformat.v4.new_markdown_cell("It reaches 37.7 BLEU ($d_k = 64$, see [arXiv 1706.03762](https://arxiv.org/abs/1706.03762), "
                                      "sections 3.2.1 and 5.4)."),
    ])
    text, values = printed_values(nb)
    stale = [n for n, u, _ in quoted_numbers(nb.cells[1].source) if not matches(n, u, text, values)]
    assert stale == ["38.20", "1.5", "690"]
    assert all(matches(n, u, text, values) for n, u, _ in quoted_numbers(nb.cells[2].source))
    assert [n for n, _, _ in quoted_numbers(nb.cells[2].source)] == ["37.7"]
    # a percentage must be printed as one (or as a fraction), not as any number in the outputs
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print(steps, share)", outputs=[nbformat.v4.new_output("stream", text="83 0.77 12.5%\n")]),
    ])
    text, values = printed_values(nb)
    assert not matches("83", "%", text, values)
    assert matches("77", "%", text, values) and matches("12.5", "%", text, values) and matches("13", "%", text, values)


def test_estimated_minutes_are_not_read_as_measurements_but_measured_minutes_are():
    estimates = ("## Training\n*≈ 24 min on your own*\n\n**Lecture time:** 7 min\n\n"
                 "**Exercise 1** · 8 points · about 60 min · ★★★ ·")
    assert quoted_numbers(estimates) == []
    assert [n for n, u, _ in quoted_numbers("The full run took 24 min on a CPU.")] == ["24"]
