"""Data parallelism: scripts/recipes/train_gpt.py under torchrun (2 gloo processes on the CPU) takes the same steps
as one process with the doubled batch.

Tolerance from measurement (seeds 0, 1, 2; 5 AdamW steps of notebook 09's small GPT, 2026-11-23): the
largest weight difference between 2 processes with batch 4 each and 1 process with batch 8 was 1.7e-5,
1.4e-5 and 7.5e-6 (the gradients are summed in another order); one process with batch 4 only, the control
that must fail, differed by 2.0e-2. The test allows 1e-4.
"""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from utils.distributed import DistInfo, autocast, init_distributed, train_gpt
from utils.gpt import GPT, GPTConfig

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "recipes" / "train_gpt.py"
TOL = 1e-4


def run(tmp: Path, name: str, procs: int, batch: int, text: Path) -> dict:
    out = tmp / name
    launch = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={procs}"] if procs > 1 else [sys.executable]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = launch + [str(SCRIPT), "--text", str(text), "--steps", "5", "--batch", str(batch), "--threads", "1",
                    "--device", "cpu", "--out", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads((out / "results.json").read_text())["world_size"] == procs
    return torch.load(out / "model.pt", weights_only=True)["model"]


def max_diff(a: dict, b: dict) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in a)


def test_two_processes_equal_one_with_twice_the_batch(tmp_path):
    rng = random.Random(0)
    words = "the king queen doth thou art my lord and love speak".split()
    text = tmp_path / "text.txt"
    text.write_text(" ".join(rng.choice(words) for _ in range(20000)))
    one = run(tmp_path, "one", 1, 8, text)
    two = run(tmp_path, "two", 2, 4, text)
    half = run(tmp_path, "half", 1, 4, text)
    assert max_diff(one, two) < TOL
    assert max_diff(one, half) > 100 * TOL  # the check can fail: a different global batch is far away


def test_one_process_helpers():
    os.environ.pop("WORLD_SIZE", None)
    info = init_distributed("cpu")
    assert (info.rank, info.world_size, info.device.type) == (0, 1, "cpu")
    assert not torch.is_autocast_enabled() and autocast(torch.device("cpu")).__class__.__name__ == "nullcontext"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no GPU"):
            init_distributed("cuda")
    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=5, block_size=8, n_layer=1, n_head=2, d_model=8))
    out = train_gpt(m, torch.randint(0, 5, (200,)), steps=3, batch_size=2, lr=1e-3, info=DistInfo())
    assert len(out["losses"]) == 3 and out["tokens"] == 3 * 2 * 8
    with pytest.raises(ValueError, match="batch_size"):
        train_gpt(m, torch.randint(0, 5, (200,)), steps=3, batch_size=0, lr=1e-3)


def test_train_gpt_checks_its_text_once_at_the_door():
    """The loop behind the door trusts its batches: the text is checked once, for the whole run."""
    torch.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=5, block_size=8, n_layer=1, n_head=2, d_model=8))
    with pytest.raises(ValueError, match=r"train: id 9 is outside the vocabulary of size 5"):
        train_gpt(m, torch.tensor([1, 2, 9] * 20), steps=3, batch_size=2, lr=1e-3)
    with pytest.raises(TypeError, match=r"steps must be an int, got the float 3.0"):
        train_gpt(m, torch.randint(0, 5, (200,)), steps=3.0, batch_size=2, lr=1e-3)
    with pytest.raises(ValueError, match=r"the text \(8 tokens\) must be longer than block_size \(8\)"):
        train_gpt(m, torch.randint(0, 5, (8,)), steps=3, batch_size=2, lr=1e-3)
    with pytest.raises(TypeError, match=r"train must be a torch.Tensor \(N,\).*got a list"):
        train_gpt(m, [1, 2, 3], steps=3, batch_size=2, lr=1e-3)


def test_data_parallel_model_hands_its_arguments_to_the_wrapped_models_door(tmp_path):
    """DataParallelModel's door is the wrapped model's: a slip is named by the model's own contract."""
    import torch.distributed as dist

    from utils.distributed import DataParallelModel

    dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"file://{tmp_path / 'rendezvous'}")
    try:
        torch.manual_seed(0)
        m = GPT(GPTConfig(vocab_size=5, block_size=8, n_layer=1, n_head=2, d_model=8))
        ddp = DataParallelModel(m)
        x = torch.randint(0, 5, (2, 8))
        torch.testing.assert_close(ddp(x, x)[1], m(x, x)[1])
        assert ddp.cfg is m.cfg  # the wrapped model's attributes
        with pytest.raises(ValueError, match=r"idx: id 7 is outside the vocabulary of size 5"):
            ddp(x.masked_fill(x == x[0, 0], 7))
    finally:
        dist.destroy_process_group()
