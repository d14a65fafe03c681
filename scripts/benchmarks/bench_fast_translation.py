"""How good a translator can a learner train on one CPU thread in a few minutes? (issue 42)

    python scripts/benchmarks/bench_fast_translation.py --list                 # the arms and their levers
    python scripts/benchmarks/bench_fast_translation.py --arms course8 wide    # train and score these arms
    python scripts/benchmarks/bench_fast_translation.py --arms all --resume    # skip arms already in the file

Each arm trains the course's :class:`utils.transformer.Transformer` on Multi30k de->en with one torch thread
for a fixed number of optimiser steps (so a run is the same on every computer), then scores the whole
test set (1,000 sentences) with greedy decoding: tokenized corpus BLEU, as notebook 08 prints it. The CPU
seconds of training (``time.thread_time``: the time the one thread computed, which other processes on the
machine change far less than wall-clock time) and the wall-clock seconds are both recorded. One line of
JSON per arm goes to ``runs/fast_translation/results.jsonl``.

The levers the arms vary, one or two at a time from notebook 08's live recipe: the training data (the
short-pair subset or all 29,000 pairs), batches bucketed by length, the learning-rate schedule for a short
run, pre-LN, model width and depth, the steps.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from utils.schedule import transformer_adam, warmup_decay, warmup_scheduler  # noqa: E402
from utils.training import count_parameters, fit, set_cpu_threads, set_seed  # noqa: E402
from utils.translation import evaluate_bleu, make_loader, prepare_translation  # noqa: E402
from utils.rnn import Seq2Seq, seq2seq_loss  # noqa: E402
from utils.rnn import make_decode_fn as rnn_decode_fn  # noqa: E402
from utils.transformer import Transformer, TransformerConfig, make_decode_fn, translation_loss  # noqa: E402

OUT = ROOT / "runs" / "fast_translation" / "results.jsonl"

# notebook 08's live recipe before issue 42 (FULL = False): short pairs, the paper's schedule, 428 steps
COURSE8 = dict(max_train_len=10, min_freq=2, d_model=128, num_heads=4, d_ff=512, layers=2, dropout=0.1,
               batch=64, steps=428, schedule="noam", warmup=200, factor=0.45, lr=None,
               label_smoothing=0.1, pre_norm=False, bucket=True)


def arm(**changes) -> dict:
    return {**COURSE8, **changes}


# notebook 03's live recipe before issue 42: two epochs over the short pairs (214 steps of 64); its recipe now is
# the arm rnn03_len12_300 (pairs of at most 12 tokens, 300 steps)
RNN03 = dict(model="rnn", max_train_len=10, min_freq=2, emb=128, hidden=256, dropout=0.2, batch=64, steps=214,
             schedule="constant", lr=2e-3, attention="additive", bucket=True)


def rnn(**changes) -> dict:
    return {**RNN03, **changes}


ARMS = {
    "course8": arm(),
    "full_data": arm(max_train_len=None),
    "full_linear": arm(max_train_len=None, schedule="linear", lr=1e-3, warmup_fraction=0.1),
    "full_linear_2e3": arm(max_train_len=None, schedule="linear", lr=2e-3, warmup_fraction=0.1),
    "full_prenorm": arm(max_train_len=None, schedule="linear", lr=2e-3, warmup_fraction=0.1, pre_norm=True),
    "full_prenorm_noam": arm(max_train_len=None, pre_norm=True),
    "full_prenorm_noam_f07": arm(max_train_len=None, pre_norm=True, factor=0.7),
    "full_prenorm_linear_3e3": arm(max_train_len=None, schedule="linear", lr=3e-3, warmup_fraction=0.1,
                                   pre_norm=True),
    "full_noam_800": arm(max_train_len=None, steps=800),
    "full_prenorm_noam_800": arm(max_train_len=None, pre_norm=True, steps=800),
    # notebook 03's GRU encoder-decoder with additive attention (Adam at a constant rate, as in 03 today)
    "rnn03": rnn(),
    "rnn03_full": rnn(max_train_len=None),
    "rnn03_full_600": rnn(max_train_len=None, steps=600),
    "rnn03_full_600_decay": rnn(max_train_len=None, steps=600, schedule="linear", warmup_fraction=0.05, lr=3e-3),
    # a live recipe for notebook 03 that fits its 3 minutes with both arms: shorter pairs (a smaller softmax),
    # a rarer-word cut-off, a warm-up and decay for a short run
    "rnn03_len12_300": rnn(max_train_len=12, steps=300),
    "rnn03_len14_250": rnn(max_train_len=14, steps=250),
    "rnn03_full_mf3": rnn(max_train_len=None, min_freq=3),
    "rnn03_full_200_decay": rnn(max_train_len=None, steps=200, schedule="linear", warmup_fraction=0.05, lr=3e-3),
    "rnn03_len12_300_plain": rnn(max_train_len=12, steps=300, attention=None),
    "rnn03_len12_250": rnn(max_train_len=12, steps=250),
    "rnn03_len10_400": rnn(max_train_len=10, steps=400),
    # the candidate for notebook 08: all pairs, pre-LN, the paper's schedule a little higher, ~3 CPU minutes
    "fast": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=700),
    # notebook 08's live recipe from issue 42 on: the same, for one epoch over all pairs (454 batches of 64)
    "fast08": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454),
    "fast08_w150_f08": arm(max_train_len=None, pre_norm=True, factor=0.8, warmup=150, steps=454),
    # notebook 03's GRU with additive attention (03's Adam at 2e-3), all pairs, for the CPU seconds fast08 took
    # with the same seed: notebook 08's Appendix A.8 sets the two side by side
    # notebook 08 exactly: fast08 with the validation loss every 100 steps (which moves the dropout masks)
    "nb08": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454, eval_every=100),
    # and without dropout: one epoch cannot overfit, and no random masks at all
    "nb08_nodrop": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454, eval_every=100, dropout=0.0),
    # notebook 03's GRU with additive attention (Adam at 2e-3), all pairs, no dropout either, for the CPU
    # seconds nb08_nodrop took with the same seed: notebook 08's Appendix A.8 sets the two side by side
    "rnn_budget_nb08": rnn(max_train_len=None, steps=None, dropout=0.0, cpu_budget_of="nb08_nodrop"),
    "rnn_budget08": rnn(max_train_len=None, steps=None, cpu_budget_of="fast08"),
    # issue 54's levers, from nb08_nodrop, each measured end to end: batches sorted by both sides of a pair (fewer
    # pad positions), words seen at least 3 times (a smaller softmax), Adam's fused CPU kernel, an exponential
    # moving average of the weights for the evaluation, and the steps that fill about 180 CPU seconds
    "nb08_800": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=800, dropout=0.0),
    "nb08_pairs": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454, dropout=0.0, bucket="pairs"),
    "nb08_mf3": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454, dropout=0.0, min_freq=3),
    "nb08_fused": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454, dropout=0.0, fused=True),
    "nb08_ema": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454, dropout=0.0, ema=0.99),
    "nb08_bpe3000": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454, dropout=0.0, subwords=3000),
    "nb08_bpe2000": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=454, dropout=0.0, subwords=2000),
    # the candidate: 3,000 BPE merges a side, batches by both lengths, scored along the way (a BLEU/CPU-s curve)
    "bpe_pairs_1000": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=1000, dropout=0.0, subwords=3000,
                          bucket="pairs", curve=[200, 400, 600, 800]),
    # the same recipe for exactly issue 54's budget: 180 CPU seconds of training on one thread, however many steps
    "bpe_pairs_180s": arm(max_train_len=None, pre_norm=True, factor=0.7, steps=None, dropout=0.0, subwords=3000,
                          bucket="pairs", cpu_budget_s=180.0),
    # the PyTorch tutorial's Multi30k recipe ("Language Translation with nn.Transformer and torchtext"): its
    # published hyper-parameters, all pairs, words seen once kept, Adam 1e-4 without a schedule, batch 128;
    # trained for the CPU seconds the arm named in cpu_budget_of took (a step count would favour neither)
    "pytorch_tutorial": arm(max_train_len=None, min_freq=1, d_model=512, num_heads=8, d_ff=512, layers=3,
                            batch=128, schedule="constant", lr=1e-4, label_smoothing=0.0, steps=None,
                            cpu_budget_of="full_prenorm_noam_800"),
}


def recorded(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def within(loader, seconds: float):
    """The loader's batches, epoch after epoch, until the thread has computed for ``seconds``."""
    start = time.thread_time()
    while True:
        for batch in loader:
            if time.thread_time() - start >= seconds:
                return
            yield batch


