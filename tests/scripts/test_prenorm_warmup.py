"""scripts/benchmarks/bench_prenorm_warmup.py (issue 52, finding 08-6): notebook 08's live recipe with and without
its warm-up. The two arms differ in the schedule's ramp only; every recorded run is the recipe as
bench_fast_translation.py defines it now (a changed recipe needs the runs again); RESULTS.md holds the table the
runs give; notebook 08 reads them through utils.translation.load_fast_runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from scripts.benchmarks import bench_prenorm_warmup as bench  # noqa: E402


def test_the_two_arms_differ_in_the_warm_up_only():
    both = bench.arms(bench.RECIPE)
    with_ramp, without = both["warm-up"], both["no warm-up"]
    assert with_ramp["ramp"] is True and without["ramp"] is False
    assert {k: v for k, v in with_ramp.items() if k != "ramp"} == {k: v for k, v in without.items() if k != "ramp"}
    # the recipe as the benchmark defines it, its validation rhythm kept
    recipe = bench.ARMS[bench.RECIPE]
    assert all(with_ramp[k] == v for k, v in recipe.items())
    with pytest.raises(SystemExit, match="no warm-up schedule"):
        bench.arms("rnn03")


def test_every_recorded_run_is_its_recipe_as_defined_now_and_both_arms_have_two_seeds():
    rows = bench.recorded(bench.OUT)
    assert rows, f"no runs in {bench.OUT}"
    for r in rows:
        assert r["config"] == bench.arms(r["recipe"])[r["schedule"]], \
            f"{r['recipe']} ({r['schedule']}, seed {r['seed']}): the recipe changed since; run the script again"
        assert r["steps"] == r["config"]["steps"] and r["val_loss"] is not None
    seeds = {s: {r["seed"] for r in rows if r["recipe"] == bench.RECIPE and r["schedule"] == s}
             for s in ("warm-up", "no warm-up")}
    assert len(seeds["warm-up"] & seeds["no warm-up"]) >= 2, seeds


def test_results_md_holds_the_table_the_recorded_runs_give():
    table = bench.markdown(bench.recorded(bench.OUT))
    text = (ROOT / "RESULTS.md").read_text(encoding="utf-8")
    for line in table.splitlines():
        assert line in text, f"RESULTS.md's warm-up table is stale; rerun the script with --markdown:\n{line}"


def test_notebook_08_reads_the_runs_through_load_fast_runs(tmp_path):
    from utils.translation import load_fast_runs
    assert load_fast_runs(bench="prenorm_warmup") == bench.recorded(bench.OUT)
    with pytest.raises(FileNotFoundError, match="bench_prenorm_warmup.py"):
        load_fast_runs(runs=tmp_path, bench="prenorm_warmup")
