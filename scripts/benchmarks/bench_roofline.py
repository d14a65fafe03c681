"""The course's live training steps against what this CPU can compute: a roofline on one thread (issue 54).

    python scripts/benchmarks/bench_roofline.py               # notebook 08's and 09's steps on this CPU, printed
    python scripts/benchmarks/bench_roofline.py --portable    # the same on PyTorch's portable kernels
    python scripts/benchmarks/bench_roofline.py --write       # both; runs/roofline/results.json and RESULTS.md's table

What it measures, all on one torch thread, in thread CPU seconds (``time.thread_time``: what the one thread
computed, which other programs on the machine change far less than wall-clock time):

- **the matmul rate**: float32 ``torch.mm`` in GFLOP/s at two large square sizes (the better is the peak) and at
  the shapes the two recipes multiply (their linear layers, their output softmax's projection);
- **the FLOPs of one training step** of notebook 08's translator (``bench_fast_translation``'s arm ``nb08_nodrop``) and
  notebook 09's GPT (``bench_fast_gpt``'s ``CHOSEN``), forward and backward, counted by PyTorch's own
  ``FlopCounterMode`` (matrix multiplications and attention; elementwise work is not counted as useful). For the
  translator the pad positions are counted apart: each sentence pair of a batch is run alone, at its own length,
  and those FLOPs summed are the useful ones;
- **the model FLOP utilisation** (MFU): useful FLOPs per CPU second of a real training step (loss, backward,
  clipping where the recipe clips, the optimizer and its schedule) over the peak matmul rate;
- **where a step's time goes**, by ``torch.profiler``: each operator's own CPU time summed into matrix
  multiplications, softmax and cross-entropy, layer norms, embeddings, the optimizer, other operators (elementwise
  work, copies, the autograd engine's), and the rest of the step, outside any operator (Python, dispatch).

Under ``--portable`` the script runs itself again with ``ATEN_CPU_CAPABILITY=default``, the kernels many laptops
without AVX2 run. Nothing here asserts a time; ``tests/scripts/test_bench_roofline.py`` checks the counting.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "runs" / "roofline" / "results.json"
LEVERS_OUT = ROOT / "runs" / "roofline" / "levers.json"
LEVERS_BEGIN, LEVERS_END = ("<!-- levers table: scripts/benchmarks/bench_roofline.py --levers -->",
                            "<!-- end of levers table -->")
BEGIN, END = "<!-- roofline table: scripts/benchmarks/bench_roofline.py --write -->", "<!-- end of roofline table -->"
PARTS = ["matmul", "softmax and loss", "layer norm", "embedding", "optimizer", "other operators", "outside operators"]
MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::addmv",
              "aten::mv", "aten::dot", "aten::_scaled_dot_product_attention_math",
              "aten::_scaled_dot_product_flash_attention_for_cpu",
              "aten::_scaled_dot_product_flash_attention_for_cpu_backward", "aten::scaled_dot_product_attention"}


# --------------------------------------------------------------------------------------------- the matmul rate

def matmul_rate(m: int, k: int, n: int, min_cpu_s: float = 0.3) -> float:
    """GFLOP/s of float32 ``(m, k) @ (k, n)`` on this thread, repeated for at least ``min_cpu_s`` CPU seconds."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    out = torch.empty(m, n)
    for _ in range(3):
        torch.mm(a, b, out=out)
    reps, cpu = 0, 0.0
    while cpu < min_cpu_s:
        t0 = time.thread_time()
        for _ in range(max(1, reps or 4)):
            torch.mm(a, b, out=out)
        cpu += time.thread_time() - t0
        reps += max(1, reps or 4)
    return 2 * m * k * n * reps / cpu / 1e9


def peak_rates(shapes: dict[str, tuple[int, int, int]], min_cpu_s: float = 0.3) -> dict[str, float]:
    """The rate at a large square size (``square 1024``, the peak) and at each named (m, k, n)."""
    named = {"square 1024": (1024, 1024, 1024), "square 512": (512, 512, 512), **shapes}
    return {name: round(matmul_rate(*mkn, min_cpu_s=min_cpu_s), 2) for name, mkn in named.items()}


# --------------------------------------------------------------------------------------------- counting FLOPs

