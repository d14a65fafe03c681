"""utils.text: tokenizer, vocabulary round-trips, padding masks, synthetic tasks."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch.utils.data import DataLoader

from utils.text import (
    BOS, EOS, PAD, SPECIALS, UNK, PairDataset, Vocab, check_ids, collate_pairs, detokenize, make_sequence_task,
    pad_sequences, padding_mask, tokenize,
)

words = st.text(alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=8)


def test_tokenize_lowercases_and_splits_punctuation():
    assert tokenize("Two young, White males are outside near many bushes.") == [
        "two", "young", ",", "white", "males", "are", "outside", "near", "many", "bushes", ".",
    ]
    assert tokenize("Ein Mädchen läuft über die Straße!") == ["ein", "mädchen", "läuft", "über", "die", "straße", "!"]
    with pytest.raises(TypeError, match="expects a str"):
        tokenize(["already", "tokens"])


@given(st.lists(words, min_size=1, max_size=12))
def test_tokenize_detokenize_round_trip_on_words(ws):
    tokens = [w.lower() for w in ws]
    assert tokenize(detokenize(tokens)) == tokenize(" ".join(tokens))


def test_detokenize_spacing():
    assert detokenize(["a", "dog", "'", "s", "ball", ",", "(", "red", ")", "."]) == "a dog's ball, (red)."


def test_vocab_specials_and_order():
    v = Vocab.build([["b", "a", "b"], ["c", "b", "a"]])
    assert v.itos[:4] == list(SPECIALS)
    assert (v[PAD], v[UNK], v[BOS], v[EOS]) == (0, 1, 2, 3)
    assert v.itos[4:] == ["b", "a", "c"]  # by frequency, ties alphabetical
    assert v["never-seen"] == v.unk_id


def test_vocab_min_freq_and_max_size():
    sents = [["x"] * 5 + ["y"] * 2 + ["z"]]
    assert Vocab.build(sents, min_freq=2).itos[4:] == ["x", "y"]
    assert Vocab.build(sents, max_size=5).itos[4:] == ["x"]
    with pytest.raises(ValueError, match="min_freq"):
        Vocab.build(sents, min_freq=0)
    with pytest.raises(TypeError, match="tokenize"):
        Vocab.build(["a raw sentence"])


@given(st.lists(st.lists(words, min_size=1, max_size=10), min_size=1, max_size=10))
@settings(max_examples=50)
def test_vocab_round_trip(sents):
    v = Vocab.build(sents)
    for s in sents:
        ids = v.encode(s, add_bos=True, add_eos=True)
        assert ids[0] == v.bos_id and ids[-1] == v.eos_id
        assert v.decode(ids) == list(s)
        assert v.decode(torch.tensor(ids)) == list(s)
        assert v.decode(ids, strip_special=False) == [BOS, *s, EOS]


def test_vocab_rejects_bad_input():
    v = Vocab.build([["a"]])
    with pytest.raises(TypeError, match="tokenize"):
        v.encode("a")
    with pytest.raises(IndexError, match="outside"):
        v.decode([99])
    with pytest.raises(ValueError, match="special tokens"):
        Vocab(["a", "b"])
    assert Vocab(v.to_list()).stoi == v.stoi


@given(st.lists(st.lists(st.integers(1, 50), min_size=1, max_size=9), min_size=1, max_size=8))
def test_pad_sequences_mask_and_lengths(seqs):
    ids, lengths, mask = pad_sequences(seqs)
    B, T = ids.shape
    assert B == len(seqs) and T == max(map(len, seqs))
    assert mask.dtype == torch.bool
    assert lengths.tolist() == [len(s) for s in seqs]
    assert mask.sum(1).tolist() == lengths.tolist()
    assert (ids[~mask] == 0).all()  # pads are pad_id
    for b, s in enumerate(seqs):
        assert ids[b, : len(s)].tolist() == s
        assert mask[b, : len(s)].all() and not mask[b, len(s):].any()
    assert torch.equal(padding_mask(ids), mask)  # ids here are never 0


def test_pad_sequences_errors_and_truncation():
    with pytest.raises(ValueError, match="no sequences"):
        pad_sequences([])
    with pytest.raises(ValueError, match="empty sequence"):
        pad_sequences([[1], []])
    ids, lengths, _ = pad_sequences([[1, 2, 3, 4], [5]], max_len=2)
    assert ids.tolist() == [[1, 2], [5, 0]] and lengths.tolist() == [2, 1]
    with pytest.raises(TypeError, match="integer token ids"):
        padding_mask(torch.zeros(2, 3))


def test_pair_batches_through_dataloader():
    src, tgt, vocab = make_sequence_task("reverse", n=10, seed=1)
    loader = DataLoader(PairDataset(src, tgt), batch_size=4, collate_fn=collate_pairs)
    batch = next(iter(loader))
    assert batch.src.shape[0] == 4 and batch.src_mask.shape == batch.src.shape
    assert (batch.tgt[:, 0] == vocab.bos_id).all()
    with pytest.raises(ValueError, match="differ in length"):
        PairDataset(src, tgt[:-1])


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_sequence_tasks(task):
    src, tgt, vocab = make_sequence_task(task, n=200, min_len=2, max_len=7, num_symbols=5, seed=3)
    assert len(vocab) == 4 + 5
    for s, t in zip(src, tgt):
        x, y = s[:-1], t[1:-1]
        assert s[-1] == vocab.eos_id and t[0] == vocab.bos_id and t[-1] == vocab.eos_id
        assert 2 <= len(x) <= 7
        assert y == {"copy": x, "reverse": x[::-1], "sort": sorted(x)}[task]
    # seeded: same seed, same data; other seed, other data
    assert make_sequence_task(task, n=50, seed=3)[0] == make_sequence_task(task, n=50, seed=3)[0]
    assert make_sequence_task(task, n=50, seed=3)[0] != make_sequence_task(task, n=50, seed=4)[0]


def test_sequence_task_errors():
    with pytest.raises(ValueError, match="unknown task"):
        make_sequence_task("shuffle")
    with pytest.raises(ValueError, match="min_len"):
        make_sequence_task(min_len=5, max_len=2)


def test_float_ids_are_refused_not_truncated():
    v = Vocab.build([["a", "b"]])
    with pytest.raises(TypeError, match=r"decode\(\) expects integer token ids.*dtype torch.float32"):
        v.decode(torch.tensor([4.0, 5.7]))
    with pytest.raises(TypeError, match=r"integer token ids, got float 4.7 at index 1"):
        v.decode([4, 4.7])
    with pytest.raises(TypeError, match="dtype torch.bool"):
        v.decode(torch.tensor([True, False]))
    with pytest.raises(TypeError, match=r"pad_sequences\(\) \(sequence 1\) expects integer token ids, got float 2.5"):
        pad_sequences([[4, 5], [2.5]])
    with pytest.raises(TypeError, match="sequence 0.*dtype torch.float64"):
        pad_sequences([torch.tensor([1.0, 2.0], dtype=torch.float64)])
    # integer tensors, numpy ints and 0-d tensors are ids
    import numpy as np

    assert v.decode([np.int64(4), torch.tensor(5)]) == v.decode(torch.tensor([4, 5], dtype=torch.int32))
    assert pad_sequences([torch.tensor([4, 5]), [np.int32(6)]])[0].tolist() == [[4, 5], [6, 0]]


def test_vocab_encode_wants_tokens_and_max_size_keeps_specials():
    v = Vocab.build([["a", "b"]])
    with pytest.raises(TypeError, match=r"expects tokens \(str\), got int 4 at index 0.*decode\(\)"):
        v.encode([4, 5])
    with pytest.raises(ValueError, match="max_size must be >= 4"):
        Vocab.build([["a"]], max_size=2)


def test_check_ids_names_the_vocabulary_size():
    check_ids(torch.tensor([[0, 9]]), 10)
    check_ids(torch.zeros(0, dtype=torch.long), 10)
    with pytest.raises(ValueError, match=r"src: id 10 is outside the vocabulary of size 10 \(valid ids: 0..9\)"):
        check_ids(torch.tensor([[3, 10]]), 10, "src")
    with pytest.raises(ValueError, match="bos_id: id -1 is outside"):
        check_ids(-1, 10, "bos_id")


# --- byte-pair encoding ---------------------------------------------------------------------

from utils.text import END_OF_WORD, bpe_apply_in_order, bpe_segment, learn_bpe  # noqa: E402


def _reference_bpe(word_counts, num_merges):
    """The textbook loop: recount every pair over the whole table after each merge."""
    words = {tuple(w) + (END_OF_WORD,): n for w, n in word_counts.items()}
    merges = []
    for _ in range(num_merges):
        pairs = {}
        for symbols, n in words.items():
            for p in zip(symbols, symbols[1:]):
                pairs[p] = pairs.get(p, 0) + n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        new = {}
        for symbols, n in words.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1]); i += 2
                else:
                    out.append(symbols[i]); i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + n
        words = new
    return merges


small_words = st.text(alphabet="abcde", min_size=1, max_size=7)
tables = st.dictionaries(small_words, st.integers(1, 9), min_size=1, max_size=40)


def test_bpe_worked_example_of_sennrich_et_al():
    corpus = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    merges = learn_bpe(corpus, 10)
    assert merges[:5] == [("e", "s"), ("es", "t"), ("est", END_OF_WORD), ("l", "o"), ("lo", "w")]
    assert bpe_segment("lowest", merges) == ["low", "est</w>"]
    assert learn_bpe({"ab": 1}, 10) == [("a", "b"), ("ab", END_OF_WORD)]       # stops when nothing is left
    assert learn_bpe(corpus, 0) == []


@settings(max_examples=150, deadline=None)
@given(tables, st.integers(0, 60))
def test_learn_bpe_equals_the_textbook_loop(table, n):
    assert learn_bpe(table, n) == _reference_bpe(table, n)


@settings(max_examples=150, deadline=None)
@given(tables, st.integers(0, 40), st.lists(small_words | st.text(alphabet="abcdexyz", min_size=1, max_size=9), max_size=10))
def test_bpe_segment_applies_merges_in_learned_order_and_round_trips(table, n, new_words):
    merges = learn_bpe(table, n)
    symbols = set("abcdexyz") | {END_OF_WORD} | {a + b for a, b in merges}
    for w in list(table) + new_words:
        pieces = bpe_segment(w, merges)
        assert pieces == bpe_apply_in_order(w, merges)                       # merges in learned order
        assert "".join(pieces) == w + END_OF_WORD                           # decode(encode(w)) == w
        assert all(p in symbols for p in pieces)                           # only learned symbols
        assert bpe_segment(w, []) == list(w) + [END_OF_WORD]
    # a training word ends up as one piece once all its merges are learned
    full = learn_bpe(table, 10_000)
    assert all(bpe_segment(w, full) == [w + END_OF_WORD] for w in table)


def test_bpe_errors_name_what_was_expected():
    with pytest.raises(TypeError, match="mapping word -> count"):
        learn_bpe(["low", "lower"], 3)
    with pytest.raises(ValueError, match="positive int"):
        learn_bpe({"low": 0}, 3)
    with pytest.raises(ValueError, match="num_merges"):
        learn_bpe({"low": 1}, -1)
    with pytest.raises(ValueError, match="non-empty str"):
        bpe_segment("", [])
