"""Turn a trained recipe into a shipped course model (``pretrained/``), and score it.

    python scripts/recipes/train_translation.py --model transformer --out runs_full/transformer   # a GPU: ~2 min
    python scripts/recipes/export_pretrained.py --name transformer --checkpoint runs_full/transformer/best.pt \\
        --results runs_full/transformer/results.json
    python scripts/recipes/export_pretrained.py --name attention --weights int8 \\
        --checkpoint runs_full/attention/best.pt --results runs_full/attention/results.json

Reads the best checkpoint written by ``scripts/recipes/train_translation.py`` (or the same
state with float16 weights), writes ``pretrained/<name>.safetensors`` (float16, or
``--weights int8``: int8 matrices with per-row scales, half the size) and
``pretrained/<name>.json`` (config, vocabularies, recipe, training provenance from
``results.json``), then loads them back exactly as a learner does
(:func:`utils.pretrained.load_pretrained`, float32 on the CPU) and scores
test_2016_flickr with greedy decoding and beam search, plus a fixed slice (the first
``--slice`` test sentences, greedy) that ``tests/utils/test_pretrained.py`` re-scores. The
scores, sizes and SHA-256 checksums go into ``pretrained/MANIFEST.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from utils.pretrained import MANIFEST, WEIGHTS, build_model, load_pretrained, pretrained_dir, save_pretrained  # noqa: E402
from utils.text import Vocab  # noqa: E402
from utils.translation import TranslationData, evaluate_bleu, prepare_translation  # noqa: E402

SLICE = 200


def score(pt, data: TranslationData, n_slice: int) -> dict:
    out = {}
    for method in ("greedy", "beam"):
        t0 = time.perf_counter()
        r = evaluate_bleu(pt.decode_fn(method), data, "test")
        key = "greedy" if method == "greedy" else f"beam{pt.info['recipe']['beam']}"
        out[key] = dict(tokenized_bleu=round(r.tokenized.score, 2), sacrebleu=round(r.sacrebleu.score, 2),
                        seconds=round(time.perf_counter() - t0, 1))
        print(f"{pt.name} {key}: {r} ({out[key]['seconds']} s)", flush=True)
    r = evaluate_bleu(pt.decode_fn("greedy"), data.head(n_slice), "test")
    out["slice"] = dict(split="test_2016_flickr", first=n_slice, method="greedy",
                        tokenized_bleu=round(r.tokenized.score, 2), sacrebleu=round(r.sacrebleu.score, 2))
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True, help="the model's name in pretrained/ (e.g. transformer, attention)")
    p.add_argument("--checkpoint", required=True, help="best.pt of a scripts/recipes/train_translation.py run")
    p.add_argument("--results", required=True, help="results.json of the same run (provenance)")
    p.add_argument("--slice", type=int, default=SLICE, help="test sentences in the quick re-score")
    p.add_argument("--weights", choices=WEIGHTS, default="float16",
                   help="storage: float16, or int8 with per-row scales (half the size; the GRU models)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)

    state = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    results = json.loads(Path(args.results).read_text())
    extra = state["extra"]
    kind = "transformer" if results["model"] == "transformer" else "rnn"
    model = build_model(kind, extra["config"])
    missing, unexpected = model.load_state_dict(state["model"], strict=False)
    assert not unexpected and set(missing) == set(state.get("tied", {})), (missing, unexpected)
    src_vocab, tgt_vocab = Vocab(extra["src_vocab"]), Vocab(extra["tgt_vocab"])

    training = {k: results[k] for k in ("hardware", "train_seconds", "epochs_run", "steps", "best_val_loss", "torch")}
    training["epoch"] = extra.get("epoch")
    training["test_as_trained"] = results["test"]
    folder = pretrained_dir()
    files = save_pretrained(folder, args.name, kind, model, extra["config"], src_vocab, tgt_vocab, weights=args.weights,
                            recipe=results["recipe"], data=results["data"], training=training,
                            made_by="scripts/recipes/train_translation.py, then scripts/recipes/export_pretrained.py")
    manifest_path = folder / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest[args.name] = dict(files=files, bleu={})
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")

    pt = load_pretrained(args.name)  # as a learner loads it: checksums, stored weights -> float32, CPU
    data = prepare_translation("de", "en", min_freq=results["data"]["min_freq"], vocabs=(pt.src_vocab, pt.tgt_vocab))
    manifest[args.name]["bleu"] = score(pt, data, args.slice)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(json.dumps(manifest[args.name], indent=1))
    return manifest[args.name]


if __name__ == "__main__":
    main()
