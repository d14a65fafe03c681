"""Full-data recipes for the course's translation models (Multi30k de->en).

    python scripts/recipes/train_translation.py --model seq2seq       # notebook 02: GRU encoder-decoder, no attention
    python scripts/recipes/train_translation.py --model attention     # notebook 03: + additive (Bahdanau) attention
    python scripts/recipes/train_translation.py --model transformer   # notebook 08: the Transformer
    python scripts/recipes/train_translation.py --model transformer --epochs 1 --max-steps 20 --train-subset 2000  # smoke test
    python scripts/recipes/train_translation.py --model transformer --resume   # continue an interrupted run
    torchrun --nproc_per_node=4 scripts/recipes/train_translation.py --model transformer --batch 32 --bf16  # 4 GPUs

Under ``torchrun`` every process trains a ``DistributedDataParallel`` copy of the model on its own share of
the batches (``--batch`` is per process: 4 processes with ``--batch 32`` step on 128 sentences, as one with
128); NCCL on GPUs, gloo on CPUs. Rank 0 writes the checkpoints and scores the test set. ``--bf16`` runs
the forward pass under bfloat16 autocast on a GPU that supports it (off by default, so the committed
results stay reproducible).

Trains on the whole training split, keeps the checkpoint with the best validation loss
(``best.pt``) and the latest state (``last.pt``, so ``--resume`` continues after an
interruption), then scores test_2016_flickr with greedy decoding and beam search, both as
tokenized lower-cased corpus BLEU-4 (bentrevett/pytorch-seq2seq's metric) and as sacreBLEU.
Writes ``runs/<model>/results.json`` (scores, BLEU by source length, training time,
hardware, epochs, config), the checkpoints and two figures (loss curve; BLEU against
source length).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from utils import rnn, transformer  # noqa: E402
from utils.distributed import DataParallelModel, ShardedBatchSampler, autocast, init_distributed  # noqa: E402
from utils.schedule import transformer_adam  # noqa: E402
from utils.training import History, count_parameters, evaluate, fit, get_device, load_checkpoint, save_checkpoint, set_seed  # noqa: E402
from utils.translation import bleu_by_length, evaluate_bleu, make_loader, prepare_translation  # noqa: E402

# RNNs: bentrevett's attention-tutorial sizes (bidirectional GRU encoder, GRU decoder).
# Transformer: bentrevett's sizes (d_model 256, 3+3 layers, 8 heads, d_ff 512) trained the
# paper's way (Adam β2 0.98, warm-up schedule, label smoothing 0.1), output tied to the
# target embedding.
RECIPES = {
    "seq2seq": dict(attention=None, emb=256, hidden=512, dropout=0.5, lr=1e-3, batch=128, epochs=10,
                    label_smoothing=0.0, beam=5),
    "attention": dict(attention="additive", emb=256, hidden=512, dropout=0.5, lr=1e-3, batch=128, epochs=9,
                      label_smoothing=0.0, beam=5),
    "transformer": dict(d_model=256, heads=8, layers=3, d_ff=512, dropout=0.1, warmup=1000, lr_factor=0.7,
                        batch=128, epochs=15, label_smoothing=0.1, beam=4, length_penalty=0.6),
}


def hardware(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    return f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def build(name: str, cfg: dict, data, device: torch.device):
    """(model, optimizer, scheduler or None, loss_fn, decode_fn factory) for one recipe."""
    V_src, V_tgt = len(data.src_vocab), len(data.tgt_vocab)
    if name == "transformer":
        tcfg = transformer.TransformerConfig(V_src, V_tgt, d_model=cfg["d_model"], num_heads=cfg["heads"],
                                             d_ff=cfg["d_ff"], num_encoder_layers=cfg["layers"],
                                             num_decoder_layers=cfg["layers"], dropout=cfg["dropout"], tie_output=True)
        model = transformer.Transformer(tcfg).to(device)
        opt, sched = transformer_adam(model.parameters(), cfg["d_model"], cfg["warmup"], cfg["lr_factor"])
        loss_fn = partial(transformer.translation_loss, label_smoothing=cfg["label_smoothing"])

        def decoder(method: str):
            return transformer.make_decode_fn(model, method, beam_size=cfg["beam"], length_penalty=cfg["length_penalty"])

        return model, opt, sched, loss_fn, decoder, vars(tcfg)
    model = rnn.Seq2Seq(V_src, V_tgt, emb_dim=cfg["emb"], enc_hidden=cfg["hidden"] // 2, dec_hidden=cfg["hidden"],
                        bidirectional=True, attention=cfg["attention"], dropout=cfg["dropout"]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    loss_fn = partial(rnn.seq2seq_loss, label_smoothing=cfg["label_smoothing"])

    def decoder(method: str):
        return rnn.make_decode_fn(model, method, beam_size=cfg["beam"])

    return model, opt, None, loss_fn, decoder, model.config


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(RECIPES), required=True)
    p.add_argument("--epochs", type=int)
    p.add_argument("--max-steps", type=int, help="stop after this many optimizer steps (smoke tests)")
    p.add_argument("--train-subset", type=int, help="train on this many random pairs (smoke tests)")
    p.add_argument("--max-train-len", type=int)
    p.add_argument("--max-eval-len", type=int, help="score only val/test pairs this short (smoke tests; not comparable)")
    p.add_argument("--batch", type=int)
    p.add_argument("--beam", type=int, help="beam size for the beam-search score (0: skip)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="output folder (default runs/<model>)")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    p.add_argument("--resume", action="store_true", help="continue from <out>/last.pt")
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast on a GPU that supports it")
    args = p.parse_args(argv)

    cfg = dict(RECIPES[args.model])
    for k in ("epochs", "batch", "beam"):
        if getattr(args, k) is not None:
            cfg[k] = getattr(args, k)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out or f"runs/{args.model}")
    out.mkdir(parents=True, exist_ok=True)
    device = get_device()
    info = init_distributed(device.type)  # one process unless started by torchrun
    device = info.device if info.world_size > 1 else device
    log = print if info.is_main else (lambda *a, **k: None)
    set_seed(args.seed)

    data = prepare_translation("de", "en", min_freq=2, max_train_len=args.max_train_len,
                               train_subset=args.train_subset, max_eval_len=args.max_eval_len, seed=args.seed)
    log(data, flush=True)
    model, opt, sched, loss_fn, decoder, model_config = build(args.model, cfg, data, device)
    log(f"{args.model}: {count_parameters(model):,} parameters on {hardware(device)}" + (f" x {info.world_size} processes" if info.world_size > 1 else ""), flush=True)
    train_loader = make_loader(data.train, cfg["batch"], shuffle=True, seed=args.seed)
    train_model, train_loss_fn = model, loss_fn
    if info.world_size > 1:  # each rank its own share of the (identically shuffled) batches; gradients averaged
        train_loader = torch.utils.data.DataLoader(
            data.train, batch_sampler=ShardedBatchSampler(train_loader.batch_sampler, info.rank, info.world_size),
            collate_fn=train_loader.collate_fn)
        train_model = DataParallelModel(model)
    if args.bf16:
        def train_loss_fn(m, batch, _loss=loss_fn):
            with autocast(device):
                return _loss(m, batch)
    val_loader = make_loader(data.val, 256, shuffle=False)

    history, best, epoch_seconds, start_epoch = History(), float("inf"), [], 1
    best_ckpt, last_ckpt = out / "best.pt", out / "last.pt"
    if args.resume:
        if not last_ckpt.exists():
            raise FileNotFoundError(f"--resume: {last_ckpt} does not exist; run without --resume first")
        extra = load_checkpoint(last_ckpt, model, opt, map_location=device)
        if sched is not None:
            sched.load_state_dict(extra["scheduler"])
        h = extra["history"]
        history = History(train_loss=h["train_loss"], val_loss=h["val_loss"], val_step=h["val_step"], lr=h["lr"],
                          seconds=h["seconds"], steps=h["steps"])
        best, epoch_seconds, start_epoch = extra["best_val_loss"], extra["epoch_seconds"], extra["epoch"] + 1
        train_loader.batch_sampler.epoch = extra["epoch"]  # the same shuffles as an uninterrupted run
        log(f"resuming after epoch {extra['epoch']} (step {history.steps}, best val {best:.3f})", flush=True)

    vocab = dict(src_vocab=data.src_vocab.to_list(), tgt_vocab=data.tgt_vocab.to_list())
    for epoch in range(start_epoch, cfg["epochs"] + 1):
        t0 = time.perf_counter()
        history = fit(train_model, train_loss_fn, train_loader, opt, epochs=1, max_steps=args.max_steps, scheduler=sched,
                      history=history, progress=False, device=device)
        epoch_seconds.append(time.perf_counter() - t0)
        val = evaluate(model, val_loader, loss_fn, device)
        history.val_loss.append(val)
        history.val_step.append(history.steps)
        log(f"epoch {epoch}: step {history.steps}, train {history.train_loss[-1]:.3f}, val {val:.3f}, "
              f"lr {history.lr[-1]:.2e}, {epoch_seconds[-1]:.0f} s", flush=True)
        if val < best:
            best = val
            if info.is_main:
                save_checkpoint(best_ckpt, model, config=model_config, recipe=cfg, epoch=epoch, val_loss=val, **vocab)
        h = dict(train_loss=history.train_loss, val_loss=history.val_loss, val_step=history.val_step, lr=history.lr,
                 seconds=history.seconds, steps=history.steps)
        if info.is_main:
            save_checkpoint(last_ckpt, model, opt, recipe=cfg, epoch=epoch, history=h, best_val_loss=best,
                            epoch_seconds=epoch_seconds, scheduler=sched.state_dict() if sched is not None else None)
        if args.max_steps is not None and history.steps >= args.max_steps:
            break
    if info.world_size > 1:
        dist.barrier()  # rank 0's checkpoints are written
        if not info.is_main:
            dist.destroy_process_group()
            return {}
    load_checkpoint(best_ckpt, model, map_location=device)

    t0 = time.perf_counter()
    greedy = evaluate_bleu(decoder("greedy"), data, "test", device=device)
    greedy_s = time.perf_counter() - t0
    print(f"test, greedy: {greedy} ({greedy_s:.0f} s)", flush=True)
    src_lengths = [len(s) for s, _ in data.tokens["test"]]
    by_length = bleu_by_length(greedy.hypotheses, greedy.references, src_lengths)
    test = dict(greedy=dict(tokenized_bleu=greedy.tokenized.score, sacrebleu=greedy.sacrebleu.score,
                            sacrebleu_signature=greedy.sacrebleu.signature, seconds=greedy_s))
    if cfg["beam"]:
        t0 = time.perf_counter()
        beam = evaluate_bleu(decoder("beam"), data, "test", device=device)
        test[f"beam{cfg['beam']}"] = dict(tokenized_bleu=beam.tokenized.score, sacrebleu=beam.sacrebleu.score,
                                          seconds=time.perf_counter() - t0)
        print(f"test, beam {cfg['beam']}: {beam}", flush=True)
    results = dict(
        model=args.model, data=data.config, recipe=cfg, model_config=model_config, parameters=count_parameters(model),
        hardware=hardware(device), train_seconds=sum(epoch_seconds), epoch_seconds=epoch_seconds,
        epochs_run=len(epoch_seconds), steps=history.steps, best_val_loss=best, test=test,
        bleu_by_length=by_length, torch=torch.__version__,
    )
    if info.world_size > 1:
        results.update(processes=info.world_size, batch_per_process=cfg["batch"])
        dist.destroy_process_group()
    (out / "results.json").write_text(json.dumps(results, indent=2))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from utils.plotting import plot_loss

    ax = plot_loss(history, title=f"{args.model}: Multi30k de→en")
    ax.figure.savefig(out / "loss.png", dpi=120, bbox_inches="tight")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([r["mean_len"] for r in by_length], [r["bleu"] for r in by_length], "o-", label=args.model)
    ax.set_xlabel("source sentence length (tokens, bucket mean)")
    ax.set_ylabel("BLEU (tokenized)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(out / "bleu_by_length.png", dpi=120, bbox_inches="tight")
    print(json.dumps({k: results[k] for k in ("model", "hardware", "train_seconds", "epochs_run", "test")}, indent=2))
    return results


if __name__ == "__main__":
    main()
