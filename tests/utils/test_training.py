"""utils.training: seeding, device choice, the training loop, checkpoints."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from utils.training import (
    CheckpointError, History, count_parameters, evaluate, fit, get_device, load_checkpoint, save_checkpoint, set_seed,
    to_device,
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
    save_checkpoint(tmp_path / "n.pt", model)
    with pytest.raises(CheckpointError, match="n.pt holds no optimizer state"):
        load_checkpoint(tmp_path / "n.pt", other, other_opt)


def test_checkpoint_refuses_arbitrary_objects(tmp_path):
    """weights_only=True: a checkpoint smuggling in a custom object fails to load, and the
    error names the object, not PyTorch's weights_only=False escape hatch."""
    model = nn.Linear(2, 2)
    torch.save({"model": model.state_dict(), "extra": {"obj": History()}}, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=r"bad.pt .*utils.training.History.*never loaded") as e:
        load_checkpoint(tmp_path / "bad.pt", model)
    assert "weights_only=False" not in str(e.value)


@pytest.mark.parametrize("keep", [0.0, 0.5, 0.9, 0.99])
def test_checkpoint_truncated_or_empty_names_the_file(tmp_path, keep):
    model = nn.Linear(8, 8)
    path = save_checkpoint(tmp_path / "m.pt", model, step=3)
    data = path.read_bytes()
    path.write_bytes(data[: int(keep * len(data))])
    with pytest.raises(CheckpointError, match=r"m\.pt .*save_checkpoint.*truncated or empty") as e:
        load_checkpoint(path, nn.Linear(8, 8))
    assert "weights_only=False" not in str(e.value)


def test_checkpoint_not_a_checkpoint(tmp_path):
    model = nn.Linear(2, 2)
    (tmp_path / "notes.pt").write_text("these are my notes, not weights\n" * 20)
    with pytest.raises(CheckpointError, match=r"notes\.pt .*written by utils.training.save_checkpoint") as e:
        load_checkpoint(tmp_path / "notes.pt", model)
    assert "weights_only=False" not in str(e.value)
    torch.save(model.state_dict(), tmp_path / "bare.pt")
    with pytest.raises(CheckpointError, match=r"bare\.pt .*bare state_dict.*model.load_state_dict"):
        load_checkpoint(tmp_path / "bare.pt", model)
    torch.save([1, 2, 3], tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match=r"list\.pt .*'model' entry.*a list"):
        load_checkpoint(tmp_path / "list.pt", model)
    with pytest.raises(CheckpointError, match=r"w\.pt .*do not fit this model"):
        load_checkpoint(save_checkpoint(tmp_path / "w.pt", nn.Linear(3, 2)), model)
    with pytest.raises(FileNotFoundError, match="no checkpoint file"):
        load_checkpoint(tmp_path / "missing.pt", model)


def test_save_checkpoint_refuses_non_plain_extras(tmp_path):
    import numpy as np

    from utils.text import Vocab

    model = nn.Linear(2, 2)
    vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "a"])
    with pytest.raises(TypeError, match=r"src_vocab is a utils.text.Vocab.*vocab.to_list\(\)"):
        save_checkpoint(tmp_path / "v.pt", model, src_vocab=vocab)  # (vocab=vocab is stored as its list, fingerprinted)
    with pytest.raises(TypeError, match=r"config\['sizes'\]\[1\] is a numpy.*float\("):
        save_checkpoint(tmp_path / "v.pt", model, config={"sizes": [1, np.float64(2.0)]})
    with pytest.raises(TypeError, match=r"history is a utils.training.History.*asdict"):
        save_checkpoint(tmp_path / "v.pt", model, history=History())
    assert not list(tmp_path.iterdir())  # refused before writing anything
    ok = dict(vocab=vocab.to_list(), shape=torch.Size([2]), pair=(1, 2.5), none=None, t=torch.ones(2), nested={1: [True]})
    extra = load_checkpoint(save_checkpoint(tmp_path / "ok.pt", model, **ok), model)
    assert Vocab(extra["vocab"]).itos == vocab.itos and extra["nested"] == {1: [True]}


