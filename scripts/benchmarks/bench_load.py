"""How much slower do the notebooks get when another program wants the CPU too?

    python scripts/benchmarks/bench_load.py --steps                 # one notebook-09 training step, by thread count
    python scripts/benchmarks/bench_load.py                         # whole training notebooks, quiet vs beside a competitor
    python scripts/benchmarks/bench_load.py 09_gpt_language_model   # just some notebooks (name prefixes)

The competitor is a CPU-bound process like a learner's second notebook: the
notebook-09 GPT training step in a loop with PyTorch's default thread count. Each
notebook is executed top to bottom (nbclient, the course kernel's Python) once on a
quiet machine and once beside the competitor; the ratio loaded / quiet is printed.
The course's goal is at most 2.5 with one competitor. Nothing here is asserted: it
prints measured figures (CONTRIBUTING.md: speed targets live in benchmarks).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ["01_tokens_and_embeddings", "02_rnn_seq2seq", "03_additive_attention", "05_multi_head_attention",
            "06_positional_encoding", "08_transformer_translation", "09_gpt_language_model"]

STEP = """
import sys, time, torch
sys.path.insert(0, {root!r})
from utils.gpt import GPT, GPTConfig
threads, n = {threads}, {n}
if threads:
    torch.set_num_threads(threads)
cfg = GPTConfig(vocab_size=65, block_size=64, n_layer=2, n_head=4, d_model=128, dropout=0.0)  # notebook 09's model
torch.manual_seed(0)
model = GPT(cfg)
opt = torch.optim.AdamW(model.parameters(), 2e-3)
x, y = torch.randint(0, 65, (32, 64)), torch.randint(0, 65, (32, 64))
times = []
i = 0
while n == 0 or i < n:
    t = time.perf_counter()
    _, loss = model(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t)
    i += 1
times = sorted(times[5:])
print(1000 * times[len(times) // 2])
"""


def competitor() -> subprocess.Popen:
    """Start the CPU hog (notebook 09's training step forever, default threads)."""
    p = subprocess.Popen([sys.executable, "-c", STEP.format(root=str(ROOT), threads=0, n=0)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)  # let it start spinning
    return p


def step_ms(threads: int, n: int = 60) -> float:
    out = subprocess.run([sys.executable, "-c", STEP.format(root=str(ROOT), threads=threads, n=n)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def run_notebook(name: str) -> float:
    import nbformat
    from nbclient import NotebookClient

    path = ROOT / "notebooks" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - t0


def with_and_without(fn, *args) -> tuple[float, float]:
    quiet = fn(*args)
    hog = competitor()
    try:
        loaded = fn(*args)
    finally:
        hog.kill()
        hog.wait()
    return quiet, loaded


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", help="name prefixes (default: the training notebooks)")
    ap.add_argument("--steps", action="store_true", help="time one training step by thread count instead")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    import torch

    print(f"torch {torch.__version__}, {os.cpu_count()} cores, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}, COURSE_THREADS={os.environ.get('COURSE_THREADS')}", flush=True)
    rows = {}
    if args.steps:
        print(f"{'threads':>7} | {'quiet ms':>8} | {'loaded ms':>9} | ratio")
        for threads in (1, 2):
            quiet, loaded = with_and_without(step_ms, threads)
            rows[f"{threads} threads"] = dict(quiet=quiet, loaded=loaded, ratio=loaded / quiet)
            print(f"{threads:>7} | {quiet:8.0f} | {loaded:9.0f} | {loaded / quiet:.2f}", flush=True)
    else:
        names = [n for n in TRAINING if not args.notebooks or any(n.startswith(a) for a in args.notebooks)]
        print(f"{'notebook':<36} | {'quiet s':>7} | {'loaded s':>8} | ratio")
        for name in names:
            quiet, loaded = with_and_without(run_notebook, name)
            rows[name] = dict(quiet=quiet, loaded=loaded, ratio=loaded / quiet)
            print(f"{name:<36} | {quiet:7.0f} | {loaded:8.0f} | {loaded / quiet:.2f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