def run_arm(name: str, c: dict, seed: int = 0, budget: float | None = None) -> dict:
    """Train arm ``name`` with config ``c`` on one thread and score the whole test set."""
    set_cpu_threads(1)
    data = prepare_translation("de", "en", min_freq=c["min_freq"], max_train_len=c["max_train_len"],
                               subwords=c.get("subwords"))
    set_seed(seed)
    if c.get("model") == "rnn":
        return train_and_score(name, c, seed, data, *rnn_model(c, data), budget, curve=c.get("curve"))
    cfg = TransformerConfig(src_vocab=len(data.src_vocab), tgt_vocab=len(data.tgt_vocab), d_model=c["d_model"],
                            num_heads=c["num_heads"], d_ff=c["d_ff"], num_encoder_layers=c["layers"],
                            num_decoder_layers=c["layers"], dropout=c["dropout"], tie_output=True,
                            pre_norm=c["pre_norm"])
    model, loss_fn = Transformer(cfg), partial(translation_loss, label_smoothing=c["label_smoothing"])
    if c["schedule"] == "noam" and c.get("fused"):   # the same rule, Adam's fused CPU kernel
        opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, fused=True)
        sched = warmup_scheduler(opt, c["d_model"], c["warmup"], c["factor"], ramp=c.get("ramp", True))
    elif c["schedule"] == "noam":     # the paper's rule: d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
        # ramp=False: the same rule without the warm-up (the peak rate from step 1, then the same decay)
        opt, sched = transformer_adam(model.parameters(), c["d_model"], c["warmup"], c["factor"],
                                      ramp=c.get("ramp", True))
    elif c["schedule"] == "constant":
        opt = torch.optim.Adam(model.parameters(), lr=c["lr"], betas=(0.9, 0.98), eps=1e-9)
        sched = None
    else:                           # a peak rate, a short linear warm-up, a linear decay to the last step
        opt = torch.optim.Adam(model.parameters(), lr=c["lr"], betas=(0.9, 0.98), eps=1e-9)
        rule = warmup_decay(c["steps"], warmup=True, warmup_fraction=c["warmup_fraction"])
        sched = torch.optim.lr_scheduler.LambdaLR(opt, rule)
    if c.get("ema"):
        ema = torch.optim.swa_utils.AveragedModel(
            model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(c["ema"]), use_buffers=True)
        sched = EMAStep(sched, ema, model)
        return train_and_score(name, c, seed, data, model, loss_fn, opt, sched, make_decode_fn(ema.module), budget,
                               before_eval=lambda: ema.module.eval(), curve=c.get("curve"))
    return train_and_score(name, c, seed, data, model, loss_fn, opt, sched, make_decode_fn(model), budget,
                           curve=c.get("curve"))


