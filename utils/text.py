"""Text to tensors: a word-level tokenizer, a vocabulary, padding with masks,
batching for translation pairs, and seeded synthetic sequence tasks.

Conventions used throughout the course
--------------------------------------
- ``<pad>`` has id 0, then ``<unk>`` = 1, ``<bos>`` = 2, ``<eos>`` = 3.
- Batches are ``(B, T)`` long tensors, padded on the right.
- A *mask* is a boolean tensor with **True where there is a real token** (and,
  for attention, True = "may attend"), the convention of
  ``torch.nn.functional.scaled_dot_product_attention``.
"""

from __future__ import annotations

import heapq
import numbers
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

import torch
from torch.utils.data import Dataset

from utils import checks

__all__ = [
    "PAD", "UNK", "BOS", "EOS", "SPECIALS",
    "tokenize", "detokenize", "Vocab", "check_ids", "int_ids",
    "pad_sequences", "padding_mask", "masked_mean",
    "PairBatch", "PairDataset", "collate_pairs",
    "make_sequence_task", "SEQUENCE_TASKS",
    "END_OF_WORD", "learn_bpe", "bpe_segment", "bpe_apply_in_order",
]

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)

# A token is a run of letters/digits (any script: "Mädchen", "über"), or one
# punctuation character. Apostrophes split too: "dog's" -> "dog", "'", "s".
_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-case ``text`` and split it into words and single punctuation marks.

    >>> tokenize("Two young, White males are outside.")
    ['two', 'young', ',', 'white', 'males', 'are', 'outside', '.']
    """
    if not isinstance(text, str):
        raise TypeError(f"tokenize() expects a str, got {type(text).__name__}")
    return _TOKEN_RE.findall(text.lower())


_NO_SPACE_BEFORE = set(".,!?;:)]}'%")
_NO_SPACE_AFTER = set("([{'")


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens into readable text: no space before ``. , ! ? ; : )`` or after ``(``,
    and none around an apostrophe. Lossy (casing is gone), meant for display and
    for sacreBLEU, which tokenizes again itself."""
    out: list[str] = []
    for tok in tokens:
        if out and tok not in _NO_SPACE_BEFORE and out[-1] not in _NO_SPACE_AFTER:
            out.append(" ")
        out.append(tok)
    return "".join(out)


def int_ids(ids: Iterable[int] | torch.Tensor, what: str) -> list[int]:
    """``ids`` (a 1-D tensor or a sequence) as a list of ints; float or bool ids are a TypeError, not truncated."""
    if isinstance(ids, torch.Tensor):
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            raise TypeError(f"{what} expects integer token ids, got a tensor of dtype {ids.dtype} (ids are whole "
                            f"numbers: a float tensor here usually means the wrong tensor was passed)")
        return ids.tolist()
    out = list(ids)
    for i, x in enumerate(out):
        if type(x) is int:
            continue
        if isinstance(x, torch.Tensor) and x.numel() == 1:
            out[i] = x = int_ids(x.reshape(1), what)[0]
        if not isinstance(x, numbers.Integral) or isinstance(x, bool):
            raise TypeError(f"{what} expects integer token ids, got {type(x).__name__} {x!r} at index {i}")
    return out


check_ids = checks.vocab_ids  # the rule lives in utils.checks; the name stays for the notebooks and utils


