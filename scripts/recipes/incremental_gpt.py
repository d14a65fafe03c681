"""Notebook 09's incremental GPT build ("Let's build GPT"): the validation loss after each added piece.

    OMP_NUM_THREADS=1 python scripts/recipes/incremental_gpt.py --seeds 0 1 > incremental.log 2>&1 &
    # start the same command again (up to one per core): the processes share out the runs

Every stage is trained as notebook 09 trained its model before issue 42 (char-level tiny-shakespeare, the same
80/10/10 split, 64 characters of context, batch 32, AdamW at 4e-3 with weight decay 0.1 and a one-cycle schedule,
gradients clipped at 1; the notebook now takes 2,150 steps of 16 windows at 6e-3 without weight decay, the
settings ``scripts/benchmarks/bench_fast_gpt.py`` measured) but for 400 steps instead of 1,000 (``--steps``), so that 7 stages x 2 seeds fit in an afternoon
on one CPU core (about 50 minutes of wall-clock per seed, measured on a busy shared 2-core machine), and scored with ``utils.gpt.text_loss``
on the whole validation text. The stages switch pieces of ``utils.gpt.GPT`` on one at a time
(``GPTConfig.residual``, ``feed_forward``, ``norm="none"``); stage ``pre_ln`` is notebook 09's model.
The bigram row is the counted table (the best any bigram model can do), which has no seed.
A run that was interrupted leaves ``<stage>_seed<seed>.json.lock``: delete it to run that stage again.

Each run is written to ``<out>/runs/<stage>_seed<seed>.json`` as soon as it finishes, so the script resumes
where it stopped; ``<out>/results.json`` gathers them (mean and spread per stage).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.data import load_tiny_shakespeare  # noqa: E402
from utils.distributed import train_gpt  # noqa: E402
from utils.gpt import GPT, CharTokenizer, GPTConfig, get_batch, gpt_parameter_count, split_text, text_loss  # noqa: E402
from utils.training import set_seed  # noqa: E402

BASE = dict(block_size=64, n_layer=2, n_head=4, d_model=128, dropout=0.0)  # notebook 09's model
TRAIN = dict(batch=32, steps=400, lr=4e-3)  # notebook 09's recipe before issue 42 (1,000 steps); 400 keeps it affordable
OFF = dict(residual=False, norm="none")
# (name, what is added, GPTConfig overrides of BASE)
STAGES = [
    ("one_head", "one self-attention head (128 dims) + position embeddings",
     dict(n_layer=1, n_head=1, feed_forward=False, **OFF)),
    ("multi_head", "+ 4 heads of 32 dims instead of one", dict(n_layer=1, feed_forward=False, **OFF)),
    ("feed_forward", "+ feed-forward network (one block)", dict(n_layer=1, **OFF)),
    ("two_blocks", "+ a second block", dict(**OFF)),
    ("residual", "+ residual connections", dict(norm="none")),
    ("pre_ln", "+ LayerNorm (pre-LN): notebook 09's model", dict()),
    ("dropout", "+ dropout 0.2", dict(dropout=0.2)),
]


def config(stage: str, vocab_size: int) -> GPTConfig:
    overrides = {name: kw for name, _, kw in STAGES}[stage]
    return GPTConfig(vocab_size=vocab_size, **{**BASE, **overrides})


def train_one(cfg: GPTConfig, parts: dict, seed: int, steps: int) -> dict:
    """Notebook 09's training loop, ``utils.distributed.train_gpt`` in one process (float32; without the
    notebook's periodic estimates, which draw no random numbers)."""
    set_seed(seed)
    model = GPT(cfg)
    run = train_gpt(model, parts["train"], steps=steps, batch_size=TRAIN["batch"], lr=TRAIN["lr"], seed=seed,
                    bf16=False)
    return dict(val_loss=text_loss(model, parts["val"]), train_loss_last_batch=run["losses"][-1],
                train_seconds=round(run["seconds"], 1), params=sum(p.numel() for p in model.parameters()))


def claim(path: Path) -> bool:
    """Atomically claim a run (so that several workers share the list); False if done or taken."""
    if path.exists():
        return False
    try:
        fd = os.open(str(path) + ".lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def gather(out: Path, parts: dict, vocab_size: int, seeds: list[int], steps: int) -> dict:
    val = parts["val"]
    counts = torch.ones(vocab_size, vocab_size)  # add-one smoothing, as in notebook 09
    tr = parts["train"]
    counts.index_put_((tr[:-1], tr[1:]), torch.ones(len(tr) - 1), accumulate=True)
    probs = counts / counts.sum(1, keepdim=True)
    bigram = -probs[val[:-1], val[1:]].log().mean().item()
    rows = [dict(stage="bigram", added="counted bigram table (no context)", params=vocab_size * vocab_size,
                 losses=[round(bigram, 4)], mean=round(bigram, 4), spread=0.0, seeds=[], steps=0, seconds=0.0)]
    for name, added, _ in STAGES:
        runs = []
        for seed in seeds:
            f = out / "runs" / f"{name}_seed{seed}.json"
            if f.exists():
                runs.append(json.loads(f.read_text()))
        if not runs:
            continue
        losses = [r["val_loss"] for r in runs]
        cfg = config(name, vocab_size)
        rows.append(dict(stage=name, added=added, params=runs[0]["params"], losses=[round(x, 4) for x in losses],
                         mean=round(statistics.mean(losses), 4), spread=round(max(losses) - min(losses), 4),
                         seeds=[r["seed"] for r in runs], steps=steps,
                         seconds=round(statistics.mean(r["train_seconds"] for r in runs), 1),
                         config={k: v for k, v in vars(cfg).items() if k != "vocab_size"}))
        assert runs[0]["params"] == gpt_parameter_count(cfg)
    return dict(data="tiny-shakespeare, characters, split_text 80/10/10", metric="text_loss on the whole "
                "validation text (nats per character)", train=dict(TRAIN, steps=steps), threads=1,
                torch=torch.__version__, uniform=round(math.log(vocab_size), 4), rows=rows)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--stages", nargs="+", default=[name for name, _, _ in STAGES])
    p.add_argument("--steps", type=int, default=TRAIN["steps"])
    p.add_argument("--out", default=str(ROOT / "runs" / "gpt_incremental"))
    p.add_argument("--gather-only", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    text = load_tiny_shakespeare()
    tok = CharTokenizer(text)
    parts = split_text(torch.tensor(tok.encode(text)), val_frac=0.1, test_frac=0.1)
    if not args.gather_only:
        for seed in args.seeds:
            for stage in args.stages:
                f = out / "runs" / f"{stage}_seed{seed}.json"
                if not claim(f):
                    continue
                r = train_one(config(stage, len(tok)), parts, seed, args.steps)
                r.update(stage=stage, seed=seed, steps=args.steps)
                f.write_text(json.dumps(r, indent=1) + "\n")
                Path(str(f) + ".lock").unlink()
                print(f"{stage:13s} seed {seed}: val {r['val_loss']:.4f}, {r['params']:,} params, "
                      f"{r['train_seconds']:.0f} s", flush=True)
    result = gather(out, parts, len(tok), args.seeds, args.steps)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    for row in result["rows"]:
        print(f"{row['stage']:13s} {row['mean']:.3f} ± {row['spread']:.3f} ({len(row['losses'])} runs)")
    return result


if __name__ == "__main__":
    main()
