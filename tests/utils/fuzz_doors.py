"""Issue 51: the public doors of utils fuzzed from their declared contracts.

Each door's tensor arguments are read from its signature (``utils.checks._specs``: ``q: Float["... Tq d_k"]``,
``src: Ids["B S"]``, ``mask: Tensor["..."] | None``), and :class:`Door` adds only what a signature cannot say:
the module to call (tiny, seeded), the valid non-tensor arguments, how a mask or padding is built, and the
reference to agree with. From that, hypothesis draws

- **valid inputs**: a random size for each letter, leading ``...`` dims, float32 / float64 / bfloat16 models,
  bf16 activations beside fp32 weights under ``torch.autocast``, ``no_grad`` and ``inference_mode``, contiguous,
  strided and broadcast (expanded, stride-0) tensors, right-padded ids, the course's masks. Each must be
  accepted and agree with the reference (the same door in float64, contiguous, outside autocast; PyTorch's
  own ``scaled_dot_product_attention`` for the attention functions);
- **slips** made from a valid input (:func:`slips`): each argument's rank +-1, two of its letters swapped,
  its dtype int <-> float <-> bool, another device (``meta``), NaN / inf at a real and at a masked position,
  a size of 0, ids out of range, a Python list or bytes for a tensor, two positional arguments swapped, and a
  NaN, negative or fractional number for a numeric argument. Each must get an error (or a warning) raised
  from utils/ that names the argument (**clear**), else it is **obscure** (torch's or Python's error, or one
  that names something else) or **silent** (accepted), unless the door lists it in ``accepted`` with the
  reason it is deliberately accepted.

The public functions whose settings are numbers (schedules, sizes, configs: :func:`number_doors`) get each
number slip (NaN, inf, -1, 0, a fraction, a bool, None, a str) in every numeric argument.

``tests/utils/test_fuzz_doors.py`` runs this in ``make test`` with a fixed seed and a small budget; ``make
test-fuzz`` with a large one and prints the per-door table (``python tests/utils/fuzz_doors.py --examples N``).
"""

from __future__ import annotations

import copy
import inspect
import math
import re
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from utils import checks  # noqa: E402

D, H, V = 8, 2, 20
MODES = ("fp32", "fp64", "bf16", "autocast", "autocast-mixed")  # autocast-mixed: bf16 activations, fp32 weights
LAYOUTS = ("contiguous", "strided", "expanded")
GRADS = ("grad", "no_grad", "inference_mode")
TOL = {torch.float32: 1e-4, torch.float64: 1e-9, torch.bfloat16: 6e-2}


# --------------------------------------------------------------------------- what a door needs beyond its signature


@dataclass
class Door:
    label: str
    fn: Callable                                   # the door: a function, or a module's forward
    owner: Callable[[], torch.nn.Module] | None = None  # builds the module (seeded), None for a function
    others: dict = field(default_factory=dict)     # valid non-tensor arguments
    sizes: dict = field(default_factory=dict)      # letter -> (lo, hi), or a function of the sizes drawn so far
    vocab: int | Callable[[dict], int] | None = None  # ids are in 4 .. vocab - 1 (0 = <pad> after a row's length)
    padded: tuple[str, ...] = ()                   # letters whose ids are right-padded (lengths per row)
    make: dict = field(default_factory=dict)       # arg -> make(sizes, ctx, dtype) for a mask or a special tensor
    reference: Callable | None | bool = True       # True: the door in float64; a function(args) -> output; None: none
    modes: tuple[str, ...] = MODES
    may_be_empty: tuple[str, ...] = ("B",)        # letters whose size 0 is a documented empty result
    accepted: dict[str, str] = field(default_factory=dict)  # slip ("kind" or "kind:arg") -> why it is accepted

    def build(self, dtype: torch.dtype):
        if self.owner is None:
            return None
        torch.manual_seed(0)
        return self.owner().to(dtype).eval()

    def call(self, owner, args: dict):
        if owner is None:
            return self.fn(**args)
        if self.fn.__name__ == "forward":
            return owner(**args)
        return self.fn(owner, **args)

    @property
    def specs(self) -> dict:
        return checks._specs(self.fn)


@dataclass
class Example:
    """One valid call: the arguments, the sizes of the letters, how it was drawn."""
    door: Door
    args: dict
    sizes: dict
    mode: str
    layout: str
    grad: str
    lengths: dict            # padded letter -> per-row lengths
    masked: dict             # float arg -> an index at a masked (padding) position, where a mask covers it

    @property
    def dtype(self) -> torch.dtype:
        return {"fp64": torch.float64, "bf16": torch.bfloat16}.get(self.mode, torch.float32)

    def run(self, args: dict | None = None, owner_dtype: torch.dtype | None = None):
        owner = self.door.build(owner_dtype or self.dtype)
        with _grad(self.grad), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.mode.startswith("autocast")):
            return self.door.call(owner, dict(self.args if args is None else args))

    def describe(self) -> str:
        shapes = {k: tuple(v.shape) if isinstance(v, torch.Tensor) else v for k, v in self.args.items()}
        return f"{self.mode}, {self.layout}, {self.grad}: {shapes}"


def _grad(grad: str):
    return {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}[grad]()


# --------------------------------------------------------------------------- valid inputs, drawn from the signature


def _letters(door: Door) -> list[str]:
    out = []
    for spec, _, _ in door.specs.values():
        for d in spec.dims:
            if d != "..." and not d.isdigit() and d not in out:
                out.append(d)
    return out + [d for d in door.sizes if d not in out]


def _bound(owner_probe, letter: str):
    return checks._size_of(owner_probe, letter) if owner_probe is not None else None


