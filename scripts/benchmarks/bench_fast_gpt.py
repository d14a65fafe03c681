"""How low a validation loss can notebook 09's GPT reach on one CPU thread in its training time? (issue 42)

    python scripts/benchmarks/bench_fast_gpt.py --list                   # the arms and their levers
    python scripts/benchmarks/bench_fast_gpt.py --arms course9 lr6e3     # train and score these arms
    python scripts/benchmarks/bench_fast_gpt.py --arms all --resume      # skip arms already in the file
    python scripts/benchmarks/bench_fast_gpt.py --markdown               # the table of the recorded runs

Each arm trains the course's :class:`utils.gpt.GPT` on tiny-shakespeare (notebook 09's split: 80% train, 10%
validation, 10% test) with one torch thread, for a fixed number of optimiser steps (so a run is the same on every
computer), with notebook 09's training loop: AdamW, a learning-rate schedule stepped once per step, gradients
clipped at norm 1, batches drawn by ``utils.gpt.get_batch`` from a generator seeded with the seed, and the
periodic loss estimates of the notebook's training cell. The validation loss is measured as the notebook
measures it (``utils.gpt.estimate_loss(model, val)``: 20 fixed batches of 32 windows, the last line of its
log), and also on every position of the validation text (``utils.gpt.text_loss``). The CPU seconds of the
training loop, periodic estimates included (``time.thread_time``: the time the one thread computed, which
other processes on the machine change far less than wall-clock time), the CPU seconds of those estimates
alone, and the wall-clock seconds are recorded. One line of JSON per run goes to
``runs/fast_gpt/results.jsonl``.

The levers the arms vary, one or two at a time from notebook 09's live recipe: the peak learning rate, the
warm-up fraction, Adam's betas (and whether the one-cycle schedule cycles beta1), the schedule's shape, the
tokens per step (batch x block size), width against depth, weight decay, the steps, and the cost of the
periodic estimates. What they showed (``--markdown``): a step costs about in proportion to its windows, so the
same CPU time buys twice the steps at half the windows, and in so short a run more, smaller updates win; a
higher peak rate and no weight decay add a little; a deeper model for fewer steps, longer windows, a narrower
model for more steps and betas (0.9, 0.95) lose. Arm ``fast`` is the best found in the old recipe's CPU
time (1.684 against 1.738); notebook 09 trains it for 3,500 steps (``fast_3500``, ``CHOSEN``), about 1.4 times
that CPU time, which takes the validation loss under issue 42's 1.65. Issue 54's 1.60 in that time was not
reached: its arms (``fast_3500_*``, ``fast_3800_fused_nochecks``, recorded in ``runs/fast_gpt/levers.jsonl``
beside ``fast_3500`` run again) show Adam's fused kernel and the doors' checks off saving about 5 % of a step
together (``--step-cost``, ``runs/fast_gpt/step_cost.json``), and no better rate, warm-up or schedule at 3,500 steps.

    python scripts/benchmarks/bench_fast_gpt.py --step-cost              # a step's cost with each lever, in turns
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.checks import checks_off  # noqa: E402
from utils.data import load_tiny_shakespeare  # noqa: E402
from utils.gpt import GPT, CharTokenizer, GPTConfig, estimate_loss, get_batch, split_text, text_loss  # noqa: E402
from utils.training import count_parameters, set_cpu_threads, set_seed  # noqa: E402

OUT = ROOT / "runs" / "fast_gpt" / "results.jsonl"
# issue 54's runs of the per-step levers and the recipe at 3,500 steps, with fast_3500 again beside them: run on
# 2026-11-28, when a step of fast_3500 took about 1.7 times the thread CPU time it took in OUT's runs
LEVERS_OUT = ROOT / "runs" / "fast_gpt" / "levers.jsonl"
STEP_COST_OUT = ROOT / "runs" / "fast_gpt" / "step_cost.json"   # --step-cost's table, as measured
CHOSEN = "fast_3500"  # the arm notebook 09 trains (tests/scripts/test_fast_gpt.py checks its CFG and training cell)

# notebook 09's live recipe before issue 42 (FULL = False): CFG of cell 8 and the optimiser of the training cell
COURSE9 = dict(n_layer=2, n_head=4, d_model=128, block_size=64, dropout=0.0, batch=32, steps=1000, lr=4e-3,
               betas=[0.9, 0.99], weight_decay=0.1, schedule="onecycle", warmup_fraction=0.1,
               cycle_momentum=True, eval_every=200, eval_batches=20, eval_train=True)


# per-step levers added for issue 54, recorded in an arm's config only when it sets them (so that the runs
# recorded before them keep their configs): Adam's fused CPU kernel, and the doors' checks (utils.checks)
STEP_LEVERS = dict(fused=False, checks=True)


def arm(**changes) -> dict:
    unknown = set(changes) - set(COURSE9) - set(STEP_LEVERS)
    if unknown:
        raise KeyError(f"not a lever: {sorted(unknown)}")
    return {**COURSE9, **changes}


ARMS = {
    "course9": arm(),
    # the learning rate and the warm-up of the one-cycle schedule
    "lr6e3": arm(lr=6e-3),
    "lr1e2": arm(lr=1e-2),
    "warmup05": arm(warmup_fraction=0.05),
    "warmup20": arm(warmup_fraction=0.2),
    # Adam's betas: (0.9, 0.95) as nanoGPT and GPT-3; without beta1 cycled against the learning rate
    "betas95": arm(betas=[0.9, 0.95]),
    "betas95_fixed": arm(betas=[0.9, 0.95], cycle_momentum=False),
    # the schedule's shape: a linear warm-up, then a linear decay (utils.schedule.warmup_decay)
    "linear": arm(schedule="linear"),
    # weight decay
    "wd0": arm(weight_decay=0.0),
    # tokens per step: the same 2,048 characters as 16 windows of 128, or more characters per step
    "block128_b16": arm(block_size=128, batch=16),
    "batch64_500": arm(batch=64, steps=500),
    "block32_b64": arm(block_size=32, batch=64),
    "batch16_2000": arm(batch=16, steps=2000),
    # width against depth
    "layers3_d96": arm(n_layer=3, d_model=96),
    "layers1_d192": arm(n_layer=1, d_model=192, n_head=6),
    # a narrower model for more steps in the same CPU time (a step of d_model 96 costs about 0.72 of one of 128)
    "d96_1400": arm(d_model=96, steps=1400),
    # a deeper model for fewer steps in the same CPU time (a layer of d_model 128 costs about 30 ms a step)
    "layers3_660": arm(n_layer=3, steps=660),
    "layers4_500": arm(n_layer=4, steps=500),
    # one wide layer, with a higher peak rate; two layers of 160 for fewer steps
    "layers1_d192_lr1e2": arm(n_layer=1, d_model=192, n_head=6, lr=1e-2),
    "layers2_d160_lr1e2": arm(d_model=160, lr=1e-2, steps=650),
    # fewer windows per step, more steps (a step's cost is about proportional to its windows); the estimates
    # less often, so that there are as many as before
    "batch8_4000": arm(batch=8, steps=4000, eval_every=800),
    "batch16_lr6e3": arm(batch=16, steps=2000, lr=6e-3, eval_every=400),
    "batch16_lr1e2": arm(batch=16, steps=2000, lr=1e-2, eval_every=400),
    "batch8_lr6e3": arm(batch=8, steps=4000, lr=6e-3, eval_every=800),
    # combinations: batch 16 at 6e-3 without weight decay, steps to fill the CPU time; a linear schedule
    "batch16_lr6e3_wd0_2150": arm(batch=16, steps=2150, lr=6e-3, weight_decay=0.0, eval_every=500),
    "batch16_lr6e3_linear": arm(batch=16, steps=2000, lr=6e-3, eval_every=400, schedule="linear"),
    "batch16_lr6e3_wd0_2150_warmup20": arm(batch=16, steps=2150, lr=6e-3, weight_decay=0.0, eval_every=500,
                                           warmup_fraction=0.2),
    "batch16_lr6e3_wd0_2150_betas95": arm(batch=16, steps=2150, lr=6e-3, weight_decay=0.0, eval_every=500,
                                          betas=[0.9, 0.95]),
    "batch16_lr6e3_wd0_2150_linear": arm(batch=16, steps=2150, lr=6e-3, weight_decay=0.0, eval_every=430,
                                         schedule="linear"),
    "batch16_lr1e2_wd0_2150_linear": arm(batch=16, steps=2150, lr=1e-2, weight_decay=0.0, eval_every=430,
                                         schedule="linear"),
    "batch16_lr6e3_wd0_2150_onecycle_linear": arm(batch=16, steps=2150, lr=6e-3, weight_decay=0.0,
                                                  eval_every=430, schedule="onecycle_linear"),
    # notebook 09's recipe after issue 42: 16 windows a step for 2,150 steps at a peak rate of 6e-3, no weight
    # decay, the one-cycle schedule kept, five estimates along the way (one every 430 steps)
    "fast": arm(batch=16, steps=2150, lr=6e-3, weight_decay=0.0, eval_every=430),
    # what issue 42's target (validation loss <= 1.65) costs: the chosen recipe for longer
    "fast_3500": arm(batch=16, steps=3500, lr=6e-3, weight_decay=0.0, eval_every=700),
    "fast_5000": arm(batch=16, steps=5000, lr=6e-3, weight_decay=0.0, eval_every=1000),
    # every lever that helped, together: 8 windows a step, the linear schedule, no weight decay
    "batch8_lr6e3_wd0_4300_linear": arm(batch=8, steps=4300, lr=6e-3, weight_decay=0.0, eval_every=860,
                                        schedule="linear"),
    "layers1_d192_batch16": arm(n_layer=1, d_model=192, n_head=6, lr=1e-2, batch=16, steps=2000, eval_every=400),
    # issue 54: 09's loss at or under 1.60 in fast_3500's CPU time? Per-step levers (bench_roofline measured
    # them on 08's step) and the recipe's rate, warm-up and schedule at 3,500 steps
    "fast_3500_fused": arm(batch=16, steps=3500, lr=6e-3, weight_decay=0.0, eval_every=700, fused=True),
    "fast_3500_nochecks": arm(batch=16, steps=3500, lr=6e-3, weight_decay=0.0, eval_every=700, checks=False),
    "fast_3500_lr1e2": arm(batch=16, steps=3500, lr=1e-2, weight_decay=0.0, eval_every=700),
    "fast_3500_warmup05": arm(batch=16, steps=3500, lr=6e-3, weight_decay=0.0, eval_every=700,
                              warmup_fraction=0.05),
    "fast_3500_linear": arm(batch=16, steps=3500, lr=6e-3, weight_decay=0.0, eval_every=700, schedule="linear"),
    "fast_3800_fused_nochecks": arm(batch=16, steps=3800, lr=6e-3, weight_decay=0.0, eval_every=760, fused=True,
                                    checks=False),
}


def recorded(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def data_parts() -> dict:
    text = load_tiny_shakespeare()
    tok = CharTokenizer(text)
    return split_text(torch.tensor(tok.encode(text)), val_frac=0.1, test_frac=0.1) | {"V": len(tok)}


def optimiser(model, c: dict):
    """AdamW and the schedule of arm ``c``: what the notebook's training cell builds."""
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], betas=tuple(c["betas"]),
                            weight_decay=c["weight_decay"], fused=c.get("fused", False) or None)
    if c["schedule"] in ("onecycle", "onecycle_linear"):  # warm-up, then a cosine (or linear) decay to about 0;
        sched = torch.optim.lr_scheduler.OneCycleLR(      # beta1 cycled against the rate unless told otherwise
            opt, max_lr=c["lr"], total_steps=c["steps"], pct_start=c["warmup_fraction"],
            cycle_momentum=c["cycle_momentum"],
            anneal_strategy="linear" if c["schedule"] == "onecycle_linear" else "cos")
    elif c["schedule"] == "linear":   # a linear warm-up to the peak, a linear decay to 2% of it
        from utils.schedule import warmup_decay
        rule = warmup_decay(c["steps"], warmup=True, warmup_fraction=c["warmup_fraction"])
        sched = torch.optim.lr_scheduler.LambdaLR(opt, rule)
    else:
        raise ValueError(f"unknown schedule {c['schedule']!r}")
    return opt, sched


