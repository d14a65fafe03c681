"""Checks at the public entry points, written once: the message a learner's slip gets.

Every public function of ``utils`` that takes a tensor, a whole number, a model or an optimizer
checks it here, before any work, so that the error names the argument, says what was given and
what was expected, and how to fix it, instead of PyTorch's ``'list' object has no attribute 'dim'``
or ``'float' object cannot be interpreted as an integer`` from deep inside a loop.

- :func:`tensor`: a ``torch.Tensor`` (not None, a list, a NumPy array or a str), optionally with a
  number of dims and a kind of dtype (``"ids"``, ``"float"``, ``"bool"``);
- :func:`ids`: token ids, a tensor of **any integer dtype** (int64, int32 as NumPy gives on some
  systems, int16, uint8, ...), returned as ``torch.long`` for the embedding and the loss: one rule at
  every entry point that takes ids (float, bool and complex are refused);
- :func:`integer`: a whole number (not a float such as ``1.5 * S``, a bool or None), optionally >= a
  minimum; :func:`sizes` applies it to a constructor's sizes (each >= 1);
- :func:`index`: an id inside a vocabulary (``pad_id``);
- :func:`probability`: a dropout rate in [0, 1);
- :func:`same_device`: a tensor on the device of a model's weights;
- :func:`optimizer_for`: an optimizer (not an ``(optimizer, scheduler)`` pair) that holds the
  model's parameters (not those of an earlier model).

Masks are checked by :func:`utils.attention.check_mask` (shape and the True = may attend
convention), token ids by :func:`utils.text.check_ids` (the vocabulary's range).
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

__all__ = ["tensor", "ids", "integer", "sizes", "index", "probability", "same_device", "optimizer_for"]

_KINDS = {
    "ids": ("integer token ids", lambda t: not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)),
    "float": ("floating-point values", lambda t: t.is_floating_point()),
    "bool": ("bool values (True = may attend / real token)", lambda t: t.dtype == torch.bool),
}


def _how_to_convert(x: object, name: str, kind: str | None) -> str:
    if x is None:
        return "pass the tensor itself (a function that returns nothing gives None)"
    if isinstance(x, str):
        return ("encode the text into ids first, e.g. torch.tensor([vocab.encode(tokenize(text))])"
                if kind == "ids" else "pass a tensor, not text")
    if type(x).__module__ == "numpy":
        return f"convert it with torch.from_numpy({name})"
    if isinstance(x, (list, tuple)):
        if kind == "ids":
            return (f"convert it with torch.tensor({name}) (a list of lists of different lengths: "
                    f"utils.text.pad_sequences)")
        return f"convert it with torch.tensor({name})" + ("" if kind else f" (torch.stack({name}) for a list of tensors)")
    return "pass a torch.Tensor"


def tensor(x: object, name: str, shape: str = "", *, dims: int | tuple[int, ...] | None = None,
           kind: str | None = None) -> torch.Tensor:
    """``x`` if it is a ``torch.Tensor`` with ``dims`` dims (an int or a tuple of allowed counts) and a
    dtype of ``kind`` (``"ids"``, ``"float"`` or ``"bool"``); else a TypeError (wrong type or dtype)
    or a ValueError (wrong number of dims) that names ``name`` and shows ``shape`` (e.g. ``"(B, T)"``)."""
    want = f"a torch.Tensor{' ' + shape if shape else ''}" + (f" of {_KINDS[kind][0]}" if kind else "")
    if not isinstance(x, torch.Tensor):
        mod = type(x).__module__.split(".")[0]
        got = "None" if x is None else f"a {type(x).__name__}" if mod == "builtins" else f"a {mod}.{type(x).__name__}"
        raise TypeError(f"{name} must be {want}, got {got}; {_how_to_convert(x, name, kind)}")
    if dims is not None:
        allowed = (dims,) if isinstance(dims, int) else tuple(dims)
        if x.dim() not in allowed:
            n = " or ".join(str(d) for d in allowed)
            raise ValueError(f"{name} must be {want} ({n} dims), got shape {tuple(x.shape)} ({x.dim()} dims)"
                             + ("; add a batch dim with x[None] for a single sequence" if x.dim() + 1 in allowed else ""))
    if kind is not None and not _KINDS[kind][1](x):
        raise TypeError(f"{name} must hold {_KINDS[kind][0]}, got a tensor of dtype {x.dtype}"
                        + ("; ids are whole numbers: convert with .long(), or check that this is the right tensor"
                           if kind == "ids" else "; convert with .float()" if kind == "float" else ""))
    return x


def ids(x: object, name: str, shape: str = "(B, T)", *, dims: int | tuple[int, ...] | None = 2) -> torch.Tensor:
    """Token ids ``x`` as a ``torch.long`` tensor: any integer dtype is accepted (the same rule at every
    entry point; ``.long()`` returns a long tensor itself, no copy), anything else is refused by
    :func:`tensor` with a message naming ``name``. The vocabulary's range is checked by
    :func:`utils.text.check_ids`."""
    return tensor(x, name, shape + " of token ids", dims=dims, kind="ids").long()


def integer(x: object, name: str, *, minimum: int | None = None, what: str = "") -> int:
    """``x`` as an int if it is a whole number (an int, a NumPy integer or a one-element integer tensor)
    and, with ``minimum``, at least that; a float (``1.5 * S``), a bool, None or a str is a TypeError,
    a number below ``minimum`` a ValueError. ``what`` says what the number is, for the message."""
    about = f" ({what})" if what else ""
    if isinstance(x, torch.Tensor) and x.numel() == 1 and not (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool):
        x = int(x.item())
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        if isinstance(x, float) or (isinstance(x, torch.Tensor) and x.is_floating_point()):
            raise TypeError(f"{name} must be an int{about}, got the float {float(x)!r}; round it, e.g. int({float(x)!r}) "
                            f"or round(...) (a product such as 1.5 * S is a float)")
        got = "None" if x is None else f"{type(x).__name__} {x!r}"[:80]
        raise TypeError(f"{name} must be an int{about}, got {got}")
    x = int(x)
    if minimum is not None and x < minimum:
        raise ValueError(f"{name} must be >= {minimum}{about}, got {x}")
    return x


def sizes(**named: object) -> tuple[int, ...]:
    """Each keyword's value as an int >= 1 (a size: a width, a count of layers or heads, a vocabulary
    size), else the error of :func:`integer` naming that keyword, e.g. ``dec_hidden must be >= 1, got 0``; returns the values in order."""
    return tuple(integer(v, k, minimum=1) for k, v in named.items())


def index(x: object, name: str, size: int, *, of: str = "the vocabulary") -> int:
    """``x`` as an int in ``0 .. size - 1`` (an id inside ``of``), else a ValueError naming ``name``:
    a negative ``pad_id`` would count from the end in ``nn.Embedding`` but match no id in a mask."""
    x = integer(x, name)
    if not 0 <= x < size:
        raise ValueError(f"{name}={x} is outside {of} of size {size} (valid ids: 0..{size - 1}); the course's "
                         f"<pad> is id 0, so leave {name} at its default or give an id of the vocabulary")
    return x


def probability(x: object, name: str = "dropout") -> float:
    """``x`` as a float in [0, 1) (a dropout rate), else a TypeError (not a number) or a ValueError."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number in [0, 1) (a probability), got {type(x).__name__} {x!r}"[:160])
    if not 0 <= x < 1:
        raise ValueError(f"{name} must be a probability in [0, 1), got {x!r}; 0.1 is usual, 0 turns it off")
    return float(x)


