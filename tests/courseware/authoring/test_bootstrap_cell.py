"""The bootstrap cell (courseware/authoring/bootstrap_cell.py): silent and inert on the course's own set-up, written
idempotently between its markers, its URL taken from pyproject.toml. The cloning path itself runs in
`make test-standalone` (tests/notebooks/test_standalone.py); here it runs once against a local clone URL that
does not exist, to check that it fails saying what failed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from notebook_utils import NOTEBOOKS, ROOT

sys.path.insert(0, str(ROOT))
from courseware.authoring import bootstrap_cell  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    from pip._vendor import tomli as tomllib


def test_url_comes_from_pyproject_and_is_set_once():
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    block = bootstrap_cell.snippet()
    assert block.count(url) == 1 and "COURSE_REPO_URL" in block
    assert block.startswith(bootstrap_cell.BEGIN + "\n") and block.endswith(bootstrap_cell.END + "\n")
    compile(block, "<bootstrap>", "exec")


def _run(code: str, env: dict, cwd, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_on_the_course_set_up_it_prints_nothing_and_does_nothing(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COURSE_REPO_URL": "file:///nonexistent/repo"}
    code = bootstrap_cell.snippet() + "assert '_course_bootstrap' not in dir()\nimport sys; assert 'utils.data' in sys.modules\n"
    res = _run(code, env, tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "" and res.stderr == ""
    assert list(tmp_path.iterdir()) == []  # no clone, nothing written


def test_without_the_course_it_clones_and_says_what_failed(tmp_path):
    """Where `utils` cannot be imported it tries to clone $COURSE_REPO_URL; a bad URL stops the cell
    with the command and git's message (nothing is installed)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["COURSE_REPO_URL"] = (tmp_path / "no-such-repo").as_uri()
    code = bootstrap_cell.snippet()
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    res = _run(code, env, tmp_path, "-S")  # -S: without site-packages, where the course is installed
    assert res.returncode != 0
    assert "course bootstrap: `git clone --depth 1 --quiet" in res.stderr and "no-such-repo" in res.stderr
    assert not (tmp_path / "attention-course").exists()


def test_apply_is_idempotent_updates_in_place_and_check_reports(tmp_path):
    src = NOTEBOOKS[3]  # 04
    copy = tmp_path / src.name
    shutil.copy(src, copy)
    before = nbformat.read(src, as_version=4)
    without = nbformat.from_dict({**before, "cells": [c for c in before.cells if not bootstrap_cell.is_bootstrap(c)]})
    for k, c in enumerate(c for c in without.cells if c.cell_type == "code"):
        c.execution_count = k + 1
        for out in c.outputs:
            if out.get("output_type") == "execute_result":
                out["execution_count"] = k + 1
    nbformat.write(without, copy)

    assert bootstrap_cell.main(["--check", str(copy)]) == 1
    assert bootstrap_cell.main([str(copy)]) == 0
    nb = nbformat.read(copy, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].source == bootstrap_cell.snippet().rstrip("\n") and code[0].outputs == []
    assert code[0].metadata["jupyter"]["source_hidden"] and code[0].metadata["slideshow"]["slide_type"] == "skip"
    # the counts read as one run of the notebook: 1, 2, 3, ... with the lesson's cells one later than before
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    old_code = [c for c in without.cells if c.cell_type == "code"]
    assert [c.source for c in code[1:]] == [c.source for c in old_code]
    assert bootstrap_cell.main(["--check", str(copy)]) == 0
    text = copy.read_text()
    assert bootstrap_cell.main([str(copy)]) == 0 and copy.read_text() == text  # a second run changes nothing

    # an older snippet (another URL) is replaced, not repeated
    nb.cells[nb.cells.index(code[0])].source = bootstrap_cell.snippet("https://example.org/old.git")
    nbformat.write(nb, copy)
    assert bootstrap_cell.main(["--check", str(copy)]) == 1
    bootstrap_cell.main([str(copy)])
    assert copy.read_text() == text


def test_every_committed_notebook_has_the_current_bootstrap_first():
    """Each notebook's first code cell is the bootstrap (courseware/authoring/bootstrap_cell.py notebooks/*.ipynb writes it)."""
    for p in NOTEBOOKS:
        assert bootstrap_cell.main(["--check", str(p)]) == 0, p.name
        nb = nbformat.read(p, as_version=4)
        assert bootstrap_cell.is_bootstrap(next(c for c in nb.cells if c.cell_type == "code")), p.name


def test_the_repository_address_is_the_same_everywhere_it_is_set():
    """The bootstrap (pyproject.toml's [project.urls] Repository), the website (site/_config.yml) and the
    citation (CITATION.cff) name one repository; change all three together when it is published."""
    import re

    root = ROOT
    site = re.search(r"(?m)^repository:\n  url: (\S+)", (root / "site" / "_config.yml").read_text()).group(1)
    cff = re.search(r"(?m)^repository-code: \"?([^\"\s]+)", (root / "CITATION.cff").read_text()).group(1)
    assert bootstrap_cell.repo_url() == site == cff, (bootstrap_cell.repo_url(), site, cff)


def test_a_copy_that_names_no_repository_says_how_to_get_the_course_and_clones_nothing(tmp_path):
    """The website's downloads built with no repository named (courseware/editions/build_site.py): where the course
    is not installed and $COURSE_REPO_URL is unset the cell stops, naming no address; with $COURSE_REPO_URL it
    clones that, as the committed cell does."""
    block = bootstrap_cell.without_repository(bootstrap_cell.snippet())
    assert bootstrap_cell.repo_url() not in block and "https://" not in block and "COURSE_REPO_URL" in block
    compile(block, "<bootstrap>", "exec")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COURSE_REPO_URL")}
    res = _run(block, env, tmp_path, "-S")
    assert res.returncode != 0
    assert "this copy of the notebook names no repository" in res.stderr and "COURSE_REPO_URL" in res.stderr
    assert list(tmp_path.iterdir()) == []   # nothing cloned, nothing written
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env["COURSE_REPO_URL"] = (tmp_path / "no-such-repo").as_uri()
    res = _run(block, env, tmp_path, "-S")
    assert "course bootstrap: `git clone --depth 1 --quiet" in res.stderr and "no-such-repo" in res.stderr
    on_course = _run(block + "import sys; assert 'utils.data' in sys.modules\n",
                     {**os.environ, "PYTHONPATH": str(ROOT)}, tmp_path)
    assert on_course.returncode == 0 and on_course.stdout == on_course.stderr == "", on_course.stderr


def test_without_repository_refuses_a_block_without_the_address_line():
    with pytest.raises(ValueError, match="no repository address line"):
        bootstrap_cell.without_repository(bootstrap_cell.snippet("https://example.org/other"))
