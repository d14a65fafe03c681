"""Figures used across the course: attention heatmaps labelled with tokens, and loss curves.

Each function draws on a Matplotlib ``Axes`` (made for you if not given) and
returns it, so notebooks can call them once statically and again from widgets.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from utils.checks import Float, contract
from utils.training import History

__all__ = ["plot_attention", "plot_attention_grid", "plot_loss", "plot_by_length"]


def _fits_tokens(weights: torch.Tensor, query_tokens: Sequence[str], key_tokens: Sequence[str], **_) -> None:
    """What the shape cannot say: the map has a row for each query token and a column for each key token."""
    nq, nk = len(query_tokens), len(key_tokens)
    if weights.shape[-2] < nq or weights.shape[-1] < nk:
        raise ValueError(f"weights: a map of shape {tuple(weights.shape[-2:])} is smaller than the {nq} query x {nk} "
                         f"key tokens given")


def _grid_rules(weights: torch.Tensor, query_tokens: Sequence[str], key_tokens: Sequence[str], **_) -> None:
    """(R, C, Tq, Tk) or (C, Tq, Tk): at most 4 dims, and maps as large as the tokens."""
    if weights.dim() > 4:
        raise ValueError(f"weights must be (R, C, Tq, Tk) (rows, cols: e.g. layers, heads) or (C, Tq, Tk), got shape "
                         f"{tuple(weights.shape)}")
    _fits_tokens(weights, query_tokens, key_tokens)


@contract(rules=_fits_tokens)
def plot_attention(
    weights: Float["Tq Tk"] | np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    ax: plt.Axes | None = None,
    title: str | None = None,
    cmap: str = "viridis",
    annotate: bool = False,
    colorbar: bool = True,
    vmax: float | None = None,
) -> plt.Axes:
    """Heatmap of one attention map: rows are queries (what is being produced),
    columns are keys (what is attended to), both labelled with their tokens.

    ``weights`` is (Tq, Tk); extra rows/columns beyond the token lists (padding)
    are cut off, so pass the real tokens only. The colours run from 0 to ``vmax``
    (default: the map's own largest weight; pass 1.0 to compare several maps).
    """
    nq, nk = len(query_tokens), len(key_tokens)
    w = weights.detach().float().cpu().numpy()[:nq, :nk]
    if ax is None:
        _, ax = plt.subplots(figsize=(0.45 * nk + 2, 0.4 * nq + 1.5))
    if vmax is None:
        vmax = max(1e-9, float(w.max())) if w.min() >= 0 else None
    im = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=vmax, aspect="auto")
    ax.set_xticks(range(nk), list(key_tokens), rotation=90)
    ax.set_yticks(range(nq), list(query_tokens))
    ax.tick_params(length=0)
    if annotate:
        for i in range(nq):
            for j in range(nk):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if w[i, j] < 0.5 * w.max() else "black")
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


@contract(rules=_grid_rules)
def plot_attention_grid(
    weights: Float["... C Tq Tk"] | np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    row_label: str = "layer",
    col_label: str = "head",
    cell_size: float = 2.6,
    colorbar: bool = False,
) -> plt.Figure:
    """A grid of attention maps: ``weights`` is (rows, cols, Tq, Tk), e.g.
    (layers, heads, Tq, Tk); (heads, Tq, Tk) gives a single row.

    Each panel is coloured from 0 to its own largest weight; with ``colorbar=True`` every
    panel uses one scale, 0 to 1, shown by one colour bar, so panels can be compared."""
    w = weights if weights.dim() == 4 else weights[None]  # (R, C, Tq, Tk)
    R, C = w.shape[:2]
    fig, axes = plt.subplots(R, C, figsize=(cell_size * C + 1, cell_size * R + 0.5), squeeze=False)
    for r in range(R):
        for c in range(C):
            ax = axes[r, c]
            plot_attention(w[r, c], query_tokens, key_tokens, ax=ax, colorbar=False, vmax=1.0 if colorbar else None)
            ax.set_title(f"{row_label} {r + 1} · {col_label} {c + 1}" if R > 1 else f"{col_label} {c + 1}", fontsize=9)  # counted from 1
            if c > 0:
                ax.set_yticklabels([])
            if r < R - 1:
                ax.set_xticklabels([])
    fig.tight_layout()
    if colorbar:
        fig.subplots_adjust(right=0.93)
        cax = fig.add_axes((0.945, 0.15, 0.008, 0.7))
        fig.colorbar(axes[0, 0].images[0], cax=cax, label="attention weight")
    return fig


def plot_loss(history: History, ax: plt.Axes | None = None, window: int = 20, label: str | None = None, title: str | None = None) -> plt.Axes:
    """Training loss per step (faint), its mean over ``window`` steps and, if recorded,
    validation loss at the steps it was measured. ``history`` is a
    :class:`utils.training.History`.

    Each mean is drawn at the middle of the steps it averages (a mean of steps 1..20 at step 10.5), so the
    smoothed curve does not lag behind the raw one; it ends half a window before the last step. The raw and
    smoothed curves of one history share a colour, so several labelled histories can share ``ax``."""
    if not isinstance(history, History):
        raise TypeError(f"history must be a utils.training.History, as fit returns, got {type(history).__name__}"
                        + ("; for a list of losses: plot_loss(History(train_loss=losses))" if isinstance(history, (list, tuple))
                           else "; build one: History(train_loss=..., val_loss=..., val_step=...)" if isinstance(history, dict)
                           else ""))
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    steps = np.arange(1, len(history.train_loss) + 1)
    w = max(1, min(window, len(steps)))
    centre = steps - (np.minimum(steps, w) - 1) / 2          # the middle of the steps each mean covers
    (smooth,) = ax.plot(centre, history.smoothed(w), label=f"{label or 'train'} (smoothed)")
    ax.plot(steps, history.train_loss, alpha=0.25, color=smooth.get_color(), zorder=smooth.get_zorder() - 0.1)
    if history.val_loss:
        ax.plot(history.val_step, history.val_loss, "o--" if label else "o-",
                color=smooth.get_color() if label else None, label=f"{label + ' ' if label else ''}validation")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy loss")
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    return ax


def plot_by_length(curves: dict[str, Sequence[dict]], ylabel: str = "BLEU (tokenized)",
                   title: str = "Quality falls with length", key: str = "bleu", ax: plt.Axes | None = None) -> plt.Axes:
    """One line per model of a score against sentence length: ``curves`` maps a label to the rows of
    :func:`utils.translation.bleu_by_length` (each with ``mean_len`` and ``key``), one point per length bucket."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for label, rows in curves.items():
        ax.plot([r["mean_len"] for r in rows], [r[key] for r in rows], "o-", label=label)
    ax.set(xlabel="source sentence length (tokens, bucket mean)", ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax
