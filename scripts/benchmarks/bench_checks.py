"""Cost of the entry-point checks (issue 30): a training step's time, and the checks alone.

Issue #30: the checks at the public entry points (types, the mask convention, devices, the optimizer
given to ``fit``) must not slow a training step measurably. This script times

1. a training step of the encoder-decoder Transformer (``translation_loss`` forward with key-padding
   and causal masks, backward, Adam step) on random right-padded batches;
2. a training step of the GPT (``GPT(idx, targets)``, backward, AdamW step);
3. one call of ``scaled_dot_product_attention`` and of ``MultiHeadAttention`` with a mask (the checks
   are the largest share of these small calls);
4. ``fit`` over a list of batches (its own checks run once per call; the loop's per-step work is what
   is timed) as ms per step.

and prints the median and spread (min..max over --repeats rounds of --steps steps each). Run it
before and after a change with the same arguments, e.g. ``PYTHONPATH=<tree> python
scripts/benchmarks/bench_checks.py``, to compare; the figures are for the machine it runs on.

    python scripts/benchmarks/bench_checks.py [--steps 15] [--repeats 5] [--threads 1] [--device cpu]

Issue 43 (checks at the door, once): ``--against REV`` times the training step of notebook 09's GPT and of
notebook 08's Transformer (their default settings) under this tree's ``utils`` and under ``utils`` of the git
revision REV (e.g. ``ae02812``, before the contracts), **interleaved in one run**: two worker processes, one
per tree, built alike from the same seed, take turns round by round (the order alternates), so a load that
comes and goes on the machine falls on both. It prints the median ms per step of each and the ratio
after / before of every benchmark:

    python scripts/benchmarks/bench_checks.py --against ae02812 [--rounds 21] [--steps 10] [--device cpu]

Issue 51 (a public switch): ``--switch`` times the same steps and calls in one process with the doors' checks on
and off (``with utils.checks.checks_off():``), interleaved round by round (the order alternates), and prints the
cost table: the median time per call of each, what the checks add per call, and as a share of the call. Timings
are printed, never asserted:

    python scripts/benchmarks/bench_checks.py --switch [--rounds 21] [--steps 10] [--threads 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, os.environ.get("BENCH_TREE") or str(Path(__file__).resolve().parents[2]))

from utils.attention import MultiHeadAttention, causal_mask, key_padding_mask, scaled_dot_product_attention
from utils.gpt import GPT, GPTConfig
from utils.text import PairBatch
from utils.training import fit
from utils.transformer import Transformer, TransformerConfig, translation_loss


def _batch(B: int, S: int, T: int, V: int, g: torch.Generator, device: str) -> PairBatch:
    def side(L: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        lengths = torch.randint(L // 2, L + 1, (B,), generator=g)
        lengths[0] = L
        mask = torch.arange(L)[None] < lengths[:, None]
        ids = torch.randint(4, V, (B, L), generator=g).masked_fill(~mask, 0)
        return ids.to(device), lengths.to(device), mask.to(device)

    src, src_len, src_mask = side(S)
    tgt, tgt_len, tgt_mask = side(T)
    tgt[:, 0] = 2
    return PairBatch(src, src_len, src_mask, tgt, tgt_len, tgt_mask)


def _time(fn, steps: int, repeats: int, device: str) -> list[float]:
    """ms per call, one figure per round (after one warm-up round)."""
    out = []
    for r in range(repeats + 1):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
        if r:
            out.append((time.perf_counter() - t0) / steps * 1e3)
    return out


def _report(name: str, ms: list[float]) -> None:
    print(f"{name:<44} median {statistics.median(ms):8.3f} ms   (min {min(ms):.3f} .. max {max(ms):.3f}, "
          f"{len(ms)} rounds)")


# --------------------------------------------------------------------------- issue 43: interleaved, two trees


def _notebook_steps(dev: str) -> dict:
    """The training steps of notebook 08's Transformer and notebook 09's GPT at their default settings
    (FULL = False), as the notebooks run them: {name: step()}."""
    from utils.gpt import get_batch
    from utils.schedule import transformer_adam

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    V = 1500  # about notebook 08's vocabularies at max_train_len=10
    cfg = TransformerConfig(src_vocab=V, tgt_vocab=V, d_model=128, num_heads=4, d_ff=512, num_encoder_layers=2,
                            num_decoder_layers=2, dropout=0.1, tie_output=True)
    tf = Transformer(cfg).to(dev).train()
    opt, sched = transformer_adam(tf.parameters(), d_model=128, warmup=200)
    batches = [_batch(64, 12, 13, V, g, dev) for _ in range(8)]
    state = {"i": 0}

    def transformer_step() -> None:
        b = batches[state["i"] % len(batches)]
        state["i"] += 1
        loss = translation_loss(tf, b, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(tf.parameters(), 1.0)
        opt.step()
        sched.step()

    gcfg = GPTConfig(vocab_size=65, block_size=64, n_layer=2, n_head=4, d_model=128, dropout=0.0)
    gpt = GPT(gcfg).to(dev).train()
    gopt = torch.optim.AdamW(gpt.parameters(), lr=4e-3, betas=(0.9, 0.99), weight_decay=0.1)
    text = torch.randint(0, 65, (200_000,), generator=g)
    gg = torch.Generator().manual_seed(0)

    def gpt_step() -> None:
        _, loss = gpt(*get_batch(text, 64, 32, gg, dev))
        gopt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(gpt.parameters(), 1.0)
        gopt.step()

    mha = MultiHeadAttention(128, 4).to(dev)
    x = torch.randn(8, 16, 128, generator=g).to(dev)
    pad = key_padding_mask(batches[0].src_mask[:8, :12].to(dev))
    xs = x[:, :12]
    tiny = GPT(GPTConfig(vocab_size=65, block_size=16, n_layer=1, n_head=2, d_model=16)).to(dev).eval()
    few = torch.randint(0, 65, (1, 8), generator=g).to(dev)

    def tiny_forward() -> None:
        with torch.no_grad():
            tiny(few, few)

    return {"notebook 08 Transformer step (B=64)": transformer_step, "notebook 09 GPT step (B=32, T=64)": gpt_step,
            "MultiHeadAttention call, padding mask": lambda: mha(xs, xs, xs, pad),
            "GPT forward, tiny (the checks' share)": tiny_forward}


def _worker(dev: str, threads: int) -> None:
    """Serve 'name<TAB>steps' lines from stdin: run that many steps, answer the ms per step."""
    torch.set_num_threads(threads)
    steps = _notebook_steps(dev)
    for fn in steps.values():  # warm up
        for _ in range(3):
            fn()
    print("ready", flush=True)
    for line in sys.stdin:
        name, n = line.rstrip("\n").split("\t")
        fn = steps[name]
        if dev == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(int(n)):
            fn()
        if dev == "cuda":
            torch.cuda.synchronize()
        print(f"{(time.perf_counter() - t0) / int(n) * 1e3:.6f}", flush=True)


def _interleaved(rev: str, rounds: int, steps: int, dev: str, threads: int) -> None:
    here = Path(__file__).resolve()
    repo = here.parents[2]
    before = Path(tempfile.mkdtemp(prefix="bench_checks_"))
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "utils"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    workers = {}
    for side, tree in (("before", before), ("after", repo)):
        env = {**os.environ, "BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
        workers[side] = subprocess.Popen([sys.executable, str(here), "--worker", "--device", dev, "--threads", str(threads)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(tree))
    for w in workers.values():
        assert w.stdout.readline().strip() == "ready"
    names = ["notebook 08 Transformer step (B=64)", "notebook 09 GPT step (B=32, T=64)",
             "MultiHeadAttention call, padding mask", "GPT forward, tiny (the checks' share)"]
    ms = {(side, name): [] for side in workers for name in names}
    for r in range(rounds):
        order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
        for name in names:
            n = steps if "step" in name else steps * 20  # the calls: more of them, to time microseconds
            for side in order:
                workers[side].stdin.write(f"{name}\t{n}\n")
                workers[side].stdin.flush()
                ms[side, name].append(float(workers[side].stdout.readline()))
    for w in workers.values():
        w.stdin.close()
        w.wait()
    print(f"utils at {rev} (before) and this tree (after), interleaved: {rounds} rounds of {steps} steps, "
          f"{threads} thread(s), {dev}")
    for name in names:
        b, a = statistics.median(ms["before", name]), statistics.median(ms["after", name])
        pairs = sorted(x / y for x, y in zip(ms["after", name], ms["before", name]))
        print(f"{name:<40} before {b:8.3f} ms  after {a:8.3f} ms  ratio after/before {a / b:.4f} "
              f"(per-round ratios: median {statistics.median(pairs):.4f}, {pairs[len(pairs) // 4]:.4f}..{pairs[3 * len(pairs) // 4]:.4f})")


def _switch(rounds: int, steps: int, dev: str, threads: int) -> None:
    """Checks on and off in one process, interleaved: the cost table of issue 51."""
    from utils.checks import checks_off

    torch.set_num_threads(threads)
    calls = _notebook_steps(dev)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(8, 4, 16, 32, generator=g).to(dev) for _ in range(3))
    causal = causal_mask(16, device=dev)[None, None]
    small = MultiHeadAttention(16, 2).to(dev)
    xs = torch.randn(2, 5, 16, generator=g).to(dev)
    calls["scaled_dot_product_attention (8, 4, 16, 32), causal"] = lambda: scaled_dot_product_attention(q, k, v, causal)
    calls["MultiHeadAttention, tiny (2, 5, 16)"] = lambda: small(xs, xs, xs)
    for fn in calls.values():  # warm up, both ways
        for _ in range(3):
            fn()
            with checks_off():
                fn()
    ms = {(name, side): [] for name in calls for side in ("on", "off")}
    for r in range(rounds):
        for name, fn in calls.items():
            n = steps if "step" in name else steps * 20  # the calls: more of them, to time microseconds
            for side in (("on", "off") if r % 2 == 0 else ("off", "on")):
                if dev == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                if side == "off":
                    with checks_off():
                        for _ in range(n):
                            fn()
                else:
                    for _ in range(n):
                        fn()
                if dev == "cuda":
                    torch.cuda.synchronize()
                ms[name, side].append((time.perf_counter() - t0) / n * 1e3)
    print(f"the doors' checks on and off (utils.checks.checks_off), interleaved: {rounds} rounds, {threads} thread(s), "
          f"{dev}; median time per call")
    print(f"| {'call':<46} | checks on | checks off | the checks add | share |")
    print(f"|{'-' * 48}|-----------|------------|----------------|-------|")
    for name in calls:
        on, off = statistics.median(ms[name, "on"]), statistics.median(ms[name, "off"])
        print(f"| {name:<46} | {on:6.3f} ms | {off:7.3f} ms | {1e3 * (on - off):+10.1f} µs | {100 * (on - off) / off:+5.1f} % |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--against", metavar="REV", help="interleave notebook 08's and 09's training steps with utils at REV")
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--switch", action="store_true", help="checks on vs off (utils.checks.checks_off), interleaved")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return _worker(args.device, args.threads)
    if args.switch:
        return _switch(args.rounds, args.steps if args.steps != 15 else 10, args.device, args.threads)
    if args.against:
        return _interleaved(args.against, args.rounds, args.steps if args.steps != 15 else 10, args.device, args.threads)
    torch.set_num_threads(args.threads)
    dev = args.device
    g = torch.Generator().manual_seed(0)

    V = 1000
    cfg = TransformerConfig(src_vocab=V, tgt_vocab=V, d_model=128, num_heads=4, d_ff=512,
                            num_encoder_layers=2, num_decoder_layers=2, dropout=0.1)
    model = Transformer(cfg).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    batches = [_batch(32, 24, 24, V, g, dev) for _ in range(8)]
    state = {"i": 0}

    def transformer_step() -> None:
        b = batches[state["i"] % len(batches)]
        state["i"] += 1
        loss = translation_loss(model, b, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    model.train()
    _report("Transformer training step (B=32, T=24)", _time(transformer_step, args.steps, args.repeats, dev))

    gcfg = GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, d_model=128)
    gpt = GPT(gcfg).to(dev)
    gopt = torch.optim.AdamW(gpt.parameters(), lr=1e-3)
    idx = torch.randint(0, 65, (32, 65), generator=g).to(dev)

    def gpt_step() -> None:
        _, loss = gpt(idx[:, :-1], idx[:, 1:])
        gopt.zero_grad(set_to_none=True)
        loss.backward()
        gopt.step()

    gpt.train()
    _report("GPT training step (B=32, T=64)", _time(gpt_step, args.steps, args.repeats, dev))

    q, k, v = (torch.randn(8, 4, 16, 32, generator=g).to(dev) for _ in range(3))
    mask = causal_mask(16, device=dev)[None, None]
    _report("scaled_dot_product_attention (8, 4, 16, 32)",
            _time(lambda: scaled_dot_product_attention(q, k, v, mask), args.steps * 10, args.repeats, dev))

    mha = MultiHeadAttention(128, 4).to(dev)
    x = torch.randn(8, 16, 128, generator=g).to(dev)
    pad = key_padding_mask(batches[0].src_mask[:8, :16].to(dev))
    _report("MultiHeadAttention (8, 16, 128), padding mask",
            _time(lambda: mha(x, x, x, pad), args.steps * 10, args.repeats, dev))

    def fit_loop() -> None:
        fit(model, translation_loss, batches, opt, progress=False, clip_grad_norm=1.0)

    per_step = [ms / len(batches) for ms in _time(fit_loop, max(1, args.steps // len(batches)), args.repeats, dev)]
    _report(f"fit(), per step ({len(batches)} batches a call)", per_step)


if __name__ == "__main__":
    main()
