"""The course's notebooks as an nbgrader course: preprocessors, the release, and a course directory.

Four pieces, used by ``nbgrader_config.py``, ``courseware/editions/make_student.py`` and the round-trip test:

- ``student_edition``: the notebook a class's student is given, before nbgrader's release: no
  speaker-notes cells, no passages marked ``<!-- learner-only -->…<!-- /learner-only -->`` (pointers
  to the repository's scripts, run logs and instructor files), the ``<!-- student-only: … -->``
  wording shown instead, no ``# NBVAL_`` directives. The course directory's source notebooks are
  this edition (answers and hidden tests still in), so autograde, the judge and the release agree;
- ``ClearReleaseMetadata``: a released notebook carries no ipywidgets state, no execution
  timestamps and no collapsed (``source_hidden``) cells;
- ``RELEASE_PREPROCESSORS``: nbgrader's ``generate_assignment`` pipeline with it added;
  ``release(nb)`` applies the same pipeline in memory (without the gradebook);
- ``ExerciseSectionExecute``: nbgrader's ``Execute`` that runs only the ``## Exercises`` section,
  which is self-contained by the course's convention (CONTRIBUTING.md), so autograding does not
  re-run a notebook's demonstration training for every student; then the judge (``run_judge``, a
  separate ``python -I -m courseware.grading.hidden serve`` process, prepared on the source notebook before the
  student's kernel starts) decides every graded
  cell and ``apply_verdicts`` writes its verdicts where nbgrader's ``SaveAutoGrades`` reads them.

Build a course directory (source/ and release/, one assignment per notebook, named after it)::

    python -m courseware course course                 # every notebook
    python -m courseware course course --notebooks 04 06
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat
from nbgrader.plugins.export import CsvExportPlugin
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ClearSolutions,
    ComputeChecksums,
    DeduplicateIds,
    Execute,
    IncludeHeaderFooter,
    InstantiateTests,
    LockCells,
    NbGraderPreprocessor,
    OverwriteCells,
    OverwriteKernelspec,
    SaveCells,
)
from nbgrader.api import MissingEntry

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from courseware.authoring.tag_exercises import is_speaker_notes, unwrap_details  # noqa: E402
EXERCISES_HEADING = "## exercises"


def exercise_section_start(nb) -> int | None:
    """Index of the markdown cell that opens the ``## Exercises`` section (None if there is none)."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and any(
            line.strip().lower() == EXERCISES_HEADING for line in cell.source.splitlines()
        ):
            return i
    return None


def exercise_section_end(nb) -> int:
    """Index one past the Exercises section's last cell: the appendix heading, or the notebook's end.
    The appendix (``## Appendix: ...``) may use anything the main line defined, so autograde, which
    runs the section alone, stops before it."""
    from courseware.sections import appendix_start

    start = exercise_section_start(nb) or 0
    end = appendix_start(nb.cells[start:])
    return len(nb.cells) if end is None else start + end


LEARNER_ONLY = re.compile(r"<!-- learner-only -->.*?<!-- /learner-only -->", re.S)
STUDENT_ONLY = re.compile(r"<!-- student-only: (.*?) -->", re.S)
NBVAL_DIRECTIVE = re.compile(r"^# NBVAL_[A-Z_]+[ \t]*(\n|$)", re.M)


def student_edition(nb):
    """A copy of a course notebook as a class's student is to have it (before nbgrader's release,
    which then stubs the answers and removes the hidden tests): no speaker notes, learner-only
    passages out, student-only wording in, no nbval directives."""
    nb = nbformat.from_dict(copy.deepcopy(nb))
    nb.cells = [c for c in nb.cells if not is_speaker_notes(c)]
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text = STUDENT_ONLY.sub(lambda m: m.group(1), LEARNER_ONLY.sub("", cell.source))
            cell.source = text.strip("\n")
        elif cell.cell_type == "code":
            cell.source = NBVAL_DIRECTIVE.sub("", cell.source)
    return nb


