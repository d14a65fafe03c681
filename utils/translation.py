"""Multi30k translation, independent of the model: data, batches, decoding, BLEU.

Every translation model in the course (the RNNs of notebooks 02-03, the
Transformer of notebook 08, the recipe scripts) plugs in the same way: it supplies
a *decode function* ``decode_fn(batch: PairBatch) -> list[list[int]]`` that turns a
batch of source sentences into target token ids (``<bos>``/``<eos>``/``<pad>`` may
be included; they are stripped). Everything else lives here:

- :func:`prepare_translation` tokenizes, builds vocabularies on the training split
  only, encodes ``<bos> ... <eos>`` and keeps the raw sentences for sacreBLEU;
- :func:`make_loader` batches sentences of similar length together (less padding);
- :func:`translate`, :func:`evaluate_bleu` and :func:`bleu_by_length` score a model.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import torch
from torch import nn
from torch.utils.data import DataLoader, Sampler

from . import checks
from .data import load_multi30k_pairs
from .metrics import BLEUScore, bleu, tokenized_bleu
from .text import END_OF_WORD, PairBatch, PairDataset, Vocab, bpe_segment, collate_pairs, detokenize, learn_bpe, tokenize

__all__ = [
    "TranslationData", "prepare_translation", "LengthBucketSampler", "make_loader",
    "DecodeFn", "translate", "postprocess", "BLEUResult", "evaluate_bleu", "bleu_by_length",
    "DEFAULT_LENGTH_EDGES", "RUNS_DIR", "load_run_results", "load_fast_runs", "join_pieces",
]

SPLITS = ("train", "val", "test")
_DATA_SPLIT = {"train": "train", "val": "val", "test": "test_2016_flickr"}

DecodeFn = Callable[[PairBatch], Sequence[Sequence[int]]]


@dataclass
class TranslationData:
    """Everything a translation experiment needs, for one language direction.

    ``pairs[split]`` holds the raw (source, target) strings, ``tokens[split]`` their
    tokenizations and ``datasets[split]`` the id sequences, all in the same order.
    """

    src_lang: str
    tgt_lang: str
    src_vocab: Vocab
    tgt_vocab: Vocab
    datasets: dict[str, PairDataset]
    pairs: dict[str, list[tuple[str, str]]]
    tokens: dict[str, list[tuple[list[str], list[str]]]]
    config: dict = field(default_factory=dict)
    merges: tuple[list[tuple[str, str]], list[tuple[str, str]]] | None = None   # (source, target) BPE merges

    @property
    def train(self) -> PairDataset:
        return self.datasets["train"]

    @property
    def val(self) -> PairDataset:
        return self.datasets["val"]

    @property
    def test(self) -> PairDataset:
        return self.datasets["test"]

    def head(self, n: int, split: str = "test") -> "TranslationData":
        """The first ``n`` sentences of ``split`` as a data set of their own (same vocabularies):
        a quick score, e.g. ``evaluate_bleu(decode_fn, data.head(200), "test")``."""
        if split not in self.datasets:
            raise KeyError(f"no split {split!r}; this data has {sorted(self.datasets)}")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        ds = self.datasets[split]
        return TranslationData(self.src_lang, self.tgt_lang, self.src_vocab, self.tgt_vocab,
                               {split: PairDataset(ds.src[:n], ds.tgt[:n])}, {split: self.pairs[split][:n]},
                               {split: self.tokens[split][:n]}, {**self.config, "head": n})

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s}={len(d):,}" for s, d in self.datasets.items())
        return (f"TranslationData({self.src_lang}->{self.tgt_lang}: {sizes}; "
                f"vocab {self.src_lang}={len(self.src_vocab):,}, {self.tgt_lang}={len(self.tgt_vocab):,})")


def prepare_translation(
    src: str = "de",
    tgt: str = "en",
    min_freq: int = 2,
    max_train_len: int | None = None,
    train_subset: int | None = None,
    max_eval_len: int | None = None,
    seed: int = 0,
    vocabs: tuple[Vocab, Vocab] | None = None,
    subwords: int | None = None,
) -> TranslationData:
    """Load Multi30k in one direction and turn it into id sequences.

    - ``max_train_len``: keep only training pairs whose source *and* target have at
      most this many tokens (a fast, easy subset for in-notebook training).
    - ``train_subset``: then keep this many training pairs, drawn at random with ``seed``.
    - ``max_eval_len``: the same length filter for val/test (``None``, the default,
      keeps the full held-out sets so scores are comparable with published ones).

    Vocabularies are built on the (filtered) training split only; words seen fewer
    than ``min_freq`` times there become ``<unk>``. ``vocabs=(src_vocab, tgt_vocab)``
    uses given ones instead (a pretrained model's, :mod:`utils.pretrained`). Both sides are encoded as
    ``<bos> w1 ... wn <eos>``.

    ``subwords=n``: learn ``n`` byte-pair merges on each side's training words (notebook 01's
    :func:`~utils.text.learn_bpe`) and encode every word as its pieces (``<bos> p1 ... pm <eos>``, a
    word's last piece ending in ``</w>``); the vocabularies hold pieces, so rare words are spelled
    rather than ``<unk>``. ``tokens`` and ``pairs`` stay words; :func:`translate` joins the pieces a
    model writes back into words, so BLEU is scored on words either way.
    """
    for name, value in (("max_train_len", max_train_len), ("train_subset", train_subset), ("max_eval_len", max_eval_len)):
        if value is not None and checks.integer(value, name) < 1:
            raise ValueError(f"{name} must be a positive int or None, got {value}")
    checks.integer(min_freq, "min_freq", minimum=1)
    if subwords is not None:
        checks.integer(subwords, "subwords", minimum=1, what="byte-pair merges learned on each side")
        if vocabs is not None:
            raise ValueError("subwords and vocabs cannot be combined: given vocabularies come with their own units")
    if vocabs is not None and not (isinstance(vocabs, (tuple, list)) and len(vocabs) == 2
                                   and all(isinstance(v, Vocab) for v in vocabs)):
        raise TypeError(f"vocabs must be a pair (src_vocab, tgt_vocab) of Vocab, e.g. (shipped.src_vocab, "
                        f"shipped.tgt_vocab), got {type(vocabs).__name__}")
    pairs, tokens = {}, {}
    for split in SPLITS:
        raw = load_multi30k_pairs(_DATA_SPLIT[split], src, tgt)
        toks = [(tokenize(s), tokenize(t)) for s, t in raw]
        limit = max_train_len if split == "train" else max_eval_len
        keep = [i for i, (s, t) in enumerate(toks) if s and t and (limit is None or (len(s) <= limit and len(t) <= limit))]
        if split == "train" and train_subset is not None and train_subset < len(keep):
            keep = sorted(random.Random(seed).sample(keep, train_subset))
        pairs[split] = [raw[i] for i in keep]
        tokens[split] = [toks[i] for i in keep]
        if split == "train" and not keep:
            raise ValueError(f"max_train_len={max_train_len} keeps no training pair (every sentence has more tokens); "
                             f"use a larger value (most sentences have 8 to 20 tokens) or None")
    units, merges = tokens, None
    if subwords is not None:
        merges = tuple(learn_bpe(Counter(w for pair in tokens["train"] for w in pair[side]), subwords)
                       for side in (0, 1))
        pieces = [_pieces_of(m) for m in merges]
        units = {split: [(pieces[0](s), pieces[1](t)) for s, t in tokens[split]] for split in SPLITS}
    if vocabs is not None:
        src_vocab, tgt_vocab = vocabs
        _vocab_sides(tokens["train"], src_vocab, tgt_vocab)
    else:
        src_vocab = Vocab.build((s for s, _ in units["train"]), min_freq=min_freq)
        tgt_vocab = Vocab.build((t for _, t in units["train"]), min_freq=min_freq)
    datasets = {
        split: PairDataset(
            [src_vocab.encode(s, add_bos=True, add_eos=True) for s, _ in units[split]],
            [tgt_vocab.encode(t, add_bos=True, add_eos=True) for _, t in units[split]],
        )
        for split in SPLITS
    }
    config = dict(src=src, tgt=tgt, min_freq=min_freq, max_train_len=max_train_len,
                  train_subset=train_subset, max_eval_len=max_eval_len, seed=seed, subwords=subwords)
    return TranslationData(src, tgt, src_vocab, tgt_vocab, datasets, pairs, tokens, config, merges)


def _pieces_of(merges: list[tuple[str, str]]) -> Callable[[list[str]], list[str]]:
    """A sentence's words -> their BPE pieces, each word segmented once and remembered."""
    ranks = {pair: r for r, pair in enumerate(merges)}
    seen: dict[str, list[str]] = {}

    def pieces(words: list[str]) -> list[str]:
        out = []
        for w in words:
            if w not in seen:
                seen[w] = bpe_segment(w, merges, ranks)
            out += seen[w]
        return out
    return pieces


def join_pieces(pieces: Sequence[str]) -> list[str]:
    """BPE pieces -> words: a word ends at a piece ending in ``</w>``; ``<unk>`` and other whole tokens stand
    alone, and pieces left open at the end (a model stopped mid-word) make a last word.

    >>> join_pieces(["a</w>", "do", "g</w>", "run", "s"])
    ['a', 'dog', 'runs']
    """
    words, open_word = [], ""
    for p in pieces:
        if p.endswith(END_OF_WORD):
            words.append(open_word + p[: -len(END_OF_WORD)])
            open_word = ""
        elif p.startswith("<") and p.endswith(">"):   # <unk>: a whole token of its own
            if open_word:
                words.append(open_word)
            words.append(p)
            open_word = ""
        else:
            open_word += p
    if open_word:
        words.append(open_word)
    return words


def _vocab_sides(pairs: Sequence[tuple[list[str], list[str]]], src_vocab: Vocab, tgt_vocab: Vocab) -> None:
    """A ValueError naming ``vocabs`` when the given (src_vocab, tgt_vocab) read the source words worse than the
    target vocabulary does and the target words worse than the source one: the two are swapped."""
    def unknown(vocab: Vocab, side: int) -> float:
        words = [w for p in pairs[:2000] for w in p[side]]
        return sum(w not in vocab for w in words) / max(1, len(words))

    src_here, src_there = unknown(src_vocab, 0), unknown(tgt_vocab, 0)
    tgt_here, tgt_there = unknown(tgt_vocab, 1), unknown(src_vocab, 1)
    if src_here > 0.5 and tgt_here > 0.5 and src_there < src_here / 2 and tgt_there < tgt_here / 2:
        raise ValueError(f"vocabs=(src_vocab, tgt_vocab) looks swapped: {src_here:.0%} of the source words are unknown "
                         f"to vocabs[0] but {src_there:.0%} to vocabs[1], and {tgt_here:.0%} of the target words to "
                         f"vocabs[1] but {tgt_there:.0%} to vocabs[0]; pass (src_vocab, tgt_vocab) in that order")


class LengthBucketSampler(Sampler[list[int]]):
    """Batches of sentences of similar source length, in a seeded random order.

    Indices are shuffled, cut into pools of ``pool_factor * batch_size``, each pool
    is sorted by length and cut into batches, and the batches are shuffled. A new
    order is drawn every epoch (epoch ``k`` uses seed ``seed + k``).
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, shuffle: bool = True, seed: int = 0, pool_factor: int = 50):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.lengths, self.batch_size, self.shuffle, self.seed, self.pool_factor = list(lengths), batch_size, shuffle, seed, pool_factor
        self.epoch = 0

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        idx = list(range(len(self.lengths)))
        rng = random.Random(self.seed + self.epoch)
        self.epoch += 1
        if not self.shuffle:  # deterministic: sort everything by length
            idx.sort(key=lambda i: self.lengths[i])
            yield from (idx[k:k + self.batch_size] for k in range(0, len(idx), self.batch_size))
            return
        rng.shuffle(idx)
        pool = self.pool_factor * self.batch_size
        batches = []
        for k in range(0, len(idx), pool):
            chunk = sorted(idx[k:k + pool], key=lambda i: self.lengths[i])
            batches += [chunk[j:j + self.batch_size] for j in range(0, len(chunk), self.batch_size)]
        rng.shuffle(batches)
        yield from batches


def make_loader(dataset: PairDataset, batch_size: int = 64, shuffle: bool = True, seed: int = 0,
                bucket: bool | str = True) -> DataLoader:
    """A ``DataLoader`` of :class:`~utils.text.PairBatch` es.

    ``bucket=True`` groups sentences of similar source length (see :class:`LengthBucketSampler`);
    ``bucket="pairs"`` sorts by source length and, among equal ones, by target length, so the
    targets of a batch pad less too; ``bucket=False`` keeps the dataset order (or a seeded shuffle of it).
    """
    if not isinstance(dataset, PairDataset):
        raise TypeError(f"make_loader expects a utils.text.PairDataset, got {type(dataset).__name__}")
    if len(dataset) == 0:
        raise ValueError("make_loader got an empty dataset")
    if bucket not in (True, False, "pairs"):
        raise ValueError(f"bucket must be True (by source length), 'pairs' (by both lengths) or False, got {bucket!r}")
    if bucket == "pairs":
        lengths = [(len(s), len(t)) for s, t in zip(dataset.src, dataset.tgt)]
        sampler = LengthBucketSampler(lengths, batch_size, shuffle, seed)
        return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_pairs)
    if bucket:
        sampler = LengthBucketSampler([len(s) for s in dataset.src], batch_size, shuffle, seed)
        return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_pairs)
    g = torch.Generator().manual_seed(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=g, collate_fn=collate_pairs)


def postprocess(ids: Sequence[int], vocab: Vocab) -> list[str]:
    """Model output ids -> tokens: stop at the first ``<eos>``, drop ``<bos>``/``<pad>``."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    return vocab.decode(list(ids))


@torch.no_grad()
def translate(decode_fn: DecodeFn, data: TranslationData, split: str = "test", batch_size: int = 128,
              device: torch.device | str | None = None) -> list[list[str]]:
    """Translate every sentence of ``split`` with ``decode_fn``; returns target
    tokens per sentence, in the dataset's order (batches are length-sorted inside)."""
    if isinstance(decode_fn, nn.Module) or not callable(decode_fn):
        raise TypeError(f"decode_fn must be a function batch -> list of id lists, got {type(decode_fn).__name__}"
                        + (": make one from the model with make_decode_fn(model) (utils.transformer or utils.rnn), "
                           "or shipped.decode_fn() for a shipped model" if isinstance(decode_fn, nn.Module) else ""))
    if not isinstance(data, TranslationData):
        raise TypeError(f"data must be the TranslationData of prepare_translation(...), got {type(data).__name__}")
    if split not in data.datasets:
        raise ValueError(f"unknown split {split!r}; choose one of {list(data.datasets)}")
    if getattr(decode_fn, "model", None) is not None:  # make_decode_fn's: the model may carry its vocabularies
        checks.model_vocab(decode_fn.model, (data.src_vocab, data.tgt_vocab), "data (data.src_vocab, data.tgt_vocab)")
    from .training import to_device

    ds = data.datasets[split]
    out: list[list[str] | None] = [None] * len(ds)
    for idx in LengthBucketSampler([len(s) for s in ds.src], batch_size, shuffle=False):
        batch = collate_pairs([ds[i] for i in idx])
        if device is not None:
            batch = to_device(batch, device)
        try:
            hyps = decode_fn(batch)
        except ValueError as e:
            if "outside the vocabulary" not in str(e):
                raise
            raise ValueError(f"{e}. The model was trained with other vocabularies than `data`'s: prepare the data "
                             f"with the model's own, prepare_translation(..., vocabs=(src_vocab, tgt_vocab)) "
                             f"(for a shipped model: vocabs=(shipped.src_vocab, shipped.tgt_vocab))") from None
        if len(hyps) != len(idx):
            raise ValueError(f"decode_fn returned {len(hyps)} sequences for a batch of {len(idx)}")
        for i, h in zip(idx, hyps):
            too_big = [t for t in (h.tolist() if isinstance(h, torch.Tensor) else h) if isinstance(t, int) and t >= len(data.tgt_vocab)]
            if too_big:
                raise ValueError(f"decode_fn produced id {too_big[0]}, outside data's target vocabulary of size "
                                 f"{len(data.tgt_vocab)}: the model was trained with other vocabularies; prepare the "
                                 f"data with the model's own, prepare_translation(..., vocabs=(src_vocab, tgt_vocab))")
            out[i] = postprocess(h, data.tgt_vocab)
            if data.merges is not None:
                out[i] = join_pieces(out[i])
    return out  # type: ignore[return-value]


def _detok_for_sacrebleu(tokens: Sequence[str]) -> str:
    """Our tokens are lower-cased; capitalise the first letter as the captions do
    (a one-line truecaser) so case-sensitive sacreBLEU is not penalised for it."""
    text = detokenize(tokens)
    return text[:1].upper() + text[1:]


@dataclass
class BLEUResult:
    tokenized: BLEUScore           # corpus BLEU-4 on lower-cased tokens (bentrevett's metric)
    sacrebleu: BLEUScore           # sacreBLEU, detokenized output vs raw references
    hypotheses: list[list[str]]    # the translations, as tokens
    references: list[list[str]]    # the references, as tokens

    def __str__(self) -> str:
        return f"tokenized BLEU {self.tokenized.score:.2f} | sacreBLEU {self.sacrebleu.score:.2f}"


def evaluate_bleu(decode_fn: DecodeFn, data: TranslationData, split: str = "test", batch_size: int = 128,
                  device: torch.device | str | None = None, hypotheses: list[list[str]] | None = None) -> BLEUResult:
    """Translate ``split`` and score it both ways (pass ``hypotheses`` to skip translating)."""
    hyps = hypotheses if hypotheses is not None else translate(decode_fn, data, split, batch_size, device)
    refs = [t for _, t in data.tokens[split]]
    raw_refs = [t for _, t in data.pairs[split]]
    tok = tokenized_bleu(hyps, refs)
    sacre = bleu([_detok_for_sacrebleu(h) for h in hyps], raw_refs)
    return BLEUResult(tok, sacre, hyps, refs)


DEFAULT_LENGTH_EDGES = (1, 9, 12, 15, 18, 1000)


def bleu_by_length(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]], src_lengths: Sequence[int],
                   edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> list[dict]:
    """Tokenized corpus BLEU of the sentences in each source-length bucket.

    Bucket ``k`` holds sentences with ``edges[k] <= length < edges[k+1]`` (lengths in
    tokens, without ``<bos>``/``<eos>``). Returns one dict per non-empty bucket:
    ``{"lo", "hi", "n", "bleu", "mean_len"}``.
    """
    if not (len(hypotheses) == len(references) == len(src_lengths)):
        raise ValueError(f"need as many hypotheses ({len(hypotheses)}), references ({len(references)}) "
                         f"and source lengths ({len(src_lengths)})")
    if len(edges) < 2 or any(a >= b for a, b in zip(edges, edges[1:])):
        raise ValueError(f"edges must be at least two strictly increasing ints, got {edges}")
    rows = []
    for lo, hi in zip(edges, edges[1:]):
        idx = [i for i, n in enumerate(src_lengths) if lo <= n < hi]
        if not idx:
            continue
        score = tokenized_bleu([hypotheses[i] for i in idx], [references[i] for i in idx]).score
        rows.append(dict(lo=lo, hi=hi, n=len(idx), bleu=score, mean_len=sum(src_lengths[i] for i in idx) / len(idx)))
    return rows