class EMAStep(torch.optim.lr_scheduler.LRScheduler):
    """The schedule's step, then the weights' moving average updated (``fit`` calls ``scheduler.step()`` after every
    optimiser step)."""

    def __init__(self, sched, ema, model):
        self.sched, self.ema, self.model = sched, ema, model
        self.optimizer = sched.optimizer

    def step(self, *args):
        self.sched.step()
        self.ema.update_parameters(self.model)

    def get_last_lr(self):
        return self.sched.get_last_lr()


def rnn_model(c: dict, data) -> tuple:
    model = Seq2Seq(len(data.src_vocab), len(data.tgt_vocab), emb_dim=c["emb"], enc_hidden=c["hidden"] // 2,
                    dec_hidden=c["hidden"], bidirectional=True, attention=c["attention"], dropout=c["dropout"])
    opt = torch.optim.Adam(model.parameters(), lr=c["lr"])
    sched = None
    if c["schedule"] == "linear":
        rule = warmup_decay(c["steps"], warmup=True, warmup_fraction=c["warmup_fraction"])
        sched = torch.optim.lr_scheduler.LambdaLR(opt, rule)
    return model, seq2seq_loss, opt, sched, rnn_decode_fn(model)


def train_and_score(name, c, seed, data, model, loss_fn, opt, sched, decode_fn, budget, before_eval=None,
                    curve: list[int] | None = None) -> dict:
    loader = make_loader(data.train, c["batch"], shuffle=True, seed=seed, bucket=c["bucket"])
    if curve:
        return score_along(name, c, seed, data, model, loss_fn, opt, sched, decode_fn, loader, curve, before_eval)
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    if budget is None:
        epochs = -(-c["steps"] // len(loader))
        # eval_every: the validation loss every so many steps, as notebook 08 measures it (each pass over a
        # DataLoader draws a number from torch's global generator, so it moves the dropout masks after it)
        val = dict(val_loader=make_loader(data.val, 256, shuffle=False), eval_every=c["eval_every"]) \
            if c.get("eval_every") else {}
        hist = fit(model, loss_fn, loader, opt, epochs=epochs, max_steps=c["steps"], scheduler=sched, progress=False,
                   **val)
    else:
        hist = fit(model, loss_fn, within(loader, budget), opt, scheduler=sched, progress=False)
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    if before_eval is not None:
        before_eval()
    t0 = time.perf_counter()
    result = evaluate_bleu(decode_fn, data, "test")
    return dict(arm=name, seed=seed, config=c, parameters=count_parameters(model), train_pairs=len(data.train),
                vocab=[len(data.src_vocab), len(data.tgt_vocab)], steps=hist.steps, train_cpu_s=round(cpu, 1),
                train_wall_s=round(wall, 1), final_loss=round(sum(hist.train_loss[-20:]) / 20, 3),
                val_loss=round(hist.val_loss[-1], 4) if hist.val_loss else None,
                test_bleu=round(result.tokenized.score, 2), sacrebleu=round(result.sacrebleu.score, 2),
                eval_wall_s=round(time.perf_counter() - t0, 1), torch=torch.__version__)


def score_along(name, c, seed, data, model, loss_fn, opt, sched, decode_fn, loader, curve, before_eval) -> dict:
    """One run of ``c["steps"]`` steps, the test set scored after each step count in ``curve`` (and the last): the
    BLEU-against-CPU-seconds curve of one recipe. The batches are the ones a single run sees, in the same order
    (the loader's epochs one after another); the scoring's time is not counted as training."""
    def epochs_of(loader):
        while True:
            yield from loader

    batches, hist, cpu, wall, points = epochs_of(loader), None, 0.0, 0.0, []
    for k in sorted({*curve, c["steps"]}):
        t0, w0 = time.thread_time(), time.perf_counter()
        hist = fit(model, loss_fn, batches, opt, max_steps=k, scheduler=sched, progress=False, history=hist)
        cpu, wall = cpu + time.thread_time() - t0, wall + time.perf_counter() - w0
        if before_eval is not None:
            before_eval()
        result = evaluate_bleu(decode_fn, data, "test")
        points.append(dict(steps=hist.steps, train_cpu_s=round(cpu, 1), test_bleu=round(result.tokenized.score, 2),
                           sacrebleu=round(result.sacrebleu.score, 2)))
        print(f"  {name} {hist.steps:5d} steps {cpu:6.1f} CPU s  BLEU {points[-1]['test_bleu']:5.2f}", flush=True)
    last = points[-1]
    return dict(arm=name, seed=seed, config=c, parameters=count_parameters(model), train_pairs=len(data.train),
                vocab=[len(data.src_vocab), len(data.tgt_vocab)], steps=hist.steps, train_cpu_s=last["train_cpu_s"],
                train_wall_s=round(wall, 1), final_loss=round(sum(hist.train_loss[-20:]) / 20, 3),
                test_bleu=last["test_bleu"], sacrebleu=last["sacrebleu"], curve=points, torch=torch.__version__)


def levers(c: dict) -> str:
    """What an arm changes from its notebook's recipe before issue 42 (08's Transformer, 03's GRU), in a few
    words (the steps have their own column)."""
    base, today = (RNN03, "notebook 03 before (GRU + additive attention, pairs ≤ 10 tokens)") \
        if c.get("model") == "rnn" else (COURSE8, "notebook 08 before (pairs ≤ 10 tokens, post-LN)")
    said = {"max_train_len": lambda v: "all pairs" if v is None else f"pairs ≤ {v} tokens",
            "pre_norm": lambda v: "pre-LN" if v else "post-LN", "steps": lambda v: f"{v} steps",
            "factor": lambda v: f"factor {v}", "min_freq": lambda v: f"min_freq {v}",
            "schedule": lambda v: {"linear": "linear warm-up and decay", "constant": "constant rate"}.get(v, v),
            "lr": lambda v: f"peak {v:g}" if v else "", "d_model": lambda v: f"d_model {v}",
            "layers": lambda v: f"{v}+{v} layers", "batch": lambda v: f"batch {v}",
            "label_smoothing": lambda v: f"smoothing {v}",
            "attention": lambda v: "no attention" if v is None else f"{v} attention",
            "dropout": lambda v: "no dropout" if v == 0 else f"dropout {v}",
            "warmup": lambda v: f"warm-up {v}", "ramp": lambda v: "" if v else "no warm-up (the peak rate from step 1)",
            "eval_every": lambda v: f"validation loss every {v} steps",
            "cpu_budget_of": lambda v: f"for the CPU seconds of {v}",
            "bucket": lambda v: {"pairs": "batches by both lengths", False: "no length buckets"}.get(v, ""),
            "fused": lambda v: "fused Adam" if v else "",
            "ema": lambda v: f"weights averaged (EMA {v})" if v else "",
            "curve": lambda v: "",
            "cpu_budget_s": lambda v: f"for {v:.0f} CPU s",
            "subwords": lambda v: f"{v:,} BPE merges a side" if v else ""}
    words = [said[k](v) for k, v in c.items() if k in said and base.get(k) != v and k != "steps"]
    return ", ".join(w for w in words if w) or today


def markdown(rows: list[dict], shipped: dict | None = None) -> str:
    """One table row per arm (the mean over its seeds, the range when there are several)."""
    lines = ["| arm | what it changes | parameters | steps | training CPU s (1 thread) | test BLEU (tok.) "
             "| sacreBLEU | seeds |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name in dict.fromkeys(r["arm"] for r in rows):
        mine = [r for r in rows if r["arm"] == name]
        bleu = [r["test_bleu"] for r in mine]
        spread = f" ({min(bleu):.2f}–{max(bleu):.2f})" if len(bleu) > 1 else ""
        mean = lambda key: sum(r[key] for r in mine) / len(mine)  # noqa: E731
        lines.append(f"| {name} | {levers(mine[0]['config'])} | {mine[0]['parameters']:,} | {mean('steps'):.0f} "
                     f"| {mean('train_cpu_s'):.0f} | {mean('test_bleu'):.2f}{spread} | {mean('sacrebleu'):.2f} "
                     f"| {len(mine)} |")
    if shipped:
        greedy = shipped["test"]["greedy"]
        lines.append(f"| shipped (`pretrained/`) | the full recipe: d_model 256, 3+3 layers, 15 epochs "
                     f"| {shipped['parameters']:,} | {shipped['steps']} | {shipped['train_seconds']:.0f} "
                     f"(wall, {shipped['hardware'].split(', ', 1)[1]}) | {greedy['tokenized_bleu']:.2f} "
                     f"| {greedy['sacrebleu']:.2f} | 1 |")
    return "\n".join(lines)


# bentrevett/pytorch-seq2seq's GPU-trained models on the same test set, greedy decoding, tokenized BLEU (the same
# figures as courseware/measure/results_table.py's REFERENCE; a test keeps the two equal)
BENTREVETT = {"GRU with attention": 28.3, "Transformer": 36.5}
TARGET = (180.0, 30.0)   # issue 54: 30 test BLEU in 180 CPU seconds of training on one thread
PLOT = OUT.parent / "bleu_cpu.png"


def plot(rows: list[dict], path: Path = PLOT) -> Path:
    """Test BLEU against training CPU seconds: one dot per Transformer run, a line through each run scored along the
    way, bentrevett's GPU-trained figures as dashed lines and issue 54's target as a cross."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    runs = [r for r in rows if r["config"].get("model") != "rnn" and r["arm"] != "pytorch_tutorial"]
    ax.scatter([r["train_cpu_s"] for r in runs], [r["test_bleu"] for r in runs], s=14, color="0.55",
               label="a Transformer arm (one seed)", zorder=2)
    for r in rows:
        if r.get("curve"):
            xs = [0.0] + [p["train_cpu_s"] for p in r["curve"]]
            ys = [0.0] + [p["test_bleu"] for p in r["curve"]]
            ax.plot(xs, ys, marker="o", ms=3, label=f"{r['arm']}, seed {r['seed']}, scored along the way", zorder=3)
    for (name, score), style in zip(BENTREVETT.items(), ("--", ":")):
        ax.axhline(score, color="k", ls=style, lw=1, label=f"bentrevett's {name} (GPU-trained): {score}")
    ax.plot(*TARGET, marker="x", ms=10, mew=2, color="C3", ls="none", label="issue 54's target: 30 BLEU in 180 CPU s")
    ax.set(xlabel="training, thread CPU seconds (one thread)", ylabel="test BLEU (tokenized, greedy)",
           xlim=(0, max([260] + [r["train_cpu_s"] + 10 for r in runs])), ylim=(0, 40))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", nargs="+", default=["course8"], help="arm names, or all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--resume", action="store_true", help="skip arms already recorded for this seed")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="print RESULTS.md's table from the recorded runs")
    ap.add_argument("--plot", action="store_true", help=f"draw {PLOT.relative_to(ROOT)} from the recorded runs")
    args = ap.parse_args()
    if args.plot:
        print(f"wrote {plot(recorded(args.out)).relative_to(ROOT)}")
        return
    if args.list:
        for name, c in ARMS.items():
            print(name, {k: v for k, v in c.items() if COURSE8.get(k) != v})
        return
    if args.markdown:
        from utils.translation import load_run_results
        print(markdown(recorded(args.out), load_run_results("transformer")))
        return
    names = list(ARMS) if args.arms == ["all"] else args.arms
    done = {(r["arm"], r["seed"]) for r in recorded(args.out)} if args.resume else set()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (name, args.seed) in done:
            continue
        c, budget = ARMS[name], ARMS[name].get("cpu_budget_s")
        if c.get("cpu_budget_of"):
            same = [r for r in recorded(args.out) if r["arm"] == c["cpu_budget_of"] and r["seed"] == args.seed]
            if not same:
                sys.exit(f"{name} trains for the CPU seconds of {c['cpu_budget_of']}: run that arm first")
            budget = same[-1]["train_cpu_s"]
        r = run_arm(name, c, args.seed, budget)
        with args.out.open("a") as f:
            f.write(json.dumps(r) + "\n")
        print(f"{name:22s} {r['steps']:5d} steps  {r['train_cpu_s']:6.1f} CPU s  {r['train_wall_s']:6.1f} wall s  "
              f"BLEU {r['test_bleu']:5.2f}  loss {r['final_loss']:.3f}  ({r['train_pairs']} pairs, vocab {r['vocab']})",
              flush=True)


if __name__ == "__main__":
    main()
