"""Speed of our Transformer: a training step against nn.Transformer, and generation with and without the cache.

Issue #5: our training step should take at most 1.1 × nn.Transformer's on the same work.

1. Builds our Transformer and a reference: ``nn.Transformer`` (batch_first, same sizes, post-LN unless
   ``--pre-norm``) inside the same embeddings × √d_model, sinusoidal positions, dropout and output
   projection, fed the same masks (causal target mask, source/memory key padding). The layer weights
   are copied with ``load_from_torch``, the rest by state dict, and the two must give the same logits
   (eval mode, within --atol) before anything is timed: both models then do the same computation.
2. Times a full training step (forward, cross-entropy with ignore_index=<pad> and label smoothing
   0.1, backward, Adam step) on random right-padded batches, the two models taking turns on the
   same batches (warm-up steps dropped, median of --steps), and prints ms/step, the ratio ours/torch
   and whether it meets the goal (<= 1.1).
3. Times greedy generation of --gen-len tokens (an <eos> id that can never be chosen forces the full
   length) with ``use_cache=True`` and ``use_cache=False``; the two must give the same tokens.

    python scripts/benchmarks/bench_transformer.py [--config multi30k|base|tiny] [--pre-norm] [--steps 20]
        [--batch 128] [--threads 2] [--device cpu] [--json results.json]

On a CPU shared with other work, every thread-pool synchronisation can wait for a descheduled
thread: steps then take several times longer and the model that launches more (smaller) kernels
(ours: separate Q/K/V projections, explicit masking) suffers more. ``--threads 1`` is steadier there;
the printed min/max and the median of step-by-step ratios show how noisy a run was.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from utils.attention import causal_mask
from utils.positional import SinusoidalPositionalEncoding
from utils.training import get_device, set_seed
from utils.transformer import Transformer, TransformerConfig, greedy_decode, load_from_torch

PAD, BOS, EOS = 0, 2, 3
GOAL = 1.1  # ours / nn.Transformer, training step
LABEL_SMOOTHING = 0.1

# multi30k: the sizes of the course's recipe (scripts/recipes/train_translation.py: d_model 256, 8 heads, 3+3 layers,
# d_ff 512, output tied to the target embedding) with Multi30k-sized vocabularies; base: the paper's base
# model; tiny: for the smoke test.
CONFIGS = {
    "multi30k": dict(src_vocab=8000, tgt_vocab=6000, d_model=256, num_heads=8, d_ff=512,
                     num_encoder_layers=3, num_decoder_layers=3, tie_output=True),
    "base": dict(src_vocab=8000, tgt_vocab=6000, d_model=512, num_heads=8, d_ff=2048,
                 num_encoder_layers=6, num_decoder_layers=6),
    "tiny": dict(src_vocab=40, tgt_vocab=50, d_model=16, num_heads=2, d_ff=32,
                 num_encoder_layers=1, num_decoder_layers=1),
}


class TorchReference(nn.Module):
    """``nn.Transformer`` wrapped in the same embeddings, positions, dropout and output layer as
    :class:`utils.transformer.Transformer`, called with the same masks: ids in, logits out."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.src_vocab, cfg.d_model)
        self.tgt_embed = self.src_embed if cfg.share_embeddings else nn.Embedding(cfg.tgt_vocab, cfg.d_model)
        self.pos = SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        self.dropout = nn.Dropout(cfg.dropout)
        with warnings.catch_warnings():  # pre-LN: "enable_nested_tensor is True, but ... norm_first was True"
            warnings.simplefilter("ignore", UserWarning)
            self.transformer = nn.Transformer(cfg.d_model, cfg.num_heads, cfg.num_encoder_layers, cfg.num_decoder_layers,
                                              cfg.d_ff, cfg.dropout, batch_first=True, norm_first=cfg.pre_norm)
        if not cfg.pre_norm:  # post-LN: nn.Transformer ends each stack with one more LayerNorm, ours (the paper's) does not
            self.transformer.encoder.norm = None
            self.transformer.decoder.norm = None
        self.out_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab, bias=False)
        if cfg.tie_output:
            self.out_proj.weight = self.tgt_embed.weight

    def embed(self, emb: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.pos(emb(ids) * math.sqrt(self.cfg.d_model)))

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """src (B, S), tgt_in (B, T) -> logits (B, T, V). nn's bool masks are True = blocked."""
        src_pad = src == self.cfg.pad_id                                    # (B, S)
        blocked = ~causal_mask(tgt_in.shape[1], device=tgt_in.device)       # (T, T)
        out = self.transformer(self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt_in), tgt_mask=blocked,
                               src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad)
        return self.out_proj(out)


