"""Is warm-up specific to Adam? Notebook 08's copy task, trained with SGD (momentum 0.9) and with
Adam (β = 0.9, 0.98, ε = 1e-9), each with and without a linear warm-up, over a grid of peak learning
rates and several seeds. Written to ``runs/warmup/results.json``; notebook 08 loads and shows it.

Each run: notebook 08's copy-task model and data (``utils.copytask``: a post-LN ``utils.transformer.Transformer``,
symbols a-j, sequences of 3-10 symbols, batches of 64 drawn from 5,000 training pairs), ``STEPS``
optimiser steps, gradients clipped at norm 1 (``utils.training.fit``'s default). The learning rate is
the peak rate times a schedule that decays linearly to 2 % over the last 80 % of the steps; with
warm-up it also rises linearly over the first 20 % (``min(rise, decay)``), without it starts at the
peak. The two arms differ only in those first steps. Scored by the exact-match rate of greedy
decoding on 200 held-out sequences and by the mean training loss of the last 20 steps.

    python scripts/recipes/warmup_optimizers.py                  # the committed results (1 CPU thread)
    python scripts/recipes/warmup_optimizers.py --seeds 1 --steps 20 --out /tmp/w.json   # a smoke test
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.copytask import copy_task, exact_match, train_copy  # noqa: E402

LRS = {"adam": [1e-3, 3e-3, 1e-2, 3e-2], "sgd": [0.03, 0.1, 0.3, 1.0]}


def run(opt_name: str, lr: float, warmup: bool, seed: int, steps: int, layers: int, d_model: int) -> dict:
    """One run of the grid (``utils.copytask``'s recipe, notebook 08's), scored."""
    t0 = time.perf_counter()
    try:
        model, hist = train_copy(seed, opt_name, lr, warmup, steps, layers, d_model)
        losses, diverged = hist.train_loss, False
    except FloatingPointError:
        losses, diverged = [math.nan], True
    if diverged:
        acc = 0.0
    else:
        _, test, vocab = copy_task(seed)
        acc = exact_match(model, test, vocab)
    final = float(sum(losses[-20:]) / len(losses[-20:]))
    return dict(optimizer=opt_name, lr=lr, warmup=warmup, seed=seed, exact_match=acc,
                final_loss=None if math.isnan(final) else final, diverged=diverged,
                seconds=round(time.perf_counter() - t0, 1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--optimizers", nargs="+", default=list(LRS), choices=list(LRS))
    p.add_argument("--lrs", nargs="+", type=float, default=None, help="only these peak rates (of the grid)")
    p.add_argument("--out", default=str(ROOT / "runs" / "warmup" / "results.json"))
    args = p.parse_args()
    torch.set_num_threads(1)
    key = f"layers{args.layers}"
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    runs = []
    for opt_name in args.optimizers:
        for lr in LRS[opt_name]:
            if args.lrs is not None and lr not in args.lrs:
                continue
            for warmup in (True, False):
                for seed in range(args.seeds):
                    r = run(opt_name, lr, warmup, seed, args.steps, args.layers, args.d_model)
                    runs.append(r)
                    print(json.dumps(r), flush=True)
    results[key] = dict(
        task="copy: symbols a-j, 3-10 symbols, 5,000 training pairs, 200 held-out",
        model=dict(d_model=args.d_model, num_heads=4, d_ff=2 * args.d_model, layers=args.layers, dropout=0.0,
                   post_ln=True),
        steps=args.steps, batch=64, warmup_steps=args.steps // 5, clip_grad_norm=1.0,
        adam=dict(betas=[0.9, 0.98], eps=1e-9), sgd=dict(momentum=0.9), lrs=LRS, seeds=args.seeds,
        hardware=f"{platform.processor() or platform.machine()}, torch {torch.__version__}, 1 thread",
        command=" ".join(["python", "scripts/recipes/warmup_optimizers.py", *sys.argv[1:]]),
        runs=runs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
