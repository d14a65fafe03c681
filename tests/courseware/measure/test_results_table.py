"""courseware/measure/results_table.py: the README's results table is generated from the runs' results.json,
and the table committed in the README and RESULTS.md is the one the committed results give."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from courseware.measure import results_table  # noqa: E402

from utils.translation import load_run_results  # noqa: E402


def fake_results(greedy: float, beam: float | None) -> dict:
    test = {"greedy": {"tokenized_bleu": greedy, "sacrebleu": greedy - 1.5}}
    if beam is not None:
        test["beam4"] = {"tokenized_bleu": beam, "sacrebleu": beam - 1.0}
    by_length = [{"lo": 1, "hi": 9, "n": 10, "bleu": greedy + 2, "mean_len": 7.0},
                 {"lo": 9, "hi": 1000, "n": 5, "bleu": greedy - 4, "mean_len": 14.0}]
    return dict(parameters=7_481_344, epochs_run=15, train_seconds=5966.2, epoch_seconds=[397.7] * 15,
                hardware="CPU: test", test=test, bleu_by_length=by_length)


def test_table_and_figure_from_runs(tmp_path, capsys):
    for name, (g, b) in {"transformer": (37.718, 38.91), "seq2seq": (14.2, None)}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(fake_results(g, b)))
    table = results_table.main(["--runs", str(tmp_path)])
    rows = table.splitlines()
    assert len(rows) == 4 and all(r.count("|") == rows[0].count("|") for r in rows)
    assert "encoder–decoder" in rows[2] and "Transformer" in rows[3]  # course order, not folder order
    assert "| 37.72 / 36.22 | 38.91 / 37.91 (k = 4) | 36.5 | 1 h 39 min |" in rows[3]
    assert "| 14.20 / 12.70 | — |" in rows[2] and "7.5M" in rows[2]
    assert (tmp_path / "bleu_by_length.png").stat().st_size > 0
    assert table in capsys.readouterr().out


def test_no_runs_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="train_translation.py"):
        results_table.main(["--runs", str(tmp_path)])


def test_readme_table_is_the_committed_results():
    runs = ROOT / "runs"
    if not any((runs / name / "results.json").exists() for name in results_table.MODELS):
        pytest.skip("no committed full-data results")
    for page in ("README.md", "RESULTS.md"):
        text = (ROOT / page).read_text()
        for row in results_table.markdown_table(results_table.load_results(runs)).splitlines()[2:]:
            assert row in text, f"{page}'s results table is stale; rerun courseware/measure/results_table.py:\n{row}"


def test_committed_runs_are_the_recipes_readme_commands_run():
    """`python scripts/recipes/train_translation.py --model M` (the README's command) reproduces the committed run:
    the same recipe, on the whole training split, scored on the whole test set."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_translation", ROOT / "scripts" / "recipes" / "train_translation.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    runs = ROOT / "runs"
    committed = [name for name in results_table.MODELS if (runs / name / "results.json").exists()]
    if not committed:
        pytest.skip("no committed full-data results")
    for name in committed:
        r = load_run_results(name, runs)
        assert r["recipe"] == script.RECIPES[name], f"{name}: RECIPES differs from the committed run's recipe"
        assert r["epochs_run"] == r["recipe"]["epochs"] == len(r["epoch_seconds"])
        assert r["data"]["train_subset"] is None and r["data"]["max_train_len"] is None
        assert r["data"]["max_eval_len"] is None and sum(b["n"] for b in r["bleu_by_length"]) == 1000


def test_load_run_results_says_what_to_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="train_translation.py --model attention"):
        load_run_results("attention", tmp_path)
    (tmp_path / "seq2seq").mkdir()
    (tmp_path / "seq2seq" / "results.json").write_text(json.dumps({"test": {}}))
    with pytest.raises(ValueError, match="bleu_by_length"):
        load_run_results("seq2seq", tmp_path)
