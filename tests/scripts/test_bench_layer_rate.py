"""Smoke test of scripts/benchmarks/bench_layer_rate.py: every figure reported, the counts exact. No timing thresholds."""
import pytest
import torch

from scripts.benchmarks import bench_layer_rate as bench


def test_it_reports_every_figure_and_counts_exactly():
    threads = torch.get_num_threads()
    rows = bench.main(["--lengths", "16", "32", "--reps", "1"])
    assert torch.get_num_threads() == threads
    assert [(r["layer"], r["T"]) for r in rows] == [("attention", 16), ("attention", 32), ("GRU", 16), ("GRU", 32)]
    gru = {r["T"]: r["flops"] for r in rows if r["layer"] == "GRU"}
    assert gru[32] == 2 * gru[16]                      # the GRU's work is linear in T
    for r in rows:
        assert r["cpu_s"] > 0 and r["gflop_per_s"] == pytest.approx(r["flops"] / r["cpu_s"] / 1e9)
        assert r["matrix_mib"] == 4 * r["T"] ** 2 / 2**20 and r["page_faults"] >= 0
