"""scripts/benchmarks/bench_fast_gpt.py (issue 42): the recorded runs are the arms the script defines, the
training loop is notebook 09's, and the notebook trains with the recipe the benchmark chose."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from scripts.benchmarks import bench_fast_gpt as bench  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "09_gpt_language_model.ipynb"


def cells() -> list[str]:
    return ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", [bench.OUT, bench.LEVERS_OUT], ids=["results", "levers"])
def test_every_recorded_arm_is_defined_with_the_config_it_ran(path):
    rows = bench.recorded(path)
    assert rows, f"no runs in {path}"
    for r in rows:
        assert bench.ARMS.get(r["arm"]) == r["config"], f"{r['arm']}: its recorded config is not ARMS' entry"


def test_the_baseline_arm_is_the_recipe_before_issue_42():
    assert bench.ARMS["course9"] == bench.COURSE9
    assert bench.levers(bench.ARMS["course9"]) == "notebook 09 before issue 42"
    assert bench.levers(bench.ARMS["lr1e2"]) == "peak lr 0.01"
    with pytest.raises(KeyError, match="not a lever"):
        bench.arm(learning_rate=1e-2)


def test_notebook_09_trains_with_the_chosen_arm():
    """CFG (FULL = False) and the optimiser of the training cell are the arm ``bench.CHOSEN``'s."""
    c = bench.ARMS[bench.CHOSEN]
    source = cells()
    (cfg_cell,) = [s for s in source if "\nFULL = False" in s]
    scope: dict = {}
    exec(cfg_cell, scope)
    assert not scope["FULL"]
    for key in ("n_layer", "n_head", "d_model", "block_size", "dropout", "batch", "steps", "lr", "weight_decay"):
        assert scope["CFG"][key] == c[key], key
    (train_cell,) = [s for s in source if "torch.optim.AdamW(\n    model.parameters()" in s]
    flat = " ".join(train_cell.split())
    assert f"betas=({c['betas'][0]}, {c['betas'][1]})" in flat
    assert 'weight_decay=CFG["weight_decay"]' in flat
    assert c["schedule"] == "onecycle" and f"pct_start={c['warmup_fraction']}" in flat
    assert ("cycle_momentum=False" in flat) == (not c["cycle_momentum"])
    assert 'EVERY = CFG["steps"] // 5' in flat and "if step % EVERY == 0" in flat
    assert c["eval_every"] == c["steps"] // 5 and c["eval_train"] and c["eval_batches"] == 20


def test_run_arm_is_the_notebooks_loop_on_a_small_arm():
    small = bench.arm(n_layer=1, d_model=16, n_head=2, block_size=8, batch=4, steps=6, eval_every=3, eval_batches=2)
    text = torch.arange(2000) % 7
    parts = {"train": text[:1600], "val": text[1600:1800], "test": text[1800:], "V": 7}
    r = bench.run_arm("small", small, seed=0, parts=parts)
    again = bench.run_arm("small", small, seed=0, parts=parts)
    assert r["log"]["step"] == [3, 6] and len(r["log"]["train"]) == len(r["log"]["val"]) == 2
    assert r["val_loss"] == again["val_loss"] and r["log"] == again["log"]  # seeded: the same run twice
    assert r["tokens"] == 6 * 4 * 8 and r["train_cpu_s"] >= r["estimates_cpu_s"] >= 0
    assert r["val_loss"] < 1.95                         # ln 7 = 1.95: it learned something of a periodic text


def test_results_md_holds_the_table_the_recorded_runs_give():
    text = (ROOT / "RESULTS.md").read_text()
    if "bench_fast_gpt" not in text:
        pytest.skip("RESULTS.md has no fast-GPT table yet (the lead adds it: bench_fast_gpt.py --markdown)")
    for path in (bench.OUT, bench.LEVERS_OUT):
        for line in bench.markdown(bench.recorded(path)).splitlines():
            assert line in text, f"RESULTS.md's fast-GPT table is stale; rerun the script with --markdown:\n{line}"
    for line in bench.step_cost_markdown(json.loads(bench.STEP_COST_OUT.read_text())).splitlines():
        assert line in text, f"RESULTS.md's step-cost table is stale; rerun the script with --step-cost:\n{line}"


def test_the_per_step_levers_are_recorded_only_when_an_arm_sets_them_and_train_the_same_model(monkeypatch):
    """Adam's fused kernel and the doors' checks off (issue 54) change a step's cost, not what it computes."""
    import utils.checks

    entered = []

    class watched(utils.checks.checks_off):
        def __enter__(self):
            entered.append(True)
            return super().__enter__()

    monkeypatch.setattr(bench, "checks_off", watched)
    assert "fused" not in bench.ARMS["fast_3500"] and "checks" not in bench.ARMS["fast_3500"]
    assert bench.levers(bench.ARMS["fast_3500_nochecks"]).endswith("the doors' checks off")
    assert "Adam's fused kernel" in bench.levers(bench.ARMS["fast_3500_fused"])
    small = bench.arm(n_layer=1, d_model=16, n_head=2, block_size=8, batch=4, steps=6, eval_every=3, eval_batches=2)
    text = torch.arange(2000) % 7
    parts = {"train": text[:1600], "val": text[1600:1800], "test": text[1800:], "V": 7}
    plain = bench.run_arm("small", small, seed=0, parts=parts)
    for lever in ({"checks": False}, {"fused": True}):
        r = bench.run_arm("small", {**small, **lever}, seed=0, parts=parts)
        assert r["log"]["step"] == plain["log"]["step"]
        assert r["val_loss"] == pytest.approx(plain["val_loss"], abs=1e-4), lever
    assert entered == [True]   # the checks were off for the one arm that asked
    model = torch.nn.Linear(2, 2)
    for name, fused in (("fast_3500", None), ("fast_3500_fused", True)):
        opt, _ = bench.optimiser(model, bench.ARMS[name])
        assert opt.defaults["fused"] is fused, name   # the fused kernel only where the arm asks for it


def test_step_cost_times_every_arm_in_turn_and_divides_by_the_first():
    rows = bench.step_cost(["fast_3500", "fast_3500_nochecks"], steps=2, rounds=1)
    assert [r["arm"] for r in rows] == ["fast_3500", "fast_3500_nochecks"]
    assert rows[0]["vs_first"] == 1.0 and all(r["step_cpu_ms"] > 0 for r in rows)
    assert rows[1]["vs_first"] == round(rows[1]["step_cpu_ms"] / rows[0]["step_cpu_ms"], 3)
