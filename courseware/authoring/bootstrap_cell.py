"""Put the course bootstrap in its own cell before each notebook's first code cell (or update it there).

A notebook opened alone, on Colab or Kaggle, cannot ``import utils``. The bootstrap then clones the
course repository (shallow), installs it with ``pip install -e <clone> --no-deps`` plus only the
dependencies that are missing (never PyTorch when one is there: it is pinned to the version found,
and checked unchanged afterwards), puts the clone first on ``sys.path`` (so ``utils``, ``data/``,
``pretrained/`` and ``runs/`` resolve exactly as in the repository) and prints one line saying what
it did. Where ``utils`` imports (``make lab``, ``python -m courseware lab``, conda) it prints
nothing and does nothing, so committed outputs do not change.

The bootstrap is a cell of its own, the notebook's first code cell: its source collapsed
(``jupyter.source_hidden``; a learner sees one bar and can open it), skipped by the slides, tagged
``hide-input`` for the website. Inserting it into an executed notebook gives it execution count 1
and moves every later count up by one, which is what running the notebook again would give, since on
the course's own set-up it has no output.

The repository address is written into the snippet from ONE place, ``[project.urls] Repository`` in
pyproject.toml; ``$COURSE_REPO_URL`` overrides it when the cell runs (tests point it at a local
checkout, ``file:///path/to/repo``), ``$COURSE_HOME`` where the clone goes (default
``./attention-course``).

    python -m courseware bootstrap-cell notebooks/*.ipynb          # insert or update (idempotent)
    python -m courseware bootstrap-cell --check notebooks/*.ipynb  # exit 1 if one lacks the current snippet
    python -m courseware bootstrap-cell --print                    # the snippet itself
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "# >>> course bootstrap"   # how a bootstrap cell begins, this version or an earlier one
BEGIN = PREFIX + ": fetches the course when run alone (Colab, Kaggle) >>>"
END = "# <<< course bootstrap <<<"

TEMPLATE = '''\
def _course_bootstrap():
    try:
        import utils.data  # noqa: F401  the course's own set-up: nothing to do
        return
    except ImportError:
        pass
    import importlib, importlib.metadata as md, os, re, subprocess, sys, tempfile
__URL_LINES__    home = os.path.abspath(os.environ.get("COURSE_HOME") or "attention-course")

    def run(*cmd):
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(
                f"course bootstrap: `{' '.join(map(str, cmd))}` failed "
                f"(on Kaggle, turn Internet on in the notebook's settings):\\n"
                f"{r.stdout[-1500:]}{r.stderr[-1500:]}")

    def version(dist):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    torch_before = version("torch")
    cloned = not os.path.isdir(os.path.join(home, "utils"))
    if cloned:
        run("git", "clone", "--depth", "1", "--quiet", url, home)
    # pip may not replace the runtime's PyTorch
    pin = os.path.join(tempfile.mkdtemp(), "keep-torch.txt")
    with open(pin, "w") as f:
        f.write(f"torch=={torch_before}\\n" if torch_before else "")
    run(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", home)
    importlib.invalidate_caches()
    missing = [r for r in md.requires("attention-course") or []
               if "extra ==" not in r
               and version(re.match(r"[A-Za-z0-9._-]+", r).group()) is None]
    if missing:
        run(sys.executable, "-m", "pip", "install", "--quiet", "-c", pin, *missing)
    for name in [m for m in sys.modules if m == "utils" or m.startswith("utils.")]:
        # another package called utils, if the runtime had one
        del sys.modules[name]
    sys.path.insert(0, home)
    import utils.data  # noqa: F401, F811
    if torch_before and version("torch") != torch_before:
        raise RuntimeError(
            f"course bootstrap: PyTorch changed from {torch_before} "
            f"to {version('torch')}; restart the runtime")
    names = ", ".join(re.match(r"[A-Za-z0-9._-]+", r).group()
                      for r in missing) or "nothing else"
    print(f"course bootstrap: "
          f"{'cloned ' + url + ' into' if cloned else 'using the clone in'} "
          f"{home}, "
          f"installed it (pip -e, --no-deps) and {names}; PyTorch "
          + (f"{torch_before} kept" if torch_before
             else f"{version('torch')} installed"))


_course_bootstrap()
del _course_bootstrap
'''


def repo_url() -> str:
    """``[project.urls] Repository`` of pyproject.toml: the one place the address is set."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        from pip._vendor import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]


