"""Why attention's CPU time does not follow its FLOPs doubling by doubling (notebook 10, Appendix A.1).

Notebook 10's two layers (one causal attention head and one GRU, d = 64, B = 1) at more lengths than the
notebook's four: the counted FLOPs (``FlopCounterMode``), the median CPU time of ``--reps`` calls (each after
an untimed one), the rate (GFLOP per CPU second), the size of one (T, T) float32 matrix, and the minor page
faults per call (``resource.getrusage``, where the OS has it): pages the allocator had to take fresh from the
operating system. The rate of attention falls where its (T, T) matrices outgrow the core's caches, while the
GRU's stays level; the page faults show large buffers handed back and fetched again on every call.

    python scripts/benchmarks/bench_layer_rate.py                       # 256 ... 2048, one thread
    python scripts/benchmarks/bench_layer_rate.py --lengths 256 512 --reps 3

Printed, not asserted: the figures are this computer's (``ATEN_CPU_CAPABILITY=default`` for the portable
kernels).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.attention import MultiHeadAttention, causal_mask  # noqa: E402

try:
    import resource
except ImportError:                                       # Windows: no page-fault counts
    resource = None


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0


def measure(lengths: list[int], reps: int = 7, d: int = 64) -> list[dict]:
    torch.manual_seed(0)
    mha, gru = MultiHeadAttention(d, 1).eval(), nn.GRU(d, d, batch_first=True).eval()
    xs = {T: torch.randn(1, T, d) for T in lengths}       # (B, T, D)
    layer = {
        "attention": lambda T: mha(xs[T], xs[T], xs[T], causal_mask(T)[None, None]),
        "GRU": lambda T: gru(xs[T]),
    }
    rows = []
    with torch.no_grad():
        for name, fn in layer.items():
            for T in lengths:
                with FlopCounterMode(display=False) as counter:
                    fn(T)
                times, faults = [], []
                for _ in range(reps):
                    fn(T)                                  # untimed first, as in the notebook
                    f0, t0 = _faults(), time.process_time()
                    fn(T)
                    times.append(time.process_time() - t0)
                    faults.append(_faults() - f0)
                seconds = statistics.median(times)
                rows.append({"layer": name, "T": T, "flops": counter.get_total_flops(), "cpu_s": seconds,
                             "gflop_per_s": counter.get_total_flops() / seconds / 1e9,
                             "matrix_mib": 4 * T * T / 2**20, "page_faults": statistics.median(faults)})
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 384, 512, 768, 1024, 1536, 2048])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        rows = measure(args.lengths, args.reps)
    finally:
        torch.set_num_threads(threads)
    print(f"{'layer':>9} {'T':>5} {'MFLOP':>8} {'CPU ms':>8} {'GFLOP/s':>8} {'(T,T) MiB':>9} {'faults/call':>11}")
    for r in rows:
        print(f"{r['layer']:>9} {r['T']:>5} {r['flops'] / 1e6:>8.1f} {1e3 * r['cpu_s']:>8.2f} "
              f"{r['gflop_per_s']:>8.2f} {r['matrix_mib']:>9.2f} {r['page_faults']:>11.0f}")
    return rows


if __name__ == "__main__":
    main()
