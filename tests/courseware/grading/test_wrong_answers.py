"""Every visible check tests something: wrong answers students write are caught where the learner
sees them, or the check cell says plainly that the hidden tests grade it (``tests/courseware/grading/wrong_answers/``);
and right answers written another way from the prompt alone earn every point.

``make test`` runs notebooks 04 and 09 (``COURSE_WRONG_NOTEBOOKS`` picks others, ``all`` every one, e.g.
``COURSE_WRONG_NOTEBOOKS=05 make test-checks``); ``make test-checks`` runs them and prints, per notebook,
the visible checks that test values ("real") or only run the code ("smoke"), the wrong answers each
catches, and at the end one table: mistakes tried / caught by a visible check / caught only by the
hidden tests / right answers written another way (issue 39).
"""

from __future__ import annotations

import os
import sys

import pytest

from notebook_utils import KERNEL, NOTEBOOKS, ROOT, read
from wrong_answers import checks_of, grade_id, right_answers, run_notebook, wrong_answers

sys.path.insert(0, str(ROOT))
from courseware.editions.nbgrader_course import exercise_section_start  # noqa: E402

HIDDEN_LABEL = "hidden tests when graded"
TABLE: dict[str, tuple[int, int, int, int]] = {}   # notebook -> (tried, caught visibly, caught only hidden, right)


@pytest.fixture(scope="module", autouse=True)
def _print_table():
    yield
    if TABLE:
        print("\n\nwrong answers per notebook (tests/courseware/grading/wrong_answers/)")
        print(f"{'notebook':<10}{'tried':>7}{'caught by a visible check':>28}{'caught only by hidden tests':>30}"
              f"{'right answers':>15}")
        for name, (tried, visible, hidden_only, right) in sorted(TABLE.items()):
            print(f"{name:<10}{tried:>7}{visible:>28}{hidden_only:>30}{right:>15}")


def chosen():
    wanted = os.environ.get("COURSE_WRONG_NOTEBOOKS", "04 09").split()
    return [p for p in NOTEBOOKS if "all" in wanted or p.name[:2] in wanted]


def smoke(check) -> bool:
    """A visible check that only runs the code (its first line names the hidden tests)."""
    return HIDDEN_LABEL in check.source.splitlines()[0]


@pytest.mark.parametrize("path", chosen(), ids=lambda p: p.name[:2])
def test_wrong_answers_fail_a_visible_check_or_the_check_says_hidden_tests_grade_it(path):
    nb = read(path)
    wrongs = wrong_answers(path.name[:2])
    code_exercises = sorted({grade_id(c) for c in nb.cells if c.cell_type == "code"
                             and c.metadata.get("nbgrader", {}).get("solution")})
    missing = [ex for ex in code_exercises if not any(w.exercise == ex for w in wrongs)]
    assert not missing, f"{path.name}: no wrong answers kept for {missing} (tests/courseware/grading/wrong_answers/nb{path.name[:2]}.py)"
    rights = right_answers(path.name[:2])
    outcomes = run_notebook(path, wrongs + rights, KERNEL, exercise_section_start(nb))
    problems, caught = [], {}
    for o in outcomes[len(wrongs):]:   # right answers written from the prompt: every check passes
        failed = {gid: err for gid, err in {**o.visible, **o.hidden}.items() if err}
        if failed:
            gid, err = next(iter(failed.items()))
            problems.append(f"{o.wrong.exercise} right answer '{o.wrong.name}' fails {gid}: {err[:300]}")
    outcomes = outcomes[:len(wrongs)]
    for o in outcomes:
        w = o.wrong
        seen = [gid for gid, err in o.visible.items() if err]
        if not w.hidden_only and not seen:
            problems.append(f"{w.exercise} '{w.name}': passes every visible check ({', '.join(o.visible)})")
        if w.hidden_only:
            if seen:
                problems.append(f"{w.exercise} '{w.name}': declared hidden_only but a visible check catches it "
                                f"({seen[0]}: {o.visible[seen[0]][:120]}); drop hidden_only")
            if not any(smoke(c) for c in checks_of(nb, w.exercise)):
                problems.append(f"{w.exercise} '{w.name}': only the hidden tests catch it, and no check cell says "
                                f"'{HIDDEN_LABEL}'")
        if not any(o.hidden.values()):
            problems.append(f"{w.exercise} '{w.name}': the hidden tests pass it ({', '.join(o.hidden) or 'none'})")
        for gid in seen:
            caught[gid] = caught.get(gid, 0) + 1
    caught_visibly = sum(1 for o in outcomes if any(o.visible.values()))
    TABLE[path.name[:2]] = (len(outcomes), caught_visibly,
                            sum(1 for o in outcomes if not any(o.visible.values()) and any(o.hidden.values())), len(rights))
    checks = [c for c in nb.cells if c.cell_type == "code" and (grade_id(c) or "").split("_")[-1].startswith("check")]
    real = [grade_id(c) for c in checks if not smoke(c)]
    print(f"\n{path.name}: {len(real)} real visible checks, {len(checks) - len(real)} labelled smoke checks; "
          f"{len(wrongs)} wrong answers, {sum(1 for o in outcomes if any(o.visible.values()))} caught by a visible "
          f"check, {sum(1 for o in outcomes if any(o.hidden.values()))} by the hidden tests; "
          f"{len(rights)} right answers written another way")
    for gid in real:
        print(f"  {gid}: catches {caught.get(gid, 0)}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