@st.composite
def examples(draw, door: Door, force: dict | None = None) -> Example:
    """A valid call of ``door``; ``force`` fixes some letters' sizes (a size of 0 for a slip)."""
    force = force or {}
    probe = door.build(torch.float32)
    sizes: dict[str, int] = {}
    derived = [letter for letter in _letters(door) if callable(door.sizes.get(letter)) and letter not in force]
    for letter in _letters(door):
        rule = door.sizes.get(letter)
        if letter in force:
            sizes[letter] = force[letter]
        elif (b := _bound(probe, letter)) is not None:
            sizes[letter] = b
        elif letter in derived:
            continue
        else:
            lo, hi = rule or ((1, 3) if letter == "B" else (1, 5))
            sizes[letter] = draw(st.integers(lo, hi))
    for letter in derived:  # a size that follows from the others (d_k = 2 * d_k/2)
        sizes[letter] = door.sizes[letter](sizes)
    prefix = force.get("...", None)
    if prefix is None:
        prefix = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    mode = draw(st.sampled_from(door.modes))
    layout = draw(st.sampled_from(LAYOUTS))
    grad = draw(st.sampled_from(GRADS))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    lengths = {}
    for letter in door.padded:
        n, T = sizes.get("B", 1), sizes[letter]
        rows = [T] + [draw(st.integers(min(1, T), T)) for _ in range(n - 1)] if n else []
        lengths[letter] = rows
    ex = Example(door, {}, sizes, mode, layout, grad, lengths, {})
    dtype = torch.bfloat16 if mode == "autocast-mixed" else ex.dtype
    ctx = dict(prefix=prefix, lengths=lengths, g=g, draw=draw)
    for name, (spec, optional, many) in door.specs.items():
        if name in door.make:
            value = door.make[name](sizes, ctx, dtype)
        elif optional and name not in door.others and spec.kind is None:
            value = None
        else:
            value = _tensor(door, spec, sizes, ctx, dtype)
        if isinstance(value, torch.Tensor):
            value = _layout(value, layout, name, door)
        ex.args[name] = value
    ex.args.update(door.others)
    for name, (spec, _, _) in door.specs.items():  # a float arg along a padded letter: an index at its padding
        x = ex.args.get(name)
        if isinstance(x, torch.Tensor) and x.is_floating_point() and ctx.get("masked_letter") in spec.dims:
            letter = ctx["masked_letter"]
            rows = lengths.get(letter) or []
            for b, n in enumerate(rows):
                if n < sizes[letter]:
                    dim = x.dim() - len(spec.dims) + spec.dims.index(letter)
                    index = [0] * x.dim()
                    index[dim] = n
                    if x.dim() > len(spec.dims) or spec.dims[0] == "B":
                        index[0 if spec.dims[0] == "B" else 0] = b if x.shape[0] > b else 0
                    ex.masked[name] = tuple(index)
                    break
    return ex


def _shape(spec, sizes: dict, prefix: tuple) -> tuple:
    out = []
    for d in spec.dims:
        if d == "...":
            out.extend(prefix)
        elif d.isdigit():
            out.append(int(d))
        else:
            out.append(sizes[d])
    return tuple(out)


def _ids(shape, vocab: int, g, lengths=None) -> torch.Tensor:
    ids = torch.randint(4, max(vocab, 5), shape, generator=g) if vocab > 4 else torch.randint(0, vocab, shape, generator=g)
    if lengths is not None and len(shape) == 2 and shape[0] == len(lengths):
        ids = ids.masked_fill(torch.arange(shape[1])[None] >= torch.tensor(lengths, dtype=torch.long)[:, None], 0)
    return ids


def _tensor(door: Door, spec, sizes, ctx, dtype) -> torch.Tensor:
    shape = _shape(spec, sizes, ctx["prefix"])
    kinds = (spec.kind,) if isinstance(spec.kind, str) else spec.kind or ("float",)
    if "ids" in kinds:
        vocab = door.vocab(sizes) if callable(door.vocab) else door.vocab or V
        letter = next((d for d in spec.dims if d in door.padded), None)
        return _ids(shape, vocab, ctx["g"], ctx["lengths"].get(letter))
    if kinds == ("bool",):
        return torch.ones(shape, dtype=torch.bool)
    return torch.randn(shape, generator=ctx["g"], dtype=torch.float32).to(dtype)


def _layout(x: torch.Tensor, layout: str, name: str, door: Door) -> torch.Tensor:
    """The same values (strided: not contiguous), or the first row broadcast to all (expanded: stride 0)."""
    if layout == "strided" and x.dim() >= 2:
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "expanded" and x.dim() >= 2 and x.shape[0] > 1 and x.dtype != torch.bool:
        if x.dtype == torch.long:  # the first row is the longest (right-padded): every row is a full one
            return x[:1].expand_as(x)
        return x[:1].expand_as(x)
    return x


# masks, built as the course builds them (True = may attend)

def attention_mask(q: str = "q", k: str = "k", Tq: str = "Tq", Tk: str = "Tk", batch: str | None = None):
    """A mask for scores (..., Tq, Tk): None, causal_mask (Tq <= Tk), a key padding mask with the scores' dims, or
    both; the padding lengths are those of the letter ``Tk`` (drawn here when no ids carry them)."""
    from utils.attention import causal_mask, combine_masks

    def make(sizes, ctx, dtype):
        tq, tk = sizes[Tq], sizes[Tk]
        kind = ctx["draw"](st.sampled_from(("none", "causal", "padding", "both")))
        if tq == 0 or tk == 0:
            kind = "none"
        if kind in ("causal", "both") and tq > tk:
            kind = "padding"
        n_prefix = len(ctx["prefix"]) if batch is None else 2
        lead = (ctx["prefix"] if batch is None else (sizes[batch], 1))
        B = lead[0] if lead else 1
        rows = ctx["lengths"].get(Tk)
        if rows is None or len(rows) != B:
            rows = [tk] + [ctx["draw"](st.integers(1, tk)) for _ in range(B - 1)] if tk else []
            ctx["lengths"][Tk] = rows
        causal = causal_mask(tq, tk) if kind in ("causal", "both") else None
        real = torch.arange(tk)[None] < torch.tensor(rows, dtype=torch.long)[:, None] if rows else torch.ones(B, tk, dtype=torch.bool)
        if n_prefix == 0:  # 2-D scores: a padding mask is one row shared by every query
            padding = real[:1].expand(tq, tk)
        else:
            padding = real.reshape((B,) + (1,) * (n_prefix - 1) + (1, tk))
        if kind == "none":
            return None
        ctx["masked_letter"] = Tk if kind in ("padding", "both") and any(r < tk for r in rows) else None
        if kind == "causal":  # (Tq, Tk), or with the scores' dims where B == Tq would make it ambiguous
            return causal if not n_prefix or B != tq else causal.reshape((1,) * n_prefix + causal.shape)
        if kind == "padding":
            return padding
        return combine_masks(padding, causal) if n_prefix else padding & causal
    return make