class ClearReleaseMetadata(NbGraderPreprocessor):
    """Drop what a released notebook must not carry: widget state, timestamps, collapsed cells,
    outputs left on non-code cells (invalid nbformat, which nbgrader warns about), and the closed
    ``<details>`` block that hides an open question's model answer in the course notebooks
    (``courseware/authoring/tag_exercises.py``): the student's answer cell is plain markdown."""

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        cell.metadata.pop("execution", None)
        if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = unwrap_details(cell.source)
        if cell.cell_type != "code":  # (a markdown cell that once was a code cell can keep these)
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
        jupyter = cell.metadata.get("jupyter")
        if jupyter is not None:
            jupyter.pop("source_hidden", None)
            jupyter.pop("outputs_hidden", None)
            if not jupyter:
                del cell.metadata["jupyter"]
        return cell, resources


class ExerciseSectionExecute(Execute):
    """Execute only the ``## Exercises`` section (every cell, when a notebook has none), then have
    a separate judge process decide every graded code cell (``courseware/grading/hidden.py``).

    The cells before the section keep the (cleared) state they arrived in. A section that needs
    something from earlier in the notebook fails here, which is what the course's convention (the
    section is self-contained) rules out.

    The student's kernel only records: each check cell runs there as released plus what the kernel must
    do of its hidden block (``kernel_check_cells``), writing what the student's code returned on the
    hidden inputs to a fresh records folder (``COURSE_GRADING_RECORDS``). A judge process
    (``JudgeProcess``), started before the kernel reaches a check, runs the trusted *source* notebook's
    section (set-up cells and model answers, no student code), draws each check's inputs with a key of
    its own and hands them in (``COURSE_GRADING_INPUTS``); once the kernel has exited it computes the
    references, loads the records and returns a verdict per graded cell over a pipe. A graded code cell keeps its points
    only with the verdict "passed" (and no error of its own): otherwise the judge's reason is put
    first in its outputs as an error, which is what nbgrader's ``SaveAutoGrades`` scores as 0.
    Answer cells that reach for the kernel or the grader (``courseware.grading.hidden.TAMPER_PATTERNS``) fail
    every graded cell of the notebook, with the pattern named, for a person to review.
    """

    def preprocess(self, nb, resources, km=None):
        import tempfile

        from courseware.grading.hidden import HIDDEN_BEGIN, INPUTS_ENV, JUDGE_ENV, KEY_ENV, RECORDS_ENV
        from courseware.grading.registry import NOTEBOOK_ENV
        from courseware.grading.sandbox import SANDBOX_ENV, Sandbox, probe

        os.environ.pop(JUDGE_ENV, None)   # the student's kernel records; only the judge process judges
        os.environ.pop(KEY_ENV, None)     # the hidden inputs' key lives in the judge process only
        for cell in nb.cells:              # only apply_verdicts marks a cell for a person (ReviewRules)
            cell.metadata.pop(MANUAL_MARK, None)
        source = self._source_notebook(resources)
        number = str((resources.get("nbgrader") or {}).get("notebook", ""))[:2]
        number = number if number.isdigit() else ""
        start, end = exercise_section_start(nb) or 0, exercise_section_end(nb)   # the appendix is not run
        head, section, tail = nb.cells[:start], nb.cells[start:end], nb.cells[end:]
        if source:
            restore_setup_cells(section, source)
        trusted = course_cells(source) if source else set()
        section, watched = watch_cells(section, trusted)
        sandboxed = os.environ.get(SANDBOX_ENV, "on") != "off"
        why_not = probe() if sandboxed else None
        if why_not:   # no student code runs outside a sandbox unless the instructor says so
            nb.cells = head + section + tail
            nb.cells = [c for c in nb.cells if not c.metadata.get("course_watch")]
            apply_verdicts(nb, {}, missing=f"not graded: no sandbox for the student's kernel ({why_not}); "
                                           f"install bubblewrap, or set {SANDBOX_ENV}=off to grade unsandboxed")
            return nb, resources
        # the check cells as the kernel runs them: the release's visible part and what the kernel must do of
        # the hidden block (run the student's code on the inputs the judge hands in, and record); the hidden
        # block itself (inputs, judge, references) stays in the judge process (kernel_check_cells)
        kernel = kernel_check_cells(source) if source else {}
        originals = {}
        for cell in section:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade") and gid in kernel:
                originals[id(cell)] = cell.source
                cell.source = kernel[gid]
        kernel_trusted = {s for s in trusted if HIDDEN_BEGIN not in s} | set(kernel.values())
        box = None
        old = {k: os.environ.get(k) for k in (RECORDS_ENV, INPUTS_ENV, NOTEBOOK_ENV)}
        saved_kmc = self.kernel_manager_class
        if sandboxed:
            box = Sandbox(env={RECORDS_ENV: "/records", INPUTS_ENV: "/inputs", NOTEBOOK_ENV: number},
                          trusted=sorted(kernel_trusted))
            records, inputs = str(box.records), str(box.inputs)
            self.kernel_manager_class = box.kernel_manager_class()
            nb.cells = section = [lockdown_cell()] + section
        else:
            records = tempfile.mkdtemp(prefix="course-records-")
            inputs = os.path.join(records, "inputs")
            os.mkdir(inputs)
            os.environ[RECORDS_ENV] = records
            os.environ[INPUTS_ENV] = inputs
            os.environ[NOTEBOOK_ENV] = number
        # the judge: its own process and key, drawing each check's inputs into the inputs folder while the
        # kernel starts (the kernel waits for each file); ready before any student code reaches a check
        judge = JudgeProcess(source, number=number, inputs=inputs, log=self.log) if source else None
        nb.cells = section
        try:
            nb, resources = super().preprocess(nb, resources, km=km)
        finally:
            self.kernel_manager_class = saved_kmc
            if box is not None:
                box.stop()   # every process the kernel started is gone before the judge is asked anything
            lockdown_failed = [f"{o.ename}: {o.evalue}" for c in nb.cells if c.metadata.get("course_watch") == "lockdown"
                               for o in c.get("outputs", []) if o.output_type == "error"]
            nb.cells = head + [c for c in nb.cells if not c.metadata.get("course_watch")] + tail
            for cell in nb.cells:   # the graded notebook (and its feedback) shows the cells as the source has them
                if id(cell) in originals:
                    cell.source = originals[id(cell)]
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        verdicts = judge.decide(records, watched) if judge else {}
        if box is not None and (lockdown_failed or not (box.records / "lockdown.ok").is_file()):
            verdicts = {"*": f"the sandbox's lockdown did not complete before the student's code ran: {lockdown_failed}"}
        # the static screen and the allowlist, read here, outside the kernel; COURSE_GRADING_SCAN=off (tests
        # only) shows what the judge alone does
        flags = {}
        if os.environ.get("COURSE_GRADING_SCAN", "on") != "off":
            flags = tamper_report(nb, trusted if source else None)
            outside = allowlist_report(nb, trusted if source else None, check_cell_names(source) if source else ())
            for label, found in outside.items():
                flags.setdefault(label, []).append(f"outside the allowlist: {'; '.join(found)}")
        apply_verdicts(nb, verdicts, flags, missing="no source notebook to judge against" if not source else None)
        note_reviews(nb, number)
        if box is not None:
            box.close()
        else:
            shutil.rmtree(records, ignore_errors=True)
        return nb, resources

    def _course_root(self):
        from nbgrader.coursedir import CourseDirectory

        return Path(CourseDirectory(config=self.config).root)

    def _source_notebook(self, resources):
        """The instructor's notebook in the course's source folder (nbgrader autograde), else None."""
        info = resources.get("nbgrader") or {}
        if not info.get("assignment"):
            return None
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=self.config)
        path = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"])) / f"{info['notebook']}.ipynb"
        return path if path.is_file() else None


