"""`make doctor` (courseware.setup.doctor): a healthy set-up reports no problem; each broken one is named with its fix.

The machine's own state (which kernels are registered, what the data cache holds) is replaced by a
controlled one: a fake kernel list, a tiny data catalogue in a temporary cache and mirror, and a
temporary copy of the shipped models."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from notebook_utils import ROOT
from courseware.setup import doctor
from utils import data
from utils.data import DataFile
from utils.pretrained import MANIFEST, pretrained_dir


@pytest.fixture
def healthy(tmp_path, monkeypatch):
    """Every check passes: kernel registered, two data files (one cached, one in the mirror), the
    shipped models copied as they are, no device or thread override, not on Colab or Kaggle."""
    kernel = tmp_path / "kernels" / "attention-course"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text('{"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]}')
    monkeypatch.setattr(doctor, "_kernel_specs", lambda: {"attention-course": str(kernel)})

    files = {}
    for rel, body in (("toy/a.txt", b"alpha\n"), ("toy/b.txt", b"beta\n")):
        files[rel] = DataFile(rel, f"https://example.invalid/{rel}", hashlib.sha256(body).hexdigest())
    cache, mirror = tmp_path / "cache", tmp_path / "mirror"
    (cache / "toy").mkdir(parents=True)
    (mirror / "toy").mkdir(parents=True)
    (cache / "toy/a.txt").write_bytes(b"alpha\n")
    (mirror / "toy/a.txt").write_bytes(b"alpha\n")
    (mirror / "toy/b.txt").write_bytes(b"beta\n")
    monkeypatch.setattr(data, "DATA_FILES", files)
    monkeypatch.setenv("COURSE_DATA_DIR", str(cache))
    monkeypatch.setenv("COURSE_DATA_MIRROR", str(mirror))

    models = tmp_path / "pretrained"
    shutil.copytree(pretrained_dir(), models)
    monkeypatch.setenv("COURSE_PRETRAINED_DIR", str(models))
    for var in ("COURSE_DEVICE", "COURSE_THREADS", "COLAB_RELEASE_TAG", "KAGGLE_KERNEL_RUN_TYPE"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def run_doctor():
    lines = []
    problems = doctor.report(out=lines.append)
    return problems, "\n".join(lines)


def test_healthy_setup_reports_no_problem(healthy):
    problems, text = run_doctor()
    assert problems == [], text
    assert text.endswith("no problems found")
    for label in ("OS", "Python", "PyTorch", "device", "JupyterLab", "widgets", "kernel", "data", "models"):
        assert f"  {label} " in text, f"no {label} line in:\n{text}"
    assert "CPU thread(s)" in text and "attention-course registered" in text
    assert "6 files pass" in text  # 3 models x (weights + config)


def test_corrupted_shipped_model_is_named_with_its_fix(healthy):
    weights = healthy / "pretrained" / "transformer.safetensors"
    blob = bytearray(weights.read_bytes())
    blob[1000] ^= 0xFF
    weights.write_bytes(bytes(blob))
    problems, text = run_doctor()
    assert len(problems) == 1, text
    assert "transformer.safetensors is corrupted" in problems[0].what
    assert "git checkout -- pretrained" in problems[0].fix


def test_missing_shipped_model_file_and_manifest(healthy):
    (healthy / "pretrained" / "seq2seq.json").unlink()
    problems, _ = run_doctor()
    assert [p for p in problems if "seq2seq.json is missing" in p.what]
    (healthy / "pretrained" / MANIFEST).unlink()
    problems, _ = run_doctor()
    assert [p for p in problems if "no MANIFEST.json" in p.what]


def test_missing_data_file_is_named_with_its_fix(healthy):
    (healthy / "mirror/toy/b.txt").unlink()
    problems, text = run_doctor()
    assert len(problems) == 1, text
    assert "toy/b.txt is not in the cache and the mirror's copy is missing" in problems[0].what
    assert "unset COURSE_DATA_MIRROR" in problems[0].fix


def test_corrupt_cached_data_file_is_named(healthy):
    (healthy / "cache/toy/a.txt").write_bytes(b"alphA\n")
    problems, text = run_doctor()
    assert len(problems) == 1 and "toy/a.txt is corrupt" in problems[0].what, text
    assert "delete it" in problems[0].fix


def test_not_downloaded_yet_is_not_a_problem_without_a_mirror(healthy, monkeypatch):
    monkeypatch.delenv("COURSE_DATA_MIRROR")
    problems, text = run_doctor()
    assert problems == [] and "1 not downloaded yet" in text, text


def test_kernel_not_registered_is_named_with_its_fix(healthy, monkeypatch):
    monkeypatch.setattr(doctor, "_kernel_specs", lambda: {"python3": "/somewhere"})
    problems, text = run_doctor()
    assert len(problems) == 1, text
    assert "'attention-course' is not registered" in problems[0].what
    assert "make install" in problems[0].fix and "ipykernel install --user --name attention-course" in problems[0].fix


def test_kernel_of_a_deleted_environment(healthy):
    spec = healthy / "kernels" / "attention-course" / "kernel.json"
    spec.write_text('{"argv": ["/nowhere/.venv/bin/python", "-m", "ipykernel_launcher"]}')
    problems, _ = run_doctor()
    assert len(problems) == 1 and "no longer exists" in problems[0].what


def test_bad_device_and_thread_overrides(healthy, monkeypatch):
    monkeypatch.setenv("COURSE_THREADS", "two")
    problems, _ = run_doctor()
    assert len(problems) == 1 and "COURSE_THREADS" in problems[0].fix
    monkeypatch.delenv("COURSE_THREADS")
    import torch

    if not torch.cuda.is_available():
        monkeypatch.setenv("COURSE_DEVICE", "cuda")
        problems, _ = run_doctor()
        assert len(problems) == 1 and "COURSE_DEVICE" in problems[0].fix


def test_several_problems_at_once_and_exit_status(healthy, monkeypatch):
    (healthy / "pretrained" / "attention.json").write_text("{}")
    (healthy / "mirror/toy/b.txt").unlink()
    monkeypatch.setattr(doctor, "_kernel_specs", lambda: {})
    problems, text = run_doctor()
    assert len(problems) == 3, text
    assert "3 problems:" in text and text.count("fix: ") == 3
    assert doctor.main([]) == 1


def test_on_colab_the_lab_and_kernel_are_not_asked_for(healthy, monkeypatch):
    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab-test")
    monkeypatch.setattr(doctor, "_kernel_specs", lambda: {})
    problems, text = run_doctor()
    assert problems == [], text
    assert "not needed on Colab" in text


def test_make_doctor_and_python_m_run_the_same_command():
    make = (ROOT / "Makefile").read_text()
    assert "-m courseware doctor" in make
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the command itself runs and prints its report (the exit status depends on this machine)
    res = subprocess.run([sys.executable, "-m", "courseware.setup.install", "doctor"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.stdout.startswith("attention-course doctor"), res.stdout + res.stderr
    assert res.returncode in (0, 1)
