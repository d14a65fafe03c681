"""Seeds, device choice, one small training loop, and checkpoints.

The loop is deliberately generic: you hand it a ``loss_fn(model, batch) -> scalar
tensor`` and it does the rest (device moves, clipping, progress bar, history).
Every notebook trains through it, so the mechanics are written and tested once.
"""

from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import torch
from torch import nn

__all__ = [
    "set_seed",
    "get_device",
    "set_cpu_threads",
    "to_device",
    "History",
    "fit",
    "evaluate",
    "save_checkpoint",
    "load_checkpoint",
    "count_parameters",
    "perplexity",
]


def set_seed(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and PyTorch (CPU and every GPU) and return a seeded
    ``torch.Generator`` for a DataLoader's shuffling."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def get_device(prefer: str | None = None) -> torch.device:
    """The device to train on: ``prefer`` or $COURSE_DEVICE if given, else CUDA
    when a GPU is present, else Apple's MPS, else the CPU."""
    choice = prefer or os.environ.get("COURSE_DEVICE")
    if choice:
        dev = torch.device(choice)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"device {choice!r} was asked for but CUDA is not available here")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def set_cpu_threads(n: int | None = None) -> int:
    """Choose how many CPU threads PyTorch uses for the course's small models; return it.

    ``n``, else ``$COURSE_THREADS``, else 1 on a machine with at most 2 cores and half
    the cores (at most 4) on a bigger one. The models in the notebooks are small: a
    step is many short kernels, and with two threads on two cores every kernel waits
    for both. When another program also wants the CPU (a browser, a video call, a
    class sharing one JupyterHub), that wait grows several-fold: measured on a 2-core
    machine beside a second training process, a notebook-09 training step took 5.0x
    its quiet time with 2 threads and 1.2-1.4x with 1 (``scripts/bench_load.py``).
    GPU work is unaffected.
    """
    if n is None:
        env = os.environ.get("COURSE_THREADS")
        if env:
            if not env.isdigit() or int(env) < 1:
                raise ValueError(f"COURSE_THREADS must be a whole number >= 1, got {env!r}")
            n = int(env)
        else:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
            n = 1 if cores <= 2 else min(4, cores // 2)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"the number of threads must be an int >= 1, got {n!r}")
    torch.set_num_threads(n)
    return n


def to_device(batch: Any, device: torch.device | str) -> Any:
    """Move every tensor inside a (nested) tuple, list, dict or dataclass to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return type(batch)((k, to_device(v, device)) for k, v in batch.items())
    if hasattr(batch, "_fields"):  # namedtuple
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    if hasattr(batch, "__dataclass_fields__"):
        return type(batch)(**{k: to_device(getattr(batch, k), device) for k in batch.__dataclass_fields__})
    return batch


@dataclass
class History:
    """What a training run leaves behind: the loss of every step, the validation
    loss of every evaluation (with the step it was taken at), and timings."""

    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_step: list[int] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    seconds: float = 0.0
    steps: int = 0

    def smoothed(self, window: int = 50) -> np.ndarray:
        """Running mean of the training loss over ``window`` steps."""
        x = np.asarray(self.train_loss, dtype=float)
        if len(x) == 0:
            return x
        window = max(1, min(window, len(x)))
        c = np.cumsum(np.insert(x, 0, 0.0))
        out = (c[window:] - c[:-window]) / window
        return np.concatenate([np.cumsum(x[: window - 1]) / np.arange(1, window), out])


@torch.no_grad()
def evaluate(model: nn.Module, loader: Iterable, loss_fn: Callable, device: torch.device | str | None = None) -> float:
    """Mean of ``loss_fn(model, batch)`` over ``loader``, in eval mode, without gradients."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, n = 0.0, 0
    for batch in loader:
        total += float(loss_fn(model, to_device(batch, device)))
        n += 1
    model.train(was_training)
    if n == 0:
        raise ValueError("evaluate() got an empty loader")
    return total / n


def fit(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    train_loader: Iterable,
    optimizer: torch.optim.Optimizer,
    *,
    epochs: int = 1,
    max_steps: int | None = None,
    val_loader: Iterable | None = None,
    eval_every: int | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    clip_grad_norm: float | None = 1.0,
    device: torch.device | str | None = None,
    progress: bool = True,
    history: History | None = None,
) -> History:
    """Train ``model`` by minimising ``loss_fn(model, batch)``.

    - ``epochs`` passes over ``train_loader``, stopping early after ``max_steps``
      optimiser steps if given (counting from ``history.steps`` when resuming).
    - Gradients are clipped to ``clip_grad_norm`` (``None`` turns clipping off).
    - ``scheduler.step()`` is called after every optimiser step (per-step schedules,
      such as the Transformer's warm-up).
    - With ``val_loader``, the validation loss is measured every ``eval_every`` steps
      (or, without ``eval_every``, after every epoch) and once more at the end.
    - Returns a :class:`History`; pass it back in to continue a run.
    """
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    history = history or History()
    model.train()
    start = time.perf_counter()
    try:
        total = len(train_loader) * epochs  # type: ignore[arg-type]
    except TypeError:
        total = None
    if max_steps is not None:
        total = max_steps - history.steps if total is None else min(total, max_steps - history.steps)
    bar = None
    if progress:
        # Plain-text bar (not the notebook widget): its final state is what a saved
        # notebook shows, on GitHub too. Updated at most every few seconds.
        from tqdm import tqdm

        bar = tqdm(total=total, desc="training", leave=True, mininterval=5.0, dynamic_ncols=False, ncols=90)

    def run_eval() -> None:
        loss = evaluate(model, val_loader, loss_fn, device)
        history.val_loss.append(loss)
        history.val_step.append(history.steps)

    done = False
    for _epoch in range(epochs):
        for batch in train_loader:
            batch = to_device(batch, device)
            loss = loss_fn(model, batch)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"loss became {loss.item()} at step {history.steps}; lower the learning rate")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if clip_grad_norm is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
            optimizer.step()
            history.lr.append(optimizer.param_groups[0]["lr"])
            if scheduler is not None:
                scheduler.step()
            history.train_loss.append(loss.item())
            history.steps += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
            if val_loader is not None and eval_every and history.steps % eval_every == 0:
                run_eval()
            if max_steps is not None and history.steps >= max_steps:
                done = True
                break
        if val_loader is not None and not eval_every:
            run_eval()
        if done:
            break
    if val_loader is not None and (not history.val_step or history.val_step[-1] != history.steps):
        run_eval()  # always end with the final model's validation loss
    if bar is not None:
        bar.close()
    history.seconds += time.perf_counter() - start
    model.eval()
    return history


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of (trainable) parameters; shared tensors are counted once."""
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) in seen or (trainable_only and not p.requires_grad):
            continue
        seen.add(id(p))
        n += p.numel()
    return n


def save_checkpoint(path: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer | None = None, **extra: Any) -> Path:
    """Save model (and optimiser) state plus plain-Python ``extra`` (config, vocab
    lists, history numbers). Written atomically: a crash leaves no half file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"model": model.state_dict(), "extra": extra}
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    tmp = path.with_name(path.name + ".part")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer | None = None, map_location: Any = "cpu") -> dict:
    """Load a checkpoint written by :func:`save_checkpoint` with
    ``weights_only=True`` (no arbitrary code runs) and return its ``extra`` dict."""
    state = torch.load(path, map_location=map_location, weights_only=True)
    model.load_state_dict(state["model"])
    if optimizer is not None:
        if "optimizer" not in state:
            raise KeyError(f"{path} holds no optimizer state; save it with save_checkpoint(..., optimizer=...)")
        optimizer.load_state_dict(state["optimizer"])
    return state.get("extra", {})


def perplexity(loss: float) -> float:
    """exp(mean cross-entropy), capped to avoid overflow."""
    return math.exp(min(loss, 50.0))
