"""Explorers for notebooks 04-06 (scaled dot-product attention, multi-head attention, positional
encoding): plotting functions that a notebook calls once statically and then offers through
:func:`utils.explorers.explore`."""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from utils.plotting import plot_attention
from utils.positional import sinusoidal_encoding

__all__ = ["plot_softmax_saturation", "plot_head_maps", "plot_positional_encoding"]


DEFAULT_KEYS = ("a", "man", "in", "an", "orange", "hat", "stares", "at", "something", ".")


def plot_softmax_saturation(d_k: int = 64, scaled: bool = True, seed: int = 0, key_tokens: Sequence[str] = DEFAULT_KEYS) -> plt.Figure:
    """One random query against one key per token (entries ~ N(0, 1)); left: the
    scores q·k (divided by √d_k when ``scaled``), right: their softmax.

    Unscaled scores spread like √d_k, so for large d_k the softmax puts almost all
    weight on one key (saturation). The title reports the largest weight."""
    if d_k < 1:
        raise ValueError(f"d_k must be >= 1, got {d_k}")
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(d_k, generator=g, dtype=torch.float64)
    K = torch.randn(len(key_tokens), d_k, generator=g, dtype=torch.float64)
    scores = K @ q / (math.sqrt(d_k) if scaled else 1.0)
    weights = torch.softmax(scores, dim=0)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.2))
    x = np.arange(len(key_tokens))
    ax1.bar(x, scores.numpy(), color="C0")
    ax1.set_ylabel("score q·k" + (" / √d_k" if scaled else ""))
    ax1.set_title(f"scores, d_k = {d_k}")
    ax2.bar(x, weights.numpy(), color="C1")
    ax2.set_ylim(0, 1)
    ax2.set_ylabel("attention weight")
    ax2.set_title(f"softmax ({'scaled' if scaled else 'unscaled'}): max weight {weights.max():.2f}")
    for ax in (ax1, ax2):
        ax.set_xticks(x, list(key_tokens), rotation=45, ha="right")
        ax.set_xlabel("key")
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def plot_head_maps(weights, query_tokens: Sequence[str], key_tokens: Sequence[str], head: int = 0, layer: int | None = None) -> plt.Figure:
    """One head's attention map from ``weights`` of shape (H, Tq, Tk) or
    (layers, H, Tq, Tk) (pick ``layer``), labelled with tokens."""
    w = weights.detach().float().cpu() if isinstance(weights, torch.Tensor) else torch.as_tensor(weights, dtype=torch.float32)
    if w.dim() == 4:
        if layer is None:
            raise ValueError("weights are (layers, H, Tq, Tk): pass layer=")
        w = w[layer]
    if w.dim() != 3:
        raise ValueError(f"plot_head_maps expects (H, Tq, Tk) or (layers, H, Tq, Tk), got shape {tuple(w.shape)}")
    if not 0 <= head < w.shape[0]:
        raise ValueError(f"head must be in 0..{w.shape[0] - 1}, got {head}")
    fig, ax = plt.subplots(figsize=(0.45 * len(key_tokens) + 2.5, 0.4 * len(query_tokens) + 1.8))
    title = f"head {head + 1}" if layer is None else f"layer {layer + 1} · head {head + 1}"  # titles count from 1
    plot_attention(w[head], query_tokens, key_tokens, ax=ax, title=title)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query")
    fig.tight_layout()
    return fig


def plot_positional_encoding(max_len: int = 64, d_model: int = 64, position: int = 10, dimension: int = 4) -> plt.Figure:
    """Left: the sinusoidal table PE (positions × dimensions) with the chosen
    position and dimension marked; right: that dimension as a function of position
    (a sinusoid of period 2π·10000^(2i/d_model)) and the chosen position's value."""
    if not (0 <= position < max_len and 0 <= dimension < d_model):
        raise ValueError(f"need 0 <= position < {max_len} and 0 <= dimension < {d_model}, got {position}, {dimension}")
    pe = sinusoidal_encoding(max_len, d_model).numpy()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [1.3, 1]})
    im = ax1.imshow(pe, cmap="RdBu", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax1.axhline(position, color="k", lw=0.8)
    ax1.axvline(dimension, color="k", lw=0.8)
    ax1.set_xlabel("encoding dimension")
    ax1.set_ylabel("position in the sequence")
    ax1.set_title(f"sinusoidal PE, d_model = {d_model}")
    fig.colorbar(im, ax=ax1, fraction=0.046, pad=0.04)
    i = dimension // 2
    period = 2 * math.pi * 10000 ** (2 * i / d_model)
    kind = "sin" if dimension % 2 == 0 else "cos"
    ax2.plot(np.arange(max_len), pe[:, dimension], ".-", lw=1)
    ax2.plot([position], [pe[position, dimension]], "o", color="C3", label=f"PE[{position}, {dimension}] = {pe[position, dimension]:.3f}")
    ax2.set_ylim(-1.1, 1.1)
    ax2.set_xlabel("position in the sequence")
    ax2.set_ylabel("value")
    ax2.set_title(f"dimension {dimension}: {kind}, period {period:.1f} positions")
    ax2.legend(loc="lower right", fontsize=8)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    return fig
