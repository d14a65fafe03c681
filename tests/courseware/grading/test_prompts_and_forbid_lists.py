"""A prompt and its grader agree on what is switched off. Notebook 02's Exercise 3 builds a GRU step by hand, so
``nn.GRUCell`` is switched off there; Exercise 4's decoder is an ``nn.GRUCell``, and its prompt says it is allowed:
then neither the registry (``courseware.grading.registry``) nor any of Exercise 4's check cells may forbid it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from courseware.grading.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[3]
NB02 = ROOT / "notebooks" / "02_rnn_seq2seq.ipynb"
GRUCELL = ("GRUCell", "gru_cell")
FORBID_LIST = re.compile(r"forbid\s*(?:=|\()\s*\[(.*?)\]", re.S)


def exercise(cells: list[dict], number: int) -> tuple[str, list[str]]:
    """Exercise ``number``'s prompt (its markdown before the answer cell) and its check cells' sources."""
    text = ["".join(c["source"]) for c in cells]
    start = next(i for i, s in enumerate(text) if re.match(rf"#+ Exercise {number}\b", s))
    end = next((i for i in range(start + 1, len(text))
                if re.match(r"#+ Exercise \d|## Summary", text[i])), len(text))
    prompt = "\n".join(s for c, s in zip(cells[start:end], text[start:end])
                       if c["cell_type"] == "markdown" and not c["metadata"].get("nbgrader", {}).get("solution"))
    checks = [s for c, s in zip(cells[start:end], text[start:end])
              if c["metadata"].get("nbgrader", {}).get("grade_id", "").startswith(f"ex{number}_check")]
    return prompt, checks


def forbidden(checks: list[str]) -> str:
    return "\n".join(m.group(1) for s in checks for m in FORBID_LIST.finditer(s))


def test_02_grucell_is_off_in_exercise_3_and_allowed_in_exercise_4():
    cells = json.loads(NB02.read_text(encoding="utf-8"))["cells"]
    prompt3, checks3 = exercise(cells, 3)
    prompt4, checks4 = exercise(cells, 4)
    assert "`nn.GRUCell`" in prompt3 and "switched off" in prompt3
    assert all(name in forbidden(checks3) for name in GRUCELL), "Exercise 3's checks switch nn.GRUCell off"
    assert any(name in entry for entry in REGISTRY["02"]["ex3"] for name in GRUCELL)
    assert "`nn.GRUCell` is allowed here" in prompt4, "Exercise 4's prompt says nn.GRUCell is allowed"
    assert checks4 and forbidden(checks4), "Exercise 4's checks do forbid something (nn.GRU's forward)"
    assert not any(name in forbidden(checks4) for name in GRUCELL), "an Exercise 4 check forbids nn.GRUCell"
    assert not any(name in entry for entry in REGISTRY["02"]["ex4"] for name in GRUCELL), \
        "the registry forbids nn.GRUCell in Exercise 4"
