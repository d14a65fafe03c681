"""Seeds, device choice, one small training loop, and checkpoints.

The loop is deliberately generic: you hand it a ``loss_fn(model, batch) -> scalar
tensor`` and it does the rest (device moves, clipping, progress bar, history).
Every notebook trains through it, so the mechanics are written and tested once.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import re
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import torch
from torch import nn

from utils import checks

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
    "graph_depth",
    "CheckpointError",
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
    machine beside a second training process, a notebook-09 training step took 3.4x
    its quiet time with 2 threads and 1.5x with 1 (``scripts/benchmarks/bench_load.py --steps``).
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


def _loader_and_loss(loader: object, loss_fn: object, name: str) -> None:
    """A TypeError naming the argument when the loader and the loss function are swapped (or either is missing)."""
    if callable(loader) and not hasattr(loader, "__iter__") and hasattr(loss_fn, "__iter__"):
        raise TypeError(f"{name} is a function and loss_fn is a {type(loss_fn).__name__}: they are swapped; the order is "
                        f"(model, {'loss_fn, train_loader' if name == 'train_loader' else 'loader, loss_fn'}, ...)")
    if not hasattr(loader, "__iter__"):
        raise TypeError(f"{name} must be an iterable of batches (a DataLoader, a list), got {type(loader).__name__}")


def _scheduler_for(optimizer: torch.optim.Optimizer, scheduler: object) -> None:
    """The rules for ``fit``'s scheduler: one that steps once per optimiser step, on this optimiser."""
    if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
        raise TypeError("scheduler is a ReduceLROnPlateau, which steps on a validation metric (scheduler.step(val_loss)) "
                        "and fit calls scheduler.step() after every optimiser step; call fit one epoch at a time and "
                        "step it yourself: scheduler.step(history.val_loss[-1])")
    if not hasattr(scheduler, "step") or not hasattr(scheduler, "optimizer"):
        raise TypeError(f"scheduler must be a learning-rate scheduler (torch.optim.lr_scheduler, with .step()), got "
                        f"{type(scheduler).__name__}" + ("; a factor function such as warmup_decay's goes into "
                                                          "torch.optim.lr_scheduler.LambdaLR(optimizer, factor)"
                                                          if callable(scheduler) else ""))
    if scheduler.optimizer is not optimizer:
        raise ValueError("scheduler drives another optimizer than the one given to fit (a cell that built the optimizer "
                         "was run again, the scheduler's was not): it would set the other one's learning rate and this "
                         "one would train at its initial rate; build the scheduler again on this optimizer, e.g. "
                         "warmup_scheduler(optimizer, ...)")


def _check_loss(loss: Any) -> torch.Tensor:
    """``loss`` if it is a one-number tensor, else a clear error (not PyTorch's)."""
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"loss_fn must return a torch.Tensor (the scalar loss), got {type(loss).__name__}")
    if loss.numel() != 1:
        raise ValueError(f"loss_fn must return a scalar (one number), got a tensor of shape {tuple(loss.shape)}; "
                         f"reduce it, e.g. with .mean() over the batch")
    return loss


