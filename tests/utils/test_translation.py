"""utils.translation: the model-agnostic Multi30k pipeline (data, batches, BLEU)."""

from __future__ import annotations

import pytest
import torch

from utils.text import PairBatch, PairDataset, Vocab, tokenize
from utils.translation import (
    LengthBucketSampler, bleu_by_length, evaluate_bleu, make_loader, prepare_translation, translate,
)


@pytest.fixture(scope="module")
def data():
    return prepare_translation("de", "en", min_freq=2, max_train_len=8, train_subset=2000, seed=0)


def oracle(batch: PairBatch) -> list[list[int]]:
    """A perfect 'model': returns the reference target (with <bos> and pads, which must be stripped)."""
    return batch.tgt.tolist()


def test_prepare_translation_filters_encodes_and_aligns(data):
    assert len(data.train) == 2000
    assert len(data.test) == 1000 and len(data.val) == 1014  # held-out sets are kept whole by default
    for split in ("train", "val", "test"):
        ds, pairs, toks = data.datasets[split], data.pairs[split], data.tokens[split]
        assert len(ds) == len(pairs) == len(toks)
        for i in (0, len(ds) // 2, len(ds) - 1):
            s, t = ds[i]
            assert s[0] == t[0] == 2 and s[-1] == t[-1] == 3  # <bos> ... <eos>
            assert toks[i] == (tokenize(pairs[i][0]), tokenize(pairs[i][1]))
            assert data.src_vocab.decode(s) == [w if w in data.src_vocab else "<unk>" for w in toks[i][0]]
    assert all(len(s) <= 8 and len(t) <= 8 for s, t in data.tokens["train"])
    assert max(len(s) for s, _ in data.tokens["test"]) > 8


def test_vocab_is_built_on_train_only(data):
    train_words = {w for s, _ in data.tokens["train"] for w in s}
    test_only = {w for s, _ in data.tokens["test"] for w in s} - train_words
    assert test_only and not any(w in data.src_vocab for w in test_only)
    # min_freq=2: every non-special word was seen at least twice in training
    assert all(data.src_vocab.counts[w] >= 2 for w in data.src_vocab.itos[4:])


def test_prepare_translation_is_deterministic_and_validates():
    a = prepare_translation(max_train_len=9, train_subset=300, seed=1)
    b = prepare_translation(max_train_len=9, train_subset=300, seed=1)
    assert a.train.src == b.train.src and a.src_vocab.itos == b.src_vocab.itos
    c = prepare_translation(max_train_len=9, train_subset=300, seed=2)
    assert a.train.src != c.train.src
    with pytest.raises(ValueError, match="max_train_len"):
        prepare_translation(max_train_len=0)
    assert "de->en" in repr(a)


def test_bucket_sampler_covers_every_index_once_per_epoch():
    lengths = [int(x) for x in torch.randint(1, 30, (1003,), generator=torch.Generator().manual_seed(0))]
    s = LengthBucketSampler(lengths, batch_size=32, shuffle=True, seed=0, pool_factor=4)
    e1, e2 = list(s), list(s)
    for epoch in (e1, e2):
        assert sorted(i for b in epoch for i in b) == list(range(1003))
        assert len(epoch) == len(s) and max(len(b) for b in epoch) == 32
    assert e1 != e2  # a new order every epoch
    assert list(LengthBucketSampler(lengths, 32, True, seed=0, pool_factor=4)) == e1  # seeded


def test_make_loader_batches_and_bucketing_reduces_padding(data):
    def pad_fraction(loader):
        real = total = 0
        for b in loader:
            assert isinstance(b, PairBatch)
            real += int(b.src_mask.sum())
            total += b.src_mask.numel()
        return 1 - real / total

    bucketed = pad_fraction(make_loader(data.train, 64, shuffle=True, seed=0))
    plain = pad_fraction(make_loader(data.train, 64, shuffle=True, seed=0, bucket=False))
    assert bucketed < 0.5 * plain
    with pytest.raises(TypeError, match="PairDataset"):
        make_loader([([1], [2])], 4)


def test_bucketing_by_both_lengths_pads_the_targets_less(data):
    def pad(loader, side):
        real = total = 0
        for b in loader:
            ids = getattr(b, side)
            real += int((ids != 0).sum())
            total += ids.numel()
        return 1 - real / total

    by_source = make_loader(data.train, 64, shuffle=True, seed=0)
    by_pairs = make_loader(data.train, 64, shuffle=True, seed=0, bucket="pairs")
    assert sorted(i for b in by_pairs.batch_sampler for i in b) == list(range(len(data.train)))
    assert pad(by_pairs, "tgt") < pad(by_source, "tgt")
    assert pad(by_pairs, "src") + pad(by_pairs, "tgt") < pad(by_source, "src") + pad(by_source, "tgt")
    with pytest.raises(ValueError, match="bucket must be"):
        make_loader(data.train, 64, bucket="target")


@pytest.fixture(scope="module")
def pieces():
    return prepare_translation("de", "en", min_freq=2, max_train_len=8, train_subset=2000, seed=0, subwords=300)


def test_subwords_spell_rare_words_and_translate_joins_them(data, pieces):
    from utils.translation import join_pieces

    assert pieces.tokens == data.tokens and pieces.pairs == data.pairs      # words stay words
    assert len(pieces.tgt_vocab) < len(data.tgt_vocab)
    assert len(pieces.merges[0]) == len(pieces.merges[1]) == 300
    unk = pieces.tgt_vocab.stoi["<unk>"]
    test_unk = sum(i == unk for t in pieces.test.tgt for i in t)
    word_unk = sum(i == data.tgt_vocab.stoi["<unk>"] for t in data.test.tgt for i in t)
    assert test_unk < word_unk / 10                                        # rare words are spelled, not <unk>
    hyps = translate(oracle, pieces, "test")                               # the reference's pieces, joined
    refs = [t for _, t in pieces.tokens["test"]]
    assert sum(h == r for h, r in zip(hyps, refs)) >= 0.95 * len(refs)
    assert evaluate_bleu(oracle, pieces).tokenized.score > evaluate_bleu(oracle, data).tokenized.score
    assert join_pieces(["a</w>", "<unk>", "do", "g</w>", "ru"]) == ["a", "<unk>", "dog", "ru"]
    with pytest.raises(ValueError, match="subwords and vocabs"):
        prepare_translation(max_train_len=8, train_subset=50, subwords=10, vocabs=(data.src_vocab, data.tgt_vocab))


def test_translate_keeps_dataset_order_and_strips_specials(data):
    hyps = translate(oracle, data, "test", batch_size=100)
    assert len(hyps) == 1000
    for h, (s, t) in zip(hyps, data.datasets["test"]):
        assert h == data.tgt_vocab.decode(t)
        assert not {"<bos>", "<eos>", "<pad>"} & set(h)
    with pytest.raises(ValueError, match="unknown split"):
        translate(oracle, data, "dev")
    with pytest.raises(ValueError, match="returned 1 sequences"):
        translate(lambda b: [[3]], data, "test")


def test_evaluate_bleu_reports_both_metrics(data):
    refs = [t for _, t in data.tokens["test"]]
    perfect = evaluate_bleu(oracle, data, hypotheses=refs)
    assert perfect.tokenized.score == pytest.approx(100.0)
    assert perfect.sacrebleu.score > 60  # lower-cased, re-detokenized text against the cased originals
    assert "sacrebleu" in str(perfect).lower()
    via_model = evaluate_bleu(oracle, data)  # the oracle's <unk>s cost some points
    assert 30 < via_model.tokenized.score < 100
    empty = evaluate_bleu(oracle, data, hypotheses=[["a"]] * 1000)
    assert empty.tokenized.score < 1


def test_bleu_by_length(data):
    refs = [t for _, t in data.tokens["test"]]
    lengths = [len(s) for s, _ in data.tokens["test"]]
    rows = bleu_by_length(refs, refs, lengths, edges=(1, 10, 15, 100))
    assert sum(r["n"] for r in rows) == 1000
    assert all(r["bleu"] == pytest.approx(100.0) for r in rows)
    assert all(r["lo"] <= r["mean_len"] < r["hi"] for r in rows)
    # damage only long sentences: only the long buckets drop
    hyps = [r if n < 15 else r[: len(r) // 2] for r, n in zip(refs, lengths)]
    rows = bleu_by_length(hyps, refs, lengths, edges=(1, 15, 100))
    assert rows[0]["bleu"] == pytest.approx(100.0) and rows[1]["bleu"] < 70
    with pytest.raises(ValueError, match="strictly increasing"):
        bleu_by_length(refs, refs, lengths, edges=(5, 5))
    with pytest.raises(ValueError, match="as many"):
        bleu_by_length(refs[:3], refs, lengths)


def test_head_is_the_first_sentences_of_one_split(data):
    sub = data.head(5)
    assert list(sub.datasets) == ["test"] and len(sub.test) == 5
    assert sub.src_vocab is data.src_vocab and sub.tgt_vocab is data.tgt_vocab
    assert [sub.test[i] for i in range(5)] == [data.test[i] for i in range(5)]
    assert sub.pairs["test"] == data.pairs["test"][:5] and sub.tokens["test"] == data.tokens["test"][:5]
    assert evaluate_bleu(oracle, sub, "test").hypotheses == evaluate_bleu(oracle, data, "test").hypotheses[:5]
    assert len(data.head(3, "val").val) == 3
    with pytest.raises(KeyError, match="no split 'dev'"):
        data.head(3, "dev")
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        data.head(0)
