"""utils.embeddings: the errors a learner meets first (the model itself is exercised by notebook 01)."""

from __future__ import annotations

import pytest
import torch

from utils.embeddings import CBOW, nearest_neighbours
from utils.text import Vocab


def test_cbow_ids_outside_the_vocabulary_name_its_size():
    model = CBOW(vocab_size=10, dim=4)
    assert model(torch.tensor([[0, 5, 9, 0]])).shape == (1, 10)
    with pytest.raises(ValueError, match=r"context: id 10 is outside the vocabulary of size 10"):
        model(torch.tensor([[0, 5, 10, 0]]))


def test_nearest_neighbours_k_must_leave_real_words():
    vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "a", "b", "c"])
    weights = torch.randn(len(vocab), 3)
    assert [w for w, _ in nearest_neighbours(weights, vocab, "a", k=2)] != []
    with pytest.raises(ValueError, match=r"k must be in 1..2 .*got 3"):
        nearest_neighbours(weights, vocab, "a", k=3)
    with pytest.raises(ValueError, match="got 0"):
        nearest_neighbours(weights, vocab, "a", k=0)