def model_config(c: dict, vocab_size: int) -> GPTConfig:
    return GPTConfig(vocab_size=vocab_size, block_size=c["block_size"], n_layer=c["n_layer"], n_head=c["n_head"],
                     d_model=c["d_model"], dropout=c["dropout"])


def run_arm(name: str, c: dict, seed: int = 0, parts: dict | None = None) -> dict:
    """Train arm ``name`` with config ``c`` on one thread, as notebook 09's training cell does, and score it."""
    set_cpu_threads(1)
    parts = parts or data_parts()
    train, val = parts["train"], parts["val"]
    cfg = model_config(c, parts["V"])
    set_seed(seed)
    model = GPT(cfg)
    set_seed(seed)
    opt, sched = optimiser(model, c)
    g = torch.Generator().manual_seed(seed)
    doors = contextlib.nullcontext() if c.get("checks", True) else checks_off()  # off: the doors check nothing
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    with doors:
        log, est_cpu = _train(model, opt, sched, c, cfg, train, val, g)
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    # the notebook's figure: the estimate of its log's last line (20 batches of 32 windows, seed 0)
    val_est = estimate_loss(model, val)
    val_text = text_loss(model, val)
    return dict(arm=name, seed=seed, config=c, parameters=count_parameters(model), steps=c["steps"],
                tokens=c["steps"] * c["batch"] * c["block_size"], train_cpu_s=round(cpu, 1),
                estimates_cpu_s=round(est_cpu, 1), train_wall_s=round(wall, 1), val_loss=round(val_est, 4),
                val_text_loss=round(val_text, 4), log=log, torch=torch.__version__)