class Vocab:
    """A bijection between tokens and integer ids.

    Ids 0-3 are the special tokens (``<pad>``, ``<unk>``, ``<bos>``, ``<eos>``);
    the rest are sorted by frequency (then alphabetically, so building is
    deterministic). Tokens seen fewer than ``min_freq`` times map to ``<unk>``.
    """

    def __init__(self, itos: Sequence[str]):
        itos = list(itos)
        if tuple(itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a Vocab must start with the special tokens {SPECIALS}, got {itos[:4]}")
        if len(set(itos)) != len(itos):
            raise ValueError("a Vocab's tokens must be unique")
        self.itos = itos
        self.stoi = {t: i for i, t in enumerate(itos)}
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = range(4)

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], min_freq: int = 1, max_size: int | None = None) -> "Vocab":
        """Build from tokenized sentences (lists of tokens)."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < len(SPECIALS):
            raise ValueError(f"max_size must be >= {len(SPECIALS)} (the special tokens {SPECIALS} come first), got {max_size}")
        counts: Counter[str] = Counter()
        for sent in sentences:
            if isinstance(sent, str):
                raise TypeError("Vocab.build expects tokenized sentences (lists of tokens), got a str; call tokenize() first")
            counts.update(sent)
        words = sorted((w for w, c in counts.items() if c >= min_freq and w not in SPECIALS), key=lambda w: (-counts[w], w))
        if max_size is not None:
            words = words[: max(0, max_size - len(SPECIALS))]
        vocab = cls(list(SPECIALS) + words)
        vocab.counts = counts
        return vocab

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        """The id of ``token`` (``<unk>``'s for an unknown word). An id is a TypeError, not ``<unk>``."""
        if not isinstance(token, str):
            hint = (f"; for the token with id {token} use vocab.itos[{token}] (or vocab.decode([{token}]))"
                    if isinstance(token, int) or isinstance(token, torch.Tensor) and token.numel() == 1 else "")
            raise TypeError(f"vocab[...] looks up a token (a str) and gives its id, got {type(token).__name__} "
                            f"{token!r}" + hint)
        return self.stoi.get(token, self._unknown(token, "vocab[...]"))

    def _unknown(self, token: str, where: str) -> int:
        """``<unk>``'s id for a word the vocabulary does not have, but a ValueError for a word it has in
        lower case: the vocabulary was built from :func:`tokenize`'s lower-cased tokens, so ``'Hund'``
        would silently become ``<unk>`` although ``'hund'`` is known."""
        if token != token.lower() and token.lower() in self.stoi:
            raise ValueError(f"{where}: {token!r} is not in the vocabulary, but {token.lower()!r} is: the vocabulary "
                             f"holds lower-cased tokens (tokenize() lower-cases); look up {token.lower()!r}, or tokenize "
                             f"the text with utils.text.tokenize instead of splitting it by hand")
        return self.unk_id

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, first={self.itos[4:9]})"

    def encode(self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Tokens -> ids (unknown words -> ``<unk>``), optionally framed by ``<bos>``/``<eos>``."""
        if isinstance(tokens, str):
            raise TypeError("encode() expects a list of tokens, got a str; call tokenize() first")
        bad = next(((i, t) for i, t in enumerate(tokens) if not isinstance(t, str)), None)
        if bad is not None:
            raise TypeError(f"encode() expects tokens (str), got {type(bad[1]).__name__} {bad[1]!r} at index {bad[0]}; "
                            f"ids are turned back into tokens with decode()")
        ids = [self.stoi[t] if t in self.stoi else self._unknown(t, "encode()") for t in tokens]
        return ([self.bos_id] if add_bos else []) + ids + ([self.eos_id] if add_eos else [])

    def decode(self, ids: Iterable[int] | torch.Tensor, strip_special: bool = True) -> list[str]:
        """Ids -> tokens. With ``strip_special`` (default) stop at the first ``<eos>``
        and drop ``<pad>``/``<bos>``, so ``decode(encode(t, True, True)) == t`` for
        in-vocabulary tokens. Float or bool ids raise a TypeError (they are not truncated)."""
        if isinstance(ids, torch.Tensor) and ids.dim() != 1:
            raise ValueError(f"decode() expects a 1-D sequence of ids, got shape {tuple(ids.shape)}")
        out = []
        for i in int_ids(ids, "decode()"):
            if not 0 <= i < len(self.itos):
                raise IndexError(f"id {i} is outside this vocabulary of size {len(self.itos)}")
            if strip_special:
                if i == self.eos_id:
                    break
                if i in (self.pad_id, self.bos_id):
                    continue
            out.append(self.itos[i])
        return out

    def to_list(self) -> list[str]:
        """Plain list for checkpoints (rebuild with ``Vocab(lst)``)."""
        return list(self.itos)


def pad_sequences(seqs: Sequence[Sequence[int]], pad_id: int = 0, max_len: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-pad integer sequences into one tensor.

    Returns ``ids`` (B, T) long, ``lengths`` (B,) long and ``mask`` (B, T) bool
    with True at real tokens. ``max_len`` truncates longer sequences. The ids must be
    integers (a float id raises a TypeError rather than being truncated).
    """
    if isinstance(seqs, (str, bytes)):
        raise TypeError(f"seqs must be a list of id sequences, got a {type(seqs).__name__}; encode the text first, e.g. "
                        f"pad_sequences([vocab.encode(tokenize(s)) for s in sentences])")
    if len(seqs) == 0:
        raise ValueError("pad_sequences() got no sequences")
    pad_id = checks.integer(pad_id, "pad_id", minimum=0, what="the id that fills the rows' ends")
    if max_len is not None:
        max_len = checks.integer(max_len, "max_len", minimum=1, what="the longest sequence kept")
    lengths = [len(s) if max_len is None else min(len(s), max_len) for s in seqs]
    if min(lengths) == 0:
        raise ValueError("pad_sequences() got an empty sequence; every sequence needs at least one token")
    T = max(lengths)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for b, (s, n) in enumerate(zip(seqs, lengths)):
        ids[b, :n] = torch.as_tensor(int_ids(s[:n], f"pad_sequences() (sequence {b})"), dtype=torch.long)
    lengths_t = torch.tensor(lengths, dtype=torch.long)
    mask = torch.arange(T)[None, :] < lengths_t[:, None]
    return ids, lengths_t, mask


@checks.contract
def padding_mask(ids: checks.Ids["B T"], pad_id: int = 0) -> checks.Bool["B T"]:
    """(B, T) bool, True where ``ids`` (any integer dtype) is a real token (not ``pad_id``)."""
    return ids != checks.integer(pad_id, "pad_id")


def _mean_rules(x: torch.Tensor, mask: torch.Tensor) -> None:
    """x is finite at the real positions; the padding may hold anything, even NaN (it never contributes)."""
    checks.finite(x.masked_fill(~mask[..., None], 0.0), "x", "(B, T, D) at its real positions (mask True)")


@checks.contract(rules=_mean_rules, any_value=("x",))
def masked_mean(x: checks.Float["B T D"], mask: checks.Bool["B T"]) -> checks.Float["B D"]:
    """Mean of ``x`` (B, T, D) over the real positions of each row: ``mask`` (B, T)
    bool, True at real tokens. Pads never contribute, whatever values they hold.
    A row with no real token gives zeros.

    An inverted mask (``ids == pad``, True at padding) cannot be recognised here, unlike in
    :func:`utils.attention.check_mask` and :func:`utils.rnn.masked_softmax`, whose rows are
    right-padded sentences that start with a real token: CBOW's context windows legitimately start
    with padding (the first words of a sentence), end with it, or are all padding (a one-word
    sentence), so no pattern of True and False is impossible, and the ids are not passed. Build the
    mask as ``ids != pad`` (or take :func:`pad_sequences`' mask), as :class:`utils.embeddings.CBOW` does."""
    m = mask.unsqueeze(-1)                                  # (B, T, 1)
    total = x.masked_fill(~m, 0.0).sum(1)                   # (B, D); a NaN in the padding never meets a 0 · NaN
    count = m.sum(1).clamp(min=1).to(x.dtype)               # (B, 1)
    return total / count


class PairBatch(NamedTuple):
    """A batch of (source, target) sequences, both right-padded with masks."""

    src: torch.Tensor       # (B, S) long
    src_len: torch.Tensor   # (B,) long
    src_mask: torch.Tensor  # (B, S) bool, True at real tokens
    tgt: torch.Tensor       # (B, T) long, starts with <bos>, ends with <eos>
    tgt_len: torch.Tensor   # (B,) long
    tgt_mask: torch.Tensor  # (B, T) bool


@dataclass
class PairDataset(Dataset):
    """Parallel id sequences: ``src[i]`` translates to ``tgt[i]``."""

    src: list[list[int]]
    tgt: list[list[int]]

    def __post_init__(self):
        if len(self.src) != len(self.tgt):
            raise ValueError(f"source and target differ in length: {len(self.src)} vs {len(self.tgt)}")

    def __len__(self) -> int:
        return len(self.src)

    def __getitem__(self, i: int) -> tuple[list[int], list[int]]:
        return self.src[i], self.tgt[i]


def collate_pairs(batch: Sequence[tuple[Sequence[int], Sequence[int]]], pad_id: int = 0) -> PairBatch:
    """``DataLoader`` collate function for :class:`PairDataset`."""
    src, tgt = zip(*batch)
    s, sl, sm = pad_sequences(src, pad_id)
    t, tl, tm = pad_sequences(tgt, pad_id)
    return PairBatch(s, sl, sm, t, tl, tm)


# --------------------------------------------------------------------------- #
# Synthetic tasks: for lessons that must train in seconds.
# --------------------------------------------------------------------------- #

def _copy(x: list[int]) -> list[int]:
    return list(x)


def _reverse(x: list[int]) -> list[int]:
    return x[::-1]


def _sort(x: list[int]) -> list[int]:
    return sorted(x)


SEQUENCE_TASKS = {"copy": _copy, "reverse": _reverse, "sort": _sort}


def make_sequence_task(
    task: str = "reverse",
    n: int = 1000,
    min_len: int = 3,
    max_len: int = 10,
    num_symbols: int = 10,
    seed: int = 0,
) -> tuple[list[list[int]], list[list[int]], Vocab]:
    """A seeded toy translation task over symbols ``a``, ``b``, ``c``, ...

    - ``copy``: output = input; ``reverse``: output = input reversed (a test of
      long-range alignment); ``sort``: output = input sorted (needs to look at
      every position, not just one).

    Returns ``(src, tgt, vocab)``: id lists with ``<eos>`` appended to the source
    and ``<bos> ... <eos>`` around the target, and the shared vocabulary.
    """
    if task not in SEQUENCE_TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {sorted(SEQUENCE_TASKS)}")
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if not 1 <= num_symbols <= 26:
        raise ValueError(f"num_symbols must be in 1..26, got {num_symbols}")
    symbols = [chr(ord("a") + i) for i in range(num_symbols)]
    vocab = Vocab(list(SPECIALS) + symbols)
    g = torch.Generator().manual_seed(seed)
    fn = SEQUENCE_TASKS[task]
    src, tgt = [], []
    for _ in range(n):
        L = int(torch.randint(min_len, max_len + 1, (1,), generator=g))
        x = (torch.randint(0, num_symbols, (L,), generator=g) + len(SPECIALS)).tolist()
        src.append(x + [vocab.eos_id])
        tgt.append([vocab.bos_id] + fn(x) + [vocab.eos_id])
    return src, tgt, vocab


# --- byte-pair encoding (Sennrich et al., 2016) -------------------------------------------

END_OF_WORD = "</w>"


def _merge_pair(symbols: tuple[str, ...], a: str, b: str) -> tuple[str, ...]:
    """Replace every adjacent (a, b) in ``symbols`` by ``a + b``, left to right."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def _check_word_counts(word_counts: dict[str, int] | Counter) -> None:
    if not hasattr(word_counts, "items"):
        raise TypeError(f"learn_bpe() expects a mapping word -> count (e.g. a Counter), got {type(word_counts).__name__}")
    for w, n in word_counts.items():
        if not isinstance(w, str) or not w:
            raise ValueError(f"learn_bpe(): every word must be a non-empty str, got {w!r}")
        if not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"learn_bpe(): the count of {w!r} must be a positive int, got {n!r}")


def learn_bpe(word_counts: dict[str, int] | Counter, num_merges: int) -> list[tuple[str, str]]:
    """Learn ``num_merges`` byte-pair-encoding merges from a word-frequency table.

    Every word starts as its characters followed by ``"</w>"``. Each step merges the most frequent
    adjacent pair of symbols (pairs counted over the *table*, each word weighted by its count; ties:
    the pair that sorts first) everywhere, and records it. Stops early when no pair is left.
    Fast: after a merge only the words that contain the merged pair are recounted.

    >>> learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 3)
    [('e', 's'), ('es', 't'), ('est', '</w>')]
    """
    _check_word_counts(word_counts)
    if not isinstance(num_merges, numbers.Integral) or num_merges < 0:
        raise ValueError(f"num_merges must be an int >= 0, got {num_merges!r}")
    words = [tuple(w) + (END_OF_WORD,) for w in word_counts]
    counts = list(word_counts.values())
    pairs: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[int]] = {}          # pair -> indices of the words that contain it
    for i, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += counts[i]
            where.setdefault(pair, set()).add(i)
    heap = [(-n, pair) for pair, n in pairs.items()]      # (-count, pair): the best pair is the smallest
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    while len(merges) < num_merges and heap:
        neg, best = heapq.heappop(heap)
        if pairs.get(best, 0) != -neg:                    # a stale entry: the count has changed since
            continue
        merges.append(best)
        changed = set()
        for i in where.pop(best):
            old = words[i]
            if best not in zip(old, old[1:]):              # an earlier merge in this step already changed it
                continue
            for pair in zip(old, old[1:]):                 # take the word's old pairs out ...
                pairs[pair] -= counts[i]
                changed.add(pair)
            new = words[i] = _merge_pair(old, *best)
            for pair in zip(new, new[1:]):                 # ... and its new pairs in
                pairs[pair] += counts[i]
                where.setdefault(pair, set()).add(i)
                changed.add(pair)
        for pair in changed:
            if pairs[pair] > 0:
                heapq.heappush(heap, (-pairs[pair], pair))
            else:
                del pairs[pair]
        pairs.pop(best, None)
    return merges


def _merge_pairs(merges: object, where: str) -> list[tuple[str, str]]:
    """``merges`` as a list of (a, b) pairs of str, as :func:`learn_bpe` returns (pairs written as
    2-element lists, as JSON gives them back, are accepted); else a TypeError naming ``merges``, the
    expected form and the first bad entry. A merge written as one string (``"e s"`` or ``"es"``) is
    refused: a string is not a pair, and ``"es"`` would silently be read as ``("e", "s")``."""
    form = "a list of (a, b) pairs of symbols, as learn_bpe returns, e.g. [('e', 's'), ('es', 't')]"
    if isinstance(merges, (str, bytes)) or not isinstance(merges, Iterable):
        raise TypeError(f"{where}: merges must be {form}; got {type(merges).__name__} {merges!r}"[:300])
    out = []
    for i, m in enumerate(merges):
        if isinstance(m, (tuple, list)) and len(m) == 2 and all(isinstance(x, str) and x for x in m):
            out.append(tuple(m))
            continue
        hint = ""
        if isinstance(m, str):
            parts = m.split()
            hint = (f"; a merge is a pair, not one string: write {tuple(parts)!r}"
                    + (" (tuple(m.split()) for merges read as 'a b' lines)" if len(parts) == 2 else ""))
        raise TypeError(f"{where}: merges must be {form}; got {type(m).__name__} {m!r} at index {i}{hint}"[:400])
    return out


def bpe_apply_in_order(word: str, merges: Sequence[tuple[str, str]]) -> list[str]:
    """The definition, slow: split ``word`` into characters + ``"</w>"``, then apply every merge in
    the order it was learned, each everywhere, left to right. ``bpe_segment`` gives the same result fast."""
    if not isinstance(word, str) or not word:
        raise ValueError(f"bpe_apply_in_order() expects a non-empty str, got {word!r}")
    symbols = tuple(word) + (END_OF_WORD,)
    for a, b in _merge_pairs(merges, "bpe_apply_in_order()"):
        symbols = _merge_pair(symbols, a, b)
    return list(symbols)


def bpe_segment(word: str, merges: Sequence[tuple[str, str]], ranks: dict[tuple[str, str], int] | None = None) -> list[str]:
    """Split ``word`` (seen in training or not) into BPE symbols: the learned merges applied in the
    order they were learned. Implemented as "repeatedly merge the present pair learned earliest"
    (as GPT-2's tokenizer does), which gives the same pieces as ``bpe_apply_in_order`` but only
    looks at the pairs of this word. Pass ``ranks`` (``{pair: index}``) to reuse it across calls.

    >>> bpe_segment("lowest", learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 10))
    ['low', 'est</w>']
    """
    if not isinstance(word, str) or not word:
        raise ValueError(f"bpe_segment() expects a non-empty str, got {word!r}")
    if ranks is None:
        ranks = {pair: r for r, pair in enumerate(_merge_pairs(merges, "bpe_segment()"))}
    elif not isinstance(ranks, dict):
        raise TypeError(f"bpe_segment(): ranks must be a dict {{(a, b): index}}, e.g. {{p: r for r, p in "
                        f"enumerate(merges)}}, or None; got {type(ranks).__name__}")
    elif ranks:  # the first key only: a ranks dict is reused across every word of a text
        _merge_pairs([next(iter(ranks))], "bpe_segment() (the keys of ranks)")
    symbols = tuple(word) + (END_OF_WORD,)
    while len(symbols) > 1:
        present = [(ranks[p], p) for p in zip(symbols, symbols[1:]) if p in ranks]
        if not present:
            break
        _, (a, b) = min(present)
        symbols = _merge_pair(symbols, a, b)
    return list(symbols)