def test_save_checkpoint_to_a_folder_leaves_nothing(tmp_path, monkeypatch):
    model = nn.Linear(2, 2)
    with pytest.raises(IsADirectoryError, match="is a folder.*model.pt"):
        save_checkpoint(tmp_path, model)
    assert not list(tmp_path.iterdir())

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("utils.training.os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path / "m.pt", model)
    assert not list(tmp_path.iterdir())  # no .part left behind


def test_checkpoint_config_is_compared(tmp_path):
    from utils.rnn import Seq2Seq
    from utils.transformer import Transformer, TransformerConfig

    dot = Seq2Seq(10, 10, emb_dim=4, enc_hidden=4, dec_hidden=4, attention="dot")
    path = save_checkpoint(tmp_path / "dot.pt", dot, config=dot.config)
    scaled = Seq2Seq(10, 10, emb_dim=4, enc_hidden=4, dec_hidden=4, attention="scaled_dot")  # same weight shapes
    with pytest.raises(CheckpointError, match=r"dot\.pt .*another config.*attention: saved 'dot', expected 'scaled_dot'"):
        load_checkpoint(path, scaled)
    load_checkpoint(path, Seq2Seq(10, 10, emb_dim=4, enc_hidden=4, dec_hidden=4, attention="dot", dropout=0.3))
    with pytest.raises(CheckpointError, match="emb_dim: saved 4, expected 8"):
        load_checkpoint(path, dot, expected_config={**dot.config, "emb_dim": 8})
    # a dataclass config (as scripts/recipes/train_translation.py saves it, with vars()) equals its dict
    cfg = TransformerConfig(10, 10, d_model=8, num_heads=2, d_ff=8, num_encoder_layers=1, num_decoder_layers=1)
    model = Transformer(cfg)
    path = save_checkpoint(tmp_path / "t.pt", model, config=vars(cfg))
    assert load_checkpoint(path, Transformer(cfg), expected_config=cfg)["config"] == vars(cfg)
    post = TransformerConfig(**{**vars(cfg), "pre_norm": True})
    with pytest.raises(CheckpointError, match="pre_norm: saved False, expected True"):
        load_checkpoint(path, Transformer(post))


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

def _linear_and_opt():
    set_seed(0)
    model = nn.Linear(4, 1)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def test_fit_max_steps_zero_and_resume_at_the_limit_train_nothing():
    model, opt = _linear_and_opt()
    loader = DataLoader(_regression(), batch_size=32)
    before = model.weight.detach().clone()
    assert fit(model, _mse, loader, opt, max_steps=0, progress=False).steps == 0
    assert torch.equal(model.weight, before)
    hist = fit(model, _mse, loader, opt, max_steps=3, progress=False)
    after = model.weight.detach().clone()
    hist = fit(model, _mse, loader, opt, max_steps=3, progress=False, history=hist)
    hist = fit(model, _mse, loader, opt, max_steps=2, progress=False, history=hist)
    assert hist.steps == 3 and len(hist.train_loss) == 3 and torch.equal(model.weight, after)
    with pytest.raises(ValueError, match="max_steps must be >= 0"):
        fit(model, _mse, loader, opt, max_steps=-1, progress=False)


def test_fit_rejects_empty_and_one_shot_loaders():
    model, opt = _linear_and_opt()
    with pytest.raises(ValueError, match="loader yielded no batches"):
        fit(model, _mse, [], opt, progress=False)
    with pytest.raises(ValueError, match="loader yielded no batches"):
        fit(model, _mse, DataLoader(_regression(n=8), batch_size=16, drop_last=True), opt, progress=False)
    batches = [tuple(_regression(n=8).tensors)] * 3
    with pytest.raises(ValueError, match=r"one-shot generator.*DataLoader or a list"):
        fit(model, _mse, (b for b in batches), opt, epochs=3, progress=False)
    with pytest.raises(ValueError, match="one-shot list_iterator"):
        fit(model, _mse, iter(batches), opt, epochs=2, progress=False)
    assert fit(model, _mse, (b for b in batches), opt, progress=False).steps == 3  # one epoch is fine
    assert fit(model, _mse, batches, opt, epochs=3, progress=False).steps == 9


def test_fit_and_evaluate_need_a_scalar_loss():
    model, opt = _linear_and_opt()
    loader = [tuple(_regression(n=8).tensors)]

    def per_example(model, batch):
        x, y = batch
        return ((model(x) - y) ** 2).squeeze(1)  # (B,): forgot the .mean()

    with pytest.raises(ValueError, match=r"scalar.*shape \(8,\).*\.mean\(\)"):
        fit(model, per_example, loader, opt, progress=False)
    with pytest.raises(ValueError, match=r"scalar.*shape \(8,\)"):
        evaluate(model, loader, per_example)
    with pytest.raises(TypeError, match="torch.Tensor.*got float"):
        fit(model, lambda m, b: 1.0, loader, opt, progress=False)


def test_fit_clip_grad_norm_zero_is_not_off():
    model, opt = _linear_and_opt()
    with pytest.raises(ValueError, match="clip_grad_norm must be > 0.*None to turn clipping off"):
        fit(model, _mse, [tuple(_regression(n=8).tensors)], opt, clip_grad_norm=0, progress=False)


def test_progress_bar_outside_jupyter_is_text_on_stderr(capsys):
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    loader = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(4)]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, _mse, loader, opt, epochs=2, val_loader=loader[:1])
    out, err = capsys.readouterr()
    assert out == "" and "training: 100%" in err and "8/8" in err
    fit(model, _mse, loader, opt, max_steps=1, progress=False)
    assert capsys.readouterr() == ("", "")


def test_a_checkpoint_describes_itself(tmp_path):
    """Issue 43: the weights' SHA-256 and the vocabulary's fingerprint are stored and compared on load."""
    from utils.gpt import CharTokenizer
    from utils.text import Vocab

    model = nn.Linear(3, 2)
    tok = CharTokenizer("hello world")
    path = save_checkpoint(tmp_path / "m.pt", model, vocab=tok, config={"n": 1})
    extra = load_checkpoint(path, nn.Linear(3, 2), vocab=CharTokenizer("hello world"), expected_config={"n": 1})
    assert extra["vocab"] == tok.chars  # stored as its list of tokens, as before
    load_checkpoint(path, nn.Linear(3, 2), vocab=tok.chars, expected_config={"n": 1})  # a list of tokens works too
    with pytest.raises(ValueError, match=r"vocab is not the vocabulary .*m\.pt was saved with"):
        load_checkpoint(path, nn.Linear(3, 2), vocab=CharTokenizer("HELLO WORLD"), expected_config={"n": 1})
    again = save_checkpoint(tmp_path / "again.pt", model)  # issue 51: the model carries its vocabulary by default
    with pytest.raises(ValueError, match=r"vocab is not the vocabulary .*again\.pt was saved with"):
        load_checkpoint(again, nn.Linear(3, 2), vocab=CharTokenizer("HELLO WORLD"))
    plain = save_checkpoint(tmp_path / "p.pt", nn.Linear(3, 2))  # a model that never met a vocabulary
    with pytest.raises(CheckpointError, match="saved without a vocabulary"):
        load_checkpoint(plain, nn.Linear(3, 2), vocab=Vocab(["<pad>", "<unk>", "<bos>", "<eos>"]))
    load_checkpoint(plain, nn.Linear(3, 2))  # a checkpoint without a vocabulary loads as before
