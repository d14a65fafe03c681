"""Tests for utils.schedule: the warm-up formula and its torch scheduler."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from utils.schedule import peak_lr, transformer_adam, transformer_lr, warmup_decay, warmup_scheduler


@given(d_model=st.integers(1, 4096), warmup=st.integers(1, 10_000), step=st.integers(1, 100_000))
@settings(max_examples=200, deadline=None)
def test_formula_pieces(d_model, warmup, step):
    lr = transformer_lr(step, d_model, warmup)
    if step <= warmup:  # linear growth
        assert lr == pytest.approx(step * d_model ** -0.5 * warmup ** -1.5)
    else:               # inverse square root decay
        assert lr == pytest.approx(d_model ** -0.5 / math.sqrt(step))
    assert lr <= peak_lr(d_model, warmup) * (1 + 1e-12)


def test_peak_is_at_warmup_and_paper_value():
    lrs = [transformer_lr(s, 512, 4000) for s in range(1, 20_001)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == 4000
    assert max(lrs) == pytest.approx(7.0e-4, rel=0.01)  # the base model's peak: 1/sqrt(512·4000)
    assert transformer_lr(0, 512, 4000) == transformer_lr(1, 512, 4000) > 0


def test_scheduler_drives_the_optimizer_lr():
    p = torch.nn.Parameter(torch.zeros(3))
    for base_lr in (1.0, 3e-4):  # the optimiser's own lr is replaced, whatever it was
        opt = torch.optim.SGD([p], lr=base_lr)
        sched = warmup_scheduler(opt, d_model=64, warmup=10, factor=2.0)
        seen = []
        for _ in range(30):
            seen.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        assert seen == pytest.approx([transformer_lr(s, 64, 10, 2.0) for s in range(1, 31)])


def test_transformer_adam_is_the_papers():
    opt, sched = transformer_adam([torch.nn.Parameter(torch.zeros(2))], d_model=512, warmup=4000)
    g = opt.param_groups[0]
    assert g["betas"] == (0.9, 0.98) and g["eps"] == 1e-9
    assert g["lr"] == pytest.approx(transformer_lr(1, 512, 4000))


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="warmup"):
        transformer_lr(1, 512, 0)
    with pytest.raises(ValueError, match="step"):
        transformer_lr(-1, 512, 10)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.0)
    with pytest.raises(ValueError, match="lr"):
        warmup_scheduler(opt, 512, 10)


@given(d_model=st.integers(1, 4096), warmup=st.integers(1, 10_000), step=st.integers(0, 100_000))
@settings(max_examples=200, deadline=None)
def test_without_ramp_the_peak_is_held_then_the_same_decay(d_model, warmup, step):
    held = transformer_lr(step, d_model, warmup, ramp=False)
    if step <= warmup:  # the peak from the first step on, instead of a linear climb to it
        assert held == pytest.approx(peak_lr(d_model, warmup))
        assert held >= transformer_lr(step, d_model, warmup) * (1 - 1e-12)
    else:               # afterwards the two schedules are the same
        assert held == transformer_lr(step, d_model, warmup)


def test_transformer_adam_without_ramp_starts_at_the_peak():
    p = torch.nn.Parameter(torch.zeros(2))
    opt, sched = transformer_adam([p], d_model=64, warmup=10, factor=2.0, ramp=False)
    seen = []
    for _ in range(20):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen[:10] == pytest.approx([peak_lr(64, 10, 2.0)] * 10)
    assert seen == pytest.approx([transformer_lr(s, 64, 10, 2.0, ramp=False) for s in range(1, 21)])
    assert seen[10:] == pytest.approx([transformer_lr(s, 64, 10, 2.0) for s in range(11, 21)])


@pytest.mark.parametrize("steps", [5, 20, 200, 333])
def test_warmup_decay_rises_then_decays_and_the_arms_differ_only_in_the_warmup(steps):
    w = steps // 5
    up, flat = warmup_decay(steps, True), warmup_decay(steps, False)
    for s in range(steps):
        decay = max(0.02, (steps - s) / (steps - w))
        if s < w:
            assert up(s) == pytest.approx((s + 1) / w) and flat(s) == pytest.approx(min(1.0, decay))
        else:
            assert up(s) == flat(s) == pytest.approx(decay)
    assert max(up(s) for s in range(steps)) == pytest.approx(1.0)  # the peak rate is reached
    assert up(steps - 1) >= 0.02 and up(10 * steps) == 0.02         # the floor


def test_warmup_decay_errors_name_the_arguments():
    with pytest.raises(ValueError, match="steps=1"):
        warmup_decay(1)
    with pytest.raises(ValueError, match="warmup_fraction=1.0"):
        warmup_decay(10, warmup_fraction=1.0)


def test_copy_task_recipe(monkeypatch):
    import utils.copytask
    from utils.copytask import copy_task, exact_match, train_copy

    train, test, vocab = copy_task(seed=3, n_train=50, n_test=7)
    assert len(train) == 50 and len(test) == 7 and copy_task(seed=3, n_train=50, n_test=7)[0] == train
    for s, t in train + test:
        assert s[-1] == vocab.eos_id and t[0] == vocab.bos_id and t[1:] == s and 3 <= len(s) - 1 <= 10
    model, hist = train_copy(seed=0, steps=10, d_model=16)
    _, hist2 = train_copy(seed=0, steps=10, d_model=16)
    assert len(hist.train_loss) == 10 and hist.train_loss == hist2.train_loss  # seeded
    # exact_match counts the outputs equal to the targets without <bos>/<eos>
    answers = [t[1:-1] for _, t in test]
    answers[2] = answers[2][:-1]
    monkeypatch.setattr(utils.copytask, "greedy_decode", lambda *a, **k: answers)
    assert exact_match(model, test, vocab) == pytest.approx(6 / 7)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="optimizer must be one of"):
        train_copy(seed=0, optimizer="adamw")
    with pytest.raises(ValueError, match="at least one pair"):
        exact_match(model, [], vocab)
