"""The Makefile's set-up targets without make (Windows, or any machine without it).

Run from the top of the repository with any Python 3.10 or newer; nothing needs to be installed
first (this module uses only the standard library until the environment exists)::

    python -m courseware install   # .venv/ with the tested versions (constraints.txt), kernel registered
    python -m courseware lab       # install if needed, then JupyterLab on notebooks/      (make lab)
    python -m courseware test      # install if needed, then every test and notebook      (make test)
    python -m courseware doctor    # what this computer has and what to do about problems (make doctor)

Options mirror the Makefile's: ``--torch-index URL`` (TORCH_INDEX), ``--jobs N`` (JOBS),
``--venv DIR`` (VENV); arguments after ``--`` go to pytest (PYTEST_ARGS). ``--dry-run`` prints the
commands instead of running them. The install is shared with make: the same ``.venv`` and the same
stamp file, redone when ``pyproject.toml`` or ``constraints.txt`` is newer than the stamp.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The same values as the Makefile's (tests/courseware/setup/test_course.py compares them).
KERNEL = "attention-course"
KERNEL_DISPLAY_NAME = "Python 3 (attention-course)"
TORCH_VERSION = "2.13.0"
NBVAL_ARGS = ["--nbval-lax", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
              "--nbval-cell-timeout", "900"]
STAMP = ".installed"
IS_WINDOWS = os.name == "nt"


def venv_python(venv: Path) -> Path:
    """The interpreter inside a virtual environment (``Scripts\\python.exe`` on Windows)."""
    return venv / ("Scripts/python.exe" if IS_WINDOWS else "bin/python")


def data_mirror_default() -> str | None:
    """``$COURSE_DATA_MIRROR``, else the shared mirror next to the repository when there is one
    (as the Makefile does: tests and CI never download)."""
    if os.environ.get("COURSE_DATA_MIRROR"):
        return os.environ["COURSE_DATA_MIRROR"]
    shared = ROOT.parent / "shared" / "data"
    return str(shared) if (shared / "SOURCES.md").is_file() else None


class Runner:
    def __init__(self, dry_run: bool = False):
        self.dry_run = dry_run

    def __call__(self, cmd: list, env: dict | None = None) -> int:
        cmd = [str(c) for c in cmd]
        if self.dry_run:
            print("+ " + shlex.join(cmd))
            return 0
        return subprocess.call(cmd, cwd=ROOT, env=env)


def needs_install(venv: Path) -> bool:
    stamp = venv / STAMP
    if not stamp.is_file() or not venv_python(venv).is_file():
        return True
    newest = max((ROOT / f).stat().st_mtime for f in ("pyproject.toml", "constraints.txt"))
    return stamp.stat().st_mtime < newest


def install(venv: Path, torch_index: str | None, run: Runner, force: bool = False) -> int:
    """``make install``: the venv, torch at the tested version, the package with its lab and test
    extras pinned by constraints.txt, and the course kernel registered inside the venv."""
    if not force and not needs_install(venv):
        return 0
    start = time.time()
    py = venv_python(venv)
    pip = [py, "-m", "pip", "install", "--quiet", "-c", "constraints.txt"]
    steps = [
        [sys.executable, "-m", "venv", venv],
        pip + (["--index-url", torch_index] if torch_index else []) + [f"torch=={TORCH_VERSION}"],
        pip + ["-e", ".[lab,test]"],
        [py, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL, "--display-name", KERNEL_DISPLAY_NAME],
    ]
    for cmd in steps:
        rc = run(cmd)
        if rc:
            print(f"install failed (exit status {rc}) at: {shlex.join(map(str, cmd))}", file=sys.stderr)
            return rc
    if not run.dry_run:
        (venv / STAMP).touch()
        print(f"install: done in {time.time() - start:.0f} s")
    return 0


def lab(venv: Path, run: Runner) -> int:
    is_root = hasattr(os, "getuid") and os.getuid() == 0  # Jupyter refuses root without --allow-root
    return run([venv_python(venv), "-m", "jupyterlab", "notebooks/"] + (["--allow-root"] if is_root else []))


def test(venv: Path, jobs: int, pytest_args: list[str], run: Runner) -> int:
    env = dict(os.environ)
    mirror = data_mirror_default()
    if mirror:
        env["COURSE_DATA_MIRROR"] = mirror
    xdist = ["-n", str(jobs), "--dist", "loadscope"] if jobs != 1 else []
    start = time.time()
    rc = run([venv_python(venv), "-m", "pytest", *xdist, *NBVAL_ARGS, "tests", "notebooks", *pytest_args], env=env)
    if not run.dry_run:
        print(f"test suite wall time: {time.time() - start:.0f} s")
    return rc


def doctor(venv: Path, run: Runner) -> int:
    """Examine the course's environment: ``venv``'s interpreter when it exists and this is another
    one (a learner typing ``python -m courseware doctor`` with the system Python), else this one."""
    py = venv_python(venv)
    if py.is_file() and Path(sys.prefix).resolve() != venv.resolve():
        return run([py, "-m", "courseware.setup.doctor"])
    from courseware.setup import doctor as doctor_module
    return doctor_module.main([])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    parser = argparse.ArgumentParser(prog="python -m courseware", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["install", "lab", "test", "doctor"])
    parser.add_argument("--venv", default=os.environ.get("VENV", ".venv"), help="the environment (default .venv)")
    parser.add_argument("--torch-index", default=os.environ.get("TORCH_INDEX") or None,
                        help="PyTorch's package index, e.g. https://download.pytorch.org/whl/cpu")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "2")),
                        help="notebooks run at a time by `test` (default 2)")
    parser.add_argument("--force", action="store_true", help="install again even if up to date")
    parser.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    args = parser.parse_args(argv)
    venv = Path(args.venv)
    venv = venv if venv.is_absolute() else ROOT / venv
    run = Runner(args.dry_run)
    if args.command == "doctor":
        return doctor(venv, run)
    rc = install(venv, args.torch_index, run, force=args.force or args.command == "install" and args.dry_run)
    if rc or args.command == "install":
        return rc
    if args.command == "lab":
        return lab(venv, run)
    return test(venv, args.jobs, extra, run)


if __name__ == "__main__":
    sys.exit(main())
