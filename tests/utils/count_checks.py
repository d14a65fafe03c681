"""Issue 43: how many times one call of a model's forward enters a check function.

Every function of ``utils.checks`` and every ``check*``/``_check*``/``refuse*`` function of the other
``utils`` modules is wrapped with a counter (in every module that holds a reference to it), then one
call each of ``Transformer.forward(src, tgt_in)``, ``GPT.forward(x, targets)`` and ``CBOW.forward(context)``
is made. Printed: the entries per call, by function; a function entered more than once per call
(not counting the helpers one check calls) is a check met again.

    python tests/utils/count_checks.py
"""

from __future__ import annotations

import collections
import functools
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

COUNTS: collections.Counter[str] = collections.Counter()
# not checks: the decorator, the gate that says a door was passed, and helpers that look up a module's sizes
HELPERS = ("contract", "trusted", "_how_to_convert", "_size_of", "_reference", "_device_of", "_specs")


def _is_check(module: str, name: str, fn: object) -> bool:
    if not inspect.isfunction(fn) or not fn.__module__.startswith("utils"):
        return False
    if fn.__module__ == "utils.checks":
        return not name.startswith("__") and name not in HELPERS
    short = name.lstrip("_")
    return short.startswith(("check", "refuse")) or short in ("inverted_convention",)


def instrument() -> list[str]:
    import utils

    mods = [importlib.import_module(f"utils.{m.name}") for m in pkgutil.iter_modules(utils.__path__)
            if not m.name.startswith("explorers")]
    originals: dict[int, object] = {}
    for mod in mods:
        for name, fn in list(vars(mod).items()):
            if _is_check(mod.__name__, name, fn) and id(fn) not in originals:
                originals[id(fn)] = fn
    wrappers = {}
    for key, fn in originals.items():
        label = f"{fn.__module__.removeprefix('utils.')}.{fn.__name__}"

        def wrap(fn=fn, label=label):
            @functools.wraps(fn)
            def counted(*a, **k):
                COUNTS[label] += 1
                return fn(*a, **k)
            return counted
        wrappers[key] = wrap()
    for mod in mods:
        for name, fn in list(vars(mod).items()):
            if id(fn) in wrappers:
                setattr(mod, name, wrappers[id(fn)])
    return sorted(f"{f.__module__}.{f.__name__}" for f in originals.values())


def calls():
    from utils.embeddings import CBOW
    from utils.gpt import GPT, GPTConfig
    from utils.transformer import Transformer, TransformerConfig

    torch.manual_seed(0)
    tf = Transformer(TransformerConfig(50, 50, d_model=16, num_heads=2, d_ff=32, num_encoder_layers=2,
                                       num_decoder_layers=2, dropout=0.0, max_len=32))
    src = torch.randint(4, 50, (3, 7)).masked_fill(torch.arange(7) >= torch.tensor([[7], [5], [3]]), 0)
    tgt = torch.randint(4, 50, (3, 6))
    gpt = GPT(GPTConfig(vocab_size=50, block_size=16, n_layer=2, n_head=2, d_model=16))
    x = torch.randint(0, 50, (3, 9))
    cbow = CBOW(50, 16)
    ctx = torch.randint(0, 50, (3, 4))
    from utils.rnn import Seq2Seq
    rnn = Seq2Seq(50, 50, 16, 16, 16, attention="additive")
    src_mask = src != 0
    return {"Transformer.forward(src, tgt_in)": lambda: tf(src, tgt),
            "GPT.forward(x, targets)": lambda: gpt(x, x),
            "CBOW.forward(context)": lambda: cbow(ctx),
            "Seq2Seq.forward(src, src_mask, tgt_in) (additive attention)": lambda: rnn(src, src_mask, tgt)}


def main() -> dict[str, int]:
    instrument()
    totals = {}
    for name, call in calls().items():
        call()  # warm: anything built lazily on the first call
        COUNTS.clear()
        call()
        totals[name] = sum(COUNTS.values())
        print(f"{name}: {totals[name]} entries into check functions")
        for fn, n in sorted(COUNTS.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"    {n:3d}  {fn}")
    return totals


if __name__ == "__main__":
    main()