def padding_bool(letter: str):
    """(B, letter) bool, True at the real tokens of the right-padded ids of ``letter``."""
    def make(sizes, ctx, dtype):
        rows = ctx["lengths"].get(letter)
        if rows is None:
            T = sizes[letter]
            rows = [T] + [ctx["draw"](st.integers(min(1, T), T)) for _ in range(sizes["B"] - 1)] if sizes["B"] else []
            ctx["lengths"][letter] = rows
        ctx["masked_letter"] = letter
        return torch.arange(sizes[letter])[None] < torch.tensor(rows, dtype=torch.long).reshape(-1, 1)
    return make


def source_mask(letter: str = "S"):
    """(B, 1, 1, S) key padding mask of right-padded ids, or None."""
    def make(sizes, ctx, dtype):
        if not ctx["draw"](st.booleans()):
            return None
        return padding_bool(letter)(sizes, ctx, dtype)[:, None, None, :]
    return make


# --------------------------------------------------------------------------- references


def sdpa_reference(a: dict):
    """PyTorch's own attention in float64 (a row with nothing to attend to: zeros, as the course documents)."""
    import torch.nn.functional as F

    q, k, v, mask = (a[n] for n in ("q", "k", "v", "mask"))
    q, k, v = (t.double() for t in (q, k, v))
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v)
    empty = ~mask.any(-1, keepdim=True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | empty)
    return out.masked_fill(empty, 0.0)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _float64(x):
    if isinstance(x, torch.Tensor):
        return x.detach().clone().contiguous().double() if x.is_floating_point() else x.clone().contiguous()
    return x


def agree(door: Door, ex: Example, out) -> str | None:
    """None if ``out`` agrees with the reference, else what differs."""
    if door.reference is None:
        return None
    args64 = {k: _float64(v) for k, v in ex.args.items()}
    if callable(door.reference):
        want, got = door.reference(args64), _first(out)
    else:
        want = door.call(door.build(torch.float64), args64)
        got = out
    return _compare(got, want, TOL[ex.dtype if ex.mode != "autocast-mixed" and not ex.mode.startswith("autocast")
                                    else torch.bfloat16], "output")


def _compare(got, want, tol, where) -> str | None:
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.shape != want.shape:
            return f"{where}: shape {getattr(got, 'shape', type(got))} vs {tuple(want.shape)}"
        if not want.is_floating_point():
            return None if torch.equal(got.cpu(), want.cpu()) else f"{where}: ids differ"
        g, w = got.detach().double(), want.detach().double()
        if not torch.equal(torch.isfinite(g), torch.isfinite(w)):
            return f"{where}: non-finite values differ"
        scale = w[torch.isfinite(w)].abs().max().item() if w.numel() and torch.isfinite(w).any() else 1.0
        err = (g - w)[torch.isfinite(w)].abs().max().item() if w.numel() and torch.isfinite(w).any() else 0.0
        return None if err <= tol * max(scale, 1.0) else f"{where}: max error {err:.3g} (scale {scale:.3g}, tol {tol})"
    if isinstance(want, (tuple, list)):
        for i, (a, b) in enumerate(zip(got, want)):
            if (d := _compare(a, b, tol, f"{where}[{i}]")) is not None:
                return d
        return None
    if isinstance(want, dict):
        for key in want:
            if (d := _compare(got[key], want[key], tol, f"{where}[{key!r}]")) is not None:
                return d
        return None
    if isinstance(want, float):
        return None if abs(got - want) <= tol * max(1.0, abs(want)) else f"{where}: {got} vs {want}"
    return None


# --------------------------------------------------------------------------- slips, made from a valid input


@dataclass
class Slip:
    kind: str          # "rank+1", "swap letters", "dtype float", "meta", "nan real", ...
    arg: str           # the argument the slip is in
    names: tuple       # the words an error may name to be clear (the argument; both, for a swap)
    args: dict | None  # the arguments of the call (None: ``call`` instead)
    call: Callable | None = None


def _anchored(door: Door, ex: Example) -> set[str]:
    """Letters whose size another argument (or the module) fixes: a swap of two of them can be seen."""
    count: dict[str, int] = {}
    for spec, _, _ in door.specs.values():
        for d in set(spec.dims):
            count[d] = count.get(d, 0) + 1
    probe = door.build(torch.float32)
    return {d for d, n in count.items() if n > 1 or d.isdigit() or _bound(probe, d) is not None} - {"..."}


def _present(ex: Example) -> dict:
    return {k: v for k, v in ex.args.items() if isinstance(v, torch.Tensor) and k in ex.door.specs}