def train_step(model, opt, sched, batch: tuple[torch.Tensor, torch.Tensor]) -> None:
    """One step of notebook 09's training cell: the loss, its gradients clipped at norm 1, AdamW, the schedule."""
    _, loss = model(*batch)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()


def _train(model, opt, sched, c: dict, cfg, train, val, g) -> tuple[dict, float]:
    """Notebook 09's training loop: its log of estimates, and the thread CPU seconds those estimates took."""
    log = {"step": [], "train": [], "val": []}
    est_cpu = 0.0
    for step in range(1, c["steps"] + 1):
        model.train()
        train_step(model, opt, sched, get_batch(train, cfg.block_size, c["batch"], g))
        if c["eval_every"] and (step % c["eval_every"] == 0 or step == c["steps"]):
            e0 = time.thread_time()
            log["step"].append(step)
            if c["eval_train"]:
                log["train"].append(round(estimate_loss(model, train, batches=c["eval_batches"]), 4))
            log["val"].append(round(estimate_loss(model, val, batches=c["eval_batches"]), 4))
            est_cpu += time.thread_time() - e0
    return log, est_cpu


STEP_COST_ARMS = ["fast_3500", "fast_3500_fused", "fast_3500_nochecks", "fast_3800_fused_nochecks"]


def step_cost(names: list[str] = STEP_COST_ARMS, steps: int = 50, rounds: int = 5) -> list[dict]:
    """Thread CPU ms of one training step of each arm, on the same seeded batches, the arms taking turns
    (``rounds`` turns of ``steps`` steps each, after 5 unmeasured steps), so that a change in the machine's load
    falls on every arm alike. The median turn is reported, and its ratio to the first arm's."""
    import statistics

    set_cpu_threads(1)
    parts = data_parts()
    runs = {}
    for name in names:
        c = ARMS[name]
        cfg = model_config(c, parts["V"])
        set_seed(0)
        model = GPT(cfg)
        opt, sched = optimiser(model, c)
        doors = contextlib.nullcontext if c.get("checks", True) else checks_off
        runs[name] = (model, opt, sched, cfg, c, doors)

    def turn(name: str, n: int) -> float:
        model, opt, sched, cfg, c, doors = runs[name]
        g = torch.Generator().manual_seed(1)
        t0 = time.thread_time()
        with doors():
            for _ in range(n):
                train_step(model, opt, sched, get_batch(parts["train"], cfg.block_size, c["batch"], g))
        return (time.thread_time() - t0) / n

    for name in names:
        turn(name, 5)
    times = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            times[name].append(turn(name, steps))
    rows = [dict(arm=name, levers=levers(ARMS[name]), step_cpu_ms=round(1e3 * statistics.median(t), 1))
            for name, t in times.items()]
    for r in rows:
        r["vs_first"] = round(r["step_cpu_ms"] / rows[0]["step_cpu_ms"], 3)
    return rows


