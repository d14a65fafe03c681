"""scripts/benchmarks/bench_fast_translation.py (issue 42): the table in RESULTS.md is the one the
recorded runs give, and an arm's training stops at its CPU budget."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

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


def tiny_arm(**changes):
    return {**bench.ARMS["nb08_nodrop"], "d_model": 16, "num_heads": 2, "d_ff": 32, "layers": 1, "batch": 16,
            "warmup": 4, "steps": 6, "eval_every": None, **changes}


def tiny_run(c, curve=None):
    """A tiny Transformer trained as run_arm trains an arm, on 96 short pairs; returns (result, its parameters)."""
    from functools import partial

    from utils.schedule import transformer_adam
    from utils.training import set_seed
    from utils.translation import prepare_translation
    from utils.transformer import Transformer, TransformerConfig, make_decode_fn, translation_loss

    data = prepare_translation("de", "en", max_train_len=6, train_subset=96, max_eval_len=5,
                               subwords=c.get("subwords"))
    set_seed(0)
    cfg = TransformerConfig(src_vocab=len(data.src_vocab), tgt_vocab=len(data.tgt_vocab), d_model=c["d_model"],
                            num_heads=c["num_heads"], d_ff=c["d_ff"], num_encoder_layers=1, num_decoder_layers=1,
                            dropout=0.0, tie_output=True, pre_norm=True)
    model = Transformer(cfg)
    opt, sched = transformer_adam(model.parameters(), c["d_model"], c["warmup"], c["factor"])
    r = bench.train_and_score("tiny", c, 0, data, model, partial(translation_loss, label_smoothing=0.1), opt, sched,
                              make_decode_fn(model), None, curve=curve)
    return r, [p.detach().clone() for p in model.parameters()]


def test_scoring_along_the_way_trains_the_same_run():
    """The BLEU/CPU-s curve scores a run after some of its steps: the run itself (its batches, its weights, its final
    score) is the one a single fit gives."""
    once, w_once = tiny_run(tiny_arm())
    along, w_along = tiny_run(tiny_arm(), curve=[2, 4])
    assert [p["steps"] for p in along["curve"]] == [2, 4, 6]
    assert all(torch.equal(a, b) for a, b in zip(w_once, w_along))
    assert along["test_bleu"] == once["test_bleu"] and along["steps"] == once["steps"] == 6
    cpu = [p["train_cpu_s"] for p in along["curve"]]
    assert cpu == sorted(cpu)


def test_the_figure_marks_bentrevetts_scores_and_the_target(tmp_path):
    from courseware.measure.results_table import REFERENCE

    assert bench.BENTREVETT == {"GRU with attention": REFERENCE["attention"], "Transformer": REFERENCE["transformer"]}
    path = bench.plot(bench.recorded(bench.OUT), tmp_path / "bleu_cpu.png")
    assert path.stat().st_size > 10_000
    assert (ROOT / "runs" / "fast_translation" / "bleu_cpu.png").exists()   # the committed one RESULTS.md shows


def test_an_ema_arm_scores_its_averaged_weights():
    import torch.optim.swa_utils as swa

    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    ema = swa.AveragedModel(model, multi_avg_fn=swa.get_ema_multi_avg_fn(0.5), use_buffers=True)
    step = bench.EMAStep(sched, ema, model)
    first = model.weight.detach().clone()
    for _ in range(3):
        model.weight.data += 1.0
        opt.step()                      # no gradient: nothing changes, as fit's order of calls
        step.step()
    assert step.optimizer is opt and step.get_last_lr() == sched.get_last_lr()
    # the first update copies the weights (first + 1), then each averages: first + 1.5, first + 2.25 < first + 3
    assert (ema.module.weight < model.weight).all() and (ema.module.weight > first).all()