def kernel_check_cells(source) -> dict[str, str]:
    """grade_id -> the check cell as the student's kernel runs it under autograde: the cell as released (the
    source's with its hidden block cleared, as ``ClearHiddenTests`` does), then
    :func:`courseware.grading.hidden.kernel_block` of the hidden block: its imports, ``run`` and the helpers
    ``run`` calls, and ``record_run``. No ``inputs``, no ``judge``, no reference or expected value: the judge
    process reads those from the source notebook itself. A block not in the form ``kernel_block`` reads runs
    as the visible part alone (no record, so the judge fails the cell)."""
    from IPython.core.inputtransformer2 import TransformerManager

    from courseware.grading.hidden import hidden_block, kernel_block

    nb = nbformat.read(source, as_version=4)
    transform = TransformerManager().transform_cell
    cells = {}
    for c in nb.cells[exercise_section_start(nb) or 0:exercise_section_end(nb)]:
        meta = c.metadata.get("nbgrader", {})
        block = hidden_block(c.source) if c.cell_type == "code" and meta.get("grade") else None
        if block is None:
            continue
        released = nbformat.v4.new_code_cell(c.source)
        ClearHiddenTests()._remove_hidden_test_region(released)
        try:
            cells[meta["grade_id"]] = released.source.rstrip("\n") + "\n" + kernel_block(transform(block))
        except (ValueError, SyntaxError):
            cells[meta["grade_id"]] = released.source
    return cells