def slips(ex: Example, draw_zero: Callable[[str], Example | None] | None = None) -> list[Slip]:
    door, args = ex.door, ex.args
    out: list[Slip] = []
    anchored = _anchored(door, ex)

    def with_(name, value, kind, names=None):
        a = dict(args)
        a[name] = value
        out.append(Slip(kind, name, names or (name,), a))

    for name, x in _present(ex).items():
        spec = door.specs[name][0]
        kinds = (spec.kind,) if isinstance(spec.kind, str) else spec.kind or ()
        fixed = "..." not in spec.dims
        if fixed:
            with_(name, x[None], "rank+1")
        if x.dim() > (len(spec.dims) - 1 if not fixed else 0) and x.dim() >= 1 and (fixed or x.dim() > len(spec.dims) - 1):
            if x.dim() - 1 < (len(spec.dims) - 1 if not fixed else len(spec.dims)) and x.shape[0] > 0:
                with_(name, x[0], "rank-1")
        letters = [(i, d) for i, d in enumerate(spec.dims) if d != "..."]
        if fixed:
            for (i, a), (j, b) in zip(letters, letters[1:]):
                if a in anchored and b in anchored and x.shape[i] != x.shape[j]:
                    with_(name, x.transpose(i, j), "swap letters")
                    break
        # dtype: int <-> float <-> bool
        if x.is_floating_point():
            with_(name, x.long(), "dtype ids")
            with_(name, x > 0, "dtype bool")
        elif x.dtype == torch.bool:
            with_(name, x.float(), "dtype float")
            if "ids" not in kinds:
                with_(name, x.long(), "dtype ids")
        else:
            with_(name, x.float(), "dtype float")
            if "bool" not in kinds:
                with_(name, x != 0, "dtype bool")
        if door.owner is not None or len(_present(ex)) > 1:
            with_(name, x.to("meta"), "meta")
        # values
        if x.is_floating_point() and x.numel():
            for kind, value in (("nan real", float("nan")), ("inf real", float("inf")), ("-inf real", float("-inf"))):
                y = x.clone().contiguous()
                y.view(-1)[0] = value
                with_(name, y, kind)
            if name in ex.masked:
                y = x.clone().contiguous()
                y[ex.masked[name]] = float("nan")
                with_(name, y, "nan masked")
        if "ids" in kinds and x.dtype != torch.bool and x.numel() and door.vocab is not None:
            vocab = door.vocab(ex.sizes) if callable(door.vocab) else door.vocab
            for kind, value in (("id >= vocab", vocab), ("id < 0", -1)):
                y = x.clone().contiguous()
                y.view(-1)[0] = value
                with_(name, y, kind)
        # Python where a tensor goes
        with_(name, x.tolist(), "list")
        if "ids" in kinds:
            with_(name, bytes(x.flatten().clamp(0, 255).to(torch.uint8).tolist()), "bytes")
    # two positional arguments swapped (their specs differ, so the door can tell)
    tensors = [n for n in _present(ex) if n in door.specs]
    for a, b in zip(tensors, tensors[1:]):
        sa, sb = door.specs[a][0], door.specs[b][0]
        if (sa.dims, sa.kind) != (sb.dims, sb.kind) and args[a].shape != args[b].shape or sa.kind != sb.kind:
            s = dict(args)
            s[a], s[b] = args[b], args[a]
            out.append(Slip("positional swap", a, (a, b), s))
    # numbers: NaN for a float, a fraction and -1 for an int
    params = inspect.signature(door.fn).parameters
    for name, value in door.others.items():
        p = params.get(name)
        if p is None or isinstance(value, bool):
            continue
        if isinstance(value, float):
            with_(name, float("nan"), "number nan")
        elif isinstance(value, int):
            with_(name, value + 0.5, "number fraction")
            with_(name, -1, "number -1")
    # sizes of 0
    if draw_zero is not None:
        used = {d for spec, _, _ in door.specs.values() for d in spec.dims}
        for letter in _letters(door):
            if letter not in used or _bound(door.build(torch.float32), letter) is not None or letter.isdigit():
                continue
            zero = draw_zero(letter)
            names = tuple(n for n, (spec, _, _) in door.specs.items() if letter in spec.dims
                          and isinstance(args.get(n), torch.Tensor))
            if zero is not None and names:
                out.append(Slip(f"size 0 ({letter})", names[0], names + (letter,), None, call=zero.run))
    return out


# --------------------------------------------------------------------------- sorting an outcome


def sort(call: Callable[[], object], names: tuple) -> tuple[str, str]:
    """("clear" | "obscure" | "silent", message): clear = an error raised from utils/, or a warning, naming one
    of ``names``."""
    named = re.compile("|".join(rf"(?<![\w.]){re.escape(n)}(?!\w)" for n in names))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except Exception as e:  # noqa: BLE001
            frames = traceback.extract_tb(e.__traceback__)
            path = frames[-1].filename.replace("\\", "/") if frames else ""
            inside = "/utils/" in path and "site-packages" not in path
            return ("clear" if inside and named.search(str(e)) else "obscure"), f"{type(e).__name__}: {e}"[:400]
    ours = [w for w in caught if named.search(str(w.message))]
    if ours:
        return "clear", f"warning: {ours[0].message}"[:400]
    return "silent", ""


def accepted_why(door: Door, slip: Slip) -> str | None:
    """Why ``slip`` is deliberately accepted by ``door`` (None: it must be refused)."""
    if slip.kind.endswith(("real", "masked")) and slip.arg in door.specs and door.specs[slip.arg][0].kind is None:
        return "declared Tensor[...]: any dtype and any values (a cache, a layout helper, logits or ids)"
    if slip.kind == "-inf real" and slip.arg in getattr(door.fn, "__neg_inf__", ()):
        return "declared at the door: it may hold -inf (contract(neg_inf=...): a masked score, a filtered logit)"
    if slip.kind == "positional swap":
        a, b = (door.specs[n][0] for n in slip.names[:2])
        if a.kind == b.kind and len(a.dims) == len(b.dims):
            return "two arguments of one kind and rank: swapped, they are another valid call"
    for key in (f"{slip.kind}:{slip.arg}", slip.kind, slip.kind.split(" ")[0]):
        if key in door.accepted:
            return door.accepted[key]
        if key in ACCEPTED:
            return ACCEPTED[key]
    if slip.kind.startswith("size 0") and slip.kind[8:-1] in door.may_be_empty:
        return "an empty batch gives an empty result (CONTRIBUTING: an empty batch decodes to [])"
    return None


ACCEPTED = {  # for every door
    "meta:mask": "the mask is compared with the scores' device by check_mask, named there",
}


def run_slip(ex: Example, slip: Slip) -> tuple[str, str]:
    owner_dtype = ex.dtype
    if slip.call is not None:
        return sort(slip.call, slip.names)
    return sort(lambda: ex.run(slip.args, owner_dtype), slip.names)


# --------------------------------------------------------------------------- the doors