@torch.no_grad()
def evaluate(model: nn.Module, loader: Iterable, loss_fn: Callable, device: torch.device | str | None = None) -> float:
    """Mean of ``loss_fn(model, batch)`` over ``loader``, in eval mode, without gradients."""
    _loader_and_loss(loader, loss_fn, "loader")
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, n = 0.0, 0
    for batch in loader:
        total += float(_check_loss(loss_fn(model, to_device(batch, device))))
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

    ``max_steps=0``, or resuming a history that already has ``max_steps`` steps, trains
    no step. ``train_loader`` must be re-iterable (a DataLoader, a list) when ``epochs > 1``;
    a loader that yields no batch, or a ``loss_fn`` that returns more than one number,
    raises a ValueError.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"fit's model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be a function loss_fn(model, batch) -> scalar loss, got {type(loss_fn).__name__}"
                        + ("; train_loader and loss_fn are swapped: the order is (model, loss_fn, train_loader, optimizer)"
                           if callable(train_loader) else ""))
    checks.optimizer_for(model, optimizer)
    if scheduler is not None:
        _scheduler_for(optimizer, scheduler)
    epochs = checks.integer(epochs, "epochs", minimum=1)
    if max_steps is not None:
        max_steps = checks.integer(max_steps, "max_steps")
    if clip_grad_norm is not None and not clip_grad_norm > 0:
        raise ValueError(f"clip_grad_norm must be > 0 (0 would zero every gradient); pass None to turn clipping off, "
                         f"got {clip_grad_norm}")
    if max_steps is not None and max_steps < 0:
        raise ValueError(f"max_steps must be >= 0 (or None for no limit), got {max_steps}")
    if epochs > 1 and isinstance(train_loader, Iterator):
        raise ValueError(f"train_loader is a one-shot {type(train_loader).__name__} (a generator or iterator): it "
                         f"would be empty after the first of the {epochs} epochs. Pass something that can be iterated "
                         f"again, such as a DataLoader or a list of batches, or use epochs=1")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    history = history or History()
    model.train()
    start = time.perf_counter()
    try:
        total = len(train_loader) * epochs  # type: ignore[arg-type]
    except TypeError:
        total = None
    if max_steps is not None:
        left = max(0, max_steps - history.steps)
        total = left if total is None else min(total, left)
    bar = None
    if progress:
        bar, bar_display = _progress_bar(total)

    def run_eval() -> None:
        loss = evaluate(model, val_loader, loss_fn, device)
        history.val_loss.append(loss)
        history.val_step.append(history.steps)

    done = max_steps is not None and history.steps >= max_steps
    for _epoch in range(epochs):
        if done:
            break
        batches = 0
        for batch in train_loader:
            batches += 1
            batch = to_device(batch, device)
            loss = _check_loss(loss_fn(model, batch))
            if not torch.isfinite(loss):
                if batches == 1 and history.steps == 0:  # no update yet: the learning rate cannot be the cause
                    raise FloatingPointError(
                        f"loss is {loss.item()} at the first step, before any update, so the learning rate is not "
                        f"the cause: check the batch (NaN or inf in the inputs, e.g. torch.isfinite(x).all()) and "
                        f"the loss function")
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
        if batches == 0:
            raise ValueError("the training loader yielded no batches: is its dataset empty (or smaller than "
                             "batch_size with drop_last=True)?")
        if val_loader is not None and not eval_every:
            run_eval()
    if val_loader is not None and (not history.val_step or history.val_step[-1] != history.steps):
        run_eval()  # always end with the final model's validation loss
    history.seconds += time.perf_counter() - start
    if bar is not None:
        bar.close()
        if bar_display is not None:  # the saved notebook's text shows the finished bar, not 0%
            bar_display.update(widget_bundle(bar.container), raw=True)
    model.eval()
    return history


def _progress_bar(total: int | None):
    """tqdm.auto's bar: a widget in Jupyter (not a stderr box that looks like an error), text
    in a terminal; redrawn at most every few seconds. In Jupyter it is displayed with a
    display id, so that ``fit`` can refresh its text form when it ends (that text, the
    finished bar, is what a saved notebook shows without a kernel). Returns (bar, handle)."""
    from tqdm.auto import tqdm
    from tqdm.notebook import tqdm_notebook

    if not issubclass(tqdm, tqdm_notebook):
        return tqdm(total=total, desc="training", leave=True, mininterval=5.0), None
    from IPython.display import display

    bar = tqdm(total=total, desc="training", leave=True, mininterval=5.0, display=False)
    return bar, display(widget_bundle(bar.container), raw=True, display_id=True)


def widget_bundle(w) -> dict:
    """The display bundle of an ipywidgets widget (its live view, and its repr as text/plain):
    ipywidgets 8's ``_repr_mimebundle_``, built the same way under ipywidgets 7 (Colab's), which has
    none: there displaying the widget itself publishes a new output each time, so a display id
    could not be updated in place."""
    if hasattr(w, "_repr_mimebundle_"):
        return w._repr_mimebundle_() or {}
    text = repr(w)
    data = {"text/plain": text[:110] + "…" if len(text) > 110 else text}
    if w._view_name is not None:
        data["application/vnd.jupyter.widget-view+json"] = {"version_major": 2, "version_minor": 0,
                                                            "model_id": w._model_id}
    return data


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of (trainable) parameters; shared tensors are counted once."""
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) in seen or (trainable_only and not p.requires_grad):
            continue
        seen.add(id(p))
        n += p.numel()
    return n


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be used; the message names the file, says what was
    expected and what to do."""


_PLAIN = (type(None), bool, int, float, str)
_WRITTEN_BY = "a checkpoint written by utils.training.save_checkpoint"


def _check_plain(value: Any, where: str) -> None:
    """Raise a TypeError naming ``where`` unless ``torch.load(weights_only=True)`` can load ``value`` back."""
    if type(value) in _PLAIN or isinstance(value, torch.Tensor):
        return
    if type(value) in (list, tuple, torch.Size):
        for i, v in enumerate(value):
            _check_plain(v, f"{where}[{i}]")
        return
    if type(value) in (dict, OrderedDict):
        for k, v in value.items():
            _check_plain(k, f"a key of {where}")
            _check_plain(v, f"{where}[{k!r}]")
        return
    if hasattr(value, "to_list"):
        hint = f"e.g. {where}.to_list()"
    elif dataclasses.is_dataclass(value):
        hint = "e.g. dataclasses.asdict(...)"
    elif isinstance(value, (int, float)):  # numpy scalars, enums
        hint = "e.g. int(...) or float(...)"
    else:
        hint = "e.g. a dict of its settings"
    raise TypeError(f"save_checkpoint: {where} is a {type(value).__module__}.{type(value).__qualname__}, which "
                    f"torch.load(weights_only=True) refuses to load back. Store a plain form instead ({hint}): None, "
                    f"bool, int, float, str, tensors, and lists, tuples and dicts of them")