def step_cost_markdown(rows: list[dict]) -> str:
    lines = ["| arm | what it changes | step CPU ms (median of 5 turns of 50 steps) | × fast_3500 |",
             "|---|---|---:|---:|"]
    lines += [f"| {r['arm']} | {r['levers']} | {r['step_cpu_ms']:.1f} | {r['vs_first']:.2f} |" for r in rows]
    return "\n".join(lines)


def levers(c: dict) -> str:
    """What an arm changes from notebook 09's recipe before issue 42, in a few words."""
    said = {"lr": lambda v: f"peak lr {v:g}", "betas": lambda v: f"betas ({v[0]}, {v[1]})",
            "weight_decay": lambda v: f"weight decay {v:g}",
            "schedule": lambda v: {"linear": "linear warm-up and decay (utils.schedule)",
                                   "onecycle_linear": "one-cycle, linear"}.get(v, v),
            "warmup_fraction": lambda v: f"warm-up {v:.0%}",
            "cycle_momentum": lambda v: "beta1 cycled" if v else "beta1 fixed",
            "block_size": lambda v: f"block {v}", "batch": lambda v: f"batch {v}", "steps": lambda v: f"{v} steps",
            "n_layer": lambda v: f"{v} layers", "d_model": lambda v: f"d_model {v}", "n_head": lambda v: f"{v} heads",
            "dropout": lambda v: f"dropout {v}",
            "eval_every": lambda v: f"estimates every {v} steps" if v else "no periodic estimates",
            "eval_batches": lambda v: f"{v} batches per estimate",
            "eval_train": lambda v: "" if v else "no train estimates",
            "fused": lambda v: "Adam's fused kernel" if v else "",
            "checks": lambda v: "" if v else "the doors' checks off"}
    base = {**COURSE9, **STEP_LEVERS}
    words = [said[k](v) for k, v in c.items() if k in said and base.get(k) != v]
    return ", ".join(w for w in words if w) or "notebook 09 before issue 42"


