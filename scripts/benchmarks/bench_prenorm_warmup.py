"""Does notebook 08's live pre-LN model need its warm-up? (issue 52, finding 08-6)

    python scripts/benchmarks/bench_prenorm_warmup.py --seeds 0 1               # 08's live recipe, both arms
    python scripts/benchmarks/bench_prenorm_warmup.py --recipe fast08 --seeds 0  # another recipe of the benchmark
    python scripts/benchmarks/bench_prenorm_warmup.py --markdown                 # RESULTS.md's table

Notebook 07 found that a small pre-LN encoder trains without a warm-up, and notebook 08's live model is pre-LN,
yet it keeps the paper's schedule, whose warm-up takes 200 of its 454 steps. This script trains a recipe of
``bench_fast_translation.py`` (``--recipe``, an arm name there; the default is notebook 08's live recipe) twice
per seed, with the same steps, data order and initial weights:

* ``warm-up``: the recipe as it is;
* ``no warm-up``: the same schedule without its rising part (``utils.schedule.transformer_adam(..., ramp=False)``):
  the peak rate from the first step to step ``warmup``, then the same ``step^-0.5`` decay.

Each run is trained and scored by ``bench_fast_translation.run_arm`` (one torch thread; the whole test set,
greedy, tokenized BLEU as notebook 08 prints it), with the validation loss measured as the notebook measures it
(every ``eval_every`` steps and at the end; the last one is recorded). One line of JSON per run goes to
``runs/prenorm_warmup/results.jsonl``; notebook 08 reads them with
``utils.translation.load_fast_runs(bench="prenorm_warmup")``. Run the arms one at a time on a shared machine
(``nice``): each takes about 100-200 CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.benchmarks.bench_fast_translation import ARMS, recorded, run_arm  # noqa: E402

OUT = ROOT / "runs" / "prenorm_warmup" / "results.jsonl"
RECIPE = "nb08_nodrop"  # notebook 08's live recipe (FULL = False) in bench_fast_translation.ARMS


def arms(recipe: str) -> dict[str, dict]:
    """The two arms for ``recipe``: as it is, and without the warm-up's ramp (everything else equal)."""
    if recipe not in ARMS:
        sys.exit(f"--recipe {recipe!r} is not an arm of bench_fast_translation.py; "
                 f"the arms: {', '.join(ARMS)}")
    c = dict(ARMS[recipe])
    if c.get("schedule") != "noam":
        sys.exit(f"--recipe {recipe!r} has no warm-up schedule to remove (schedule={c.get('schedule')!r})")
    # the validation loss at the end at least (a recipe that measures it more often keeps its own rhythm,
    # which also keeps its random draws as the notebook makes them)
    c.setdefault("eval_every", c["steps"])
    return {"warm-up": {**c, "ramp": True}, "no warm-up": {**c, "ramp": False}}


def markdown(rows: list[dict]) -> str:
    """One table row per recipe, arm and seed, then the mean difference per recipe."""
    lines = ["| recipe | schedule | seed | steps | warm-up steps | training CPU s (1 thread) | validation loss "
             "| test BLEU (tok.) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        c = r["config"]
        lines.append(f"| {r['recipe']} | {r['schedule']} | {r['seed']} | {r['steps']} "
                     f"| {c['warmup'] if c['ramp'] else 0} | {r['train_cpu_s']:.0f} | {r['val_loss']:.3f} "
                     f"| {r['test_bleu']:.2f} |")
    for recipe in dict.fromkeys(r["recipe"] for r in rows):
        by = {(r["schedule"], r["seed"]): r for r in rows if r["recipe"] == recipe}
        seeds = sorted({s for (_, s) in by if ("warm-up", s) in by and ("no warm-up", s) in by})
        if seeds:
            d_bleu = [by["no warm-up", s]["test_bleu"] - by["warm-up", s]["test_bleu"] for s in seeds]
            d_val = [by["no warm-up", s]["val_loss"] - by["warm-up", s]["val_loss"] for s in seeds]
            lines.append(f"\n{recipe}, no warm-up minus warm-up over seeds {seeds}: BLEU "
                         f"{', '.join(f'{d:+.2f}' for d in d_bleu)}; validation loss "
                         f"{', '.join(f'{d:+.3f}' for d in d_val)}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", default=RECIPE, help="an arm of bench_fast_translation.py (default: %(default)s)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--schedules", nargs="+", default=["warm-up", "no warm-up"], choices=["warm-up", "no warm-up"])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--resume", action="store_true", help="skip runs already recorded")
    ap.add_argument("--markdown", action="store_true", help="print RESULTS.md's table from the recorded runs")
    args = ap.parse_args()
    if args.markdown:
        print(markdown(recorded(args.out)))
        return
    done = {(r["recipe"], r["schedule"], r["seed"]) for r in recorded(args.out)} if args.resume else set()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    both = arms(args.recipe)
    for seed in args.seeds:
        for schedule in args.schedules:
            if (args.recipe, schedule, seed) in done:
                continue
            r = run_arm(f"{args.recipe} ({schedule})", both[schedule], seed)
            r = dict(recipe=args.recipe, schedule=schedule, **r)
            with args.out.open("a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"{args.recipe} {schedule:10s} seed {seed}: {r['steps']} steps  {r['train_cpu_s']:6.1f} CPU s  "
                  f"validation loss {r['val_loss']:.3f}  BLEU {r['test_bleu']:5.2f}", flush=True)


if __name__ == "__main__":
    main()