def counted_flops(fn: Callable[[], object]) -> int:
    """The FLOPs ``fn`` runs, as PyTorch's ``FlopCounterMode`` counts them (matmuls and attention, forward and
    backward)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


PAD_SAMPLE = 8   # the batches whose pairs are each run alone, for the pad share


def translation_flops(model, batch, loss_fn) -> int:
    """The FLOPs of one padded batch, forward and backward."""
    def step():
        model.zero_grad(set_to_none=True)
        loss_fn(model, batch).backward()

    flops = counted_flops(step)
    model.zero_grad(set_to_none=True)
    return flops


def translation_useful_flops(model, batch, loss_fn) -> tuple[int, int]:
    """(FLOPs of the padded batch, FLOPs of its pairs each alone at its own length): forward and backward."""
    from utils.text import collate_pairs

    def step(b):
        model.zero_grad(set_to_none=True)
        loss_fn(model, b).backward()

    padded = counted_flops(lambda: step(batch))
    pad = model.cfg.pad_id
    useful = 0
    for src, tgt in zip(batch.src, batch.tgt):
        one = collate_pairs([(src[src != pad].tolist(), tgt[tgt != pad].tolist())], pad_id=pad)
        useful += counted_flops(lambda: step(one))
    model.zero_grad(set_to_none=True)
    return padded, useful


# --------------------------------------------------------------------------------------------- time and profile

def step_seconds(step: Callable[[], None], steps: int, warmup: int = 3) -> list[float]:
    """Thread CPU seconds of each of ``steps`` calls of ``step`` after ``warmup`` unmeasured ones."""
    for _ in range(warmup):
        step()
    out = []
    for _ in range(steps):
        t0 = time.thread_time()
        step()
        out.append(time.thread_time() - t0)
    return out


def part_of(name: str) -> str:
    low = name.lower()
    if name in MATMUL_OPS or "scaled_dot_product" in low:
        return "matmul"
    if any(w in low for w in ("softmax", "nll_loss", "cross_entropy", "logsumexp")):
        return "softmax and loss"
    if "layer_norm" in low:
        return "layer norm"
    if "embedding" in low:
        return "embedding"
    if low.startswith("optimizer.") or "_foreach_" in low or "adam" in low or "clip_grad" in low:
        return "optimizer"
    return "other operators"


def profile_parts(step: Callable[[], None], steps: int) -> tuple[dict[str, float], float, list[list]]:
    """Each part's share (%) of a profiled step: operators' own time from ``torch.profiler`` (which times them by
    the clock, so the step is timed by the clock too), summed by :func:`part_of`; "outside operators" is the rest
    of the step (Python, dispatch, and the profiler's own cost, which is why the step's profiled time is returned
    beside it), and the five costliest "other operators" with their share. An operator called inside the
    optimizer's step (Adam's ``mul_``, ``addcdiv_``, ``sqrt``…) counts as the optimizer's, by the profiler's parent
    links."""
    from torch.profiler import ProfilerActivity, profile

    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        profiled = (time.perf_counter() - t0) / steps
    parts = dict.fromkeys(PARTS[:-1], 0.0)
    other: dict[str, float] = {}
    for event in prof.events():        # every call, with its parent: an operator the optimizer runs is the optimizer's
        seconds = event.self_cpu_time_total / 1e6 / steps
        part, parent = part_of(event.name), event.cpu_parent
        while parent is not None and part != "optimizer":
            if part_of(parent.name) == "optimizer":
                part = "optimizer"
            parent = parent.cpu_parent
        parts[part] += seconds
        if part == "other operators":
            other[event.name] = other.get(event.name, 0.0) + seconds
    others = [(sec, name) for name, sec in other.items()]
    shares = {k: 100 * v / profiled for k, v in parts.items()}
    shares["outside operators"] = max(0.0, 100 - sum(shares.values()))
    top = [[name, round(100 * sec / profiled, 1)] for sec, name in sorted(others, reverse=True)[:5]]
    return {k: round(v, 1) for k, v in shares.items()}, profiled, top


def roofline(name: str, step: Callable[[], None], counted: int, useful: int, peak: float, steps: int,
             profile_steps: int) -> dict:
    """One recipe's row: its step time, FLOPs, achieved rate, MFU against ``peak`` (GFLOP/s) and its parts."""
    times = step_seconds(step, steps)
    cpu = statistics.median(times)
    parts, profiled, top = profile_parts(step, profile_steps)
    return dict(recipe=name, step_cpu_ms=round(1e3 * cpu, 2), counted_gflop=round(counted / 1e9, 4),
                useful_gflop=round(useful / 1e9, 4), pad_share=round(100 * (1 - useful / counted), 1) if counted else 0,
                achieved_gflops=round(useful / cpu / 1e9, 2), peak_gflops=peak,
                mfu=round(100 * useful / cpu / 1e9 / peak, 1), parts=parts,
                profiled_step_wall_ms=round(1e3 * profiled, 2), top_other_operators=top)


# --------------------------------------------------------------------------------------------- the live recipes

def translation_recipe(arm: str = "nb08_nodrop", compiled: bool = False, bf16: bool = False, samples: int = 8,
                       checks: bool = True):
    """Notebook 08's live model, data, optimizer and schedule (``bench_fast_translation.ARMS[arm]``): a step
    function that runs ``samples`` bucketed batches in the loader's order (then again), those batches (to count the
    FLOPs of the steps timed), and the shapes it multiplies."""
    from functools import partial

    from scripts.benchmarks.bench_fast_translation import ARMS
    from utils.checks import checks_off
    from utils.schedule import transformer_adam, warmup_scheduler
    from utils.training import set_seed
    from utils.translation import make_loader, prepare_translation
    from utils.transformer import Transformer, TransformerConfig, translation_loss

    c = ARMS[arm]
    data = prepare_translation("de", "en", min_freq=c["min_freq"], max_train_len=c["max_train_len"],
                               subwords=c.get("subwords"))
    set_seed(0)
    cfg = TransformerConfig(src_vocab=len(data.src_vocab), tgt_vocab=len(data.tgt_vocab), d_model=c["d_model"],
                            num_heads=c["num_heads"], d_ff=c["d_ff"], num_encoder_layers=c["layers"],
                            num_decoder_layers=c["layers"], dropout=c["dropout"], tie_output=True,
                            pre_norm=c["pre_norm"])
    model, loss_fn = Transformer(cfg), partial(translation_loss, label_smoothing=c["label_smoothing"])
    opt, sched = transformer_adam(model.parameters(), c["d_model"], c["warmup"], c["factor"])
    if c.get("fused"):
        opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, fused=True)
        sched = warmup_scheduler(opt, c["d_model"], c["warmup"], c["factor"])
    # the batches the step runs, in the loader's order, drawn once: the FLOPs are counted on the ones timed
    loader = iter(cycle(make_loader(data.train, c["batch"], shuffle=True, seed=0, bucket=c["bucket"])))
    sample = [next(loader) for _ in range(samples)]
    batches = cycle(sample)
    model.train()
    if compiled:
        model.compile()       # in place: still a Transformer, its forward compiled by TorchInductor
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
    doors = contextlib.nullcontext() if checks else checks_off()   # checks_off: the doors check nothing

    def step():
        with autocast, doors:
            loss = loss_fn(model, next(batches))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)   # fit() clips at 1, as the notebook trains
        opt.step()
        sched.step()

    tokens = int((sample[0].tgt != cfg.pad_id).sum())
    shapes = {"08 feed-forward": (tokens, c["d_model"], c["d_ff"]),
              "08 output projection": (tokens, c["d_model"], cfg.tgt_vocab)}
    return step, (model, sample, loss_fn), shapes


def gpt_recipe(arm: str | None = None):
    """Notebook 09's live GPT (``bench_fast_gpt.ARMS[CHOSEN]``): its step function (AdamW, one-cycle schedule,
    gradients clipped at 1), one step's FLOPs as a closure, and the shapes it multiplies."""
    from scripts.benchmarks.bench_fast_gpt import ARMS, CHOSEN, data_parts, model_config, optimiser
    from utils.gpt import GPT, get_batch
    from utils.training import set_seed

    c = ARMS[arm or CHOSEN]
    parts = data_parts()
    cfg = model_config(c, parts["V"])
    set_seed(0)
    model = GPT(cfg)
    opt, sched = optimiser(model, {**c, "steps": 10**6})
    g = torch.Generator().manual_seed(0)
    model.train()

    def forward_backward():
        _, loss = model(*get_batch(parts["train"], cfg.block_size, c["batch"], g))
        opt.zero_grad(set_to_none=True)
        loss.backward()

    def step():
        forward_backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

    tokens = c["batch"] * c["block_size"]
    shapes = {"09 feed-forward": (tokens, c["d_model"], 4 * c["d_model"]),
              "09 output projection": (tokens, c["d_model"], parts["V"])}
    return step, forward_backward, shapes


def cycle(loader: Iterable):
    while True:
        yield from loader


# --------------------------------------------------------------------------------------------- the levers

LEVERS = {   # name: (bench_fast_translation arm, torch.compile, bf16 autocast, the doors' checks)
    "08 as trained (nb08_nodrop)": ("nb08_nodrop", False, False, True),
    "Adam's fused CPU kernel": ("nb08_fused", False, False, True),
    "batches by both lengths": ("nb08_pairs", False, False, True),
    "3,000 BPE merges a side": ("nb08_bpe3000", False, False, True),
    "BPE + batches by both lengths": ("bpe_pairs_1000", False, False, True),
    "bf16 autocast": ("nb08_nodrop", False, True, True),
    "the doors' checks off": ("nb08_nodrop", False, False, False),
    "torch.compile": ("nb08_nodrop", True, False, True),
    "torch.compile, the doors' checks off": ("nb08_nodrop", True, False, False),
}


def lever_steps(steps: int = 40) -> list[dict]:
    """Each lever's mean thread CPU ms per training step of notebook 08's translator, over the same ``steps``
    seeded batches (after 3 unmeasured ones; for ``torch.compile`` the first step's CPU seconds, the compilation,
    are reported apart). A lever that fails here (no compiler, no bf16 kernels) is reported with its error."""
    from utils.training import set_cpu_threads

    set_cpu_threads(1)
    rows = []
    for name, (arm, compiled, bf16, checks) in LEVERS.items():
        try:
            step, _, _ = translation_recipe(arm, compiled=compiled, bf16=bf16, samples=steps + 3, checks=checks)
            t0 = time.thread_time()
            step()
            first = time.thread_time() - t0
            times = step_seconds(step, steps, warmup=2)
            rows.append(dict(lever=name, arm=arm, step_cpu_ms=round(1e3 * statistics.mean(times), 1),
                             first_step_cpu_s=round(first, 2)))
        except Exception as e:   # reported, not hidden: the course itself never depends on these
            rows.append(dict(lever=name, arm=arm, error=f"{type(e).__name__}: {str(e)[:200]}"))
    base = rows[0].get("step_cpu_ms")
    for r in rows:
        if base and r.get("step_cpu_ms"):
            r["vs_base"] = round(r["step_cpu_ms"] / base, 3)
    return rows


def levers_markdown(rows: list[dict]) -> str:
    out = ["| lever | step CPU ms | × as trained | first step CPU s |", "|---|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['lever']} | failed: {r['error']} | | |")
        else:
            out.append(f"| {r['lever']} | {r['step_cpu_ms']:.1f} | {r['vs_base']:.2f} | {r['first_step_cpu_s']:.2f} |")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------- the report

# notebook 08's recipe as trained today, and issue 54's recipe with the levers that paid (bench_fast_translation arms)
TRANSLATION_ARMS = {"08 translator": "nb08_nodrop", "08 translator, BPE + pair buckets": "bpe_pairs_1000"}


def measure(steps: int = 30, profile_steps: int = 10, min_cpu_s: float = 0.5) -> dict:
    from utils.training import set_cpu_threads

    set_cpu_threads(1)
    timed = 3 + steps + 1 + profile_steps          # step_seconds' warm-up and steps, profile_parts' warm-up and steps
    translators = {name: translation_recipe(arm, samples=timed) for name, arm in TRANSLATION_ARMS.items()}
    g_step, g_fb, g_shapes = gpt_recipe()
    t_shapes = translators["08 translator"][2]
    rates = peak_rates({**t_shapes, **g_shapes}, min_cpu_s=min_cpu_s)
    peak = max(v for k, v in rates.items() if k.startswith("square"))   # the best this thread reached
    rows = []
    for name, (t_step, (t_model, t_sample, t_loss), _) in translators.items():
        padded = sum(translation_flops(t_model, b, t_loss) for b in t_sample) // len(t_sample)   # a mean step's
        pads = [translation_useful_flops(t_model, b, t_loss) for b in t_sample[:PAD_SAMPLE]]   # pairs alone: slow
        useful = round(padded * sum(u for _, u in pads) / sum(p for p, _ in pads))
        rows.append(roofline(name, t_step, padded, useful, peak, steps, profile_steps))
    g_flops = counted_flops(g_fb)
    rows.append(roofline("09 GPT", g_step, g_flops, g_flops, peak, steps, profile_steps))
    load = round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None   # other work beside this run
    return dict(kernels=torch.backends.cpu.get_cpu_capability(), torch=torch.__version__, threads=1, rates=rates,
                load_average=load, recipes=rows)