def snippet(url: str | None = None) -> str:
    """The bootstrap block, markers included, with the repository URL filled in."""
    url = url or repo_url()
    body = TEMPLATE.replace("__URL_LINES__", URL_LINES, 1).replace("__REPO_URL__", repr(url), 1)
    return f"{BEGIN}\n{body}{END}\n"


# The address line of the snippet, and what a copy that names no repository says instead (``without_repository``).
URL_LINES = '''\
    url = (os.environ.get("COURSE_REPO_URL")
           or __REPO_URL__)
'''
NO_URL_LINES = '''\
    url = os.environ.get("COURSE_REPO_URL")
    if not url:  # this copy names no repository to fetch the course from
        raise RuntimeError(
            "course bootstrap: the course's files are not here, and this copy of the notebook "
            "names no repository to fetch them from. Open it in a folder holding the course, "
            "or set COURSE_REPO_URL to the course's git address before running this cell: "
            "import os; os.environ['COURSE_REPO_URL'] = '<address>'")
'''


def without_repository(block: str, url: str | None = None) -> str:
    """A bootstrap block (``snippet(url)``) that names no repository, for a copy handed out by an edition built
    without one (the website's downloads, ``courseware/editions/build_site.py``): $COURSE_REPO_URL still names
    one; without it, where the course is not installed, the cell stops and says how to get the course's files,
    rather than cloning an address that leads nowhere."""
    line = URL_LINES.replace("__REPO_URL__", repr(url or repo_url()), 1)
    if block.count(line) != 1:
        raise ValueError("the bootstrap block has no repository address line to replace (an older snippet?)")
    return block.replace(line, NO_URL_LINES, 1)


CELL_METADATA = {"jupyter": {"source_hidden": True}, "slideshow": {"slide_type": "skip"},
                 "tags": ["course-bootstrap", "hide-input"]}


def is_bootstrap(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(PREFIX)


def first_code_cell(nb):
    """The notebook's first code cell after the bootstrap (the lesson's own first cell)."""
    return next((c for c in nb.cells if c.cell_type == "code" and not is_bootstrap(c)), None)


def with_bootstrap(nb, block: str) -> bool:
    """Insert or update the bootstrap cell in ``nb`` (in place); return whether anything changed."""
    import copy

    import nbformat

    cell = next((c for c in nb.cells if is_bootstrap(c)), None)
    if cell is not None:
        changed = cell.source != block.rstrip("\n") or any(cell.metadata.get(k) != v for k, v in CELL_METADATA.items())
        cell.source = block.rstrip("\n")
        cell.metadata.update(copy.deepcopy(CELL_METADATA))
        return changed
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), None)
    if first is None:
        raise SystemExit("no code cell to put the bootstrap before")
    executed = nb.cells[first].get("execution_count") is not None
    new = nbformat.v4.new_code_cell(block.rstrip("\n"), metadata=copy.deepcopy(CELL_METADATA))
    if executed:  # as if the notebook ran again: the bootstrap is [1], every later cell one more
        for c in nb.cells[first:]:
            if c.cell_type == "code" and c.get("execution_count") is not None:
                c.execution_count += 1
                for out in c.get("outputs", []):
                    if out.get("output_type") == "execute_result" and out.get("execution_count") is not None:
                        out["execution_count"] += 1
        new.execution_count = 1
    nb.cells.insert(first, new)
    return True


def apply(path: Path, block: str, check: bool = False) -> bool:
    """Insert or update the bootstrap in ``path``; return whether it was (or, with ``check``,
    would be) changed."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    changed = with_bootstrap(nb, block)
    if changed and not check:
        nbformat.write(nb, path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook is not up to date")
    parser.add_argument("--print", action="store_true", help="print the snippet")
    args = parser.parse_args(argv)
    block = snippet()
    if args.print:
        print(block, end="")
        return 0
    if not args.notebooks:
        parser.error("name the notebooks, e.g. notebooks/*.ipynb")
    stale = [p for p in args.notebooks if apply(p, block, check=args.check)]
    for p in stale:
        print(f"{p}: {'bootstrap missing or out of date' if args.check else 'bootstrap written'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
