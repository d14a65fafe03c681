"""Collect the full-data runs into the README's results table and one length-curve figure.

    python -m courseware results-table                 # reads runs/<model>/results.json
    python -m courseware results-table --runs other/   # another folder of runs

Prints a Markdown table (one row per model that has a ``results.json``: parameters, epochs,
tokenized lower-cased BLEU-4 and sacreBLEU with greedy decoding and beam search, training time,
hardware) and writes ``<runs>/bleu_by_length.png``: test BLEU against source length for every
model on one plot, the shape of Bahdanau et al. (2015), Figure 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from utils.translation import load_run_results  # noqa: E402

MODELS = {  # run folder -> label, in course order
    "seq2seq": "GRU encoder–decoder (notebook 02)",
    "attention": "GRU + additive attention (notebook 03)",
    "transformer": "Transformer (notebook 08)",
}
REFERENCE = {"seq2seq": 13.8, "attention": 28.3, "transformer": 36.5}  # bentrevett/pytorch-seq2seq


def load_results(runs: Path) -> dict[str, dict]:
    """The ``results.json`` of each model in ``runs`` that has one, in course order."""
    found = {}
    for name in MODELS:
        if (runs / name / "results.json").exists():
            found[name] = load_run_results(name, runs)
    if not found:
        raise FileNotFoundError(f"no {runs}/<model>/results.json for any of {sorted(MODELS)}; "
                                "run scripts/recipes/train_translation.py first")
    return found


def _duration(seconds: float) -> str:
    h, m = divmod(round(seconds / 60), 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


def markdown_table(results: dict[str, dict]) -> str:
    header = ("| model | parameters | epochs | BLEU greedy (tok. / sacre) | BLEU beam (tok. / sacre) "
              "| bentrevett | training time | hardware |")
    lines = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for name, r in results.items():
        greedy = r["test"]["greedy"]
        beams = [k for k in r["test"] if k.startswith("beam")]
        beam = (f"{r['test'][beams[0]]['tokenized_bleu']:.2f} / {r['test'][beams[0]]['sacrebleu']:.2f} "
                f"(k = {beams[0][4:]})" if beams else "—")
        lines.append(f"| {MODELS[name]} | {r['parameters'] / 1e6:.1f}M | {r['epochs_run']} "
                     f"| {greedy['tokenized_bleu']:.2f} / {greedy['sacrebleu']:.2f} | {beam} "
                     f"| {REFERENCE[name]} | {_duration(r['train_seconds'])} | {r['hardware']} |")
    return "\n".join(lines)


def plot_by_length(results: dict[str, dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for name, r in results.items():
        rows = r["bleu_by_length"]
        ax.plot([b["mean_len"] for b in rows], [b["bleu"] for b in rows], "o-", label=MODELS[name])
    ax.set_xlabel("source sentence length (tokens, bucket mean)")
    ax.set_ylabel("test BLEU, greedy (tokenized)")
    ax.set_title("Multi30k de→en, test_2016_flickr")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", default="runs", help="folder holding <model>/results.json")
    args = p.parse_args(argv)
    runs = Path(args.runs)
    results = load_results(runs)
    table = markdown_table(results)
    print(table)
    plot_by_length(results, runs / "bleu_by_length.png")
    print(f"\nwrote {runs / 'bleu_by_length.png'}")
    return table


if __name__ == "__main__":
    main()
