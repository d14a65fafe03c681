"""`make test-standalone`: each notebook alone, as a learner opens it on Colab or Kaggle.

A Colab-like environment (``.venv-colab/``, built once: the tested PyTorch wheel and what Colab
preinstalls, with Colab's NumPy, Matplotlib and ipywidgets 7.7.1; nothing of the course) is the base
of a fresh virtual environment per notebook (a ``.pth`` file puts the base's packages on its path, so
what the bootstrap installs lands in the fresh one and the base stays clean). The notebook is copied
alone into an empty folder with the bootstrap cell applied (courseware/authoring/bootstrap_cell.py), and run top to
bottom by nbval in that environment's kernel, with ``COURSE_REPO_URL`` pointing at this checkout
(``file://``: the clone takes the committed HEAD) and ``COURSE_DATA_MIRROR`` at the data mirror, as
in CI. Afterwards PyTorch must be the version it started with, loaded from the base.

Deselected by default (marker ``standalone``); ``COURSE_STANDALONE_NOTEBOOKS="04 06"`` runs a subset.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from notebook_utils import NOTEBOOKS, ROOT

sys.path.insert(0, str(ROOT))
from courseware.authoring import bootstrap_cell  # noqa: E402

pytestmark = pytest.mark.standalone

BASE = Path(os.environ.get("COURSE_COLAB_VENV", ROOT / ".venv-colab"))
# What a Colab runtime has preinstalled, at Colab's versions where they matter to the course (these
# are also the lower ends pyproject.toml states for numpy, matplotlib and ipywidgets).
COLAB = ["numpy==2.0.2", "matplotlib==3.10.0", "ipywidgets==7.7.1"]
FROM_CONSTRAINTS = ["torch", "ipykernel", "tqdm"]  # at the tested versions
KERNEL = "course-standalone"


def _pins() -> list[str]:
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    return [f"{name}=={pins[name]}" for name in FROM_CONSTRAINTS] + COLAB


def _selected():
    pick = os.environ.get("COURSE_STANDALONE_NOTEBOOKS", "").split()
    return [nb for nb in NOTEBOOKS if not pick or any(nb.name.startswith(p) or nb.name == p for p in pick)]


def _site(venv: Path) -> Path:
    out = subprocess.run([venv / "bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


@pytest.fixture(scope="session")
def colab_base() -> Path:
    """The Colab-like base environment, built (about 2 minutes, mostly unpacking torch) when missing
    or when its package list changed."""
    spec = "\n".join(_pins())
    stamp = BASE / ".colab-packages"
    if not (stamp.is_file() and stamp.read_text() == spec):
        shutil.rmtree(BASE, ignore_errors=True)
        start = time.time()
        subprocess.run([sys.executable, "-m", "venv", BASE], check=True)
        subprocess.run([BASE / "bin/python", "-m", "pip", "install", "--quiet", *_pins()], check=True)
        stamp.write_text(spec)
        print(f"\nColab-like base environment {BASE} built in {time.time() - start:.0f} s: {', '.join(_pins())}")
    return BASE


def _torch(python: Path) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([python, "-c", "import torch; print(torch.__version__); print(torch.__file__)"],
                         capture_output=True, text=True, check=True, env=env).stdout.split()
    return out[0], out[1]


@pytest.mark.parametrize("notebook", _selected(), ids=lambda p: p.name[:2])
def test_notebook_runs_alone_in_a_colab_like_environment(notebook: Path, colab_base: Path, tmp_path: Path):
    head = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                          capture_output=True, text=True).stdout
    if head.strip():
        print(f"\nnote: the clone takes the committed HEAD; uncommitted changes are not in it:\n{head}")

    # a fresh environment over the Colab-like base
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    (_site(venv) / "_colab_base.pth").write_text(f"{_site(colab_base)}\n")
    py = venv / "bin/python"
    torch_before = _torch(py)
    assert torch_before[1].startswith(str(colab_base)), torch_before

    # its kernel, known only to this run's Jupyter
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab-like", "language": "python"}))

    # the notebook alone in an empty folder, bootstrap applied
    work = tmp_path / "content"
    work.mkdir()
    copy = work / notebook.name
    shutil.copy(notebook, copy)
    bootstrap_cell.apply(copy, bootstrap_cell.snippet())      # the committed notebooks have it already
    assert bootstrap_cell.main(["--check", str(copy)]) == 0

    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COURSE_DATA_DIR", "COURSE_PRETRAINED_DIR", "COURSE_HOME")}
    env.update(JUPYTER_PATH=str(tmp_path / "jupyter"), COURSE_REPO_URL=ROOT.resolve().as_uri())
    mirror = os.environ.get("COURSE_DATA_MIRROR") or (str(ROOT.parent / "shared" / "data")
                                                      if (ROOT.parent / "shared" / "data" / "SOURCES.md").is_file() else None)
    if mirror:
        env["COURSE_DATA_MIRROR"] = mirror
    start = time.time()
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", work,
                          "--nbval-lax", "--nbval-kernel-name", KERNEL, "--nbval-cell-timeout", "900",
                          "--nbval-sanitize-with", ROOT / "tests" / "nbval_sanitize.cfg", copy],
                         cwd=work, env=env, capture_output=True, text=True)
    seconds = time.time() - start
    print(f"\n{notebook.name}: alone in a Colab-like environment, {seconds:.0f} s (clone and install included), "
          f"pytest exit {res.returncode}")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]

    # the bootstrap cloned and installed the course; PyTorch is untouched
    assert (work / "attention-course" / "utils" / "__init__.py").is_file()
    assert _torch(py) == torch_before, f"PyTorch changed: {torch_before} -> {_torch(py)}"
    installed = subprocess.run([py, "-c", "import utils, importlib.metadata as m; print(utils.__file__); "
                                "print(m.version('sacrebleu'), m.version('safetensors'))"],
                               capture_output=True, text=True, cwd=tmp_path, env=env)
    assert installed.returncode == 0 and str(work / "attention-course") in installed.stdout, installed
    assert not any(p.name.startswith(("sacrebleu", "safetensors")) for p in _site(colab_base).iterdir()), \
        "the bootstrap installed into the base environment"