def build_models(cfg: TransformerConfig, device: torch.device) -> tuple[Transformer, TorchReference]:
    """Our model and the reference, holding the same weights."""
    ours, ref = Transformer(cfg), TorchReference(cfg)
    load_from_torch(ours, ref.transformer)  # the two stacks
    for name in ("src_embed", "tgt_embed", "out_proj"):  # the rest (tied tensors are copied twice, harmlessly)
        getattr(ref, name).load_state_dict(getattr(ours, name).state_dict())
    n_ours, n_ref = (sum(p.numel() for p in m.parameters()) for m in (ours, ref))
    if n_ours != n_ref:
        raise RuntimeError(f"the models differ in size: ours {n_ours:,} parameters, reference {n_ref:,}")
    return ours.to(device), ref.to(device)


@torch.no_grad()
def check_same_outputs(ours: nn.Module, ref: nn.Module, src: torch.Tensor, tgt_in: torch.Tensor, atol: float) -> float:
    """Largest |logit difference| between the two models in eval mode; raises if it exceeds ``atol``."""
    ours.eval(), ref.eval()
    with warnings.catch_warnings():  # nn's eval fast path: "The PyTorch API of nested tensors is in prototype stage"
        warnings.simplefilter("ignore", UserWarning)
        diff = (ours(src, tgt_in) - ref(src, tgt_in)).abs().max().item()
    ours.train(), ref.train()
    if not diff <= atol:  # (also catches NaN)
        raise RuntimeError(f"our Transformer and nn.Transformer disagree: max |logit difference| {diff:.3g} > {atol:g}; "
                           "the timings would not compare the same computation")
    return diff


