"""utils.metrics against sacrebleu itself and hand-checkable cases."""

from __future__ import annotations

import pytest
import sacrebleu
import torch

from utils.metrics import bleu, exact_match, token_accuracy, tokenized_bleu

HYPS = ["a man is riding a bike .", "two dogs play in the snow", "a woman sings on stage ."]
REFS = ["a man rides a bicycle .", "two dogs are playing in the snow .", "a woman is singing on a stage ."]


def test_bleu_equals_sacrebleu():
    ours = bleu(HYPS, REFS)
    ref = sacrebleu.corpus_bleu(HYPS, [REFS])
    assert ours.score == pytest.approx(ref.score)
    assert "tok:13a" in ours.signature and "nrefs:1" in ours.signature
    assert bleu(REFS, REFS).score == pytest.approx(100.0)


def test_tokenized_bleu_uses_tokens_as_given():
    h = [s.split() for s in HYPS]
    r = [s.split() for s in REFS]
    ours = tokenized_bleu(h, r)
    ref = sacrebleu.corpus_bleu(HYPS, [REFS], tokenize="none")
    assert ours.score == pytest.approx(ref.score)
    assert "tok:none" in ours.signature
    assert 0 < ours.score < 100


def test_bleu_input_errors():
    with pytest.raises(ValueError, match="pair up"):
        bleu(HYPS, REFS[:2])
    with pytest.raises(TypeError, match="single str"):
        bleu("a man", "a man")
    with pytest.raises(TypeError, match="lists of tokens"):
        tokenized_bleu(HYPS, REFS)
    with pytest.raises(ValueError, match="no sentences"):
        bleu([], [])


def test_token_accuracy_masks_pads():
    target = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    pred = torch.tensor([[5, 6, 1, 0], [8, 2, 0, 0]])
    mask = target != 0
    assert token_accuracy(pred, target, mask) == pytest.approx(3 / 5)
    assert token_accuracy(pred, target) == pytest.approx(6 / 8)  # pads counted when no mask
    logits = torch.nn.functional.one_hot(pred, 10).float()
    assert token_accuracy(logits, target, mask) == pytest.approx(3 / 5)
    with pytest.raises(ValueError, match="same shape"):
        token_accuracy(pred[:, :2], target)
    with pytest.raises(TypeError, match="bool"):  # a wrong dtype is a TypeError (CONTRIBUTING.md, Errors)
        token_accuracy(pred, target, mask.long())


def test_exact_match():
    assert exact_match([[1, 2], [3]], [[1, 2], [4]]) == 0.5
    assert exact_match([["a"]], [("a",)]) == 1.0


def test_every_sentence_is_type_checked_not_only_the_first():
    h = [s.split() for s in HYPS]
    r = [s.split() for s in REFS]
    with pytest.raises(TypeError, match=r"lists of tokens per sentence, but hypotheses\[2\] is a str.*tokenize"):
        tokenized_bleu(h[:2] + [HYPS[2]], r)
    with pytest.raises(TypeError, match=r"references\[1\] is a str"):
        tokenized_bleu(h, [r[0], REFS[1], r[2]])
    with pytest.raises(TypeError, match=r"hypotheses\[1\] holds 5 \(int\).*vocab.decode"):
        tokenized_bleu([h[0], [5, 6], h[2]], r)
    with pytest.raises(TypeError, match=r"bleu expects one str per sentence, but references\[2\] is a list.*detokenize"):
        bleu(HYPS, REFS[:2] + [r[2]])