def _device_of(model: nn.Module) -> torch.device | None:
    for p in model.parameters():
        return p.device
    for b in model.buffers():
        return b.device
    return None


def same_device(model: nn.Module, **tensors: torch.Tensor | None) -> None:
    """A ValueError naming the argument unless every tensor given (by name) is on the device of
    ``model``'s weights (torch's own message names no argument)."""
    dev = _device_of(model)
    if dev is None:
        return
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor) and t.device != dev:
            raise ValueError(f"{name} is on {t.device} but the model's weights are on {dev}; move it with "
                             f"{name}.to({str(dev)!r}) (or the model with model.to({str(t.device)!r}))")


def optimizer_for(model: nn.Module, optimizer: object, name: str = "optimizer") -> torch.optim.Optimizer:
    """``optimizer`` if it is a ``torch.optim.Optimizer`` that updates at least one of ``model``'s
    parameters; an ``(optimizer, scheduler)`` pair or another object is a TypeError, an optimizer built
    for another model (e.g. by a cell run before the model was built again) a ValueError."""
    if isinstance(optimizer, tuple) and optimizer and isinstance(optimizer[0], torch.optim.Optimizer):
        raise TypeError(f"{name} is a tuple ({', '.join(type(o).__name__ for o in optimizer)}), such as "
                        f"transformer_adam(...) returns; unpack it and pass the scheduler on its own: "
                        f"opt, sched = transformer_adam(...); fit(..., opt, scheduler=sched)")
    if not isinstance(optimizer, torch.optim.Optimizer):
        got = "None" if optimizer is None else type(optimizer).__name__
        raise TypeError(f"{name} must be a torch.optim.Optimizer built on the model's parameters, e.g. "
                        f"torch.optim.Adam(model.parameters(), lr=1e-3); got {got}")
    ours = {id(p) for p in model.parameters()}
    if ours and not any(id(p) in ours for g in optimizer.param_groups for p in g["params"]):
        raise ValueError(f"{name} holds none of this model's parameters: it was built for another model (a cell "
                         f"that built the model again after the optimizer?), so training would never change "
                         f"these weights; build it again from this model: "
                         f"{type(optimizer).__name__}(model.parameters(), ...)")
    return optimizer