def random_batch(batch: int, cfg: TransformerConfig, lengths: tuple[int, int], gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random (src (B, S), tgt (B, T)) ids, right-padded with <pad>: sources of lengths[0]..lengths[1]
    tokens, targets ``<bos> y1 .. yn <eos>`` with n in the same range."""
    lo, hi = lengths
    src_len = torch.randint(lo, hi + 1, (batch,), generator=gen)
    tgt_len = torch.randint(lo, hi + 1, (batch,), generator=gen)
    src = torch.randint(4, cfg.src_vocab, (batch, int(src_len.max())), generator=gen)
    src[torch.arange(src.shape[1]) >= src_len[:, None]] = PAD
    tgt = torch.randint(4, cfg.tgt_vocab, (batch, int(tgt_len.max()) + 2), generator=gen)
    pos = torch.arange(tgt.shape[1])
    tgt[:, 0] = BOS
    tgt[pos == tgt_len[:, None] + 1] = EOS
    tgt[pos > tgt_len[:, None] + 1] = PAD
    return src, tgt


def train_step(model: nn.Module, opt: torch.optim.Optimizer, src: torch.Tensor, tgt: torch.Tensor) -> float:
    """Forward (teacher forcing), cross-entropy, backward, Adam step. Returns the loss."""
    opt.zero_grad(set_to_none=True)
    logits = model(src, tgt[:, :-1])  # (B, T-1, V)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1),
                           ignore_index=PAD, label_smoothing=LABEL_SMOOTHING)
    loss.backward()
    opt.step()
    return loss.item()


def timed(fn, device: torch.device) -> tuple[float, object]:
    """(seconds one call of ``fn`` takes, waiting for the GPU if any; what it returned)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, out


def bench_training(ours: nn.Module, ref: nn.Module, batches: list, steps: int, warmup: int, device: torch.device) -> dict:
    """Median ms per training step of each model, the two taking turns (AB, BA, AB, ...) on the same batches."""
    models = {"ours": ours, "torch": ref}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9) for k, m in models.items()}
    times: dict[str, list[float]] = {"ours": [], "torch": []}
    for i in range(warmup + steps):
        src, tgt = batches[i % len(batches)]
        for k in ("ours", "torch") if i % 2 == 0 else ("torch", "ours"):
            t, _ = timed(lambda: train_step(models[k], opts[k], src, tgt), device)
            if i >= warmup:
                times[k].append(t)
    ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    spread = {k: (1e3 * min(v), 1e3 * max(v)) for k, v in times.items()}
    # Each pair of neighbouring steps saw about the same machine load: the median of their ratios
    # is less sensitive to load changing during the run than the ratio of the medians.
    paired = statistics.median(a / b for a, b in zip(times["ours"], times["torch"]))
    return dict(ours_ms=ms["ours"], torch_ms=ms["torch"], ratio=ms["ours"] / ms["torch"], paired_ratio=paired,
                ours_ms_min_max=spread["ours"], torch_ms_min_max=spread["torch"],
                ours_ms_steps=[1e3 * t for t in times["ours"]], torch_ms_steps=[1e3 * t for t in times["torch"]])


