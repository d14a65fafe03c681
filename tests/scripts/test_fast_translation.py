"""scripts/benchmarks/bench_fast_translation.py (issue 42): the table in RESULTS.md is the one the
recorded runs give, and an arm's training stops at its CPU budget."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from scripts.benchmarks import bench_fast_translation as bench  # noqa: E402


def test_results_md_holds_the_table_the_recorded_runs_give():
    rows = bench.recorded(bench.OUT)
    assert rows, f"no runs in {bench.OUT}"
    from utils.translation import load_run_results
    table = bench.markdown(rows, load_run_results("transformer"))
    text = (ROOT / "RESULTS.md").read_text()
    for line in table.splitlines():
        assert line in text, f"RESULTS.md's fast-recipe table is stale; rerun the script with --markdown:\n{line}"


def test_every_recorded_arm_is_defined_with_the_config_it_ran():
    for r in bench.recorded(bench.OUT):
        assert bench.ARMS.get(r["arm"]) == r["config"], f"{r['arm']}: its recorded config is not ARMS' entry"


def test_within_stops_at_the_cpu_budget_and_cycles_the_loader():
    def busy(n):
        t = time.thread_time()
        while time.thread_time() - t < n:
            pass
        return n
    seen = []
    for batch in bench.within([0.01, 0.01, 0.01], 0.05):   # a loader of three batches, read again and again
        seen.append(busy(batch))
    assert 4 <= len(seen) <= 6                              # past one epoch, stopped near the budget


def test_levers_name_what_an_arm_changes():
    assert bench.levers(bench.ARMS["course8"]).startswith("notebook 08 before")
    assert bench.levers(bench.ARMS["rnn03"]).startswith("notebook 03 before")
    assert bench.levers(bench.ARMS["fast"]) == "all pairs, factor 0.7, pre-LN"


def test_load_fast_runs_gives_an_arms_runs_and_names_the_fix(tmp_path):
    import pytest
    from utils.translation import load_fast_runs
    rows = load_fast_runs()
    assert rows == bench.recorded(bench.OUT)
    assert all(r["arm"] == "fast" for r in load_fast_runs("fast")) and len(load_fast_runs("fast")) >= 3
    with pytest.raises(ValueError, match="never run.*course8"):
        load_fast_runs("no_such_arm")
    with pytest.raises(FileNotFoundError, match="bench_fast_translation.py"):
        load_fast_runs(runs=tmp_path)
