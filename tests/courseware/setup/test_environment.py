"""The set-up files agree with each other: pyproject.toml, environment.yml, the Makefile."""

from __future__ import annotations

import re

from notebook_utils import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    from pip._vendor import tomli as tomllib


def _pyproject_requirements() -> set[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = set(meta["dependencies"])
    for name, extra in meta.get("optional-dependencies", {}).items():
        if name not in ("site", "hub"):  # the website's own environment (.venv-site); the class hub's additions
            # (JupyterHub, nbgitpuller: `make hub-env`), not a learner's
            reqs |= set(extra)
    return {r.replace(" ", "") for r in reqs}


def _environment_pip_requirements() -> set[str]:
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "- pip:")
    indent = len(lines[start + 1]) - len(lines[start + 1].lstrip())
    reqs = set()
    for line in lines[start + 1:]:
        if not line.strip() or len(line) - len(line.lstrip()) < indent:
            break
        reqs.add(line.strip()[2:].replace(" ", ""))
    reqs.discard("-e.")
    return reqs


def test_environment_yml_matches_pyproject():
    py, env = _pyproject_requirements(), _environment_pip_requirements()
    assert py == env, f"only in pyproject.toml: {sorted(py - env)}; only in environment.yml: {sorted(env - py)}"


def test_torch_is_pinned_where_it_is_installed_and_a_range_in_the_package():
    """The package states a range (it must install beside any recent PyTorch); the set-up
    (Makefile, constraints.txt, courseware.setup.install) installs the tested version."""
    pin = "torch==2.13.0"
    # the range's lower end is older: `make test-oldest-torch` ran the whole suite at 2.6.0 and 2.9.1 (SETUP.md)
    assert "torch>=2.6.0" in _pyproject_requirements()
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^TORCH_VERSION := 2\.13\.0$", make, re.M)
    assert re.search(r"^torch==2\.13\.0$", (ROOT / "constraints.txt").read_text(), re.M)
    assert pin in (ROOT / "README.md").read_text()


def test_package_states_ranges_and_constraints_pin_within_them():
    """No `==` in the package's own dependencies (extras may pin tools); every dependency is
    pinned in constraints.txt at a version inside its range."""
    from pip._vendor.packaging.requirements import Requirement

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    reqs = [Requirement(r) for r in meta["dependencies"]]
    reqs += [Requirement(r) for extra in ("lab", "test", "hub") for r in meta["optional-dependencies"][extra]]
    for req in reqs:
        if req in meta["dependencies"]:
            assert "==" not in str(req.specifier), f"{req}: the package states ranges"
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"{req.name} is not pinned in constraints.txt (run `make constraints`)"
        assert req.specifier.contains(pins[name], prereleases=True), f"constraints.txt pins {name}=={pins[name]} outside {req}"


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"^make test$", ci, re.M)
    assert "make test" in readme and "make lab" in readme


def test_test_modules_have_unique_names():
    """pytest imports test modules by basename (rootdir-relative, no packages): two files of the
    same name in two folders of tests/ break collection of the whole suite."""
    from collections import Counter
    from pathlib import Path

    names = Counter(p.name for p in Path(__file__).resolve().parents[3].joinpath("tests").rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []
