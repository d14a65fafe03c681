"""Word embeddings: a continuous-bag-of-words model (predict a word from its
neighbours), nearest neighbours by cosine similarity, and the figures notebook 01
shows (neighbour bars, a 2-D map of the embedding space)."""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.text import Text
from matplotlib.transforms import Bbox
import torch
import torch.nn.functional as F
from torch import nn

from utils import checks
from utils.checks import Float, Ids, contract
from utils.text import Vocab, check_ids, masked_mean

__all__ = ["CBOW", "context_windows", "cosine_matrix", "nearest_neighbours", "plot_neighbours", "plot_embeddings_2d"]


class CBOW(nn.Module):
    """Continuous bag of words: average the embeddings of the context words, then
    score every vocabulary word as the missing centre word."""

    def __init__(self, vocab_size: int, dim: int, pad_id: int = 0):
        super().__init__()
        vocab_size, dim = checks.sizes(vocab_size=vocab_size, dim=dim)
        pad_id = checks.index(pad_id, "pad_id", vocab_size)
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=pad_id)
        self.out = nn.Linear(dim, vocab_size)
        self.pad_id = pad_id

    def _rules(self, context: torch.Tensor) -> None:  # what the shape cannot say: ids inside the vocabulary
        check_ids(context, self.embed.num_embeddings, "context")

    @contract(rules=_rules)
    def forward(self, context: Ids["B C"]) -> Float["B V"]:
        """``context`` (B, C) ids, ``<pad>`` where a window runs off the sentence -> logits (B, V)."""
        e = self.embed(context)                       # (B, C, D)
        h = masked_mean(e, context != self.pad_id)     # (B, D): pads do not count
        return self.out(h)                            # (B, V)