def save_checkpoint(path: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer | None = None, *,
                    vocab: Any = None, **extra: Any) -> Path:
    """Save model (and optimiser) state plus plain-Python ``extra`` (config, vocab
    lists, history numbers). Written atomically: a crash leaves no half file.

    ``extra`` values must be plain data (None, bool, int, float, str, tensors, and
    lists/tuples/dicts of them), so that :func:`load_checkpoint` can load them safely;
    anything else (a ``Vocab``: use ``vocab.to_list()``) raises a TypeError. Save the
    model's sizes as ``config=...`` and :func:`load_checkpoint` checks them.

    The file describes itself: it stores the SHA-256 of the weights (damaged bytes are named on load)
    and the vocabulary's fingerprint: ``vocab`` (a ``Vocab``, a ``CharTokenizer``, a list of tokens or a
    ``(src_vocab, tgt_vocab)`` pair; stored as ``extra["vocab"]``, a list), or by default the one the model
    carries (from an earlier ``save_checkpoint(..., vocab=...)``, ``load_checkpoint`` or ``load_pretrained``).
    ``load_checkpoint`` gives it back to the model, and wherever a vocabulary meets the model it is compared
    (``load_checkpoint(..., vocab=...)``, ``translate_sentence``, ``plot_next_char``). A ``torch.compile``d
    model is saved as the plain model (its weights load into either)."""
    _path_and_model(path, model, "save_checkpoint")
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"save_checkpoint: {path} is a folder; give a file path, e.g. {path / 'model.pt'}")
    plain = getattr(model, "_orig_mod", model)  # torch.compile(model) wraps it: save the plain model's weights
    if vocab is not None:
        extra["vocab"] = checks.vocab_tokens(vocab)
        checks.bind_vocab(plain, vocab)
    elif getattr(plain, "vocab_fingerprint", None) is not None and getattr(plain, "vocab_tokens", None) is not None:
        extra.setdefault("vocab", plain.vocab_tokens)  # the model's own, from load_checkpoint or an earlier save
    for key, value in extra.items():
        _check_plain(value, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    weights = plain.state_dict()
    integrity = {"sha256": checks.content_sha256(weights)}
    if getattr(plain, "vocab_fingerprint", None) is not None:
        integrity["vocab"] = plain.vocab_fingerprint
    state = {"model": weights, "extra": extra, "integrity": integrity}
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    tmp = path.with_name(path.name + ".part")
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _as_dict(config: Any) -> dict | None:
    """A config as a plain dict (from a dict or a dataclass instance), else None."""
    if isinstance(config, dict):
        return dict(config)
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    return None


def load_checkpoint(path: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                    map_location: Any = "cpu", expected_config: Any = None, *, vocab: Any = None) -> dict:
    """Load a checkpoint written by :func:`save_checkpoint` with
    ``weights_only=True`` (no arbitrary code runs) and return its ``extra`` dict.

    The weights are compared with the SHA-256 stored when they were saved (damaged bytes: a
    :class:`CheckpointError` naming the file), and ``vocab``, if given, with the vocabulary saved with
    them (another vocabulary, even of the same size, decodes the model's ids to other tokens: a
    ValueError naming ``vocab``).

    If it was saved with ``config=...``, that config is compared with ``expected_config``
    (a dict or dataclass) or, by default, with ``model.config`` / ``model.cfg`` (dropout
    rates excepted: they do not change what the weights compute). Raises
    :class:`CheckpointError` (naming the file) for a file that is truncated, empty, not a
    checkpoint, of another model, or without the optimizer state asked for."""
    _path_and_model(path, model, "load_checkpoint")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint file at {path}" + (" (it is a folder)" if path.is_dir() else ""))
    if isinstance(map_location, (str, torch.device)) and torch.device(map_location).type == "cuda" \
            and not torch.cuda.is_available():
        raise RuntimeError(f"load_checkpoint: map_location={str(map_location)!r}, but CUDA is not available here; "
                           f"load onto the CPU (map_location='cpu', the default) or map_location=get_device()")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # noqa: BLE001 - every failure gets the same plain explanation
        found = re.search(r"GLOBAL ([\w.]+)", str(e))
        why = (f"it holds a Python object ({found.group(1)}), not plain data, and such objects are never loaded, "
               f"for safety; save the checkpoint again with a plain form of it (e.g. vocab.to_list())" if found else
               f"it is truncated or empty (an interrupted save or copy) or not a checkpoint at all "
               f"({type(e).__name__} while reading it); copy it again or save it again")
        raise CheckpointError(f"{path} ({path.stat().st_size:,} bytes) cannot be read as {_WRITTEN_BY}: {why}") from None
    if not isinstance(state, dict) or "model" not in state:
        if isinstance(state, dict) and state and all(isinstance(v, torch.Tensor) for v in state.values()):
            what = ("a bare state_dict (from torch.save(model.state_dict())); load it with "
                    "model.load_state_dict(torch.load(path, weights_only=True)), or save with save_checkpoint")
        else:
            what = f"a {type(state).__name__}" + (f" with keys {sorted(map(str, state))[:8]}" if isinstance(state, dict) else "")
        raise CheckpointError(f"{path} is not {_WRITTEN_BY} (a dict with a 'model' entry): it holds {what}")
    extra = state.get("extra", {})
    integrity = state.get("integrity") or {}
    compiled = getattr(model, "_orig_mod", None)
    model = compiled if isinstance(compiled, nn.Module) else model  # torch.compile(model): load into the plain model
    if optimizer is not None:
        checks.optimizer_for(model, optimizer)
    if "sha256" in integrity and checks.content_sha256(state["model"]) != integrity["sha256"]:
        raise CheckpointError(f"{path} ({path.stat().st_size:,} bytes) is damaged: its weights do not match the SHA-256 "
                              f"stored when it was saved (bytes changed by a bad copy, download or disk); copy it "
                              f"again or save it again")
    if vocab is not None:
        if "vocab" not in integrity:
            raise CheckpointError(f"{path} was saved without a vocabulary, so vocab cannot be compared with it; save it "
                                  f"with save_checkpoint(..., vocab=...)")
        checks.same_vocab(extra.get("vocab"), integrity["vocab"], vocab, "vocab", str(path))
    saved = _as_dict(extra.get("config"))
    want = _as_dict(expected_config if expected_config is not None else
                    getattr(model, "config", getattr(model, "cfg", None)))
    if saved is not None and want is not None:
        keys = sorted((k for k in saved.keys() | want.keys() if "dropout" not in str(k)), key=str)
        diff = [f"{k}: saved {saved.get(k, '(missing)')!r}, expected {want.get(k, '(missing)')!r}"
                for k in keys if saved.get(k, ...) != want.get(k, ...)]
        if diff:
            raise CheckpointError(f"{path} was saved from a model with another config ({'; '.join(diff)}); build the "
                                  f"model with the config saved in the file, or load another file")
    weights = state["model"]
    if weights and all(k.startswith("_orig_mod.") for k in weights):  # saved from torch.compile(model) before issue 51
        weights = {k.removeprefix("_orig_mod."): v for k, v in weights.items()}
    try:
        model.load_state_dict(weights)
    except RuntimeError as e:
        raise CheckpointError(f"the weights in {path} do not fit this model ({type(model).__name__}): {e}") from None
    if optimizer is not None:
        if "optimizer" not in state:
            raise CheckpointError(f"{path} holds no optimizer state; save it with save_checkpoint(..., optimizer=...)")
        optimizer.load_state_dict(state["optimizer"])
    if "vocab" in integrity:  # the model carries its vocabulary's fingerprint from now on
        checks.bind_vocab(model, integrity["vocab"], extra.get("vocab"))
    return extra


def _path_and_model(path: object, model: object, where: str) -> None:
    """A TypeError naming ``path`` or ``model`` when they are swapped, or not a path and a module."""
    if isinstance(path, nn.Module):
        raise TypeError(f"{where}(path, model, ...): path is a {type(path).__name__} (a model) and model a "
                        f"{type(model).__name__}: the path comes first, {where}('runs/model.pt', model)")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: path must be a str or a pathlib.Path, got {type(path).__name__}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"{where}: model must be a torch.nn.Module, got {type(model).__name__}")