NO_VOCAB = "no vocabulary at this door: the ids are checked where they meet a model (its embedding, its loss)"
EOS_OUTSIDE = "documented: an eos_id outside the vocabulary never ends a sentence (decoding runs max_len steps)"


def doors() -> list[Door]:
    from utils import attention, embeddings, gpt, metrics, positional, rnn, scale, text, transformer
    from utils.attention import key_padding_mask

    def tf_cfg():
        return transformer.TransformerConfig(V, V, d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1,
                                             num_decoder_layers=1, dropout=0.0, max_len=32)

    def gpt_cfg():
        return gpt.GPTConfig(vocab_size=V, block_size=16, n_layer=1, n_head=H, d_model=D)

    attn_sizes = {"Tq": (1, 5), "Tk": (1, 5), "d_k": (1, 6), "d_v": (1, 6)}
    seq = {"S": (1, 6), "T": (1, 6)}
    L = [
        Door("attention.scaled_dot_product_attention", attention.scaled_dot_product_attention,
             others={"dropout_p": 0.0}, sizes=attn_sizes, make={"mask": attention_mask()}, reference=sdpa_reference),
        Door("scale.block_attention", scale.block_attention, others={"block_size": 2}, sizes=attn_sizes,
             make={"mask": attention_mask()}, reference=sdpa_reference),
        Door("attention.MultiHeadAttention", attention.MultiHeadAttention.forward,
             owner=lambda: attention.MultiHeadAttention(D, H), sizes=attn_sizes,
             make={"mask": attention_mask(batch="B")}),
        Door("attention.AdditiveAttention", attention.AdditiveAttention.forward,
             owner=lambda: attention.AdditiveAttention(4, 4, 4), sizes=attn_sizes, make={"mask": attention_mask()}),
        Door("scale.GroupedQueryAttention", scale.GroupedQueryAttention.forward,
             owner=lambda: scale.GroupedQueryAttention(D, H, 1),
             make={"mask": attention_mask(Tq="T", Tk="T", batch="B")}),
        Door("attention.key_padding_mask", attention.key_padding_mask, padded=("Tk",), vocab=V, accepted={"id": NO_VOCAB}),
        Door("text.padding_mask", text.padding_mask, padded=("T",), vocab=V, accepted={"id": NO_VOCAB}),
        Door("text.masked_mean", text.masked_mean, make={"mask": padding_bool("T")},
             accepted={"nan masked:x": "documented: pads never contribute, whatever values they hold (NaN too)"}),
        Door("scale.RMSNorm", scale.RMSNorm.forward, owner=lambda: scale.RMSNorm(D)),
        Door("scale.SwiGLU", scale.SwiGLU.forward, owner=lambda: scale.SwiGLU(D)),
        Door("gpt.MLP", gpt.MLP.forward, owner=lambda: gpt.MLP(D)),
        Door("transformer.FeedForward", transformer.FeedForward.forward, owner=lambda: transformer.FeedForward(D, 16)),
        Door("scale.apply_rotary", scale.apply_rotary, sizes={"d_k": lambda s: 2 * s["d_k/2"], "d_k/2": (1, 3)},
             make={"cos": lambda s, c, d: scale.rope_angles(torch.arange(s["T"]), s["d_k"])[0],
                   "sin": lambda s, c, d: scale.rope_angles(torch.arange(s["T"]), s["d_k"])[1]},
),
        Door("scale.rope_angles", scale.rope_angles, others={"d_k": 8, "base": 10000.0},
             make={"positions": lambda s, c, d: torch.arange(s["T"])}),
        Door("scale.repeat_kv", scale.repeat_kv, others={"n_rep": 2},
             accepted={"dtype": "declared Tensor[...]: it repeats keys, values or a cache of any dtype"}),
        Door("scale.online_softmax_update", scale.online_softmax_update, sizes={"b": (1, 4)},
             make={"m": lambda s, c, d: torch.full(c["prefix"] + (s["Tq"], 1), float("-inf"), dtype=d),
                   "l": lambda s, c, d: torch.zeros(c["prefix"] + (s["Tq"], 1), dtype=d),
                   "acc": lambda s, c, d: torch.zeros(c["prefix"] + (s["Tq"], s["d_v"]), dtype=d)},
             accepted={"-inf real:m": "m is the running maximum: -inf before any key (the first block)",
                       "-inf real:scores": "a masked score is -inf (block_attention's masked keys)"}),
        Door("gpt.top_k_filter", gpt.top_k_filter, others={"k": 1},
             accepted={"-inf real:logits": "a logit of -inf is a token already filtered out (top_k_filter's output)"}),
        Door("gpt.sampling_distribution", gpt.sampling_distribution, others={"temperature": 1.0},
             accepted={"-inf real:logits": "a logit of -inf is a token already filtered out (top_k_filter's output)"}),
        Door("positional.SinusoidalPositionalEncoding", positional.SinusoidalPositionalEncoding.forward,
             owner=lambda: positional.SinusoidalPositionalEncoding(D, 32), others={"offset": 0}, sizes=seq),
        Door("positional.LearnedPositionalEmbedding", positional.LearnedPositionalEmbedding.forward,
             owner=lambda: positional.LearnedPositionalEmbedding(D, 32), others={"offset": 0}, sizes=seq),
        Door("embeddings.CBOW", embeddings.CBOW.forward, owner=lambda: embeddings.CBOW(V, D), vocab=V),
        Door("embeddings.cosine_matrix", embeddings.cosine_matrix),
        Door("metrics.token_accuracy", metrics.token_accuracy, padded=("T",), vocab=lambda s: s["V"],
             sizes={"V": (5, 8)},
             make={"logits_or_pred": lambda s, c, d: torch.randn(s["B"], s["T"], s["V"], generator=c["g"]).to(d),
                   "mask": padding_bool("T")}, reference=None),
        Door("pretrained.quantize_int8", __import__("utils.pretrained", fromlist=["x"]).quantize_int8,
             modes=("fp32", "fp64", "bf16")),
        Door("gpt.GPT", gpt.GPT.forward, owner=lambda: gpt.GPT(gpt_cfg()), vocab=V, padded=(),
             sizes={"T": (1, 6)}, others={"offset": 0}),
        Door("gpt.Block", gpt.Block.forward, owner=lambda: gpt.Block(gpt_cfg()), sizes={"T": (1, 6)}),
        Door("gpt.generate", gpt.generate, owner=lambda: gpt.GPT(gpt_cfg()), vocab=V, sizes={"T": (1, 6)},
             others={"max_new_tokens": 2, "temperature": 0.0}, reference=None),
        Door("gpt.split_text", gpt.split_text, vocab=V, sizes={"N": (20, 40)}, accepted={"id": NO_VOCAB}),
        Door("gpt.get_batch", gpt.get_batch, vocab=V, sizes={"N": (10, 30)},
             others={"block_size": 4, "batch_size": 2}, reference=None, accepted={"id": NO_VOCAB}),
        Door("transformer.Transformer", transformer.Transformer.forward,
             owner=lambda: transformer.Transformer(tf_cfg()), vocab=V, padded=("S", "T"), sizes=seq),
        Door("transformer.EncoderTagger", transformer.EncoderTagger.forward,
             owner=lambda: transformer.EncoderTagger(tf_cfg()), vocab=V, padded=("S",), sizes=seq,
             make={"src_mask": lambda s, c, d: None if not c["draw"](st.booleans()) else
                   padding_bool("S")(s, c, d)[:, None, None, :]}),
        Door("transformer.Encoder", transformer.Encoder.forward, owner=lambda: transformer.Encoder(tf_cfg()), sizes=seq,
             make={"src_mask": source_mask("S")}),
        Door("transformer.EncoderLayer", transformer.EncoderLayer.forward,
             owner=lambda: transformer.EncoderLayer(D, H, 16, 0.0), sizes=seq, make={"src_mask": source_mask("S")}),
        Door("transformer.DecoderLayer", transformer.DecoderLayer.forward,
             owner=lambda: transformer.DecoderLayer(D, H, 16, 0.0), sizes=seq,
             make={"tgt_mask": lambda s, c, d: attention.causal_mask(s["T"])[None, None] if s["T"] else None,
                   "src_mask": source_mask("S")}),
        Door("transformer.Decoder", transformer.Decoder.forward, owner=lambda: transformer.Decoder(tf_cfg()),
             sizes=seq, make={"src_mask": source_mask("S")}, others={"offset": 0}),
        Door("transformer.greedy_decode", transformer.greedy_decode, owner=lambda: transformer.Transformer(tf_cfg()),
             vocab=V, padded=("S",), sizes=seq, others={"max_len": 4, "bos_id": 2, "eos_id": 3}, reference=None,
             accepted={"number -1:eos_id": EOS_OUTSIDE}),
        Door("transformer.beam_search", transformer.beam_search, owner=lambda: transformer.Transformer(tf_cfg()),
             vocab=V, padded=("S",), sizes=seq,
             others={"beam_size": 2, "max_len": 4, "bos_id": 2, "eos_id": 3, "length_penalty": 0.6}, reference=None,
             accepted={"number -1:eos_id": EOS_OUTSIDE}),
        Door("rnn.Encoder", rnn.Encoder.forward, owner=lambda: rnn.Encoder(V, 8, 8), vocab=V, padded=("S",),
             sizes=seq, make={"src_mask": padding_bool("S")}, reference=None),
        Door("rnn.Seq2Seq", rnn.Seq2Seq.forward, owner=lambda: rnn.Seq2Seq(V, V, 8, 8, 8), vocab=V,
             padded=("S", "T"), sizes=seq, make={"src_mask": padding_bool("S")}),
        Door("rnn.masked_softmax", rnn.masked_softmax, sizes={"S": (1, 6)},
             make={"mask": lambda s, c, d: torch.arange(s["S"]) < torch.randint(1, s["S"] + 1, c["prefix"] + (1,),
                                                                                generator=c["g"])
                   if s["S"] else torch.ones(c["prefix"] + (0,), dtype=torch.bool)}),
        Door("rnn.DotScore", rnn.DotScore.forward, owner=lambda: rnn.DotScore(8, 8), sizes={"S": (1, 6)}),
        Door("rnn.AdditiveScore", rnn.AdditiveScore.forward, owner=lambda: rnn.AdditiveScore(8, 8), sizes={"S": (1, 6)}),
        Door("rnn.CosineScore", rnn.CosineScore.forward, owner=lambda: rnn.CosineScore(8, 8), sizes={"S": (1, 6)}),
        Door("rnn.ScaledDotScore", rnn.ScaledDotScore.forward, owner=lambda: rnn.ScaledDotScore(8, 8),
             sizes={"S": (1, 6)}),
        Door("rnn.beam_search", rnn.beam_search, owner=lambda: rnn.Seq2Seq(V, V, 8, 8, 8), vocab=V, padded=("S",),
             sizes=seq, make={"src_mask": padding_bool("S")}, others={"beam_size": 2, "max_len": 3, "alpha": 1.0},
             reference=None),
        Door("gpt.text_loss", gpt.text_loss, owner=lambda: gpt.GPT(gpt_cfg()), vocab=V, sizes={"N": (10, 30)},
             others={"batch_size": 4, "block_size": 4}),
        Door("gpt.estimate_loss", gpt.estimate_loss, owner=lambda: gpt.GPT(gpt_cfg()), vocab=V, sizes={"N": (17, 40)},
             others={"batch_size": 2, "batches": 2, "seed": 0},
             accepted={"number -1:seed": "any whole number is a seed (torch.manual_seed takes negative ones)"}),
        Door("transformer.attention_maps", transformer.attention_maps, owner=lambda: transformer.Transformer(tf_cfg()),
             vocab=V, padded=("S", "T"), sizes=seq),
        Door("rnn.greedy_decode", rnn.greedy_decode, owner=lambda: rnn.Seq2Seq(V, V, 8, 8, 8), vocab=V,
             padded=("S",), sizes=seq, make={"src_mask": padding_bool("S")}, others={"max_len": 3}, reference=None),
    ]
    return L