def markdown(runs: list[dict]) -> str:
    head = ("| recipe | kernels | peak GFLOP/s | step CPU ms | GFLOP/step (useful) | pad share | achieved GFLOP/s | "
            "MFU | " + " | ".join(PARTS) + " |")
    rows = [head, "|" + "---|" * (8 + len(PARTS))]
    for run in runs:
        for r in run["recipes"]:
            rows.append(f"| {r['recipe']} | {run['kernels']} | {r['peak_gflops']:.1f} | {r['step_cpu_ms']:.1f} | "
                        f"{r['counted_gflop']:.3f} ({r['useful_gflop']:.3f}) | {r['pad_share']:.1f} % | "
                        f"{r['achieved_gflops']:.2f} | {r['mfu']:.1f} % | "
                        + " | ".join(f"{r['parts'][p]:.1f} %" for p in PARTS) + " |")
    tops = [f"- {r['recipe']} ({run['kernels']}): " + ", ".join(f"`{n}` {v:.1f} %" for n, v in r["top_other_operators"])
            for run in runs for r in run["recipes"]]
    rates = ["| matmul shape (m, k, n) | " + " | ".join(run["kernels"] for run in runs) + " |",
             "|---|" + "---|" * len(runs)]
    for name in runs[0]["rates"]:
        rates.append(f"| {name} | " + " | ".join(f"{run['rates'][name]:.1f}" for run in runs) + " |")
    loads = ", ".join(f"{run['kernels']} {run.get('load_average')}" for run in runs)
    return ("\n".join(rows) + f"\n\nLoad average (1 min) at the end of each run: {loads}."
            + " The parts are shares of a step timed under the profiler (its own cost lands in "
            "\"outside operators\"). The costliest other operators:\n\n" + "\n".join(tops)
            + "\n\nThe matmul rate on one thread, GFLOP/s:\n\n" + "\n".join(rates))


def write_levers(run: dict) -> None:
    """runs/roofline/levers.json, and RESULTS.md's levers table between its markers."""
    LEVERS_OUT.parent.mkdir(parents=True, exist_ok=True)
    LEVERS_OUT.write_text(json.dumps(run, indent=1) + "\n")
    results = ROOT / "RESULTS.md"
    text = results.read_text(encoding="utf-8")
    if LEVERS_BEGIN in text:
        block = f"{LEVERS_BEGIN}\n{levers_markdown(run['rows'])}\n{LEVERS_END}"
        text = text[:text.index(LEVERS_BEGIN)] + block + text[text.index(LEVERS_END) + len(LEVERS_END):]
        results.write_text(text, encoding="utf-8")


def write(runs: list[dict]) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(runs, indent=1) + "\n")
    results = ROOT / "RESULTS.md"
    text = results.read_text(encoding="utf-8")
    block = f"{BEGIN}\n{markdown(runs)}\n{END}"
    if BEGIN in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text += ("\n## The training steps against the CPU's matmul rate (issue 54)\n\n"
                 "Made by `python scripts/benchmarks/bench_roofline.py --write` on one torch thread: the model FLOP\n"
                 "utilisation (useful FLOPs per CPU second over the rate of a large float32 matmul) of notebook 08's\n"
                 "and notebook 09's live training steps, and the share of a step each part takes (torch.profiler).\n\n"
                 f"{block}\n")
    results.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--portable", action="store_true", help="run on ATEN_CPU_CAPABILITY=default (a subprocess)")
    ap.add_argument("--write", action="store_true", help="both kernels; write runs/roofline/results.json, RESULTS.md")
    ap.add_argument("--json", action="store_true", help="print this run as JSON (what --write reads)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--levers", action="store_true",
                    help="notebook 08's step under each lever (LEVERS): runs/roofline/levers.json, RESULTS.md's table")
    args = ap.parse_args(argv)
    if args.levers:
        rows = lever_steps(args.steps)
        print(levers_markdown(rows))
        write_levers(dict(kernels=torch.backends.cpu.get_cpu_capability(), torch=torch.__version__,
                          load_average=round(os.getloadavg()[0], 1), steps=args.steps, rows=rows))
        return 0
    if args.portable or args.write:
        env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
        out = subprocess.run([sys.executable, __file__, "--json", "--steps", str(args.steps)], env=env,
                             capture_output=True, text=True, check=True).stdout
        portable = json.loads(out.strip().splitlines()[-1])
        runs = [measure(args.steps), portable] if args.write else [portable]
    else:
        runs = [measure(args.steps)]
    if args.json:
        print(json.dumps(runs[0]))
        return 0
    print(markdown(runs))
    if args.write:
        write(runs)
        print(f"wrote {OUT.relative_to(ROOT)} and RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