def lockdown_cell():
    """Autograde's first cell in the sandbox: :func:`courseware.grading.sandbox.lockdown`, before any student code."""
    from nbformat.v4 import new_code_cell

    return new_code_cell("import courseware.grading.sandbox as _course_sandbox\n_course_sandbox.lockdown()\ndel _course_sandbox",
                         metadata={"course_watch": "lockdown"})


def course_cells(source) -> set[str]:
    """The sources of the course's own code cells in the source notebook's Exercises section
    (set-up and check cells; not the answer cells)."""
    nb = nbformat.read(source, as_version=4)
    return {c.source for c in nb.cells[exercise_section_start(nb) or 0:exercise_section_end(nb)]
            if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("solution")}


def _syntax(source: str) -> str | None:
    import ast

    try:
        return ast.dump(ast.parse(source))
    except SyntaxError:
        return None


def restore_setup_cells(cells, source) -> list[int]:
    """Set-up cells (the course's code cells without nbgrader metadata) that a submission holds reformatted (an
    earlier release's layout, a formatter's line breaks, other comments) get the source's text back when their
    syntax tree is the same as a set-up cell's of the source, so they run as the course's own: trusted by the
    registry's removal, not watched, not read by the allowlist, never charged to the student. Returns the
    indices restored. A set-up cell whose code differs stays the student's."""
    nb = nbformat.read(source, as_version=4)
    setup = {}
    for c in nb.cells[exercise_section_start(nb) or 0:exercise_section_end(nb)]:
        meta = c.metadata.get("nbgrader", {})
        if c.cell_type == "code" and not meta.get("grade") and not meta.get("solution"):
            tree = _syntax(c.source)
            if tree is not None:
                setup.setdefault(tree, c.source)
    restored = []
    for i, cell in enumerate(cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade") or meta.get("solution") or cell.source in setup.values():
            continue
        tree = _syntax(cell.source)
        if tree in setup:
            cell.source = setup[tree]
            restored.append(i)
    return restored


def _top_level_names(source: str) -> set[str]:
    """The names a cell binds at its top level (assignments, definitions, imports, loop and with targets)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        else:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
    return names


def check_cell_names(source) -> set[str]:
    """The names only the course's check cells define in the source notebook's Exercises section (their
    references, helpers, hidden blocks' ``inputs``/``run``/``judge``): an answer cell that reads one uses
    the check against itself (:func:`courseware.grading.hidden.allowlist`'s ``reserved``)."""
    nb = nbformat.read(source, as_version=4)
    checks, others = set(), set()
    for c in nb.cells[exercise_section_start(nb) or 0:exercise_section_end(nb)]:
        if c.cell_type != "code":
            continue
        meta = c.metadata.get("nbgrader", {})
        (checks if meta.get("grade") and not meta.get("solution") else others).update(_top_level_names(c.source))
    return checks - others


def allowlist_report(nb, trusted=None, reserved=()):
    """The cells autograde runs as the student's (as :func:`tamper_report` reads them) -> what each does
    outside :func:`courseware.grading.hidden.allowlist`; read here, in autograde's own process, never in the kernel."""
    from courseware.grading.hidden import allowlist

    report = {}
    start = exercise_section_start(nb) or 0
    for i, cell in enumerate(nb.cells[start:exercise_section_end(nb)]):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade"):
            continue
        if not meta.get("solution") and (trusted is None or cell.source in trusted):
            continue
        found = allowlist(cell.source, reserved)
        if found:
            label = meta.get("grade_id") or f"added cell {start + i}"
            if not meta.get("solution") and meta.get("grade_id"):
                label += " (changed)"
            report[label] = found
    return report


def watch_cells(section, trusted):
    """The section with every code cell that is not the course's own (answer cells, changed set-up
    cells, added cells; not the graded check cells, which watch themselves) between a start and a
    stop of ``courseware.grading.hidden``'s cell watch; and the ids of the watched cells."""
    from nbformat.v4 import new_code_cell

    cells, watched = [], []
    for i, cell in enumerate(section):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade") or cell.source in trusted:
            cells.append(cell)
            continue
        cid = f"{i}_{meta.get('grade_id', 'added')}"
        watched.append(cid)
        start = new_code_cell(f"import courseware.grading.hidden as _course_grading\n_course_grading.cell_watch_start({cid!r})",
                              metadata={"course_watch": True})
        stop = new_code_cell(f"import courseware.grading.hidden as _course_grading\n_course_grading.cell_watch_stop({cid!r})",
                             metadata={"course_watch": True})
        cells += [start, cell, stop]
    return cells, watched


class JudgeProcess:
    """``python -I -m courseware.grading.hidden serve`` in a fresh, isolated interpreter (``-I``: no current folder
    on its path, so a ``utils/`` planted beside a submission is never imported; ``utils`` is the course
    tree's own, the one whose copy the sandbox gives the kernel), started before the
    student's kernel. It gets the source notebook over its stdin and prepares (set-up cells, model
    answers, the hidden blocks, drawing each check's inputs into ``inputs`` for the kernel) while the
    kernel runs; ``decide`` sends it the records folder and reads the verdicts back: grade_id -> None
    (passed) or the reason. ``key``: for tests only; without one the judge makes a fresh random key of
    its own, which never leaves its process."""

    def __init__(self, source, key=None, number=None, log=None, inputs=None):
        import secrets
        import subprocess

        self.log = log
        self.nonce = secrets.token_hex(16)
        text = Path(source).read_text(encoding="utf-8")
        # -I ignores PYTHONPATH and the current folder; the judge then imports utils from the tree whose
        # utils/ the sandbox copies for the kernel (courseware.grading.sandbox.ROOT), not whatever the environment installed
        from courseware.grading.sandbox import ROOT as tree

        start = f"import sys; sys.path.insert(0, {str(tree)!r}); from courseware.grading.hidden import main; sys.exit(main(['serve']))"
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", start],
                                     cwd=str(Path(source).parent), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        first = {"notebook": json.loads(text), "nonce": self.nonce, "key": key, "number": number,
                 "inputs": str(inputs) if inputs else None}
        self.proc.stdin.write(json.dumps(first) + "\n")
        self.proc.stdin.flush()
        if inputs:   # a judge that dies while preparing: the kernel stops waiting for its inputs at once
            import threading

            from courseware.grading.hidden import INPUTS_DONE

            def done_when_gone(proc=self.proc, mark=Path(inputs) / INPUTS_DONE):
                proc.wait()
                try:
                    if mark.parent.is_dir() and not mark.exists():
                        mark.write_text("")
                        os.chmod(mark, 0o644)
                except OSError:   # the sandbox, and its inputs folder, already gone
                    pass

            threading.Thread(target=done_when_gone, daemon=True).start()

    def decide(self, records, watched=(), timeout=900):
        """The verdicts, from exactly one verdict line carrying this run's nonce (anything else: none)."""
        import subprocess

        from courseware.grading.hidden import READY_LINE, VERDICTS_LINE

        request = json.dumps({"records": str(records), "watched": list(watched)})
        try:
            out, err = self.proc.communicate(request + "\n", timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        lines = out.splitlines()
        verdicts = [l for l in lines if l.startswith(VERDICTS_LINE)]
        signed = VERDICTS_LINE + self.nonce + " "
        message = None
        if self.proc.returncode != 0 or READY_LINE not in lines or not verdicts:
            message = f"the judge did not finish (exit {self.proc.returncode}): {err[-3000:]}"
        elif len(verdicts) != 1 or not verdicts[0].startswith(signed):
            message = f"the judge's answer was not the one expected ({len(verdicts)} verdict lines, nonce " \
                      f"{'matches' if verdicts[0].startswith(signed) else 'missing or wrong'})"
        if message is not None:
            if self.log is not None:
                self.log.error(message)
            return {"*": message}
        return json.loads(verdicts[0][len(signed):])


def run_judge(source, records, watched=(), log=None, timeout=900, key=None):
    """Both steps at once, on records already written: grade_id -> None or a reason."""
    return JudgeProcess(source, key=key, log=log).decide(records, watched, timeout=timeout)


def tamper_report(nb, trusted=None):
    """Exactly the cells autograde ran as the student's (answer cells, changed set-up cells, added cells;
    ``trusted``: the course's own code cells, :func:`course_cells`) -> what they use: the static patterns of
    ``courseware.grading.hidden.TAMPER_PATTERNS`` and the capabilities of ``courseware.grading.hidden.screen`` (syntax tree)."""
    from courseware.grading.hidden import screen, tamper_flags

    report = {}
    start = exercise_section_start(nb) or 0
    for i, cell in enumerate(nb.cells[start:exercise_section_end(nb)]):   # not the appendix: autograde never runs it
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade"):
            continue
        if not meta.get("solution") and trusted is not None and cell.source in trusted:
            continue
        if not meta.get("solution") and trusted is None:
            continue
        found = tamper_flags(cell.source) + screen(cell.source)
        if found:
            label = meta.get("grade_id") or f"added cell {start + i}"
            if not meta.get("solution") and meta.get("grade_id"):
                label += " (changed)"
            report[label] = found
    return report


MANUAL_MARK = "course_needs_person"   # a check cell's metadata: a static reading flagged the notebook (ReviewRules)


def apply_verdicts(nb, verdicts, flags=None, missing=None):
    """Write the judge's verdicts into the graded code cells (see ExerciseSectionExecute)."""
    from nbformat.v4 import new_output

    flagged = "; ".join(f"cell {gid} uses {', '.join(found)}" for gid, found in (flags or {}).items())
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        gid = meta.get("grade_id")
        if flagged:
            reason = f"flagged for review (needs manual grade), not scored automatically: {flagged} (INSTRUCTORS.md, 'What the grader guarantees')"
            cell.metadata[MANUAL_MARK] = True
        elif missing:
            reason = missing
        elif "*" in verdicts:
            reason = verdicts["*"]
        elif gid not in verdicts:
            reason = f"the judge returned no verdict for {gid}"
        else:
            reason = verdicts[gid]
        # no execute_result survives: nbgrader would read a number there as partial credit
        outputs = [o if o.output_type != "execute_result" else
                   new_output("stream", name="stdout", text=str(o.get("data", {}).get("text/plain", "")) + "\n")
                   for o in cell.outputs]
        if reason is None:
            cell.outputs = outputs + [new_output("stream", name="stdout", text="judge: passed\n")]
        else:
            cell.outputs = [new_output("error", ename="JudgeFailed", evalue=reason,
                                       traceback=[f"judge: failed: {reason}"])] + outputs


REVIEW_NOTE = ("for the instructor: this exercise's rule (write it yourself) rests on the call watch alone for {what}; "
               "read answer cell {exercise} (INSTRUCTORS.md, 'What the sandbox does not guarantee')\n")


def note_reviews(nb, number):
    """In each check cell that passed, of an exercise whose rule no automatic check settles
    (``courseware.grading.registry.review``), a line saying which answer cell a person reads; ``ReviewRules``
    then lists the cell as needing a manual grade."""
    from nbformat.v4 import new_output

    from courseware.grading.registry import exercise_of, review

    todo = review(number or None)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        exercise = exercise_of(meta.get("grade_id", ""))
        if exercise in todo and not any(o.output_type == "error" for o in cell.outputs):
            what = ", ".join(todo[exercise])
            cell.outputs.append(new_output("stream", name="stdout", text=REVIEW_NOTE.format(what=what, exercise=exercise)))


class ReviewRules(NbGraderPreprocessor):
    """After ``SaveAutoGrades``: the check cells of an exercise whose rule rests on the call watch alone
    (``courseware.grading.registry.review``) that scored are marked "needs manual grade" in the gradebook, so the
    formgrader lists the submission and a person reads the answer cell. Their points wait for that person:
    the cell's manual score is 0 (the gradebook's total and ``nbgrader export`` count 0) until they give it
    one in the formgrader; its automatic score stays recorded beside it, and the export's
    ``points_waiting`` column says how many points wait. Every check cell of a notebook that a static reading
    flagged (``apply_verdicts``: the screen, or an answer cell outside ``courseware.grading.hidden.allowlist``) is marked
    too: it scored 0 automatically, and its points wait for the person who reads the cell named in it."""

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        from courseware.grading.registry import exercise_of, review

        info = resources["nbgrader"]
        todo = review(str(info["notebook"])[:2])
        flagged = {id(c) for c in nb.cells if c.metadata.pop(MANUAL_MARK, None)}
        if not todo and not flagged:
            return nb, resources
        with Gradebook(info["db_url"]) as gb:
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type != "code" or not meta.get("grade"):
                    continue
                if id(cell) in flagged:   # outside the allowlist or flagged by the screen: 0 until a person reads it
                    grade = gb.find_grade(meta["grade_id"], info["notebook"], info["assignment"], info["student"])
                    grade.needs_manual_grade = True
                    continue
                if exercise_of(meta.get("grade_id", "")) not in todo:
                    continue
                grade = gb.find_grade(meta["grade_id"], info["notebook"], info["assignment"], info["student"])
                if grade.auto_score:
                    grade.needs_manual_grade = True
                    grade.manual_score = 0.0
            gb.db.commit()
        return nb, resources


def points_waiting(submission) -> float:
    """The points of a submission's check cells that wait for a person (``ReviewRules``): a marked cell's
    automatic score, or all its points where a static reading flagged the notebook (its automatic score is
    0 and says nothing); 0 once every marked cell has been graded by hand. Open questions are not counted."""
    return float(sum(g.auto_score or g.max_score or 0 for nb in submission.notebooks for g in nb.grades
                     if g.needs_manual_grade and g.cell_type == "code"))


class WaitingCsvExport(CsvExportPlugin):
    """nbgrader's CSV export and one more column, ``points_waiting``: the automatic points that count 0 in
    ``score`` until an instructor confirms them in the formgrader (``ReviewRules``)."""

    def export(self, gradebook) -> None:
        import csv

        from nbgrader.api import MissingEntry

        super().export(gradebook)
        dest = self.to or "grades.csv"
        with open(dest, newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            try:
                row["points_waiting"] = points_waiting(gradebook.find_submission(row["assignment"], row["student_id"]))
            except MissingEntry:
                row["points_waiting"] = 0.0
        if rows:
            with open(dest, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        waiting = sum(float(r["points_waiting"]) for r in rows)
        if waiting:
            self.log.warning("%s points wait for a person (column points_waiting; the formgrader lists the cells "
                             "marked 'needs manual grade'): they count 0 in score until graded", f"{waiting:g}")


class OverwriteReleasedCells(OverwriteCells):
    """nbgrader's ``OverwriteCells`` without the false alarm on every untouched check cell (issue 50).

    The gradebook keeps a check cell as the source notebook has it, hidden tests included, with the
    checksum computed before ``ClearHiddenTests`` (nbgrader's own order, jupyter/nbgrader#1961); the
    release, and so an untouched submission, holds the cell without them. ``OverwriteCells`` compares the
    two, so autograde warned "Attribute 'checksum' for cell exN_check has changed!" for every check cell
    with a hidden block (eight in 02 and in 06), in the words it uses for a tampered cell. Here a locked
    cell whose source is exactly the gradebook's with the hidden block cleared gets the gradebook's source
    back first (what ``OverwriteCells`` does after its warning); any other difference is left to
    ``OverwriteCells``, which warns and restores the cell as before.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None and cell.cell_type == "code":
            try:
                source_cell = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
            except MissingEntry:
                source_cell = None
            if source_cell is not None and source_cell.locked and source_cell.cell_type == "code":
                released = nbformat.v4.new_code_cell(source_cell.source)
                if ClearHiddenTests()._remove_hidden_test_region(released) and cell.source == released.source:
                    cell.source = source_cell.source
        return super().preprocess_cell(cell, resources, cell_index)


# Autograde's first pass: nbgrader's, with OverwriteReleasedCells for OverwriteCells.
SANITIZE_PREPROCESSORS = [ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteReleasedCells, CheckCellMetadata]


# nbgrader's GenerateAssignment.preprocessors, with ClearReleaseMetadata after ClearOutput.
RELEASE_PREPROCESSORS = [
    IncludeHeaderFooter,
    InstantiateTests,
    LockCells,
    ClearSolutions,
    ClearOutput,
    ClearReleaseMetadata,
    CheckCellMetadata,
    ComputeChecksums,
    SaveCells,
    ClearHiddenTests,
    ClearMarkScheme,
    ComputeChecksums,
    CheckCellMetadata,
]


# Open questions keep their mark scheme in the (manually graded) answer cell, next to the model
# answer, rather than in a separate nbgrader "task" cell; nbgrader removes it from the release either way.
RELEASE_CONFIG = {"ClearMarkScheme": {"enforce_metadata": False}}


def release(nb):
    """The notebook nbgrader's ``generate_assignment`` releases, computed in memory (from the
    student edition, as ``build_course`` writes the source folder).

    The same preprocessors in the same order, less ``SaveCells`` (it writes the gradebook) and
    ``IncludeHeaderFooter`` (no header is configured); the round-trip test checks the two agree.
    """
    from traitlets.config import Config

    nb = student_edition(nb)
    resources = {}
    config = Config(RELEASE_CONFIG)
    for pp in RELEASE_PREPROCESSORS:
        if pp in (SaveCells, IncludeHeaderFooter):
            continue
        nb, resources = pp(config=config).preprocess(nb, resources)
    return nb


def select(notebooks: list[str] | None) -> list[Path]:
    """The course's notebooks, or those named by number (``04``), stem or path."""
    every = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        return every
    chosen = []
    for name in notebooks:
        hits = [p for p in every if p.name.startswith(name) or p.stem == Path(name).stem]
        if not hits:
            raise SystemExit(f"no notebook matches {name!r} (give a number such as 04, a name or a path)")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def use_this_environment() -> None:
    """Put this interpreter's bin/ first on PATH: nbgrader runs ``alembic`` (gradebook migrations)
    as a program, and ``make`` does not activate the virtual environment."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def course_config(root: Path):
    """The repository's nbgrader_config.py, pointed at the course directory ``root``."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    config.CourseDirectory.root = str(Path(root).resolve())
    return config


def build_course(root: Path, notebooks: list[Path], log_level: str = "WARNING"):
    """Write ``root/source/<name>/<name>.ipynb`` for each notebook (its :func:`student_edition`, answers
    and hidden tests kept) and release it with nbgrader."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    use_this_environment()
    root = Path(root)
    config = course_config(root)
    config.Application.log_level = log_level
    for p in notebooks:
        dest = root / "source" / p.stem
        dest.mkdir(parents=True, exist_ok=True)
        nbformat.write(student_edition(nbformat.read(p, as_version=4)), dest / p.name)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    for p in notebooks:
        result = api.generate_assignment(p.stem, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader generate_assignment {p.stem} failed:\n{result.get('error', '')}\n{result.get('log', '')}")
    return api


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build an nbgrader course directory (source -> release) from the notebooks.")
    ap.add_argument("root", type=Path, help="the course directory to write (e.g. course)")
    ap.add_argument("--notebooks", nargs="*", help="numbers, names or paths (default: every notebook)")
    args = ap.parse_args(argv)
    paths = select(args.notebooks)
    build_course(args.root, paths)
    for p in paths:
        print(f"released {args.root / 'release' / p.stem / p.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