DOORS = None
LABELS: set = set()

# (door, slip kind): obscure today, with what it gets; only shrinks (tests/utils/test_fuzz_doors.py, --strict)
NOT_YET: dict = {}  # (door, slip kind) -> what it gets; empty since the decoders' mask errors name x and memory


def all_doors() -> list[Door]:
    global DOORS
    if DOORS is None:
        DOORS = doors()
        LABELS.update(d.label for d in DOORS)
    return DOORS


# --------------------------------------------------------------------------- one door, many draws: the tally


@dataclass
class Tally:
    valid: int = 0
    refused: list = field(default_factory=list)     # (example, message)
    disagree: list = field(default_factory=list)
    clear: int = 0
    obscure: list = field(default_factory=list)     # (slip kind, arg, message)
    silent: list = field(default_factory=list)
    by_design: dict = field(default_factory=dict)   # reason -> count


def zero_maker(door: Door, draw) -> Callable[[str], Example | None]:
    def make(letter: str):
        try:
            return draw(examples(door, force={letter: 0}))
        except Exception:  # noqa: BLE001 - the generator cannot build this door's inputs at size 0
            return None
    return make


def check_example(ex: Example, tally: Tally, draw=None) -> None:
    """Run one valid example and all its slips, counting outcomes in ``tally``."""
    door = ex.door
    tally.valid += 1
    try:
        out = ex.run()
    except Exception as e:  # noqa: BLE001
        tally.refused.append((ex.describe(), f"{type(e).__name__}: {e}"[:300]))
        return
    try:
        diff = agree(door, ex, out)
    except Exception as e:  # noqa: BLE001
        diff = f"the reference failed: {type(e).__name__}: {e}"[:300]
    if diff:
        tally.disagree.append((ex.describe(), diff))
    for slip in slips(ex, zero_maker(door, draw) if draw is not None else None):
        why = accepted_why(door, slip)
        outcome, message = run_slip(ex, slip)
        if outcome == "clear":
            tally.clear += 1
        elif why is not None and (outcome == "silent" or why == ""):
            tally.by_design[why or "ignored"] = tally.by_design.get(why or "ignored", 0) + 1
        elif outcome == "obscure":
            tally.obscure.append((slip.kind, slip.arg, message))
        else:
            tally.silent.append((slip.kind, slip.arg, ex.describe()))


