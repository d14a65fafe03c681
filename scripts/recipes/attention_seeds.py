"""Notebook 03's appendix runs: the small translation models and the toy reversers, seed after seed.

Notebook 03 trains seed 0 of each model live; the other seeds and the longer runs would take minutes
more on a 2-core CPU, so this script trains them and writes ``runs/attention_seeds/results.json``, which
the notebook loads. The code is the notebook's own (its cells ``make_model``/``train``,
``train_score_reverser`` and ``reverser_curve``, with the same settings), on one CPU thread:

- **translation**: the GRU encoder-decoder without attention and with additive attention, notebook 03's
  small recipe (``RECIPE``, the notebook's ``CFG`` with ``FULL = False``), seeds 0-2; each scored on the
  whole Multi30k de->en test set (tokenized BLEU and sacreBLEU, greedy) and by source length
  (``utils.translation.bleu_by_length``);
- **scores**: the toy reversal task with no attention and the four score functions, 3 epochs, seeds 0-2
  (exact match of greedy decoding on 500 held-out sequences, mean largest weight);
- **curves**: the dot and scaled dot scores trained 12 epochs, scored after every third, seeds 0-1.

Seed 0's runs repeat the notebook's live ones (the notebook prints both side by side).

    python scripts/recipes/attention_seeds.py                 # the committed results (about 10 min)
    python scripts/recipes/attention_seeds.py --seeds 0 --steps 3 --toy-epochs 1 --out /tmp/a.json  # a smoke test
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.rnn import Seq2Seq, greedy_decode, make_decode_fn, seq2seq_loss  # noqa: E402
from utils.text import collate_pairs, make_sequence_task  # noqa: E402
from utils.training import fit, set_cpu_threads, set_seed  # noqa: E402
from utils.translation import bleu_by_length, evaluate_bleu, make_loader, prepare_translation  # noqa: E402

OUT = ROOT / "runs" / "attention_seeds" / "results.json"

# notebook 03's CFG with FULL = False (the notebook checks that the two agree)
RECIPE = dict(max_train_len=12, emb=128, hidden=256, batch=64, epochs=2, steps=300, lr=2e-3, dropout=0.2)
ARMS = {"no attention": None, "additive attention": "additive"}
SCORES = [None, "cosine", "additive", "dot", "scaled_dot"]


def translation_run(data, name: str, attention: str | None, seed: int, cfg: dict) -> dict:
    """Notebook 03's ``make_model`` and ``train`` for one arm and seed, scored on the whole test set."""
    set_seed(seed)
    model = Seq2Seq(len(data.src_vocab), len(data.tgt_vocab), emb_dim=cfg["emb"], enc_hidden=cfg["hidden"] // 2,
                    dec_hidden=cfg["hidden"], bidirectional=True, attention=attention, dropout=cfg["dropout"])
    set_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    loader = make_loader(data.train, cfg["batch"], shuffle=True, seed=seed)
    cpu = time.thread_time()
    hist = fit(model, seq2seq_loss, loader, opt, epochs=cfg["epochs"], max_steps=cfg["steps"], progress=False)
    cpu = time.thread_time() - cpu
    r = evaluate_bleu(make_decode_fn(model), data, "test")
    src_lengths = [len(s) for s, _ in data.tokens["test"]]
    return dict(arm=name, seed=seed, steps=hist.steps, train_cpu_s=round(cpu, 1),
                final_loss=round(sum(hist.train_loss[-20:]) / len(hist.train_loss[-20:]), 4),
                tokenized_bleu=r.tokenized.score, sacrebleu=r.sacrebleu.score,
                bleu_by_length=bleu_by_length(r.hypotheses, r.references, src_lengths))


def toy_task() -> dict:
    """Notebook 03's reversal task: 2,500 training and 500 held-out sequences of 8-15 symbols."""
    src, tgt, vocab = make_sequence_task("reverse", n=3000, min_len=8, max_len=15, num_symbols=10, seed=0)
    train = [(s, t) for s, t in zip(src[:2500], tgt[:2500])]
    test = collate_pairs(list(zip(src[2500:], tgt[2500:])))
    return dict(vocab=vocab, train=train, test=test, refs=[t[1:] for t in test.tgt.tolist()])


