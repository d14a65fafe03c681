"""The kernel holds nothing that decides or reveals a grade (issue 48): a real autograde of notebook 04's model
answers, with the sandbox's whole tree read from the host while the student's kernel runs.

Just before the submission's last cell runs (every check cell before it has been handed its inputs and has
recorded), the test reads, through ``/proc/<kernel>/root``, every file the kernel can see except the host's own
system and Python environment (bound read-only, the same files every user of the host has): the course's
``utils`` and ``courseware`` copies, ``/inputs``, ``/records``, the private ``/tmp`` and data folder; and the
environment and command line of every process in the sandbox. It finds there no line of any hidden block that the
kernel does not need (``inputs``, ``judge``, references and whatever only they use) and that is not public anyway (in
the release or the library), no ``### BEGIN HIDDEN TESTS`` outside the library's own source, and not the hidden inputs'
key (the judge is given a known one here, so that the test can look for it). A cell the student added prints what the
kernel itself holds: its ``In`` history and its global names, which hold no hidden block and no ``judge``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

from notebook_utils import ROOT

sys.path.insert(0, str(ROOT))
from courseware.grading.sandbox import bwrap, probe  # noqa: E402

PROBE = "# the student's own cell: what does this kernel hold?"
KEY = "7e57" * 16
SYSTEM = ("/usr", "/proc", "/sys", "/dev", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _sandbox_text(pid: int) -> dict[str, str]:
    """path inside the sandbox -> its text, for every file the kernel's process ``pid`` sees outside SYSTEM and
    the Python environment; and each sandboxed process's environment and command line."""
    root = Path(f"/proc/{pid}/root")
    prefixes = {q for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) for q in (p, os.path.realpath(p))}
    prefixes.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        inside = "/" + os.path.relpath(dirpath, root).removeprefix(".").lstrip("/")
        dirnames[:] = [d for d in dirnames if not any(
            f"{inside.rstrip('/')}/{d}" == s or f"{inside.rstrip('/')}/{d}".startswith(s + "/") for s in (*SYSTEM, *prefixes))]
        for name in filenames:
            path = Path(dirpath, name)
            try:
                if path.is_file() and path.stat().st_size < 64 * 2**20:
                    found[f"{inside.rstrip('/')}/{name}"] = path.read_bytes().decode("latin-1")
            except OSError:
                continue
    for p in _descendants(pid):
        for what in ("environ", "cmdline"):
            try:
                found[f"/proc/{p}/{what}"] = Path(f"/proc/{p}/{what}").read_bytes().decode("latin-1")
            except OSError:
                pass
    return found


@pytest.mark.skipif(bwrap() is None, reason="bubblewrap is not installed (make sandbox-tools)")
def test_no_file_inside_the_sandbox_holds_a_hidden_block_or_the_key(tmp_path, monkeypatch):
    assert probe() is None, f"bubblewrap is installed but autograde's sandbox cannot start: {probe()}"
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from courseware.editions import nbgrader_course as course
    from courseware.grading.hidden import HIDDEN_BEGIN, hidden_block, kernel_block
    from test_nbgrader_roundtrip import submission

    monkeypatch.setenv("COURSE_DATA_MIRROR", os.environ.get("COURSE_DATA_MIRROR", "/work/shared/data"))
    path = next((ROOT / "notebooks").glob("04_*.ipynb"))
    root = tmp_path / "course"
    course.build_course(root, [path])
    released = nbformat.read(root / "release" / path.stem / path.name, as_version=4)
    source = nbformat.read(path, as_version=4)
    nb = submission(released, source)
    end = course.exercise_section_end(nb)
    nb.cells.insert(end, nbformat.v4.new_code_cell(
        PROBE + "\nimport os\nprint('IN:', repr(In))\nprint('GLOBALS:', sorted(globals()))\nprint('ENV:', dict(os.environ))"))
    folder = root / "submitted" / "probe" / path.stem
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / path.name)

    # the judge gets a known key (tests only), so that the test can look for it
    real_init = course.JudgeProcess.__init__
    monkeypatch.setattr(course.JudgeProcess, "__init__",
                        lambda self, source, key=None, **kw: real_init(self, source, key=KEY, **kw))
    seen: dict[str, str] = {}
    real_cell = course.ExerciseSectionExecute.preprocess_cell

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and cell.source.startswith(PROBE) and not seen:
            bwrap_pid = self.km.provisioner.process.pid
            kernel = _descendants(bwrap_pid)[-1]
            seen.update(_sandbox_text(kernel))
        return real_cell(self, cell, resources, index)

    monkeypatch.setattr(course.ExerciseSectionExecute, "preprocess_cell", preprocess_cell)
    course.use_this_environment()
    config = course.course_config(root)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    result = api.autograde(path.stem, "probe", force=True, create=True)
    assert result["success"], result.get("log")
    assert seen, "the sandbox's tree was never read: the probe cell did not run"
    assert any(k.startswith("/inputs/") for k in seen) and any(k.startswith("/course/courseware/") for k in seen), \
        sorted(seen)[:20]

    library = "\n".join(p.read_text() for package in ("utils", "courseware") for p in (ROOT / package).rglob("*.py"))
    public = "\n".join(c.source for c in released.cells) + library
    secret_lines = set()
    for cell in source.cells:
        block = hidden_block(cell.source) if cell.cell_type == "code" else None
        if block is None:
            continue
        kept = kernel_block(block)
        secret_lines |= {line.strip() for line in block.splitlines()
                         if len(line.strip()) > 24 and line.strip() not in kept and line.strip() not in public}
    assert len(secret_lines) > 50, "too few lines only the judge holds: the test would check nothing"
    for where, text in seen.items():
        leaked = [line for line in secret_lines if line in text]
        assert not leaked, f"{where}: lines of a hidden block in the sandbox: {leaked[:3]}"
        assert KEY not in text, f"{where}: the hidden inputs' key is in the sandbox"
        if not where.startswith("/course/"):   # the library's own source names the marker
            assert HIDDEN_BEGIN not in text, f"{where}: a hidden block in the sandbox"
    environments = [t for w, t in seen.items() if w.endswith("/environ")]
    assert environments and not any("COURSE_GRADING_KEY" in t for t in environments)

    graded = nbformat.read(root / "autograded" / "probe" / path.stem / path.name, as_version=4)
    probe_out = "".join(o.get("text", "") for c in graded.cells if c.cell_type == "code" and c.source.startswith(PROBE)
                        for o in c.outputs if o.output_type == "stream")
    assert "IN:" in probe_out and "GLOBALS:" in probe_out, probe_out[:500]
    history = probe_out.split("IN:", 1)[1].split("GLOBALS:", 1)[0]
    names = set(re.findall(r"'(\w+)'", probe_out.split("GLOBALS:", 1)[1].split("ENV:", 1)[0]))
    assert "record_run" in history, "the check cells' kernel part is not in the history: the probe saw nothing"
    assert HIDDEN_BEGIN not in history and "def judge" not in history and "def inputs" not in history
    assert not any(line in history for line in secret_lines)
    assert not {"judge", "inputs", "hidden_check"} & names, names & {"judge", "inputs", "hidden_check"}
    assert KEY not in probe_out and "COURSE_GRADING_KEY" not in probe_out