def markdown(rows: list[dict]) -> str:
    """One table row per arm (the mean over its seeds, the range when there are several)."""
    lines = ["| arm | what it changes | parameters | steps | training CPU s (1 thread) | of which estimates "
             "| val loss (as 09 prints it) | val loss (whole text) | seeds |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in dict.fromkeys(r["arm"] for r in rows):
        mine = [r for r in rows if r["arm"] == name]
        loss = [r["val_loss"] for r in mine]
        spread = f" ({min(loss):.3f}–{max(loss):.3f})" if len(loss) > 1 else ""
        mean = lambda key: sum(r[key] for r in mine) / len(mine)  # noqa: E731
        lines.append(f"| {name} | {levers(mine[0]['config'])} | {mine[0]['parameters']:,} | {mean('steps'):.0f} "
                     f"| {mean('train_cpu_s'):.0f} | {mean('estimates_cpu_s'):.0f} | {mean('val_loss'):.3f}{spread} "
                     f"| {mean('val_text_loss'):.3f} | {len(mine)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", nargs="+", default=["course9"], help="arm names, or all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--resume", action="store_true", help="skip arms already recorded for this seed")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="print the table of the recorded runs")
    ap.add_argument("--step-cost", action="store_true",
                    help="the thread CPU ms of a step of the per-step levers' arms, taking turns (a table)")
    args = ap.parse_args()
    if args.step_cost:
        rows = step_cost()
        STEP_COST_OUT.write_text(json.dumps(rows, indent=1) + "\n")
        print(step_cost_markdown(rows))
        return
    if args.list:
        for name, c in ARMS.items():
            print(f"{name:16s} {levers(c)}")
        return
    if args.markdown:
        print(markdown(recorded(args.out)))
        return
    names = list(ARMS) if args.arms == ["all"] else args.arms
    unknown = [n for n in names if n not in ARMS]
    if unknown:
        sys.exit(f"unknown arms {unknown}; --list shows them")
    done = {(r["arm"], r["seed"]) for r in recorded(args.out)} if args.resume else set()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    parts = data_parts()
    for name in names:
        if (name, args.seed) in done:
            continue
        r = run_arm(name, ARMS[name], args.seed, parts)
        with args.out.open("a") as f:
            f.write(json.dumps(r) + "\n")
        print(f"{name:16s} seed {args.seed}  {r['steps']:5d} steps  {r['train_cpu_s']:6.1f} CPU s "
              f"({r['estimates_cpu_s']:.1f} estimates)  {r['train_wall_s']:6.1f} wall s  "
              f"val {r['val_loss']:.3f} (whole text {r['val_text_loss']:.3f})", flush=True)


if __name__ == "__main__":
    main()
