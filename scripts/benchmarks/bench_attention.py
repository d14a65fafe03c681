"""Measured speeds behind notebooks 04 and 05 (CPU or GPU, whatever utils.training.get_device picks).

- additive (Bahdanau) vs scaled dot-product attention on the same (B, T, d) batch;
- multi-head attention with h heads of size d/h vs one head of size d.

    python scripts/benchmarks/bench_attention.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import torch

from utils.attention import AdditiveAttention, MultiHeadAttention, scaled_dot_product_attention
from utils.training import get_device, set_seed


def best_time(fn, device, repeats: int = 5, number: int = 5) -> float:
    """Best mean time per call (seconds) over ``repeats`` runs of ``number`` calls."""
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / number)
    return best


@torch.no_grad()
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    device = get_device()
    set_seed(0)
    print(f"device: {device}, torch {torch.__version__}, threads {torch.get_num_threads()}")
    print("\nadditive vs dot-product attention (B = 32, d_hidden = d)")
    print(f"{'T':>5} {'d':>5} {'dot ms':>9} {'additive ms':>12} {'ratio':>7}")
    for T, d in ((32, 64), (64, 64), (128, 64)):
        q, k, v = (torch.randn(32, T, d, device=device) for _ in range(3))
        add = AdditiveAttention(d, d, d).to(device)
        t_dot = best_time(lambda: scaled_dot_product_attention(q, k, v), device, args.repeats)
        t_add = best_time(lambda: add(q, k, v), device, args.repeats)
        print(f"{T:>5} {d:>5} {t_dot * 1e3:>9.3f} {t_add * 1e3:>12.3f} {t_add / t_dot:>6.1f}x")
    print("\nmulti-head attention: h heads of size d/h vs 1 head of size d (B = 16)")
    print(f"{'T':>5} {'d':>5} {'h':>3} {'1 head ms':>10} {'h heads ms':>11} {'ratio':>7}")
    for T, d, h in ((128, 256, 8), (128, 512, 8), (256, 256, 4)):
        x = torch.randn(16, T, d, device=device)
        one, many = MultiHeadAttention(d, 1).to(device).eval(), MultiHeadAttention(d, h).to(device).eval()
        t1 = best_time(lambda: one(x, x, x), device, args.repeats)
        th = best_time(lambda: many(x, x, x), device, args.repeats)
        print(f"{T:>5} {d:>5} {h:>3} {t1 * 1e3:>10.3f} {th * 1e3:>11.3f} {th / t1:>6.2f}x")


if __name__ == "__main__":
    main()
