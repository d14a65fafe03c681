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
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
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
