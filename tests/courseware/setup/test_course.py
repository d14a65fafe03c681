"""`python -m courseware` does what the Makefile does, for learners without make."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

from notebook_utils import ROOT
from courseware.setup import install as course


def _make_var(name: str) -> str:
    return re.search(rf"^{name} :?= ?(.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).strip()


def test_same_settings_as_the_makefile():
    assert course.KERNEL == _make_var("KERNEL")
    assert course.TORCH_VERSION == _make_var("TORCH_VERSION")
    assert course.NBVAL_ARGS == shlex.split(_make_var("NBVAL_ARGS"))
    make = (ROOT / "Makefile").read_text()
    assert f'--display-name "{course.KERNEL_DISPLAY_NAME}"' in make
    assert "-c constraints.txt -e '.[lab,test]'" in make
    assert "$(STAMP): pyproject.toml constraints.txt" in make and f"STAMP := $(VENV)/{course.STAMP}" in make


def _dry(*args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TORCH_INDEX", None)
    res = subprocess.run([sys.executable, "-m", "courseware.setup.install", args[0], "--dry-run", *args[1:]], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return [line[2:] for line in res.stdout.splitlines() if line.startswith("+ ")]


def test_install_lab_and_test_commands(tmp_path):
    venv = tmp_path / "v"
    cmds = _dry("install", "--venv", str(venv), "--torch-index", "https://download.pytorch.org/whl/cpu")
    py = str(course.venv_python(venv))
    assert cmds[0].endswith(f"-m venv {venv}")
    assert cmds[1] == f"{py} -m pip install --quiet -c constraints.txt --index-url https://download.pytorch.org/whl/cpu torch==2.13.0"
    assert cmds[2] == f"{py} -m pip install --quiet -c constraints.txt -e '.[lab,test]'"
    assert cmds[3].startswith(f"{py} -m ipykernel install --sys-prefix --name attention-course")
    lab = _dry("lab", "--venv", str(venv))
    assert lab[-1].startswith(f"{py} -m jupyterlab notebooks/")
    test = _dry("test", "--venv", str(venv), "--jobs", "1", "--", "-k", "attention")
    assert test[-1] == f"{py} -m pytest " + _make_var("NBVAL_ARGS") + " tests notebooks -k attention"
    test2 = _dry("test", "--venv", str(venv))
    assert " -n 2 --dist loadscope " in test2[-1]


def test_an_up_to_date_install_is_not_redone(tmp_path):
    venv = tmp_path / "v"
    py = course.venv_python(venv)
    py.parent.mkdir(parents=True)
    py.write_text("")
    (venv / course.STAMP).touch()
    assert not course.needs_install(venv)
    assert _dry("lab", "--venv", str(venv))[0].startswith(f"{py} -m jupyterlab")  # straight to the lab
    os.utime(venv / course.STAMP, (0, 0))  # older than pyproject.toml
    assert course.needs_install(venv)


def test_course_module_imports_only_the_standard_library():
    """It must run with a bare Python, before anything is installed."""
    code = ("import sys; import courseware.setup.install; "
            "bad = [m for m in ('torch', 'numpy', 'matplotlib', 'jupyter_client') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
