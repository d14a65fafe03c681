"""Quizzes that test understanding (issue 52): every question of ``courseware/quizzes/NN.json`` says what it asks of
the learner in a ``kind`` field, and at least half of each notebook's questions ask to predict, apply or
diagnose rather than recall; what a key/value cache stores is asked in one notebook only."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from courseware import quiz  # noqa: E402

KINDS = {
    "recall": "state what the notebook said",
    "predict": "say what a change or a piece of code will do before seeing it",
    "apply": "use an idea on a new case: a shape, a mask, a count, a number",
    "diagnose": "find the cause of a symptom, or read what a result shows",
}
IDS = sorted(p.stem for p in quiz.QUIZZES.glob("[0-9][0-9].json"))


def _all(number):
    return [q for part in quiz.parts(number) for q in part["questions"]]


@pytest.mark.parametrize("number", IDS)
def test_every_question_says_its_kind(number):
    bad = [q["question"][:60] for q in _all(number) if q.get("kind") not in KINDS]
    assert not bad, f"notebook {number}: questions without a kind in {sorted(KINDS)}: {bad}"


@pytest.mark.parametrize("number", IDS)
def test_at_least_half_ask_for_more_than_recall(number):
    qs = _all(number)
    beyond = sum(q["kind"] != "recall" for q in qs)
    assert 2 * beyond >= len(qs), f"notebook {number}: {beyond} of {len(qs)} questions predict, apply or diagnose"


def test_what_the_cache_stores_is_asked_once():
    where = [n for n in IDS for q in _all(n) if "cache" in q["question"] and any(
        q.get("type") == "multiple_choice" and a["correct"] is True and re.search(r"\bkeys\b.*\bvalues\b", a["answer"])
        for a in q["answers"])]
    assert len(where) == 1, f"the key/value cache's contents are asked in notebooks {where}"


def test_the_course_counts():
    counts = {k: sum(q["kind"] == k for n in IDS for q in _all(n)) for k in KINDS}
    assert sum(counts.values()) >= 40 and counts["recall"] < sum(counts.values()) / 2, counts
    print(counts)
