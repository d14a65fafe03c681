"""The Transformer's learning-rate schedule: linear warm-up, then 1/√step decay.

"Attention Is All You Need" (section 5.3) trains with Adam(β1=0.9, β2=0.98, ε=1e-9) and

    lr(step) = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)

which grows linearly for ``warmup`` steps, peaks at ``d_model^-0.5 · warmup^-0.5`` and then
decays like ``step^-0.5``. :func:`transformer_lr` is the formula; :func:`warmup_scheduler`
wraps it in a ``torch.optim.lr_scheduler.LambdaLR`` so the training loop only calls
``scheduler.step()`` after each optimiser step. With ``ramp=False`` each gives the same schedule
without its warm-up (the control: the two differ only in the first ``warmup`` steps).
"""

from __future__ import annotations

import math
from typing import Iterable

import torch

from utils import checks

__all__ = ["transformer_lr", "warmup_scheduler", "transformer_adam", "peak_lr", "warmup_decay"]


def transformer_lr(step: int, d_model: int, warmup: int, factor: float = 1.0, ramp: bool = True) -> float:
    """``factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`` for step ≥ 1
    (step 0 is treated as step 1, so the very first update is not zero).

    ``ramp=False`` drops the warm-up and keeps the rest: the peak rate
    ``factor · d_model^-0.5 · warmup^-0.5`` from the first step to step ``warmup``, then the
    same ``step^-0.5`` decay."""
    step = checks.integer(step, "step", what="the optimiser steps taken")
    factor = checks.number(factor, "factor", above=0.0, what="it scales every rate; 0 would train nothing")
    d_model = checks.integer(d_model, "d_model")
    warmup = checks.integer(warmup, "warmup", what="warm-up steps")
    if d_model < 1 or warmup < 1:
        raise ValueError(f"d_model and warmup must be >= 1, got d_model={d_model}, warmup={warmup}")
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    step = max(step, 1)
    rise = step * warmup ** -1.5 if ramp else warmup ** -0.5
    return factor * d_model ** -0.5 * min(step ** -0.5, rise)


def warmup_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup: int,
                     factor: float = 1.0, ramp: bool = True) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` that sets every parameter group's learning rate to
    ``transformer_lr(step + 1, d_model, warmup, factor, ramp)`` (the lr the optimiser was created
    with is replaced, not scaled). Call ``scheduler.step()`` after every ``optimizer.step()``."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
                        + ("; build one on the model's parameters first: torch.optim.Adam(model.parameters(), lr=1.0)"
                           if isinstance(optimizer, torch.nn.Module) else ""))
    transformer_lr(1, d_model, warmup, factor)  # validate the arguments now, not at the first step
    base = [group["lr"] for group in optimizer.param_groups]
    if any(b <= 0 for b in base):
        raise ValueError(f"the optimiser's lr must be > 0 (it is divided out), got {base}")
    lambdas = [lambda step, b=b: transformer_lr(step + 1, d_model, warmup, factor, ramp) / b for b in base]
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)


def transformer_adam(params: Iterable[torch.nn.Parameter] | Iterable[dict], d_model: int, warmup: int, factor: float = 1.0, ramp: bool = True
                     ) -> tuple[torch.optim.Adam, torch.optim.lr_scheduler.LambdaLR]:
    """The paper's optimiser, Adam(β1=0.9, β2=0.98, ε=1e-9), with its warm-up schedule
    (``ramp=False``: the same schedule without the warm-up)."""
    if isinstance(params, torch.nn.Module) or isinstance(params, torch.Tensor):
        raise TypeError(f"params must be the parameters to train, model.parameters(), got a {type(params).__name__}; "
                        f"transformer_adam(model.parameters(), d_model, warmup)")
    opt = torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    return opt, warmup_scheduler(opt, d_model, warmup, factor, ramp)


def peak_lr(d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The schedule's highest rate, reached at ``step == warmup``: factor / √(d_model · warmup)."""
    d_model, warmup = checks.integer(d_model, "d_model", minimum=1), checks.integer(warmup, "warmup", minimum=1)
    factor = checks.number(factor, "factor", above=0.0, what="it scales every rate; 0 would train nothing")
    return factor / math.sqrt(d_model * warmup)


def warmup_decay(steps: int, warmup: bool = True, warmup_fraction: float = 0.2, floor: float = 0.02):
    """A ``LambdaLR`` factor for a short run of ``steps`` optimiser steps (notebook 08's copy task,
    ``scripts/recipes/warmup_optimizers.py``): the peak rate times a linear decay to ``floor`` over the steps
    after the first ``w = int(steps · warmup_fraction)``; with ``warmup`` it also rises linearly over
    those first ``w`` steps (``min(rise, decay)``), without it starts at the peak. The two differ only in
    the first ``w`` steps. The argument ``s`` is the number of optimiser steps taken so far."""
    steps = checks.integer(steps, "steps", what="optimiser steps in the run")
    floor = checks.number(floor, "floor", above=0.0, at_most=1.0,
                          what="the last steps' share of the peak rate, which is 1: 0 stops training, above 1 is "
                               "higher than the peak")
    warmup_fraction = checks.number(warmup_fraction, "warmup_fraction", above=0.0, at_most=1.0)
    w = int(steps * warmup_fraction + 1e-9)  # steps // 5 for the default, without float round-off
    if steps < 2 or not 1 <= w < steps:
        raise ValueError(f"need steps >= 2 and 1 <= steps * warmup_fraction < steps, got steps={steps}, "
                         f"warmup_fraction={warmup_fraction}")

    def factor(s: int) -> float:
        decay = max(floor, (steps - s) / (steps - w))
        return min((s + 1) / w, decay) if warmup else min(1.0, decay)
    return factor
