"""Put the course bootstrap at the top of each notebook's first code cell (or update it there).

A notebook opened alone, on Colab or Kaggle, cannot ``import utils``. The bootstrap then clones the
course repository (shallow), installs it with ``pip install -e <clone> --no-deps`` plus only the
dependencies that are missing (never PyTorch when one is there: it is pinned to the version found,
and checked unchanged afterwards), puts the clone first on ``sys.path`` (so ``utils``, ``data/``,
``pretrained/`` and ``runs/`` resolve exactly as in the repository) and prints one line saying what
it did. Where ``utils`` imports (``make lab``, ``python -m utils.course lab``, conda) it prints
nothing and does nothing, so committed outputs do not change.

The repository address is written into the snippet from ONE place, ``[project.urls] Repository`` in
pyproject.toml; ``$COURSE_REPO_URL`` overrides it when the cell runs (tests point it at a local
checkout, ``file:///path/to/repo``), ``$COURSE_HOME`` where the clone goes (default
``./attention-course``).

    python scripts/bootstrap_cell.py notebooks/*.ipynb          # insert or update (idempotent)
    python scripts/bootstrap_cell.py --check notebooks/*.ipynb  # exit 1 if one lacks the current snippet
    python scripts/bootstrap_cell.py --print                    # the snippet itself
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "# >>> course bootstrap: fetches the course when this notebook runs alone (Colab, Kaggle) >>>"
END = "# <<< course bootstrap (scripts/bootstrap_cell.py) <<<"

TEMPLATE = '''\
def _course_bootstrap():
    try:
        import utils.data  # noqa: F401  the course's own set-up: nothing to do
        return
    except ImportError:
        pass
    import importlib, importlib.metadata as md, os, re, subprocess, sys, tempfile
    url = os.environ.get("COURSE_REPO_URL") or __REPO_URL__
    home = os.path.abspath(os.environ.get("COURSE_HOME") or "attention-course")

    def run(*cmd):
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"course bootstrap: `{' '.join(map(str, cmd))}` failed (on Kaggle, turn "
                               f"Internet on in the notebook's settings):\\n{r.stdout[-1500:]}{r.stderr[-1500:]}")

    def version(dist):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    torch_before = version("torch")
    cloned = not os.path.isdir(os.path.join(home, "utils"))
    if cloned:
        run("git", "clone", "--depth", "1", "--quiet", url, home)
    pin = os.path.join(tempfile.mkdtemp(), "keep-torch.txt")  # pip may not replace the runtime's PyTorch
    with open(pin, "w") as f:
        f.write(f"torch=={torch_before}\\n" if torch_before else "")
    run(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", home)
    importlib.invalidate_caches()
    missing = [r for r in md.requires("attention-course") or [] if "extra ==" not in r
               and version(re.match(r"[A-Za-z0-9._-]+", r).group()) is None]
    if missing:
        run(sys.executable, "-m", "pip", "install", "--quiet", "-c", pin, *missing)
    for name in [m for m in sys.modules if m == "utils" or m.startswith("utils.")]:
        del sys.modules[name]  # another package called utils, if the runtime had one
    sys.path.insert(0, home)
    import utils.data  # noqa: F401, F811
    if torch_before and version("torch") != torch_before:
        raise RuntimeError(f"course bootstrap: PyTorch changed from {torch_before} to {version('torch')}; "
                           f"restart the runtime")
    names = ", ".join(re.match(r"[A-Za-z0-9._-]+", r).group() for r in missing) or "nothing else"
    print(f"course bootstrap: {'cloned ' + url + ' into' if cloned else 'using the clone in'} {home}, "
          f"installed it (pip -e, --no-deps) and {names}; PyTorch "
          + (f"{torch_before} kept" if torch_before else f"{version('torch')} installed"))


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
    body = TEMPLATE.replace("__REPO_URL__", repr(url), 1)
    return f"{BEGIN}\n{body}{END}\n"


def with_snippet(source: str, block: str) -> str:
    """``source`` with ``block`` at its top: an earlier bootstrap block is replaced, not repeated."""
    if BEGIN in source and END in source:
        before, rest = source.split(BEGIN, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        source = before + after
    return block + source


def first_code_cell(nb):
    return next((c for c in nb.cells if c.cell_type == "code"), None)


def apply(path: Path, block: str, check: bool = False) -> bool:
    """Insert or update the bootstrap in ``path``; return whether it was (or, with ``check``,
    would be) changed."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    cell = first_code_cell(nb)
    if cell is None:
        raise SystemExit(f"{path}: no code cell to put the bootstrap in")
    new = with_snippet(cell.source, block)
    if new == cell.source:
        return False
    if not check:
        cell.source = new
        nbformat.write(nb, path)
    return True


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
