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


@pytest.mark.parametrize("spread", [0.0, 0.05, 1.0])
def test_the_map_labels_do_not_overlap(spread):
    """Three tight clusters of 5-7 words (lessons r3, 01-4: labels overlapped): every word is written once, inside
    the axes, overlapping neither another word nor the legend; spread 0 puts a cluster's words on one point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from utils.embeddings import plot_embeddings_2d

    groups = {"numbers": ["one", "two", "three", "four", "five", "several"],
              "colours": ["red", "green", "blue", "yellow", "orange"],
              "people": ["man", "woman", "boy", "girl", "child", "men", "women"]}
    words = [w for ws in groups.values() for w in ws]
    vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>"] + words)
    g = torch.Generator().manual_seed(0)
    weights = torch.randn(len(vocab), 16, generator=g) * spread
    for c, ws in enumerate(groups.values()):
        weights[[vocab[w] for w in ws]] += torch.randn(16, generator=g) * 3
    fig, ax = plt.subplots(figsize=(6, 5))
    try:
        plot_embeddings_2d(weights, vocab, groups, ax=ax)
        renderer = fig.canvas.get_renderer()
        labels = {}
        for t in ax.texts:
            t.update_positions(renderer)
            labels[t.get_text()] = Text.get_window_extent(t, renderer)
        assert sorted(labels) == sorted(words) and len(ax.texts) == len(words)
        frame, legend = ax.get_window_extent(renderer), ax.get_legend().get_window_extent(renderer)
        names = sorted(labels)
        clashes = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if labels[a].overlaps(labels[b])]
        assert clashes == [], clashes
        assert [w for w, box in labels.items() if box.overlaps(legend)] == []
        outside = [w for w, b in labels.items()
                   if not (frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1)]
        assert outside == [], outside
    finally:
        plt.close(fig)
