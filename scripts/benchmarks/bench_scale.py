"""Notebook 10's measurements, printed: attention memory and time against sequence length, key/value
cache sizes, and notebook 09's GPT against the modern block.

    python scripts/benchmarks/bench_scale.py                     # everything (a few minutes on one CPU thread)
    python scripts/benchmarks/bench_scale.py --lengths 512 1024  # fewer lengths
    python scripts/benchmarks/bench_scale.py --steps 0           # skip the training comparison

1. One causal attention call, B = 1, 4 heads, d_k = 64, at each length T: the course's
   ``scaled_dot_product_attention`` (forms the T×T weights), ``utils.scale.block_attention`` (online
   softmax, 256 keys a block) and PyTorch's fused ``F.scaled_dot_product_attention``. Time: the median
   of ``--reps`` calls. Memory: ``utils.scale.peak_memory``, the most tensor memory the call's operations
   held at once (on the CPU; outputs and intermediates, not the inputs). The naive version is skipped
   above ``--naive-max`` (its weights alone take 16·T² bytes here).
2. Key/value cache bytes per token, by formula and measured on a model's cache.
3. Classic (notebook 09) and modern GPT at the same parameter count, ``--steps`` steps each, same recipe: tokens/s
   (by the clock and per CPU second) and validation loss (the longer, two-seed comparison is ``scripts/recipes/ablate_scale.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.attention import causal_mask, scaled_dot_product_attention  # noqa: E402
from utils.scale import block_attention, kv_cache_bytes_per_token, peak_memory  # noqa: E402


def timed(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def attention_table(lengths: list[int], reps: int, naive_max: int, block: int = 256) -> list[dict]:
    rows = []
    print(f"\n1. causal attention, B=1, H=4, d_k=64 (median of {reps}; memory: peak tensor bytes inside the call)")
    print(f"{'T':>6} | {'naive ms':>9} {'naive MiB':>10} | {'block ms':>9} {'block MiB':>10} | {'fused ms':>9} {'fused MiB':>10}")
    for T in lengths:
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, 4, T, 64, generator=g) for _ in range(3))
        fns = {"block": lambda: block_attention(q, k, v, block_size=block, is_causal=True),
               "fused": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)}
        if T <= naive_max:
            fns["naive"] = lambda: scaled_dot_product_attention(q, k, v, causal_mask(T))[0]
        row = {"T": T}
        for name, fn in fns.items():
            out, row[f"{name}_bytes"] = peak_memory(fn)
            row[f"{name}_ms"] = 1000 * timed(fn, reps)
            if name != "fused":
                assert (out - F.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max() < 1e-5
        cell = lambda n: (f"{row[n + '_ms']:9.1f} {row[n + '_bytes'] / 2**20:10.1f}" if n + "_ms" in row
                          else f"{'skipped':>9} {'':>10}")
        print(f"{T:6d} | {cell('naive')} | {cell('block')} | {cell('fused')}", flush=True)
        rows.append(row)
    for name in ("naive", "block", "fused"):
        pts = [(r["T"], r[f"{name}_bytes"]) for r in rows if f"{name}_bytes" in r]
        if len(pts) >= 2:
            (t0, m0), (t1, m1) = pts[-2], pts[-1]
            print(f"   {name}: memory x{m1 / m0:.2f} from T={t0} to T={t1}")
    return rows


def cache_table() -> None:
    from utils.gpt import GPT, GPTConfig
    print("\n2. key/value cache per token (keys + values, every layer)")
    print(f"{'model':>34} | {'kv heads':>8} | {'bytes/token':>12} | {'at 8,192 tokens':>15}")
    for label, L, H, d_k in (("a 7B-sized model, bf16 (32 x 32 x 128)", 32, 32, 128),):
        for kv in (H, 8, 1):
            b = kv_cache_bytes_per_token(L, kv, d_k)
            print(f"{label[:34]:>34} | {kv:8d} | {b:12,d} | {b * 8192 / 2**30:12.2f} GiB")
    for kv in (4, 2, 1):  # measured on notebook 10's small model (float32)
        torch.manual_seed(0)
        m = GPT(GPTConfig(vocab_size=65, block_size=64, n_layer=2, n_head=4, d_model=64, n_kv_head=kv, pos="rope")).eval()
        cache = m.new_cache()
        m(torch.randint(0, 65, (1, 64)), cache=cache)
        stored = sum(c[x].nbytes for c in cache for x in ("k", "v")) / 64
        formula = kv_cache_bytes_per_token(2, kv, 16, bytes_per_value=4)
        print(f"{'notebook 10 model, float32':>34} | {kv:8d} | {stored:12,.0f} | measured (formula {formula:,})")


def training_table(steps: int) -> None:
    from utils.data import load_tiny_shakespeare
    from utils.distributed import train_gpt
    from utils.gpt import GPT, CharTokenizer, GPTConfig, split_text, text_loss
    from utils.gpt import matched_swiglu_hidden
    from utils.training import count_parameters, set_seed
    text = load_tiny_shakespeare()
    tok = CharTokenizer(text)
    parts = split_text(torch.tensor(tok.encode(text)))
    print(f"\n3. notebook 09's GPT vs the modern block at the same parameter count, {steps} steps of batch 32 x 64 "
          f"characters, same recipe")
    print(f"{'model':>10} | {'params':>8} | {'tokens/s':>9} | {'per CPU s':>9} | {'val loss':>8}")
    sizes = dict(vocab_size=len(tok), block_size=64, n_layer=2, n_head=4, d_model=64)
    classic = GPTConfig(**sizes)
    modern = GPTConfig(**sizes, norm="rms", mlp="swiglu", bias=False, pos="rope", n_kv_head=2)
    modern = GPTConfig(**{**vars(modern), "mlp_hidden": matched_swiglu_hidden(modern, count_parameters(GPT(classic)))})
    for name, cfg in (("classic", classic), ("modern", modern)):
        set_seed(0)
        m = GPT(cfg)
        out = train_gpt(m, parts["train"], steps=steps, batch_size=32, lr=4e-3)
        print(f"{name:>10} | {count_parameters(m):8,d} | {out['tokens'] / out['seconds']:9,.0f} | "
              f"{out['tokens'] / out['cpu_seconds']:9,.0f} | {text_loss(m, parts['val']):8.3f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--naive-max", type=int, default=4096)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}")
    attention_table(args.lengths, args.reps, args.naive_max)
    cache_table()
    if args.steps:
        training_table(args.steps)


if __name__ == "__main__":
    main()
