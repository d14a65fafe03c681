"""Checks at the public entry points, written once: the message a learner's slip gets.

Each public entry point declares its contract once, at its door (:func:`contract`): the shapes and dtypes
of its tensor arguments are part of its signature, written with the course's letters,

    @contract(rules=_rules)
    def forward(self, src: Ids["B S"], tgt_in: Ids["B T"]) -> Float["B T tgt_vocab"]:

and checked at the call (:func:`check_arguments`), so that the error names the argument, the shape with its
letters, what was given, and how to fix it, instead of PyTorch's ``'list' object has no attribute 'dim'``
or ``mat1 and mat2 must have the same dtype`` from deep inside a layer. The value rules that shapes cannot
say live here, one place each, and are called from the door:

- :func:`tensor`: a ``torch.Tensor`` (not None, a list, a NumPy array or a str), optionally with a
  number of dims and a kind of dtype (``"ids"``, ``"float"``, ``"bool"``);
- :func:`ids`: token ids, a tensor of **any integer dtype** (int64, int32 as NumPy gives on some
  systems, int16, uint8, ...), returned as ``torch.long`` for the embedding and the loss;
- :func:`vocab_ids`: ids inside the vocabulary; :func:`right_padded`: padding only at the end of each row;
  :func:`positions`: positions inside the model's table;
- :func:`integer`: a whole number (not a float such as ``1.5 * S``, a bool or None), optionally >= a
  minimum; :func:`sizes` applies it to a constructor's sizes (each >= 1);
- :func:`index`: an id inside a vocabulary (``pad_id``);
- :func:`probability`: a dropout rate in [0, 1);
- :func:`same_device`: a tensor on the device of a model's weights;
- :func:`optimizer_for`: an optimizer (not an ``(optimizer, scheduler)`` pair) that holds the
  model's parameters (not those of an earlier model); :func:`training_mode`: a loss with gradients on a
  model left in eval mode; :func:`batch_of_pairs`: a ``PairBatch``, not a tuple;
- :func:`content_sha256`, :func:`vocab_fingerprint`, :func:`same_vocab`: a saved model describes itself.

A union says either will do (``ids_or_bool: Ids["B Tk"] | Bool["B Tk"]``; ``Float["Tq Tk"] | np.ndarray``
takes a NumPy array too, handed on as a tensor), ``*masks: Bool["..."] | None`` is checked mask by mask,
``...`` stands for any number of dims (the letters after it are checked, those before it counted:
``Float["R C ..."]`` is at least 2 dims), and ``contract(any_device=...,
any_dtype=...)`` names the arguments that keep their own device or dtype.

Behind the door nothing is checked again: while a door's function runs, :func:`trusted` is True and the
doors it calls (an attention layer inside a model) go straight to their computation. Masks are checked by
:func:`utils.attention.check_mask` (shape and the True = may attend convention).
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable

import torch
from torch import nn

__all__ = ["broadcast", "bind_vocab", "model_vocab", "tensor", "ids", "integer", "number", "config", "sizes", "index", "probability", "same_device", "optimizer_for", "Spec", "Ids",
           "Float", "Bool", "Tensor", "contract", "trusted", "checks_off", "check_arguments", "vocab_ids", "right_padded",
           "positions", "finite"]

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
    if isinstance(x, nn.Module):
        return "pass a tensor, not the model (its weights are e.g. model.embed.weight)"
    if isinstance(x, (list, tuple)):
        if kind == "ids":
            return (f"convert it with torch.tensor({name}) (a list of lists of different lengths: "
                    f"utils.text.pad_sequences)")
        return f"convert it with torch.tensor({name})" + ("" if kind else f" (torch.stack({name}) for a list of tensors)")
    return "pass a torch.Tensor"


def tensor(x: object, name: str, shape: str = "", *, dims: int | tuple[int, ...] | None = None,
           kind: str | tuple[str, ...] | None = None) -> torch.Tensor:
    """``x`` if it is a ``torch.Tensor`` with ``dims`` dims (an int or a tuple of allowed counts) and a
    dtype of ``kind`` (``"ids"``, ``"float"`` or ``"bool"``, or a tuple of them: any one will do); else a
    TypeError (wrong type or dtype) or a ValueError (wrong number of dims) that names ``name`` and shows
    ``shape`` (e.g. ``"(B, T)"``)."""
    kinds = (kind,) if isinstance(kind, str) else kind or ()

    def want() -> str:  # (written only for a message)
        what = " or ".join(_KINDS[k][0] for k in kinds)
        return f"a torch.Tensor{' ' + shape if shape else ''}" + (f" of {what}" if kinds else "")

    if not isinstance(x, torch.Tensor):
        mod = type(x).__module__.split(".")[0]
        got = "None" if x is None else f"a {type(x).__name__}" if mod == "builtins" else f"a {mod}.{type(x).__name__}"
        raise TypeError(f"{name} must be {want()}, got {got}; {_how_to_convert(x, name, kinds[0] if kinds else None)}")
    if kinds and not (_KINDS[kinds[0]][1](x) or any(_KINDS[k][1](x) for k in kinds[1:])):  # the dtype before the rank
        raise TypeError(f"{name} must hold {' or '.join(_KINDS[k][0] for k in kinds)}, got a tensor of dtype {x.dtype} "
                        f"(shape {tuple(x.shape)}{', expected ' + shape if shape else ''})" + _convert_hint(x, kinds[0]))
    if dims is not None:
        allowed = (dims,) if isinstance(dims, int) else tuple(dims)
        if x.dim() not in allowed:
            n = " or ".join(str(d) for d in allowed)
            raise ValueError(f"{name} must be {want()} ({n} dims), got shape {tuple(x.shape)} ({x.dim()} dims)"
                             + ("; add a batch dim with x[None] for a single sequence" if x.dim() + 1 in allowed else ""))
    return x


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to (``torch.broadcast_shapes``, whose symbolic-shape machinery costs
    tens of microseconds a call at a door), else a RuntimeError as torch raises."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for shape in shapes:
        for i, size in enumerate(shape, n - len(shape)):
            if size != out[i] and out[i] != 1 and size != 1:
                raise RuntimeError(f"shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast")
            if out[i] == 1:
                out[i] = size
    return tuple(out)


def _convert_hint(x: torch.Tensor, kind: str) -> str:
    """What to do about a tensor of the wrong kind of dtype: token ids where vectors go are embedded first."""
    if kind == "ids":
        return "; ids are whole numbers: convert with .long(), or check that this is the right tensor"
    if kind == "float" and not (x.is_floating_point() or x.dtype == torch.bool):
        return ("; these look like token ids: embed them first (the model's embedding, e.g. model.embed(ids)), "
                "or convert with .float() if they are numbers")
    return "; convert with .float()" if kind == "float" else ""


def ids(x: object, name: str, shape: str = "(B, T)", *, dims: int | tuple[int, ...] | None = 2) -> torch.Tensor:
    """Token ids ``x`` as a ``torch.long`` tensor: any integer dtype is accepted (the same rule at every
    entry point; ``.long()`` returns a long tensor itself, no copy), anything else is refused by
    :func:`tensor` with a message naming ``name``. The vocabulary's range is checked by
    :func:`utils.text.check_ids`."""
    return tensor(x, name, shape, dims=dims, kind="ids").long()


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


def number(x: object, name: str, *, above: float | None = None, at_least: float | None = None,
           at_most: float | None = None, what: str = "") -> float:
    """``x`` as a float if it is a finite real number (an int, a float, a NumPy number or a one-element tensor)
    with ``x > above``, ``x >= at_least`` and ``x <= at_most`` where given; a bool, None or a str is a TypeError,
    NaN, inf or a number out of range a ValueError naming ``name`` (``what`` says what it is)."""
    about = f" ({what})" if what else ""
    if isinstance(x, torch.Tensor) and x.numel() == 1 and (x.is_floating_point() or not x.dtype == torch.bool):
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        got = "None" if x is None else f"{type(x).__name__} {x!r}"[:80]
        raise TypeError(f"{name} must be a number{about}, got {got}")
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number{about}, got {x}")
    for ok, rule in ((above is None or x > above, f"> {above}"), (at_least is None or x >= at_least, f">= {at_least}"),
                     (at_most is None or x <= at_most, f"<= {at_most}")):
        if not ok:
            raise ValueError(f"{name} must be {rule}{about}, got {x!r}")
    return x


def sizes(**named: object) -> tuple[int, ...]:
    """Each keyword's value as an int >= 1 (a size: a width, a count of layers or heads, a vocabulary
    size), else the error of :func:`integer` naming that keyword, e.g. ``dec_hidden must be >= 1, got 0``; returns the values in order."""
    return tuple(integer(v, k, minimum=1) for k, v in named.items())


def config(cfg: object, kind: type, name: str = "cfg") -> object:
    """``cfg`` if it is a ``kind`` (a ``TransformerConfig``, a ``GPTConfig``), else a TypeError naming ``name`` that
    shows how to build one from what was given (a dict of its fields, a vocabulary size)."""
    if isinstance(cfg, kind):
        return cfg
    k = kind.__name__
    how = (f"{k}(**{name})" if isinstance(cfg, dict) else
           f"{k}(...) with the sizes as fields, e.g. {k}({cfg!r}, ...)" if isinstance(cfg, numbers.Number) else f"{k}(...)")
    raise TypeError(f"{name} must be a {k}, got {type(cfg).__name__} {cfg!r}"[:160] + f"; build it with {how}")


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


# --------------------------------------------------------------------------- contracts, declared once at the door


class Spec:
    """What one tensor argument must be: its dims, written with the course's letters (``"B T"``,
    ``"B S d_model"``, ``"... Tq d_k"``; ``...`` = any number of dims, of which the letters after it are checked
    and those before it only counted, ``"R C ..."`` = at least 2 dims; a number = that size), and
    its kind of dtype (``"ids"``, ``"float"``, ``"bool"``, a tuple of them, or None for any). Written in a
    signature as ``Ids["B T"]``, ``Float["B T D"]``, ``Bool["B T"]`` or ``Tensor["..."]`` (see
    :func:`contract`); a union says either will do: ``Ids["B T"] | Bool["B T"]`` (ids or a bool mask),
    ``Float["Tq Tk"] | np.ndarray`` (a NumPy array too, handed on as a tensor)."""

    __slots__ = ("dims", "kind", "text", "arrays")

    def __init__(self, dims: str | tuple[str, ...], kind: str | tuple[str, ...] | None, arrays: bool = False):
        self.dims = tuple(dims.split()) if isinstance(dims, str) else tuple(dims)
        self.kind = kind
        self.arrays = arrays
        self.text = "(" + ", ".join(self.dims) + ("," if len(self.dims) == 1 else "") + ")"

    def letters(self, shape: torch.Size) -> list[tuple[str, int]]:
        """(letter, size) for the dims of ``shape`` after the ``...``, the last first (letters before it are
        only counted: ``"B T ..."`` is at least 2 dims)."""
        out = []
        for letter, size in zip(reversed(self.dims), reversed(shape)):
            if letter == "...":
                break
            out.append((letter, size))
        return out

    def __repr__(self) -> str:
        return f"{self.text} {self.kind or 'tensor'}"


class _Kind:
    """``Ids["B T"]`` is ``Annotated[torch.Tensor, Spec("B T", "ids")]``: a tensor to type checkers and
    readers, with its shape and dtype kind for :func:`contract` (jaxtyping's ``Int[Tensor, "B T"]``, checked
    with the course's messages)."""

    def __init__(self, kind: str | None):
        self.kind = kind

    def __getitem__(self, dims: str):
        from typing import Annotated
        return Annotated[torch.Tensor, Spec(dims, self.kind)]


Ids, Float, Bool, Tensor = _Kind("ids"), _Kind("float"), _Kind("bool"), _Kind(None)

_door = threading.local()  # .open: a door's function is running on this thread


def trusted() -> bool:
    """True while a :func:`contract` door's function runs: its arguments were checked at the door, so the
    doors it calls (an attention layer inside a model) check nothing again."""
    return getattr(_door, "open", False)


class checks_off:
    """``with utils.checks.checks_off():`` the doors check nothing on this thread: each public entry point
    goes straight to its computation, as it does behind another door. For benchmarks, to measure what the
    checks cost (``scripts/benchmarks/bench_checks.py --switch`` prints the table), never for learners: a slip
    inside the block meets PyTorch's own error, or none. The value rules called directly (``fit``'s,
    ``save_checkpoint``'s) still run."""

    def __enter__(self) -> "checks_off":
        self.was = getattr(_door, "open", False)
        _door.open = True
        return self

    def __exit__(self, *exc) -> None:
        _door.open = self.was


def _specs(fn: Callable) -> dict[str, tuple[Spec, bool, bool]]:
    """{parameter: (Spec, None allowed, one for each of ``*args``)} from ``fn``'s annotations (read once, at
    its first call). A union of specs (``Ids["B T"] | Bool["B T"]``) is one spec with their kinds; a union
    with ``np.ndarray`` accepts a NumPy array too."""
    import inspect
    import types
    import typing

    parameters = inspect.signature(fn).parameters
    out = {}
    for name, hint in typing.get_type_hints(fn, include_extras=True).items():
        if name == "return":
            continue
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        args = typing.get_args(hint) if union else (hint,)
        specs = [m for a in args if typing.get_origin(a) is typing.Annotated for m in a.__metadata__
                 if isinstance(m, Spec)]
        if not specs:
            continue
        arrays = any(getattr(a, "__module__", "") == "numpy" and getattr(a, "__name__", "") == "ndarray" for a in args)
        spec = specs[0]
        if len(specs) > 1 or arrays:
            assert all(s.dims == spec.dims for s in specs), f"{fn.__qualname__}: {name}'s union has other dims"
            kinds = None if any(s.kind is None for s in specs) else tuple(
                k for s in specs for k in ((s.kind,) if isinstance(s.kind, str) else s.kind))
            spec = Spec(spec.dims, kinds, arrays)
        many = name in parameters and parameters[name].kind is inspect.Parameter.VAR_POSITIONAL
        out[name] = (spec, type(None) in args, many)
    return out


def _size_of(owner: object, letter: str) -> int | None:
    """A lower-case dim name bound to the module: ``d_model`` is ``self.d_model`` or ``self.cfg.d_model``."""
    if owner is None or not letter[:1].islower():
        return None
    attrs = getattr(owner, "__dict__", {})  # (plain attributes: no nn.Module.__getattr__ on a miss)
    value = attrs.get(letter)
    if value is None and "cfg" in attrs:
        value = getattr(attrs["cfg"], letter, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _reference(owner: object) -> torch.Tensor | None:
    """The first parameter of a module (its device and dtype are the module's), else its first buffer (a table
    of sinusoidal positions), else None."""
    if isinstance(owner, nn.Module):
        first = next(owner.parameters(), None)
        return first if first is not None else next(owner.buffers(), None)
    return None


def _expected(spec: Spec, seen: dict, owner: object, letter: str, want: int) -> str:
    """``spec`` with the sizes known so far written in, e.g. ``(2, S, 16)``, for a message."""
    out = []
    for d in spec.dims:
        size = want if d == letter else seen.get(d, (None,))[0] if d in seen else _size_of(owner, d)
        out.append(d if size is None else str(size))
    return "(" + ", ".join(out) + ("," if len(out) == 1 else "") + ")"


def check_arguments(arguments: dict, specs: dict[str, tuple[Spec, bool, bool]], hint: str = "", *,
                    any_device: tuple[str, ...] = (), any_dtype: tuple[str, ...] = (),
                    neg_inf: tuple[str, ...] = (), any_value: tuple[str, ...] = ()) -> None:
    """The door of :func:`contract`: each annotated tensor argument is a tensor of its kind with its dims,
    the letters agree across the arguments (and with the module's sizes), ids become ``torch.long``, and
    every tensor is on the device (a float one also in the dtype) of the module's weights, or for a
    function of its first tensor (first float tensor) argument; those named in ``any_device``
    (``any_dtype``) keep their own. Each error names the argument, the shape with its letters, what was
    received and what to do. ``*masks: Bool["..."]`` is checked mask by mask (``masks[1]``)."""
    owner = arguments.get("self", arguments.get("model"))
    weights = _reference(owner)
    door = _Door(owner, weights, hint, neg_inf, any_value)
    for name, (spec, optional, many) in specs.items():
        loose = (name in any_device, name in any_dtype)
        if not many:
            arguments[name] = door.check(name, arguments.get(name), spec, optional, *loose)
        elif arguments.get(name):
            arguments[name] = tuple(door.check(f"{name}[{i}]", x, spec, optional, *loose)
                                    for i, x in enumerate(arguments[name]))


class _Door:
    """One call's check of its arguments: the letters seen so far, and the tensors whose device and dtype
    the others must have (the module's weights, else the first tensor argument)."""

    __slots__ = ("owner", "hint", "seen", "device", "dtype", "model", "neg_inf", "any_value")

    def __init__(self, owner: object, weights: torch.Tensor | None, hint: str, neg_inf: tuple[str, ...] = (),
                 any_value: tuple[str, ...] = ()):
        self.owner, self.hint, self.seen, self.neg_inf = owner, hint, {}, neg_inf  # seen: letter -> (size, where)
        self.any_value = any_value
        self.model = weights is not None
        self.device = self.dtype = (weights, "the model's weights") if self.model else None

    def check(self, name: str, x: object, spec: Spec, optional: bool, any_device: bool, any_dtype: bool) -> object:
        """``x`` as the body gets it (ids as ``torch.long``, a NumPy array as a tensor), or the error."""
        if x is None and optional:
            return x
        if spec.arrays and type(x).__module__ == "numpy" and type(x).__name__ == "ndarray":
            x = torch.as_tensor(x)
        dims, owner = spec.dims, self.owner
        ndim = None if "..." in dims else len(dims)
        x = tensor(x, name, spec.text, dims=ndim, kind=spec.kind)
        if ndim is None and x.dim() < len(dims) - 1:
            raise ValueError(f"{name} must be {spec.text}: at least {len(dims) - 1} dims, got shape {tuple(x.shape)}")
        if ndim is None and dims[0] != "..." and 0 in x.shape[:dims.index("...")]:
            raise ValueError(f"{name} {spec.text} is empty, shape {tuple(x.shape)}; there is nothing to compute with")
        if spec.kind is not None and "ids" in spec.kind and x.dtype not in (torch.long, torch.bool):
            x = x.long()
        for letter, size in spec.letters(x.shape):
            if size == 0 and letter != "B" and not letter.isdigit():
                raise ValueError(f"{name} {spec.text} is empty: {letter}=0 in shape {tuple(x.shape)}; there is nothing to "
                                 f"compute with (an empty sentence or text: check the slicing or the data split that "
                                 f"made it). An empty batch, B=0, is the one empty size a door accepts")
            want, where = (int(letter), "") if letter.isdigit() else self.seen.get(letter, (None, ""))
            if want is None and (bound := _size_of(owner, letter)) is not None:
                want, where = bound, f"{type(owner).__name__}'s {letter}"
            if want is None:
                self.seen[letter] = (size, f"{name} {spec.text}")
            elif size != want:
                raise ValueError(f"{name} must be {spec.text} = {_expected(spec, self.seen, owner, letter, want)} with "
                                 f"{letter}={want}" + (f" as in {where}" if where else "")
                                 + f", got shape {tuple(x.shape)} ({letter}={size})"
                                 + (f"; {self.hint}" if self.hint else ""))
        model = self.model
        if not any_device:
            if self.device is None:
                self.device = (x, name)
            elif x.device != (ref := self.device[0]).device:
                raise ValueError(f"{name} is on {x.device} but {self.device[1]} {'are' if model else 'is'} on "
                                 f"{ref.device}; move it with {name}.to({str(ref.device)!r})"
                                 + (f" (or the model with model.to({str(x.device)!r}))" if model else ""))
        if not any_dtype and x.is_floating_point():
            if self.dtype is None:
                self.dtype = (x, name)
            elif (ref := self.dtype[0]).is_floating_point() and x.dtype != ref.dtype and not _autocast_mix(x, ref):
                raise TypeError(f"{name} has dtype {x.dtype} but {self.dtype[1]} {'have' if model else 'has'} "
                                f"{ref.dtype}; convert it with {name}.to({ref.dtype})"
                                + (f" (or the model with model.to({x.dtype}))" if model else ""))
        if spec.kind is not None and "float" in spec.kind and x.numel() and x.device.type != "meta" \
                and name not in self.any_value:  # (Tensor[...] declares any dtype and any values)
            finite(x, name, spec.text, allow_neg_inf=name in self.neg_inf)
        return x


def _autocast_mix(x: torch.Tensor, ref: torch.Tensor) -> bool:
    """True under ``torch.autocast`` when the two dtypes are float32 and autocast's dtype (bf16 activations beside
    fp32 weights): autocast casts them at each matmul, as PyTorch's own layers accept."""
    device = x.device.type
    return torch.is_autocast_enabled(device) and {x.dtype, ref.dtype} <= {torch.float32, torch.get_autocast_dtype(device)}


def finite(x: torch.Tensor, name: str, shape: str = "", *, allow_neg_inf: bool = False) -> None:
    """A ValueError naming ``name`` and the first position unless every value of the float tensor ``x`` is finite
    (``allow_neg_inf``: -inf is allowed, a masked score or an unset running maximum). A NaN or inf at the door,
    at a real or at a masked position, comes out of attention in every query that sees it (0 * NaN is NaN)."""
    if not allow_neg_inf and math.isfinite(x.sum().item()):  # one reduction: a NaN or inf would make the sum one
        return
    bad = ~torch.isfinite(x)
    if allow_neg_inf:
        bad &= x != float("-inf")
    if not bool(bad.any()):  # (a sum that overflowed, or -inf where it is allowed)
        return
    where = tuple(int(i) for i in bad.nonzero()[0])
    value = x[where].item()
    raise ValueError(f"{name}{' ' + shape if shape else ''} holds {value} at index {where} ({int(bad.sum())} non-finite "
                     f"value(s) of {x.numel()}): it would spread to every output that reads it. Find where it came "
                     f"from (torch.isfinite({name}).all() after each step: a log of 0, a division by 0, a learning "
                     f"rate too high); a masked position is masked by the mask, never by a NaN or inf in {name}")


def contract(fn: Callable | None = None, *, rules: Callable[..., None] | None = None, hint: str = "",
             trust_callees: bool = True, any_device: tuple[str, ...] = (), any_dtype: tuple[str, ...] = (),
             neg_inf: tuple[str, ...] = (), any_value: tuple[str, ...] = ()) -> Callable:
    """Declare a public entry point's contract once, at its door.

    The tensor arguments' shapes and dtypes come from the signature (``src: Ids["B S"]``, ``x: Float["B T
    d_model"]``) and are checked by :func:`check_arguments`; ``rules(**arguments)`` then checks what shapes
    cannot say (ids inside the vocabulary, the mask convention, positions inside ``max_len``), each rule
    written once in this module or beside its concept and called from there. Behind the door the
    function trusts its arguments: the doors it calls in turn (a layer inside a model, ``decode`` inside
    ``greedy_decode``) check nothing again while it runs (:func:`trusted`). ``trust_callees=False`` where
    the function hands its arguments on unchecked (a loss function of the caller's, a model called on a
    text whose ids only the model's door checks): the doors it calls then check as usual.
    ``hint`` is added to a message about mismatched dims. ``any_device`` names the tensor arguments that may
    live on another device than the module's weights (a corpus kept on the CPU, cut into batches that move),
    ``any_dtype`` those whose float dtype is their own (float32 angles rotating a bfloat16 ``x``), ``neg_inf``
    those that may hold -inf (a masked score, a logit filtered out), ``any_value`` those whose values the rules
    check (``masked_mean``'s ``x``: finite at its real positions, anything in its padding); every other
    ``Float[...]`` argument must be finite."""
    import functools
    import inspect

    def wrap(fn):
        signature = inspect.signature(fn)
        names = list(signature.parameters)
        known = set(names)
        defaults = {k: p.default for k, p in signature.parameters.items() if p.default is not p.empty}
        plain = all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in signature.parameters.values())
        cache: list = []

        def arguments_of(args: tuple, kwargs: dict) -> dict:
            """{parameter: value}, defaults filled in: what ``signature.bind`` gives, at a fraction of its cost."""
            if plain and len(args) <= len(names) and kwargs.keys() <= known \
                    and not any(k in kwargs for k in names[:len(args)]):
                arguments = {**defaults, **dict(zip(names, args)), **kwargs}
                if len(arguments) == len(names):
                    return arguments
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as e:  # a missing or unknown argument: check those given first (one given in the wrong
                missing(args, kwargs, e)  # place is named by its contract), then name the signature
            bound.apply_defaults()
            return bound.arguments

        def missing(args: tuple, kwargs: dict, error: TypeError):
            try:
                given = dict(signature.bind_partial(*args, **kwargs).arguments)
            except TypeError:
                raise error from None
            if not cache:
                cache.append(_specs(fn))
            check_arguments(given, {k: v for k, v in cache[0].items() if k in given}, hint, any_device=any_device,
                            any_dtype=any_dtype, neg_inf=neg_inf, any_value=any_value)
            raise TypeError(f"{fn.__qualname__}({', '.join(n for n in names if n != 'self')}): {error}; positional "
                            f"arguments fill these in order") from None

        def call(arguments: dict):
            if plain:
                return fn(**arguments)
            bound = inspect.BoundArguments(signature, arguments)  # *args and **kwargs spread out again
            return fn(*bound.args, **bound.kwargs)

        @functools.wraps(fn)
        def door(*args, **kwargs):
            if getattr(_door, "open", False):
                return fn(*args, **kwargs)
            if not cache:
                cache.append(_specs(fn))
            arguments = arguments_of(args, kwargs)
            check_arguments(arguments, cache[0], hint, any_device=any_device, any_dtype=any_dtype, neg_inf=neg_inf,
                            any_value=any_value)
            if rules is not None:
                rules(**arguments)
            if not trust_callees:
                return call(arguments)
            _door.open = True
            try:
                return call(arguments)
            finally:
                _door.open = False

        door.__contract__ = signature
        door.__neg_inf__ = neg_inf
        # the function itself, under every decorator (``beam_search.__wrapped__`` is the code that runs, as
        # before the door: courseware.grading.hidden.forbid names it so)
        door.__wrapped__ = inspect.unwrap(fn)
        return door

    return wrap if fn is None else wrap(fn)


# --------------------------------------------------------------------------- value rules that shapes cannot say, one place each


def vocab_ids(ids: torch.Tensor | int, vocab_size: int, name: str = "ids") -> None:
    """Raise a ValueError naming the vocabulary size unless every id is in ``0 .. vocab_size - 1``
    (instead of the embedding's ``IndexError: index out of range in self``, or a CUDA assert).
    ``utils.text.check_ids`` is this rule."""
    ids = torch.as_tensor(ids)
    if ids.numel() == 0:
        return
    lo, hi = torch.stack(torch.aminmax(ids)).tolist()
    if lo < 0 or hi >= vocab_size:
        raise ValueError(f"{name}: id {lo if lo < 0 else hi} is outside the vocabulary of size {vocab_size} (valid ids: "
                         f"0..{vocab_size - 1}); encode with the model's own vocabulary, or give the model a larger one")


def right_padded(ids: torch.Tensor, pad_id: int, name: str) -> None:
    """A ValueError naming ``name`` unless every row of the (B, T) ``ids`` is its tokens followed by
    ``pad_id`` only (the course's batches are right-padded): a <pad> before a real token means the batch
    was left-padded, or given as (T, B) instead of (B, T), and the model would read padding as words."""
    real = ids != pad_id
    if ids.shape[1] > 1 and bool((real[:, 1:] & ~real[:, :-1]).any()):
        row = int((real[:, 1:] & ~real[:, :-1]).any(1).nonzero()[0])
        raise ValueError(f"{name} is not right-padded: row {row} has <pad> (id {pad_id}) before a real token, "
                         f"{ids[row].tolist()[:12]}; batches here are (B, T) with the padding at the end of each "
                         f"row (utils.text.pad_sequences). Given as (T, B)? pass {name}.T; left-padded? pad on the right")


def positions(name: str, T: int, offset: int, limit: int, setting: str) -> None:
    """A ValueError naming ``name`` unless positions ``offset .. offset + T - 1`` fit a table of ``limit``
    positions (``setting`` says where the limit is set, e.g. ``TransformerConfig(max_len=32)``)."""
    if offset + T > limit:
        where = f"{T} tokens" if offset == 0 else f"positions {offset}..{offset + T - 1}"
        raise ValueError(f"{name} has {where}, but this model has positions for at most {limit} tokens "
                         f"({setting}); shorten {name} (e.g. {name}[:, -{limit}:] or {name}[:, :{limit}]) "
                         f"or build the model with a larger one")


def batch_of_pairs(batch: object, name: str = "batch") -> None:
    """A TypeError naming ``name`` unless ``batch`` has ``.src`` and ``.tgt`` (a :class:`utils.text.PairBatch`,
    as ``collate_pairs`` gives): a ``(src, tgt)`` tuple is the usual slip."""
    if not (hasattr(batch, "src") and hasattr(batch, "tgt")):
        got = f"a {type(batch).__name__}" + (f" of {len(batch)}" if isinstance(batch, (tuple, list)) else "")
        raise TypeError(f"{name} must be a utils.text.PairBatch (with batch.src and batch.tgt), as collate_pairs gives "
                        f"and a DataLoader(..., collate_fn=collate_pairs) yields; got {got}. From two tensors: "
                        f"PairBatch(src, src_len, src != pad, tgt, tgt_len, tgt != pad)")


def training_mode(model: nn.Module, name: str, dropout: float, stacklevel: int = 3) -> None:
    """A warning naming ``name`` when a loss is computed with gradients on a model left in eval mode whose
    dropout is > 0: the update would train a model without its dropout (``model.eval()`` from an evaluation
    cell, or from ``greedy_decode`` run by hand). No warning under ``torch.no_grad()`` (an evaluation)."""
    if dropout > 0 and not model.training and torch.is_grad_enabled():
        import warnings
        warnings.warn(f"{name} is in eval mode (dropout {dropout} switched off) while a loss with gradients is "
                      f"computed: call {name}.train() before training steps (utils.training.fit does), or compute "
                      f"an evaluation loss under torch.no_grad()", stacklevel=stacklevel)


# --------------------------------------------------------------------------- artefacts that describe themselves


def content_sha256(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 of a state dict's names, dtypes, shapes and bytes (in name order): stored with a saved
    model and compared on load, so that damaged bytes are named instead of loaded."""
    import hashlib

    h = hashlib.sha256()
    for key in sorted(state):
        t = state[key]
        if not isinstance(t, torch.Tensor):
            continue
        t = t.detach().to("cpu").contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


_PAIR = "\x1e(target vocabulary)"  # between the two halves of a (src_vocab, tgt_vocab) pair's tokens


def vocab_tokens(vocab: object, name: str = "vocab") -> list[str]:
    """The tokens of a vocabulary in id order: a :class:`utils.text.Vocab` (``itos``), a
    :class:`utils.gpt.CharTokenizer` (``chars``), a list of str, or a ``(src_vocab, tgt_vocab)`` pair (a
    translation model's two); else a TypeError naming ``name``."""
    for attr in ("itos", "chars"):
        if hasattr(vocab, attr):
            return list(getattr(vocab, attr))
    if isinstance(vocab, tuple) and len(vocab) == 2 and not all(isinstance(t, str) for t in vocab):
        return vocab_tokens(vocab[0], name) + [_PAIR] + vocab_tokens(vocab[1], name)  # (src_vocab, tgt_vocab)
    if isinstance(vocab, (list, tuple)) and all(isinstance(t, str) for t in vocab):
        return list(vocab)
    raise TypeError(f"{name} must be a utils.text.Vocab, a utils.gpt.CharTokenizer or a list of its tokens, "
                    f"got {type(vocab).__name__}")


def vocab_fingerprint(vocab: object, name: str = "vocab") -> str:
    """SHA-256 (16 hex digits) of a vocabulary's tokens in id order: two vocabularies of the same size
    but other tokens, or another order, differ."""
    import hashlib

    return hashlib.sha256("\x00".join(vocab_tokens(vocab, name)).encode()).hexdigest()[:16]


def bind_vocab(model: nn.Module, vocab: object, tokens: list[str] | None = None) -> None:
    """Let ``model`` carry the fingerprint of the vocabulary it was trained with (``vocab``: a vocabulary, a
    ``(src_vocab, tgt_vocab)`` pair, or a fingerprint already computed, with its ``tokens`` if known):
    ``save_checkpoint`` stores it, ``load_checkpoint`` and ``load_pretrained`` put it back, and every function
    where a vocabulary meets the model compares the two (:func:`model_vocab`). A plain attribute, not a buffer:
    the weights and their state dict are unchanged."""
    model = getattr(model, "_orig_mod", model)
    if isinstance(vocab, str):
        model.vocab_fingerprint, model.vocab_tokens = vocab, tokens
    else:
        model.vocab_tokens = vocab_tokens(vocab)
        model.vocab_fingerprint = vocab_fingerprint(model.vocab_tokens)


def model_vocab(model: nn.Module, given: object, name: str) -> None:
    """A ValueError naming ``name`` if ``model`` carries a vocabulary fingerprint (:func:`bind_vocab`) that
    ``given`` does not have; nothing for a model that carries none (built in this session, not yet saved).
    ``given`` may be a translation model's ``(src_vocab, tgt_vocab)``: compared as a pair with a model saved
    with both, with the target vocabulary alone for one saved with it alone; swapped, the message says so."""
    plain = getattr(model, "_orig_mod", model)
    fingerprint, saved = getattr(plain, "vocab_fingerprint", None), getattr(plain, "vocab_tokens", None)
    if fingerprint is None:
        return
    if isinstance(given, tuple) and len(given) == 2 and not all(isinstance(t, str) for t in given):
        src, tgt = given
        right = (vocab_fingerprint(given), vocab_fingerprint(tgt))
        if fingerprint in (vocab_fingerprint((tgt, src)), vocab_fingerprint(src)) and fingerprint not in right:
            raise ValueError(f"{name}: the source and the target vocabulary are swapped; the model was saved with them "
                             f"the other way round (source first, then target)")
        if not (saved is not None and _PAIR in saved) and fingerprint != vocab_fingerprint(given):
            given = tgt  # a model saved with its target vocabulary alone
    same_vocab(saved, fingerprint, given, name, "the model")


def same_vocab(saved: list[str] | None, saved_fingerprint: str, given: object, name: str, where: str) -> None:
    """A ValueError naming ``name`` unless ``given`` has the fingerprint ``saved_fingerprint`` stored in
    ``where``: the model was trained with another vocabulary, whose ids mean other tokens."""
    tokens = vocab_tokens(given, name)
    if vocab_fingerprint(tokens) == saved_fingerprint:
        return
    diff = ""
    if saved is not None:
        pairs = [(i, a, b) for i, (a, b) in enumerate(zip(saved, tokens)) if a != b][:3]
        diff = "; first differences: " + ", ".join(f"id {i} is {a!r} there, {b!r} here" for i, a, b in pairs) if pairs else ""
    raise ValueError(f"{name} is not the vocabulary {where} was saved with (size {len(tokens)} here"
                     + (f", {len(saved)} there" if saved is not None else "") + f"{diff}): its ids would decode to other "
                     f"tokens. Use the vocabulary saved with the model (e.g. Vocab(extra['vocab']) or "
                     f"CharTokenizer of the same text)")
