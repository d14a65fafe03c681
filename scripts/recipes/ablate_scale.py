"""Notebook 10's ablations on tiny-shakespeare, written to ``runs/scale/results.json``.

Every run trains notebook 09's small GPT recipe (same steps, batch, learning rate and seeds) with
some of notebook 10's options switched on, then scores the whole validation text
(``utils.gpt.text_loss``) at the training context and, for models without a position table, at
longer contexts. Runs:

- positions: learned (notebook 09), sinusoidal, rotary, in notebook 09's block;
- the modern block, one change at a time: + RMSNorm, + SwiGLU, + no biases, + RoPE, + GQA (2 key/value
  heads for 4 query heads);
- grouped-query attention at 4, 2 and 1 key/value heads in the modern block (quality against cache).

Every model with a SwiGLU layer gets the width (``GPTConfig.mlp_hidden``) that brings it closest to the
classic model's parameter count (:func:`utils.gpt.matched_swiglu_hidden`), so each step of the ablation
is compared at the same size (within 1%): what a step removes (biases, the position table, key/value
heads) goes back into the feed-forward layer.

    python scripts/recipes/ablate_scale.py                 # the committed results (about 20 min on 1 free CPU thread)
    python scripts/recipes/ablate_scale.py --steps 50      # a smoke test
    python scripts/recipes/ablate_scale.py --reuse runs/scale/results.json   # retrain only what changed

``--reuse FILE`` takes a run from an earlier results file instead of training it again when the setup,
the seed, the options and the parameter count are the same (training is deterministic on one thread: the
same run gives the same losses); such runs are marked ``"reused": true``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.data import load_tiny_shakespeare  # noqa: E402
from utils.distributed import train_gpt  # noqa: E402
from utils.gpt import (GPT, CharTokenizer, GPTConfig, gpt_parameter_count, matched_swiglu_hidden,  # noqa: E402
                       split_text, text_loss)
from utils.scale import kv_cache_bytes_per_token  # noqa: E402
from utils.training import count_parameters, set_seed  # noqa: E402

CLASSIC = dict(norm="layer", mlp="gelu", bias=True, pos="learned", n_kv_head=None)
MODERN_STEPS = [
    ("classic (notebook 09)", {}),
    ("+ RMSNorm", dict(norm="rms")),
    ("+ SwiGLU", dict(norm="rms", mlp="swiglu")),
    ("+ no biases", dict(norm="rms", mlp="swiglu", bias=False)),
    ("+ RoPE", dict(norm="rms", mlp="swiglu", bias=False, pos="rope")),
    ("+ GQA (2 kv heads) = modern", dict(norm="rms", mlp="swiglu", bias=False, pos="rope", n_kv_head=2)),
]
POSITIONS = [("learned", dict(pos="learned")), ("sinusoidal", dict(pos="sinusoidal")), ("rope", dict(pos="rope"))]
KV = [("MHA (4 kv heads)", 4), ("GQA (2 kv heads)", 2), ("MQA (1 kv head)", 1)]


def config(options: dict, vocab: int, args) -> GPTConfig:
    """The run's config; a SwiGLU model gets the width that matches the classic model's parameter count."""
    sizes = dict(vocab_size=vocab, block_size=args.block, n_layer=args.layers, n_head=4, d_model=args.d_model)
    cfg = GPTConfig(**sizes, **{**CLASSIC, **options})
    if cfg.mlp == "swiglu":
        target = count_parameters(GPT(GPTConfig(**sizes, **CLASSIC)))
        cfg = GPTConfig(**sizes, **{**CLASSIC, **options}, mlp_hidden=matched_swiglu_hidden(cfg, target))
    return cfg


SETUP_KEYS = ("steps", "batch", "block_size", "n_layer", "n_head", "d_model", "lr")


def earlier_runs(path: str | None, args) -> dict:
    """Runs of an earlier results file with this setup, by (options, seed)."""
    if not path:
        return {}
    old = json.loads(Path(path).read_text())
    setup = dict(steps=args.steps, batch=args.batch, block_size=args.block, n_layer=args.layers, n_head=4,
                 d_model=args.d_model, lr=args.lr)
    if any(old["setup"].get(k) != v for k, v in setup.items()):
        return {}
    return {(json.dumps({**CLASSIC, **r["options"]}, sort_keys=True), r["seed"]): r
            for group in ("positions", "modern", "kv_heads") for r in old[group]}


def run(name: str, options: dict, parts: dict, vocab: int, args, seed: int, earlier: dict) -> dict:
    cfg = config(options, vocab, args)
    old = earlier.get((json.dumps({**CLASSIC, **options}, sort_keys=True), seed))
    if old is not None and old["params"] == gpt_parameter_count(cfg) and old.get("mlp_hidden") == cfg.mlp_hidden:
        r = {**old, "name": name, "options": options, "mlp_hidden": cfg.mlp_hidden, "reused": True}
        print(json.dumps(r), flush=True)
        return r
    set_seed(seed)
    model = GPT(cfg)
    out = train_gpt(model, parts["train"], steps=args.steps, batch_size=args.batch, lr=args.lr, seed=seed)
    ctx = {str(T): round(text_loss(model, parts["val"], block_size=T), 4)
           for T in args.eval_contexts if T == cfg.block_size or cfg.pos != "learned"}
    r = dict(name=name, options=options, seed=seed, params=count_parameters(model), mlp_hidden=cfg.mlp_hidden,
             val_loss=ctx[str(cfg.block_size)],
             val_loss_by_context=ctx, train_seconds=round(out["seconds"], 1),
             tokens_per_s=round(out["tokens"] / out["seconds"]), cpu_seconds=round(out["cpu_seconds"], 1),
             tokens_per_cpu_s=round(out["tokens"] / out["cpu_seconds"]),
             kv_cache_bytes_per_token_fp16=kv_cache_bytes_per_token(cfg.n_layer, cfg.kv_heads, cfg.d_model // cfg.n_head))
    print(json.dumps(r), flush=True)
    return r


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--lr", type=float, default=4e-3)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--eval-contexts", type=int, nargs="+", default=[64, 128, 256])
    p.add_argument("--out", default=str(ROOT / "runs" / "scale" / "results.json"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reuse", default=None, help="an earlier results file whose identical runs are not trained again")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    text = load_tiny_shakespeare()
    tok = CharTokenizer(text)
    parts = split_text(torch.tensor(tok.encode(text)))
    earlier = earlier_runs(args.reuse, args)
    done: dict[tuple, dict] = {}
    results = {"positions": [], "modern": [], "kv_heads": []}
    for group, runs in (("modern", MODERN_STEPS), ("positions", POSITIONS),
                        ("kv_heads", [(n, dict(MODERN_STEPS[-1][1], n_kv_head=k)) for n, k in KV])):
        for name, options in runs:
            for seed in args.seeds:
                cfg = config(options, len(tok), args)
                key = (repr(GPTConfig(**{**vars(cfg), "n_kv_head": cfg.kv_heads})), seed)  # 4 of 4 kv heads = MHA
                if key not in done:  # the same model in two groups is trained once
                    done[key] = run(name, options, parts, len(tok), args, seed, earlier)
                results[group].append({**done[key], "name": name})
    results["setup"] = dict(steps=args.steps, batch=args.batch, block_size=args.block, n_layer=args.layers,
                            n_head=4, d_model=args.d_model, lr=args.lr, seeds=args.seeds, threads=args.threads,
                            torch=torch.__version__, machine=f"{platform.machine()}, {torch.get_num_threads()} torch threads")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")
    return results


if __name__ == "__main__":
    main()