def reverser(toy: dict, attention: str | None, seed: int):
    """The notebook's toy model, optimiser and loader for one score and seed."""
    set_seed(seed)
    m = Seq2Seq(len(toy["vocab"]), len(toy["vocab"]), emb_dim=32, enc_hidden=32, dec_hidden=64, bidirectional=True,
                attention=attention)
    loader = DataLoader(toy["train"], batch_size=64, shuffle=True, collate_fn=collate_pairs,
                        generator=torch.Generator().manual_seed(seed))
    return m, loader, torch.optim.Adam(m.parameters(), lr=3e-3)


def score_reverser(toy: dict, m) -> tuple[float, float | None]:
    """Exact match on the held-out sequences and the mean largest attention weight (None without attention)."""
    ids, ws = greedy_decode(m, toy["test"].src, toy["test"].src_mask)
    exact = sum(p == r[: r.index(3) + 1] for p, r in zip(ids, toy["refs"])) / len(toy["refs"])
    peak = None if ws[0] is None else torch.cat([w.max(-1).values for w in ws]).mean().item()
    return exact, peak


def reverser_curve(toy: dict, attention: str | None, seed: int, rounds: int, epochs: int) -> list:
    """``rounds`` times ``epochs`` epochs, the optimiser and loader carrying on: [(epochs, exact, peak)]
    (the first entry is notebook 03's ``train_score_reverser`` run)."""
    m, loader, opt = reverser(toy, attention, seed)
    curve = []
    for r in range(1, rounds + 1):
        fit(m, seq2seq_loss, loader, opt, epochs=epochs, progress=False)
        curve.append((epochs * r, *score_reverser(toy, m)))
    return curve


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the translation and score runs")
    p.add_argument("--curve-seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--steps", type=int, default=RECIPE["steps"], help="translation steps (a smoke test: a few)")
    p.add_argument("--toy-epochs", type=int, default=3, help="epochs per round of the reversers")
    p.add_argument("--rounds", type=int, default=4, help="rounds of the dot-product curves")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    set_cpu_threads(1)
    cfg = {**RECIPE, "steps": args.steps}
    t0 = time.perf_counter()
    data = prepare_translation("de", "en", min_freq=2, max_train_len=cfg["max_train_len"])
    translation = []
    for seed in args.seeds:
        for name, attention in ARMS.items():
            r = translation_run(data, name, attention, seed, cfg)
            translation.append(r)
            print(f"seed {seed}  {name:18s}: {r['steps']} steps in {r['train_cpu_s']:.0f} CPU s, test tokenized "
                  f"BLEU {r['tokenized_bleu']:.2f} | sacreBLEU {r['sacrebleu']:.2f}", flush=True)
    toy = toy_task()
    scores = []
    for seed in args.seeds:
        for attention in SCORES:
            (_, exact, peak), = reverser_curve(toy, attention, seed, 1, args.toy_epochs)
            scores.append(dict(score=attention or "no attention", seed=seed, exact=exact, peak=peak))
            print(f"seed {seed}  {attention or 'no attention':12s}  exact match {exact:6.1%}", flush=True)
    curves = []
    for seed in args.curve_seeds:
        for attention in ["dot", "scaled_dot"]:
            curve = reverser_curve(toy, attention, seed, args.rounds, args.toy_epochs)
            curves.append(dict(score=attention, seed=seed, curve=curve))
            print(f"seed {seed}  {attention:10s}: " + ", ".join(f"{e} epochs {x:.1%}" for e, x, _ in curve),
                  flush=True)
    results = dict(
        recipe=cfg, min_freq=2, train_pairs=len(data.train), translation=translation,
        toy=dict(task="reverse: 10 symbols, 8-15 long, 2,500 training and 500 held-out sequences",
                 epochs=args.toy_epochs, scores=scores, curves=curves),
        hardware=f"{platform.processor() or platform.machine()}, torch {torch.__version__}, 1 thread",
        seconds=round(time.perf_counter() - t0, 1),
        command=" ".join(["python", "scripts/recipes/attention_seeds.py", *(argv if argv is not None else sys.argv[1:])]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print("wrote", args.out)
    return results


if __name__ == "__main__":
    main()
