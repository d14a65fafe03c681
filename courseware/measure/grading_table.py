"""Autograde seconds per submission and the points each attack keeps, graded by any checkout's grader.

Builds a course directory for the chosen notebooks with the grader of ``--tree`` (this checkout by default;
another one, such as an earlier commit's worktree, to measure *before*), autogrades the stub, the model
answers, the known shortcut and the chosen attacks of this checkout's ``tests/courseware/grading/grading_attacks`` exactly as
``tests/courseware/grading/test_nbgrader_roundtrip.py`` writes them, and prints, per submission, its autograde seconds and, per
attack, the points on the cells it attacks: automatic (nbgrader's auto score), counted (the gradebook's score:
0 for a cell that waits for a person) and marked (cells marked "needs manual grade")::

    python -m courseware grading-table --notebooks 04 --classes 14 15
    python -m courseware grading-table --tree /tmp/before --notebooks 04 --classes 14 15 --json before.json

Run it with the interpreter of the tree's environment (the sandbox binds that environment for the kernel).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=HERE, help="the checkout whose grader grades (default: this one)")
    ap.add_argument("--notebooks", nargs="+", default=["04"])
    ap.add_argument("--classes", nargs="*", type=int, default=[], help="attack classes to grade (none: no attack)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the stub, model answers and shortcut")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree), str(HERE / "tests"), str(HERE / "tests" / "courseware" / "grading")]   # the grader
    # from --tree; the attacks and the round trip's submissions from this checkout
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from grading_attacks import attacks_for
    from courseware.editions.nbgrader_course import build_course, course_config, use_this_environment
    from test_nbgrader_roundtrip import SHORTCUTS, attack_submission, grade_id, submission

    use_this_environment()
    os.environ.setdefault("COURSE_DATA_MIRROR", "/work/shared/data")
    paths = [next((tree / "notebooks").glob(f"{n}_*.ipynb")) for n in args.notebooks]
    root = Path(tempfile.mkdtemp(prefix="course-table-"))
    build_course(root, paths)
    config = course_config(root)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    rows = []
    for p in paths:
        aid, number = p.stem, p.name[:2]
        released = nbformat.read(root / "release" / aid / p.name, as_version=4)
        source = nbformat.read(p, as_version=4)
        first = next(grade_id(c) for c in source.cells if c.metadata.get("nbgrader", {}).get("solution"))
        todo = []
        if not args.no_baseline:
            todo += [("stub", released, None, True), ("solution", submission(released, source), None, True)]
            if number in SHORTCUTS:
                todo.append(("shortcut", submission(released, source, SHORTCUTS[number]), None, True))
        chosen = [a for a in attacks_for(number, first, SHORTCUTS.get(number, {}).get(first)) if a.kind in args.classes]
        todo += [(f"attack{i:02d}", attack_submission(released, a), a, a.scan) for i, a in enumerate(chosen)]
        for student, nb, attack, scan in todo:
            folder = root / "submitted" / student / aid
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / p.name)
            os.environ["COURSE_GRADING_SCAN"] = "on" if scan else "off"
            t = time.time()
            result = api.autograde(aid, student, force=True, create=True)
            seconds = time.time() - t
            os.environ.pop("COURSE_GRADING_SCAN", None)
            with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
                grades = {g.name: g for g in gb.find_submission_notebook(aid, aid, student).grades if g.cell_type == "code"}
                aimed = list(grades) if attack is None or attack.attacked == ["*"] else attack.attacked
                row = {"notebook": number, "student": student, "seconds": round(seconds, 1), "ok": result["success"],
                       "class": attack.kind if attack else None, "attack": attack.name if attack else None,
                       "auto": sum(grades[g].auto_score or 0 for g in aimed),
                       "counted": sum(grades[g].score or 0 for g in aimed),
                       "max": sum(grades[g].max_score for g in aimed),
                       "marked": [g for g in aimed if grades[g].needs_manual_grade]}
            rows.append(row)
            print(f"{number} {student:9} {row['seconds']:6.1f} s  auto {row['auto']:g} counted {row['counted']:g} "
                  f"of {row['max']:g}  marked {len(row['marked'])}  {row['attack'] or ''}", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (1 min), {os.getloadavg()[1]:.1f} (5 min)")
    if args.json:
        args.json.write_text(json.dumps({"tree": str(tree), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
