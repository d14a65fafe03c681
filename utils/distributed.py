"""Data-parallel training on an existing engine: ``torch.distributed`` and ``DistributedDataParallel``.

Under ``torchrun --nproc_per_node=N script.py`` every process gets ``RANK``, ``LOCAL_RANK`` and
``WORLD_SIZE`` in its environment. :func:`init_distributed` reads them and joins the process group
(NCCL when the processes have GPUs, gloo on CPUs); without them it is one process and does nothing.

:func:`train_gpt` is notebook 09's training loop (AdamW, one-cycle schedule, gradient clipping), written
so that N processes with ``batch_size`` B each take the same steps as one process with batch N·B:
every process draws the same global batch of N·B windows from the same seeded generator and keeps
its own slice; DDP averages the gradients across processes before the optimizer step, which is the
gradient of the mean loss over the whole global batch. ``tests/scripts/test_distributed.py`` checks that the
weights agree after a few steps.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from utils import checks
from utils.checks import Ids, contract
from utils.gpt import GPT, _batch_rules, get_batch

__all__ = ["DistInfo", "init_distributed", "autocast", "DataParallelModel", "ShardedBatchSampler", "train_gpt"]


@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device: str | None = None, backend: str | None = None) -> DistInfo:
    """Join the process group that ``torchrun`` set up (``WORLD_SIZE`` > 1), or return a one-process
    :class:`DistInfo`. ``device``: "cuda" or "cpu" (default: CUDA when present). On CUDA each process
    uses GPU ``LOCAL_RANK`` and NCCL; on the CPU, gloo."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() if device is None else device.startswith("cuda")
    if use_cuda and not torch.cuda.is_available():
        raise ValueError("device='cuda' was asked for, but PyTorch sees no GPU; use device='cpu' (gloo)")
    dev = torch.device("cuda", local) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(dev)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend or ("nccl" if use_cuda else "gloo"))
    return DistInfo(rank, world, local, dev)


def autocast(device: torch.device, enabled: bool = True):
    """bfloat16 autocast on a GPU that supports it (Ampere and later); a no-op elsewhere (on a CPU the
    course's models are small enough that float32 is the faster choice)."""
    if enabled and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


class DataParallelModel(DDP):
    """``DistributedDataParallel`` that also answers the wrapped model's attributes (``model.cfg``), so
    loss functions written for the plain model (``utils.transformer.translation_loss``) take it as is."""

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)

    @contract(trust_callees=False)  # the wrapped model's door checks the arguments: its contract is this one's
    def forward(self, *inputs: object, **kwargs: object) -> object:
        """The wrapped model's forward, its gradients averaged across the processes by DDP."""
        return super().forward(*inputs, **kwargs)


class ShardedBatchSampler:
    """Rank ``rank`` of ``world_size`` takes batches rank, rank + N, rank + 2N, … of ``batch_sampler``
    (which must give every rank the same order: a seeded sampler, same seed everywhere). Every rank
    gets the same number of batches (the last < N are dropped), so DDP's all-reduces pair up.
    ``epoch`` is passed through (``LengthBucketSampler`` draws a new order per epoch)."""

    def __init__(self, batch_sampler, rank: int, world_size: int):
        if not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got rank {rank} of {world_size}")
        self.inner, self.rank, self.world_size = batch_sampler, rank, world_size

    @property
    def epoch(self) -> int:
        return self.inner.epoch

    @epoch.setter
    def epoch(self, value: int) -> None:
        self.inner.epoch = value

    def __len__(self) -> int:
        return len(self.inner) // self.world_size

    def __iter__(self):
        batches = list(self.inner)
        yield from batches[self.rank: len(self) * self.world_size: self.world_size]


def _train_rules(model: GPT, train: torch.Tensor, steps: int, batch_size: int, **_) -> None:
    """Checked once for the whole run (the loop behind the door trusts its batches): whole step and batch
    counts, ids inside the model's vocabulary, a text longer than one window."""
    checks.integer(steps, "steps", minimum=0)
    checks.integer(batch_size, "batch_size", minimum=1)
    checks.vocab_ids(train, model.cfg.vocab_size, "train")
    _batch_rules(train, model.cfg.block_size, batch_size)


# train stays on the CPU: each batch is cut from it and moved to the model's device
@contract(rules=_train_rules, any_device=("train",))
def train_gpt(model: GPT, train: Ids["N"], *, steps: int, batch_size: int, lr: float, seed: int = 0,
              info: DistInfo | None = None, bf16: bool = True, log_every: int = 0, clip: float = 1.0) -> dict:
    """Train ``model`` on the token ids ``train`` for ``steps`` steps; ``batch_size`` windows **per
    process**. With ``info.world_size`` > 1 (after :func:`init_distributed`) the model is wrapped in
    DDP. Returns ``{"losses": [...], "seconds": s, "cpu_seconds": c, "tokens": n}`` (wall-clock seconds, this
    process's CPU seconds, which a busy machine disturbs far less, and the tokens seen by all processes)."""
    info = info or DistInfo(device=next(model.parameters()).device)
    T, N, r = model.cfg.block_size, info.world_size, info.rank
    net = DDP(model) if N > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.99), weight_decay=0.1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(steps, 1), pct_start=0.1)
    g = torch.Generator().manual_seed(seed)
    losses, t0, c0 = [], time.perf_counter(), time.process_time()
    model.train()
    for step in range(1, steps + 1):
        x, y = get_batch(train, T, N * batch_size, g)                         # the global batch (N·B, T)
        x, y = x[r * batch_size:(r + 1) * batch_size], y[r * batch_size:(r + 1) * batch_size]  # this rank's (B, T)
        with autocast(info.device, bf16):
            _, loss = net(x.to(info.device), y.to(info.device))
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss became {loss.item()} at step {step}; lower the learning rate")
        opt.zero_grad(set_to_none=True)
        loss.backward()                                                        # DDP: gradients averaged over ranks
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if log_every and info.is_main and (step % log_every == 0 or step == steps):
            print(f"step {step:5d}: loss {loss.item():.3f}, {time.perf_counter() - t0:.0f} s", flush=True)
    return {"losses": losses, "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "tokens": steps * N * batch_size * T}
