"""`make test-beside`: the package installs beside the PyTorch an environment already has, and leaves it alone.

``COURSE_BESIDE_VENV`` names a virtual environment holding some PyTorch and nothing of the course
(``make test-beside`` builds ``.venv-beside-<version>/`` with ``BESIDE_TORCH``, default 2.14.1, a
version other than constraints.txt's). Each test makes a fresh environment over it (a ``.pth`` file
puts its packages on the path, as tests/notebooks/test_standalone.py does, so the base stays clean), installs
this checkout there, one way each:

- as the notebooks' bootstrap cell does (courseware/authoring/bootstrap_cell.py): ``pip install --no-deps -e``, then
  only the missing requirements, with a constraint file holding PyTorch at the version found;
- plainly, ``pip install <checkout>``, dependencies resolved by pip, no constraints;

and checks that PyTorch is afterwards the same version, loaded from the same place, and that ``utils``
imports. Deselected by default (marker ``beside``); skipped without ``COURSE_BESIDE_VENV``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from notebook_utils import ROOT

pytestmark = pytest.mark.beside

BASE = os.environ.get("COURSE_BESIDE_VENV")


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_CONSTRAINT")}


def _site(python: Path) -> Path:
    out = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, env=_env())
    return Path(out.stdout.strip())


def _torch(python: Path) -> tuple[str, str]:
    out = subprocess.run([python, "-c", "import torch; print(torch.__version__); print(torch.__file__)"],
                         capture_output=True, text=True, check=True, env=_env(), cwd="/").stdout.split()
    return out[0], out[1]


@pytest.fixture
def fresh(tmp_path: Path) -> tuple[Path, tuple[str, str]]:
    """A fresh environment (with pip) over the base; its python and the base's PyTorch (version, file)."""
    if not BASE:
        pytest.skip("COURSE_BESIDE_VENV is not set (make test-beside sets it)")
    base_python = Path(BASE) / "bin" / "python"
    assert base_python.is_file(), f"COURSE_BESIDE_VENV={BASE} has no bin/python"
    before = _torch(base_python)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = venv / "bin" / "python"
    (_site(py) / "_beside_base.pth").write_text(f"{_site(base_python)}\n")
    assert _torch(py) == before, "the fresh environment does not see the base's PyTorch"
    print(f"\nbase {BASE}: torch {before[0]}")
    return py, before


def _pip(py: Path, *args) -> float:
    start = time.time()
    res = subprocess.run([py, "-m", "pip", "install", "--quiet", *map(str, args)],
                         capture_output=True, text=True, env=_env(), cwd="/")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return time.time() - start


def _check(py: Path, before: tuple[str, str], where: Path):
    after = _torch(py)
    assert after == before, f"PyTorch changed: {before} -> {after}"
    res = subprocess.run([py, "-c", "import utils, utils.attention, importlib.metadata as m; print(utils.__file__); "
                          "print(m.version('attention-course'), m.version('numpy'), m.version('sacrebleu'))"],
                         capture_output=True, text=True, env=_env(), cwd="/")
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split()[0].startswith(str(where)), res.stdout
    print(f"torch {after[0]} kept; utils from {res.stdout.split()[0]}; course, numpy, sacrebleu: "
          f"{' '.join(res.stdout.split()[1:])}")


def test_bootstrap_way_keeps_pytorch(fresh, tmp_path: Path):
    py, before = fresh
    pin = tmp_path / "keep-torch.txt"
    pin.write_text(f"torch=={before[0]}\n")
    seconds = _pip(py, "--no-deps", "-e", ROOT)
    requires = subprocess.run([py, "-c", "import importlib.metadata as m; print('\\n'.join(m.requires('attention-course')))"],
                              capture_output=True, text=True, check=True, env=_env(), cwd="/").stdout.splitlines()
    names = [re.match(r"[A-Za-z0-9._-]+", r).group() for r in requires if "extra ==" not in r]
    have = subprocess.run([py, "-c", "import sys, importlib.metadata as m\nfor n in sys.argv[1:]:\n"
                           "    try: m.version(n)\n    except m.PackageNotFoundError: print(n)", *names],
                          capture_output=True, text=True, check=True, env=_env(), cwd="/").stdout.split()
    missing = [r for r in requires if "extra ==" not in r and re.match(r"[A-Za-z0-9._-]+", r).group() in have]
    assert not any(r.startswith("torch") for r in missing)
    if missing:
        seconds += _pip(py, "-c", pin, *missing)
    print(f"bootstrap way (pip -e --no-deps, then {len(missing)} missing requirements): {seconds:.0f} s")
    _check(py, before, ROOT)


def test_plain_install_with_dependencies_keeps_pytorch(fresh):
    py, before = fresh
    seconds = _pip(py, ROOT)
    print(f"pip install {ROOT} (dependencies resolved by pip): {seconds:.0f} s")
    _check(py, before, _site(py))
