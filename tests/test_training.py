"""utils.training: seeding, device choice, the training loop, checkpoints."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from utils.training import (
    History, count_parameters, evaluate, fit, get_device, load_checkpoint, save_checkpoint, set_seed, to_device,
)


def _regression(seed=0, n=256):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    w = torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    return TensorDataset(x, x @ w + 0.01 * torch.randn(n, 1, generator=g))


def _mse(model, batch):
    x, y = batch
    return nn.functional.mse_loss(model(x), y)


def _train(seed, steps=60):
    gen = set_seed(seed)
    model = nn.Linear(4, 1)
    loader = DataLoader(_regression(), batch_size=32, shuffle=True, generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hist = fit(model, _mse, loader, opt, epochs=100, max_steps=steps, val_loader=loader, eval_every=20, progress=False)
    return model, hist


def test_set_seed_makes_runs_identical_and_seeds_differ():
    m1, h1 = _train(0)
    m2, h2 = _train(0)
    m3, h3 = _train(1)
    assert h1.train_loss == h2.train_loss
    assert torch.equal(m1.weight, m2.weight)
    assert h1.train_loss != h3.train_loss
    with pytest.raises(TypeError):
        set_seed(1.5)


def test_fit_learns_and_records_history():
    model, hist = _train(0, steps=200)
    assert hist.steps == 200 and len(hist.train_loss) == 200 and len(hist.lr) == 200
    assert hist.train_loss[-1] < 0.01 * hist.train_loss[0]
    assert hist.val_step[:3] == [20, 40, 60]
    assert hist.val_loss[-1] < 1e-3
    assert hist.seconds > 0
    assert len(hist.smoothed(10)) == 200


def test_fit_resumes_history_and_runs_scheduler():
    set_seed(0)
    model = nn.Linear(4, 1)
    loader = DataLoader(_regression(), batch_size=32)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    hist = fit(model, _mse, loader, opt, max_steps=5, scheduler=sched, progress=False)
    hist = fit(model, _mse, loader, opt, max_steps=10, scheduler=sched, progress=False, history=hist)
    assert hist.steps == 10
    assert hist.lr[:5] == [0.1] * 5 and hist.lr[5:] == [0.05] * 5


def test_fit_clips_gradients():
    set_seed(0)
    model = nn.Linear(4, 1)
    x = torch.randn(8, 4) * 1e3
    loader = [(x, torch.zeros(8, 1))]
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    fit(model, _mse, loader, opt, clip_grad_norm=0.5, progress=False)
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    # with lr = 1 the update is minus the clipped gradient, whose norm is exactly the clip value
    assert (after - before).norm().item() == pytest.approx(0.5, rel=1e-4)


def test_fit_stops_on_nan():
    model = nn.Linear(4, 1)
    loader = [(torch.full((2, 4), float("nan")), torch.zeros(2, 1))]
    with pytest.raises(FloatingPointError, match="learning rate"):
        fit(model, _mse, loader, torch.optim.SGD(model.parameters(), lr=0.1), progress=False)


def test_evaluate_restores_mode_and_rejects_empty():
    model = nn.Sequential(nn.Linear(4, 1), nn.Dropout(0.5))
    model.train()
    evaluate(model, [tuple(_regression(n=8).tensors)], _mse)
    assert model.training
    with pytest.raises(ValueError, match="empty"):
        evaluate(model, [], _mse)


def test_checkpoint_round_trip(tmp_path):
    set_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    path = save_checkpoint(tmp_path / "ck" / "m.pt", model, opt, vocab=["<pad>", "a"], step=7)
    assert path.exists() and not list(tmp_path.rglob("*.part"))
    other = nn.Linear(4, 2)
    other_opt = torch.optim.Adam(other.parameters())
    extra = load_checkpoint(path, other, other_opt)
    assert extra == {"vocab": ["<pad>", "a"], "step": 7}
    assert torch.equal(other.weight, model.weight)
    assert other_opt.state_dict()["state"][0]["step"] == 1
    with pytest.raises(KeyError, match="optimizer"):
        save_checkpoint(tmp_path / "n.pt", model)
        load_checkpoint(tmp_path / "n.pt", other, other_opt)


def test_checkpoint_refuses_arbitrary_objects(tmp_path):
    """weights_only=True: a checkpoint smuggling in a custom object fails to load."""
    model = nn.Linear(2, 2)
    torch.save({"model": model.state_dict(), "extra": {"obj": History()}}, tmp_path / "bad.pt")
    with pytest.raises(Exception, match="weights_only|Unsupported|WeightsUnpickler"):
        load_checkpoint(tmp_path / "bad.pt", model)


def test_device_choice(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    dev = get_device()
    assert dev.type == ("cuda" if torch.cuda.is_available() else dev.type)
    assert get_device("cpu") == torch.device("cpu")
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert get_device() == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            get_device("cuda")


def test_to_device_and_count_parameters():
    from utils.text import PairBatch, pad_sequences

    s = pad_sequences([[1, 2], [3]])
    b = to_device(PairBatch(*s, *s), "cpu")
    assert isinstance(b, PairBatch) and b.src.device.type == "cpu"
    assert to_device({"a": [torch.ones(1)]}, "cpu")["a"][0].item() == 1
    emb = nn.Embedding(10, 3)
    head = nn.Linear(3, 10, bias=False)
    head.weight = emb.weight  # tied weights count once
    assert count_parameters(nn.ModuleList([emb, head])) == 30


def test_set_cpu_threads_default_override_and_errors(monkeypatch):
    import os

    import pytest
    import torch

    from utils.training import set_cpu_threads

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("COURSE_THREADS", raising=False)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        assert set_cpu_threads() == (1 if cores <= 2 else min(4, cores // 2)) == torch.get_num_threads()
        monkeypatch.setenv("COURSE_THREADS", "3")
        assert set_cpu_threads() == 3 == torch.get_num_threads()
        assert set_cpu_threads(2) == 2  # an explicit number wins over the variable
        monkeypatch.setenv("COURSE_THREADS", "two")
        with pytest.raises(ValueError, match="COURSE_THREADS must be a whole number"):
            set_cpu_threads()
        with pytest.raises(ValueError, match="int >= 1"):
            set_cpu_threads(0)
    finally:
        torch.set_num_threads(before)