def context_windows(sentences: Sequence[Sequence[int]], window: int = 2, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (context, centre) example in ``sentences``: ``window`` words on each side
    of each position, ``pad_id`` where the window runs past either end.

    Returns ``contexts`` (N, 2*window) and ``centres`` (N,), N = total tokens.
    """
    if isinstance(sentences, str) or isinstance(sentences, torch.Tensor) and sentences.dim() != 2:
        raise TypeError(f"sentences must be a list of sentences, each a list of token ids (vocab.encode(tokenize(s))), "
                        f"got {'a str' if isinstance(sentences, str) else 'a tensor of shape ' + str(tuple(sentences.shape))}")
    window = checks.integer(window, "window")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    ctx, ctr = [], []
    offsets = [o for o in range(-window, window + 1) if o != 0]
    for s in sentences:
        s = torch.as_tensor(list(s), dtype=torch.long)
        padded = F.pad(s, (window, window), value=pad_id)             # (T + 2w,)
        idx = torch.arange(len(s))[:, None] + window + torch.tensor(offsets)[None, :]
        ctx.append(padded[idx])                                        # (T, 2w)
        ctr.append(s)
    return torch.cat(ctx), torch.cat(ctr)


@contract
def cosine_matrix(weights: Float["V D"]) -> Float["V V"]:
    """(V, D) vectors -> (V, V) cosine similarities."""
    w = F.normalize(weights.detach().float(), dim=-1)
    return w @ w.T


@contract
def nearest_neighbours(weights: Float["V D"], vocab: Vocab, word: str, k: int = 8) -> list[tuple[str, float]]:
    """The ``k`` words whose vectors have the highest cosine similarity with ``word``'s
    (the word itself and the special tokens excluded)."""
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a utils.text.Vocab, got {type(vocab).__name__}"
                        + ("; the order is (weights, vocab, word)" if isinstance(word, Vocab) else ""))
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    if word not in vocab:
        raise KeyError(f"{word!r} is not in the vocabulary (it maps to <unk>); try a more frequent word")
    if not 1 <= k <= weights.shape[0] - 5:
        raise ValueError(f"k must be in 1..{weights.shape[0] - 5} (the vocabulary less its 4 special tokens and the "
                         f"word itself), got {k}")
    w = F.normalize(weights.detach().float(), dim=-1)
    sims = w @ w[vocab[word]]                        # (V,)
    sims[: 4] = -2.0                                  # never return <pad>, <unk>, <bos>, <eos>
    sims[vocab[word]] = -2.0
    top = sims.topk(k)
    return [(vocab.itos[i], float(s)) for s, i in zip(top.values, top.indices)]


@contract
def plot_neighbours(weights: Float["V D"], vocab: Vocab, word: str, k: int = 8, ax: plt.Axes | None = None) -> plt.Axes:
    """Horizontal bars: the nearest neighbours of ``word`` and their cosine similarity."""
    pairs = nearest_neighbours(weights, vocab, word, k)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 0.32 * k + 1))
    words, sims = zip(*pairs)
    ax.barh(range(k)[::-1], sims, color="C0")
    ax.set_yticks(range(k)[::-1], words)
    ax.set_xlim(0, 1)
    ax.set_xlabel("cosine similarity")
    ax.set_title(f"nearest neighbours of '{word}'")
    return ax


@contract
def plot_embeddings_2d(weights: Float["V D"], vocab: Vocab, groups: dict[str, Sequence[str]],
                       ax: plt.Axes | None = None) -> plt.Axes:
    """Project the vectors of the given words onto their first two principal
    components and scatter them, coloured by group, each point labelled with its word."""
    words = [w for ws in groups.values() for w in ws]
    missing = [w for w in words if w not in vocab]
    if missing:
        raise KeyError(f"not in the vocabulary: {missing}")
    x = F.normalize(weights.detach().float().cpu()[[vocab[w] for w in words]], dim=-1)  # a GPU model works too
    x = x - x.mean(0)
    _, _, v = torch.linalg.svd(x, full_matrices=False)
    xy = (x @ v[:2].T).numpy()                        # (N, 2)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 5))
    i = 0
    for c, (name, ws) in enumerate(groups.items()):
        ax.scatter(xy[i : i + len(ws), 0], xy[i : i + len(ws), 1], color=f"C{c}", label=name)
        i += len(ws)
    ax.set_xlabel("principal component 1")
    ax.set_ylabel("principal component 2")
    ax.legend(loc="best", fontsize=8)
    _place_labels(ax, xy, words)
    return ax


def _place_labels(ax: plt.Axes, xy, words: Sequence[str]) -> None:
    """Label each point with its word where the label overlaps neither the legend nor a label placed before it
    and stays inside the axes: the nearest such place on rings of growing radius around the point, joined to
    it by a thin line once it is off the point."""
    fig = ax.figure
    ax.set_xlim(*ax.get_xlim())           # the limits the scatter chose, fixed before measuring in pixels
    ax.set_ylim(*ax.get_ylim())
    fig.draw_without_rendering()          # the figure's layout (layout="tight" or "constrained") and the legend's place
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    placed = []                           # what a label may not cover: the legend, the points, the labels so far
    legend = ax.get_legend()
    if legend:
        placed.append(legend.get_window_extent(renderer))
        legend.set_loc(tuple(ax.transAxes.inverted().transform(placed[0].p0)))   # kept there at the next draw
    r = 3 * fig.dpi / 72                  # a point's marker: 6 points across
    placed += [Bbox.from_extents(x - r, y - r, x + r, y + r) for x, y in ax.transData.transform(xy)]
    for (px, py), w in zip(xy, words):
        for dx, dy in _label_offsets():
            t = ax.annotate(w, (px, py), textcoords="offset points", xytext=(dx, dy), fontsize=9,
                            ha="left" if dx >= 0 else "right", va="bottom" if dy >= 0 else "top",
                            arrowprops=dict(arrowstyle="-", lw=0.5, color="0.5") if dx * dx + dy * dy > 50 else None)
            t.update_positions(renderer)
            box = Text.get_window_extent(t, renderer)     # the words alone, not the line to the point
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(b) for b in placed):
                placed.append(box)
                t.set_in_layout(False)    # so that drawing the figure again does not move the axes
                break
            t.remove()
        else:   # no free place nearby: beside the point, overlapping
            ax.annotate(w, (px, py), textcoords="offset points", xytext=(4, 3), fontsize=9).set_in_layout(False)


def _label_offsets():
    """Where a label may go, in points from its point: beside it, then on rings of growing radius."""
    yield 4.0, 3.0
    for radius in (12, 20, 30, 42, 56):
        for angle in range(45, 405, 45):
            yield radius * math.cos(math.radians(angle)), radius * math.sin(math.radians(angle))
