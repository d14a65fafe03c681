"""Train notebook 09's / notebook 10's GPT on tiny-shakespeare, on one process or many (``torchrun``).

    python scripts/recipes/train_gpt.py                                   # one process (CPU or one GPU)
    torchrun --nproc_per_node=2 scripts/recipes/train_gpt.py              # 2 processes: gloo on CPUs, NCCL on GPUs
    torchrun --nproc_per_node=8 scripts/recipes/train_gpt.py --full --modern   # 8 GPUs, the larger model, modern block

``--batch`` is per process: N processes with ``--batch B`` take the same steps as one with ``--batch N·B``
(``utils.distributed.train_gpt``; ``tests/scripts/test_distributed.py`` checks the weights agree). On a GPU with
bfloat16 support the forward pass runs under bf16 autocast (``--no-bf16`` turns it off). Rank 0 scores
the whole validation text and writes ``<out>/model.pt`` (``utils.training.save_checkpoint``) and
``<out>/results.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.data import load_tiny_shakespeare  # noqa: E402
from utils.distributed import init_distributed, train_gpt  # noqa: E402
from utils.gpt import GPT, CharTokenizer, GPTConfig, split_text, text_loss  # noqa: E402
from utils.training import save_checkpoint, set_seed  # noqa: E402

SMALL = dict(n_layer=2, n_head=4, d_model=128, block_size=64, dropout=0.0)
FULL = dict(n_layer=6, n_head=6, d_model=384, block_size=256, dropout=0.2)   # nanoGPT's "baby GPT"
MODERN = dict(norm="rms", mlp="swiglu", bias=False, pos="rope")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch", type=int, default=32, help="windows per process and step")
    p.add_argument("--lr", type=float, default=4e-3)
    p.add_argument("--full", action="store_true", help="the 10.8M-parameter model (a GPU run)")
    p.add_argument("--modern", action="store_true", help="RMSNorm, SwiGLU, no biases, RoPE")
    p.add_argument("--kv-heads", type=int, help="key/value heads (grouped-query attention)")
    p.add_argument("--text", help="train on this text file instead of tiny-shakespeare")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: CUDA when present")
    p.add_argument("--no-bf16", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, help="torch CPU threads per process")
    p.add_argument("--out", default=str(ROOT / "runs" / "gpt"))
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    info = init_distributed(args.device)
    text = Path(args.text).read_text() if args.text else load_tiny_shakespeare()
    tok = CharTokenizer(text)
    parts = split_text(torch.tensor(tok.encode(text)))
    cfg = GPTConfig(vocab_size=len(tok), **(FULL if args.full else SMALL), **(MODERN if args.modern else {}),
                    n_kv_head=args.kv_heads)
    set_seed(args.seed)  # every rank builds the same model (DDP also broadcasts rank 0's weights)
    model = GPT(cfg).to(info.device)
    out = train_gpt(model, parts["train"], steps=args.steps, batch_size=args.batch, lr=args.lr, seed=args.seed,
                    info=info, bf16=not args.no_bf16, log_every=max(args.steps // 10, 1))
    result = {}
    if info.is_main:
        result = dict(world_size=info.world_size, device=str(info.device), steps=args.steps,
                      batch_per_process=args.batch, global_batch=args.batch * info.world_size,
                      val_loss=round(text_loss(model, parts["val"]), 4), train_seconds=round(out["seconds"], 1),
                      tokens_per_s=round(out["tokens"] / out["seconds"]), config=vars(cfg))
        Path(args.out).mkdir(parents=True, exist_ok=True)
        save_checkpoint(Path(args.out) / "model.pt", model, config=vars(cfg), vocab=tok)
        (Path(args.out) / "results.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result))
    if dist.is_initialized():
        dist.destroy_process_group()
    return result


if __name__ == "__main__":
    main()
