"""Smoke test of the full-data recipe script on a tiny slice of Multi30k (the real
recipes run for hours; this checks the plumbing: training, checkpoints, resume, scoring)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    spec = importlib.util.spec_from_file_location("train_translation", ROOT / "scripts" / "train_translation.py")
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