def perplexity(loss: float) -> float:
    """exp(mean cross-entropy), capped to avoid overflow. ``loss`` is one number (a float, or a one-element
    tensor such as a loss function returns); the mean of several losses is the caller's choice."""
    if isinstance(loss, (list, tuple)) or isinstance(loss, torch.Tensor) and loss.numel() != 1:
        n = len(loss) if isinstance(loss, (list, tuple)) else loss.numel()
        raise TypeError(f"loss must be one number, the mean cross-entropy, got a {type(loss).__name__} of {n} values; "
                        f"average them first, e.g. perplexity(sum(losses) / len(losses)), or take history.val_loss[-1]")
    loss = checks.number(loss, "loss", at_least=0.0, what="a mean cross-entropy in nats")
    return math.exp(min(loss, 50.0))


@checks.contract
def graph_depth(t: checks.Tensor["..."]) -> int:
    """The longest chain of operations in ``t``'s autograd graph, from the inputs to ``t`` (notebook 02: a GRU's
    last state is one step deeper for every token; a running mean's depth does not grow). ``t`` must have been
    computed from a tensor that requires grad. Walked without recursion, so a graph thousands deep is fine."""
    if t.grad_fn is None:
        raise ValueError("t: no autograd graph (compute it from a tensor with requires_grad=True)")
    longest, stack = {}, [(t.grad_fn, False)]
    while stack:
        fn, parents_done = stack.pop()
        inputs = [f for f, _ in fn.next_functions if f is not None]
        if parents_done:
            longest[fn] = 1 + max((longest[f] for f in inputs), default=0)
        elif fn not in longest:
            stack.append((fn, True))
            stack.extend((f, False) for f in inputs if f not in longest)
    return longest[t.grad_fn]