def fuzz(examples_per_door: int = 5, seed: int = 0, only: str | None = None) -> dict[str, Tally]:
    """Draw ``examples_per_door`` valid inputs per door (hypothesis, derandomized with ``seed``) and every slip
    of each; returns the tally per door."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    tallies = {}
    for door in all_doors():
        if only and only != door.label and (only not in door.label or only in LABELS):
            continue
        tally = tallies[door.label] = Tally()

        @hseed(seed)
        @settings(max_examples=examples_per_door, deadline=None, database=None, derandomize=False,
                  suppress_health_check=list(HealthCheck), phases=("generate",))
        @given(data=st.data())
        def run(data):
            ex = data.draw(examples(door))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check_example(ex, tally, data.draw)

        run()
    return tallies


def findings(tallies: dict[str, Tally]) -> list[str]:
    """What must not happen: a valid input refused or disagreeing, a slip silent or obscure (but NOT_YET's)."""
    out = []
    for label, t in tallies.items():
        out += [f"{label}: valid input refused: {r}" for r in t.refused]
        out += [f"{label}: disagrees with the reference: {r}" for r in t.disagree]
        out += [f"{label}: silent: {kind} in {arg}" for kind, arg, _ in t.silent]
        out += [f"{label}: obscure: {kind} in {arg}: {m[:120]}" for kind, arg, m in t.obscure if (label, kind) not in NOT_YET]
    return out


def table(tallies: dict[str, Tally], verbose: bool = False) -> dict[str, int]:
    total = dict(valid=0, refused=0, disagree=0, clear=0, obscure=0, silent=0, by_design=0)
    print(f"{'door':<44} {'valid':>5} {'refused':>7} {'differs':>7} {'slips':>6} {'clear':>6} {'obscure':>7} "
          f"{'silent':>6} {'accepted':>8}")
    for label, t in tallies.items():
        n_design = sum(t.by_design.values())
        n = t.clear + len(t.obscure) + len(t.silent) + n_design
        print(f"{label:<44} {t.valid:>5} {len(t.refused):>7} {len(t.disagree):>7} {n:>6} {t.clear:>6} "
              f"{len(t.obscure):>7} {len(t.silent):>6} {n_design:>8}")
        for key, value in (("valid", t.valid), ("refused", len(t.refused)), ("disagree", len(t.disagree)),
                           ("clear", t.clear), ("obscure", len(t.obscure)), ("silent", len(t.silent)),
                           ("by_design", n_design)):
            total[key] += value
        if verbose:
            for what, rows in (("refused", t.refused), ("differs", t.disagree)):
                for row in rows[:3]:
                    print(f"    {what}: {row}")
            seen = set()
            for what, rows in (("obscure", t.obscure), ("silent", t.silent)):
                for kind, arg, msg in rows:
                    if (what, kind, arg) not in seen:
                        seen.add((what, kind, arg))
                        print(f"    {what}: {kind} in {arg}: {msg[:200]}")
    slips_n = total["clear"] + total["obscure"] + total["silent"]
    print(f"{'all':<44} {total['valid']:>5} {total['refused']:>7} {total['disagree']:>7} "
          f"{slips_n + total['by_design']:>6} {total['clear']:>6} {total['obscure']:>7} {total['silent']:>6} "
          f"{total['by_design']:>8}")
    if slips_n:
        print(f"{100 * total['clear'] / slips_n:.1f} % of the slips that must be refused are clear; "
              f"{total['refused']} valid inputs refused, {total['disagree']} disagree with the reference")
    return total


# --------------------------------------------------------------------------- the numbers of the other public functions


@dataclass
class Numbers:
    """A public function whose settings are numbers: ``valid`` keyword arguments, each int or float of which gets
    the slips of :data:`NUMBER_SLIPS` (``accepted``: "arg:slip" -> why it is a valid value)."""
    label: str
    fn: Callable
    valid: dict
    accepted: dict = field(default_factory=dict)


NUMBER_SLIPS = {"nan": float("nan"), "inf": float("inf"), "-1": -1, "0": 0, "fraction": 2.5, "bool": True,
                "None": None, "str": "8"}


def number_doors() -> list[Numbers]:
    from utils import attention, positional, scale, schedule, text, training
    from utils.gpt import GPTConfig
    from utils.transformer import TransformerConfig

    lin = torch.nn.Linear(2, 2)
    pos = "a position, 0 is the first"
    return [
        Numbers("schedule.transformer_lr", schedule.transformer_lr, dict(step=10, d_model=16, warmup=4, factor=1.0),
                {"step:0": "step 0 is treated as step 1 (documented)", "factor:fraction": "any factor > 0",
                 "step:bool": "", "d_model:bool": "", "warmup:bool": ""}),
        Numbers("schedule.peak_lr", schedule.peak_lr, dict(d_model=16, warmup=4, factor=1.0),
                {"factor:fraction": "any factor > 0"}),
        Numbers("schedule.warmup_decay", schedule.warmup_decay, dict(steps=10, warmup_fraction=0.2, floor=0.02),
                {"warmup_fraction:fraction": "", "floor:fraction": ""}),
        Numbers("schedule.warmup_scheduler", lambda **k: schedule.warmup_scheduler(torch.optim.SGD(lin.parameters(), lr=0.1), **k),
                dict(d_model=16, warmup=4, factor=1.0), {"factor:fraction": "any factor > 0"}),
        Numbers("positional.sinusoidal_encoding", positional.sinusoidal_encoding, dict(max_len=8, d_model=6, offset=0, base=10000.0),
                {"offset:0": pos, "base:fraction": "any base > 1"}),
        Numbers("positional.offset_matrix", positional.offset_matrix, dict(k=2, d_model=6, base=10000.0),
                {"k:-1": "an offset back is a rotation too", "k:0": "the identity", "base:fraction": "any base > 1"}),
        Numbers("scale.kv_cache_bytes_per_token", scale.kv_cache_bytes_per_token,
                dict(n_layer=2, num_kv_heads=2, d_k=4, bytes_per_value=2)),
        Numbers("scale.swiglu_hidden", scale.swiglu_hidden, dict(d_model=16, multiple_of=8)),
        Numbers("attention.causal_mask", attention.causal_mask, dict(T_q=3, T_k=4),
                {"T_k:None": "documented: T_k = T_q"}),
        Numbers("text.pad_sequences", lambda **k: text.pad_sequences([[4, 5, 6]], **k), dict(max_len=2, pad_id=0),
                {"pad_id:0": "<pad> is 0", "max_len:None": "documented: no truncation"}),
        Numbers("training.perplexity", training.perplexity, dict(loss=1.5), {"loss:0": "a perfect model's loss",
                                                                             "loss:fraction": ""}),
        Numbers("attention.MultiHeadAttention (sizes)", attention.MultiHeadAttention, dict(d_model=8, num_heads=2, dropout=0.1),
                {"dropout:0": "no dropout"}),
        Numbers("transformer.TransformerConfig", TransformerConfig,
                dict(src_vocab=20, tgt_vocab=20, d_model=8, num_heads=2, d_ff=16, num_encoder_layers=1,
                     num_decoder_layers=1, dropout=0.1, max_len=32, pad_id=0),
                {"num_encoder_layers:0": "an encoder of no layer (notebook 07's ablation)",
                 "num_decoder_layers:0": "a decoder of no layer", "dropout:0": "no dropout", "pad_id:0": "<pad> is 0"}),
        Numbers("gpt.GPTConfig", lambda **k: __import__("utils.gpt", fromlist=["GPT"]).GPT(GPTConfig(**k)),
                dict(vocab_size=20, block_size=8, n_layer=1, n_head=2, d_model=8, dropout=0.1),
                {"dropout:0": "no dropout", "n_layer:0": "no block: embeddings and read-out only"}),
    ]


def fuzz_numbers() -> dict[str, Tally]:
    """Every number slip of every :func:`number_doors` function (a fixed list: no draw needed)."""
    tallies = {}
    for door in number_doors():
        t = tallies[door.label] = Tally()
        t.valid = 1
        try:
            door.fn(**door.valid)
        except Exception as e:  # noqa: BLE001
            t.refused.append((str(door.valid), f"{type(e).__name__}: {e}"[:300]))
            continue
        for arg, value in door.valid.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            for kind, bad in NUMBER_SLIPS.items():
                if kind == "fraction" and isinstance(value, float):
                    continue
                why = door.accepted.get(f"{arg}:{kind}")
                outcome, message = sort(lambda: door.fn(**{**door.valid, arg: bad}), (arg,))
                if outcome == "clear":
                    t.clear += 1
                elif why is not None and outcome == "silent":
                    t.by_design[why or "a valid value"] = t.by_design.get(why or "a valid value", 0) + 1
                elif outcome == "obscure":
                    t.obscure.append((kind, arg, message))
                else:
                    t.silent.append((kind, arg, str(bad)))
    return tallies


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=5, help="valid inputs drawn per door (each with all its slips)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--door", default=None, help="only the doors whose label contains this")
    parser.add_argument("--verbose", action="store_true", help="each kind of finding, with its message")
    parser.add_argument("--strict", action="store_true", help="exit 1 on a finding (make test-fuzz)")
    a = parser.parse_args()
    torch.set_num_threads(1)
    result = fuzz(a.examples, a.seed, a.door)
    result.update({k: v for k, v in fuzz_numbers().items() if not a.door or a.door in k})
    table(result, verbose=a.verbose)
    found = findings(result)
    for line in found[:20]:
        print("FINDING", line)
    sys.exit(1 if a.strict and found else 0)