def bench_generation(model: Transformer, src: torch.Tensor, gen_len: int, repeats: int, device: torch.device) -> dict:
    """Tokens per second of greedy decoding with and without the cache, forced to ``gen_len`` steps."""
    never = model.cfg.tgt_vocab  # an <eos> id outside the vocabulary is never the argmax: every output is gen_len long
    for c in (True, False):  # warm-up
        greedy_decode(model, src, min(gen_len, 4), BOS, never, use_cache=c)
    times: dict[bool, list[float]] = {True: [], False: []}
    out = {}
    for r in range(repeats):
        for c in (True, False) if r % 2 == 0 else (False, True):
            t, out[c] = timed(lambda: greedy_decode(model, src, gen_len, BOS, never, use_cache=c), device)
            times[c].append(t)
    if any(len(seq) != gen_len for seq in out[True]):
        raise RuntimeError(f"generation stopped before {gen_len} tokens")
    if out[True] != out[False]:
        raise RuntimeError("greedy decoding with and without the cache gave different tokens")
    n_tokens = src.shape[0] * gen_len
    tok_s = {c: n_tokens / statistics.median(v) for c, v in times.items()}
    return dict(batch=src.shape[0], tokens_per_sequence=gen_len, cached_tok_s=tok_s[True], uncached_tok_s=tok_s[False],
                speedup=tok_s[True] / tok_s[False], identical_tokens=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="multi30k")
    ap.add_argument("--pre-norm", action="store_true", help="pre-LN instead of the paper's post-LN")
    ap.add_argument("--steps", type=int, default=20, help="timed training steps per model (after --warmup)")
    ap.add_argument("--warmup", type=int, default=3, help="training steps per model not timed")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--min-len", type=int, default=10, help="shortest source/target sentence (tokens)")
    ap.add_argument("--max-len", type=int, default=30, help="longest source/target sentence (tokens)")
    ap.add_argument("--gen-len", type=int, default=128, help="tokens generated per sentence")
    ap.add_argument("--gen-batch", type=int, default=8, help="sentences generated at once")
    ap.add_argument("--gen-repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: leave as is)")
    ap.add_argument("--device", default=None, help="default: utils.training.get_device()")
    ap.add_argument("--atol", type=float, default=1e-4, help="largest allowed logit difference between the models")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.gen_len < 1 or args.gen_repeats < 1 or not 1 <= args.min_len <= args.max_len:
        ap.error("need --steps >= 1, --warmup >= 0, --gen-len >= 1, --gen-repeats >= 1, 1 <= --min-len <= --max-len")
    return args


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark (command-line arguments ``argv``); print the figures and return them as a dict."""
    args = parse_args(argv)
    threads_before = torch.get_num_threads()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    try:
        return run(args)
    finally:
        torch.set_num_threads(threads_before)  # main() may be called from a test: leave the process as it was


def run(args: argparse.Namespace) -> dict:
    device = get_device(args.device)
    set_seed(args.seed)
    cfg = TransformerConfig(**CONFIGS[args.config], dropout=0.1, pre_norm=args.pre_norm, max_len=max(512, args.gen_len + 1))
    ours, ref = build_models(cfg, device)
    gen = torch.Generator().manual_seed(args.seed)
    batches = [tuple(t.to(device) for t in random_batch(args.batch, cfg, (args.min_len, args.max_len), gen)) for _ in range(4)]
    src, tgt = batches[0]
    max_diff = check_same_outputs(ours, ref, src, tgt[:, :-1], args.atol)

    results = dict(torch=torch.__version__, device=str(device), threads=torch.get_num_threads(), config=args.config,
                   sizes=dataclasses.asdict(cfg), batch=args.batch, lengths=[args.min_len, args.max_len],
                   steps=args.steps, warmup=args.warmup, max_logit_diff=max_diff)
    norm = "pre-LN" if cfg.pre_norm else "post-LN"
    print(f"torch {torch.__version__}, device {device}, threads {torch.get_num_threads()}")
    print(f"config {args.config} ({norm}): d_model {cfg.d_model}, {cfg.num_heads} heads, "
          f"{cfg.num_encoder_layers}+{cfg.num_decoder_layers} layers, d_ff {cfg.d_ff}, dropout {cfg.dropout}, "
          f"vocab {cfg.src_vocab}/{cfg.tgt_vocab}, tie_output {cfg.tie_output}")
    print(f"same logits as nn.Transformer (eval): max |difference| {max_diff:.2e} <= {args.atol:g}")

    train = bench_training(ours, ref, batches, args.steps, args.warmup, device)
    train.update(goal=GOAL, meets_goal=train["ratio"] <= GOAL)
    results["train"] = train
    print(f"\ntraining step (B = {args.batch}, lengths {args.min_len}-{args.max_len} + padding, Adam, label smoothing "
          f"{LABEL_SMOOTHING}), median of {args.steps} after {args.warmup} warm-up, interleaved:")
    print(f"  ours          {train['ours_ms']:9.1f} ms/step  (min {train['ours_ms_min_max'][0]:.1f}, max {train['ours_ms_min_max'][1]:.1f})")
    print(f"  nn.Transformer{train['torch_ms']:9.1f} ms/step  (min {train['torch_ms_min_max'][0]:.1f}, max {train['torch_ms_min_max'][1]:.1f})")
    print(f"  ratio ours/torch {train['ratio']:.3f}  (goal <= {GOAL}: {'met' if train['meets_goal'] else 'NOT met'}); "
          f"median of the step-by-step ratios {train['paired_ratio']:.3f}")

    gen_src = batches[1][0][: args.gen_batch]
    generation = bench_generation(ours, gen_src, args.gen_len, args.gen_repeats, device)
    results["generation"] = generation
    print(f"\ngreedy generation ({generation['batch']} sentences x {args.gen_len} tokens, median of {args.gen_repeats}):")
    print(f"  cached    {generation['cached_tok_s']:10.1f} tokens/s")
    print(f"  uncached  {generation['uncached_tok_s']:10.1f} tokens/s")
    print(f"  speed-up  {generation['speedup']:10.2f}x  (identical tokens: yes)")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"\nwrote {args.json}")
    return results


if __name__ == "__main__":
    main()
