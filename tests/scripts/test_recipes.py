"""Smoke test of the full-data recipe script on a tiny slice of Multi30k (the real
recipes run for hours; this checks the plumbing: training, checkpoints, resume, scoring)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("train_translation", ROOT / "scripts" / "recipes" / "train_translation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("model", ["transformer", "attention"])
def test_recipe_trains_resumes_and_scores(model, tmp_path):
    script = load_script()
    args = ["--model", model, "--train-subset", "300", "--max-eval-len", "6", "--batch", "32", "--beam", "2",
            "--out", str(tmp_path), "--threads", "1"]
    first = script.main(args + ["--epochs", "1"])
    assert first["epochs_run"] == 1 and (tmp_path / "last.pt").exists() and (tmp_path / "best.pt").exists()
    resumed = script.main(args + ["--epochs", "2", "--resume"])
    assert resumed["epochs_run"] == 2 and resumed["steps"] == 2 * first["steps"]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert set(saved["test"]) == {"greedy", "beam2"}
    assert 0 <= saved["test"]["greedy"]["tokenized_bleu"] <= 100
    assert (tmp_path / "loss.png").exists() and (tmp_path / "bleu_by_length.png").exists()


def test_resume_without_a_run_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="without --resume"):
        load_script().main(["--model", "seq2seq", "--out", str(tmp_path), "--resume", "--train-subset", "50"])


def test_recipe_runs_under_torchrun_with_two_processes(tmp_path):
    """2 gloo processes on the CPU, each with half of the batches (`--batch` per process)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "COURSE_DEVICE": "cpu"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", str(ROOT / "scripts" / "recipes" / "train_translation.py"),
           "--model", "transformer", "--train-subset", "300", "--max-eval-len", "6", "--batch", "16", "--beam", "0",
           "--epochs", "1", "--out", str(tmp_path), "--threads", "1"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["processes"] == 2 and saved["batch_per_process"] == 16
    # 300 pairs in batches of 16 = 19 batches; each rank takes every other one, the odd one out is dropped
    assert saved["steps"] == 9
    assert "x 2 processes" in res.stdout and res.stdout.count("epoch 1:") == 1  # rank 0 prints


def load_recipe(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "recipes" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_attention_seeds_records_what_notebook_03_reads(tmp_path):
    """Notebook 03's appendix runs, on a few steps: both arms, every score, the curves' checkpoints."""
    script = load_recipe("attention_seeds")
    out = tmp_path / "results.json"
    script.main(["--seeds", "0", "--curve-seeds", "0", "--steps", "2", "--toy-epochs", "1", "--rounds", "2",
                 "--out", str(out)])
    saved = json.loads(out.read_text())
    assert saved["recipe"] == {**script.RECIPE, "steps": 2}
    assert [(r["arm"], r["seed"], r["steps"]) for r in saved["translation"]] == [
        ("no attention", 0, 2), ("additive attention", 0, 2)]
    assert all(0 <= r["tokenized_bleu"] <= 100 and r["bleu_by_length"] for r in saved["translation"])
    assert [r["score"] for r in saved["toy"]["scores"]] == ["no attention", "cosine", "additive", "dot", "scaled_dot"]
    assert [[p[0] for p in c["curve"]] for c in saved["toy"]["curves"]] == [[1, 2], [1, 2]]
    # a curve's first checkpoint is the score run of the same seed (the same code, from the same seed)
    first = {c["score"]: c["curve"][0][1] for c in saved["toy"]["curves"]}
    assert all(first[r["score"]] == r["exact"] for r in saved["toy"]["scores"] if r["score"] in first)


def test_notebook_03_loads_the_run_of_its_own_recipe():
    """The committed run holds the recipe of notebook 03's CFG (FULL = False); with another CFG the notebook
    would train its other seeds live, minutes more."""
    import ast

    import nbformat

    committed = json.loads((ROOT / "runs" / "attention_seeds" / "results.json").read_text())
    nb = nbformat.read(ROOT / "notebooks" / "03_additive_attention.ipynb", as_version=4)
    cell = next(c.source for c in nb.cells if c.cell_type == "code" and "FULL = False" in c.source)
    branch = next(n for n in ast.walk(ast.parse(cell)) if isinstance(n, ast.If)).orelse[0]
    cfg = {k.arg: ast.literal_eval(k.value) for k in branch.value.keywords}
    assert committed["recipe"] == cfg == load_recipe("attention_seeds").RECIPE
    assert {r["seed"] for r in committed["translation"]} == {0, 1, 2}
