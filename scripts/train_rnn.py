"""Full-data recipe for the RNN translation models of notebooks 02-03 (Multi30k de->en).

    python scripts/train_rnn.py --model seq2seq            # no attention (eq. 2.2)
    python scripts/train_rnn.py --model attention          # additive attention (eqs. 2.3-2.5)
    python scripts/train_rnn.py --model attention --epochs 1 --max-steps 20 --train-subset 2000   # smoke test

Trains on the whole training split, keeps the checkpoint with the best validation loss,
then scores test_2016_flickr with greedy decoding and beam search, both as tokenized
lower-cased corpus BLEU-4 (bentrevett/pytorch-seq2seq's metric) and as sacreBLEU. Writes
``runs/rnn_<model>/results.json`` (scores, BLEU by source length, training time, hardware,
epochs, config), ``checkpoint.pt`` (utils.training.save_checkpoint) and two figures
(loss curve; BLEU against source length).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from utils.rnn import Seq2Seq, make_decode_fn, seq2seq_loss  # noqa: E402
from utils.training import History, count_parameters, evaluate, fit, get_device, load_checkpoint, save_checkpoint, set_seed  # noqa: E402
from utils.translation import bleu_by_length, evaluate_bleu, make_loader, prepare_translation  # noqa: E402

# Defaults: bentrevett's attention tutorial sizes (bidirectional GRU encoder, GRU decoder).
RECIPES = {
    "seq2seq": dict(attention=None, emb=256, hidden=512, dropout=0.5, lr=1e-3, batch=128, epochs=12),
    "attention": dict(attention="additive", emb=256, hidden=512, dropout=0.5, lr=1e-3, batch=128, epochs=12),
}


def hardware(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    return f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(RECIPES), required=True)
    p.add_argument("--epochs", type=int)
    p.add_argument("--max-steps", type=int, help="stop after this many optimizer steps (smoke tests)")
    p.add_argument("--train-subset", type=int, help="train on this many random pairs (smoke tests)")
    p.add_argument("--max-train-len", type=int)
    p.add_argument("--batch", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--beam", type=int, default=5, help="beam size for the beam-search score (0: skip)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="output folder (default runs/rnn_<model>)")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    args = p.parse_args(argv)

    cfg = dict(RECIPES[args.model])
    for k in ("epochs", "batch", "lr"):
        if getattr(args, k) is not None:
            cfg[k] = getattr(args, k)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out or f"runs/rnn_{args.model}")
    out.mkdir(parents=True, exist_ok=True)
    device = get_device()
    set_seed(args.seed)

    data = prepare_translation("de", "en", min_freq=2, max_train_len=args.max_train_len,
                               train_subset=args.train_subset, seed=args.seed)
    print(data, flush=True)
    model = Seq2Seq(len(data.src_vocab), len(data.tgt_vocab), emb_dim=cfg["emb"], enc_hidden=cfg["hidden"] // 2,
                    dec_hidden=cfg["hidden"], bidirectional=True, attention=cfg["attention"],
                    dropout=cfg["dropout"]).to(device)
    print(f"{args.model}: {count_parameters(model):,} parameters on {hardware(device)}", flush=True)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    train_loader = make_loader(data.train, cfg["batch"], shuffle=True, seed=args.seed)
    val_loader = make_loader(data.val, 256, shuffle=False)

    history, best, ckpt = History(), float("inf"), out / "checkpoint.pt"
    epoch_seconds = []
    for epoch in range(1, cfg["epochs"] + 1):
        t0 = time.perf_counter()
        history = fit(model, seq2seq_loss, train_loader, opt, epochs=1, max_steps=args.max_steps,
                      history=history, progress=False, device=device)
        epoch_seconds.append(time.perf_counter() - t0)
        val = evaluate(model, val_loader, seq2seq_loss, device)
        history.val_loss.append(val)
        history.val_step.append(history.steps)
        print(f"epoch {epoch}: step {history.steps}, train {history.train_loss[-1]:.3f}, val {val:.3f}, "
              f"{epoch_seconds[-1]:.0f} s", flush=True)
        if val < best:
            best = val
            save_checkpoint(ckpt, model, opt, config=model.config, recipe=cfg, epoch=epoch, val_loss=val,
                            src_vocab=data.src_vocab.to_list(), tgt_vocab=data.tgt_vocab.to_list())
        if args.max_steps is not None and history.steps >= args.max_steps:
            break
    load_checkpoint(ckpt, model)

    t0 = time.perf_counter()
    greedy = evaluate_bleu(make_decode_fn(model, "greedy"), data, "test", device=device)
    greedy_s = time.perf_counter() - t0
    src_lengths = [len(s) for s, _ in data.tokens["test"]]
    by_length = bleu_by_length(greedy.hypotheses, greedy.references, src_lengths)
    beam = None
    if args.beam:
        t0 = time.perf_counter()
        beam = evaluate_bleu(make_decode_fn(model, "beam", beam_size=args.beam), data, "test", device=device)
        beam_s = time.perf_counter() - t0
    results = dict(
        model=args.model, data=data.config, recipe=cfg, parameters=count_parameters(model),
        hardware=hardware(device), train_seconds=sum(epoch_seconds), epoch_seconds=epoch_seconds,
        epochs_run=len(epoch_seconds), steps=history.steps, best_val_loss=best,
        test=dict(
            greedy=dict(tokenized_bleu=greedy.tokenized.score, sacrebleu=greedy.sacrebleu.score,
                        sacrebleu_signature=greedy.sacrebleu.signature, seconds=greedy_s),
            **({f"beam{args.beam}": dict(tokenized_bleu=beam.tokenized.score, sacrebleu=beam.sacrebleu.score,
                                        seconds=beam_s)} if beam else {}),
        ),
        bleu_by_length=by_length,
        torch=torch.__version__,
    )
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