# Where scripts/recipes/train_translation.py writes the full-data runs (the repository's runs/ folder).
RUNS_DIR = Path(__file__).resolve().parents[1] / "runs"


def load_fast_runs(arm: str | None = None, runs: str | Path | None = None, bench: str = "fast_translation") -> list[dict]:
    """The committed runs of ``scripts/benchmarks/bench_fast_translation.py``: one dict per arm and seed
    (its config, steps, training CPU seconds on one thread, test BLEU), in the order they were run;
    only ``arm``'s when given.

    Notebooks 03 and 08 put them beside what they train live: the same recipes with other seeds, and the
    levers that made the live recipes fast. ``FileNotFoundError`` (naming the command) when the file is
    missing, ``ValueError`` for an arm that was never run. ``bench`` names another benchmark that records its
    runs the same way, ``scripts/benchmarks/bench_<bench>.py`` into ``runs/<bench>/results.jsonl``
    (``"prenorm_warmup"``: notebook 08's live recipe with and without its warm-up).
    """
    path = Path(runs if runs is not None else RUNS_DIR) / bench / "results.jsonl"
    if not path.exists():
        how = "--arms ARM --seed N" if bench == "fast_translation" else "--seeds 0 1"
        raise FileNotFoundError(f"no recorded runs at {path}; make them with "
                                f"`python scripts/benchmarks/bench_{bench}.py {how}`")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if arm is None:
        return rows
    mine = [r for r in rows if r["arm"] == arm]
    if not mine:
        known = ", ".join(dict.fromkeys(r["arm"] for r in rows))
        raise ValueError(f"arm={arm!r} was never run; the recorded arms are: {known}")
    return mine


def load_run_results(model: str, runs: str | Path | None = None) -> dict:
    """The ``results.json`` of one full-data run (``seq2seq``, ``attention`` or ``transformer``).

    Notebooks use it to put the full-data numbers (too slow to train in a notebook on a
    CPU) beside their own small runs; every number in it was measured by
    ``scripts/recipes/train_translation.py``.
    """
    path = Path(runs if runs is not None else RUNS_DIR) / model / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"no full-data results at {path}; train them with "
                                f"`python scripts/recipes/train_translation.py --model {model}`")
    results = json.loads(path.read_text())
    missing = {"test", "bleu_by_length", "epoch_seconds", "parameters"} - set(results)
    if missing:
        raise ValueError(f"{path} lacks {sorted(missing)}; was it written by scripts/recipes/train_translation.py?")
    return results
