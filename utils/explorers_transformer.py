"""Explorers for notebook 07 (the Transformer block): plotting functions that the notebook
calls once statically and then offers through ``ipywidgets.interact``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from torch import nn

from utils.transformer import EncoderLayer

__all__ = ["gradient_norms_by_depth", "plot_gradient_norms"]

MODES = ("post-LN", "pre-LN", "no residual")


def _layer_forward(layer: EncoderLayer, x: torch.Tensor, mode: str) -> torch.Tensor:
    if mode == "no residual":  # the same sub-layers and norms, without the "x +"
        x = layer.norm1(layer.self_attn(x, x, x)[0])
        return layer.norm2(layer.ff(x))
    return layer(x)


def gradient_norms_by_depth(depth: int, mode: str = "post-LN", d_model: int = 32, num_heads: int = 4,
                            seq_len: int = 10, batch: int = 4, seed: int = 0) -> list[float]:
    """Build ``depth`` encoder layers (no dropout), push a random batch through, take a
    regression loss at the top, and return ‖∂loss/∂W‖ of each layer's first feed-forward
    weight, bottom layer first. ``mode``: "post-LN", "pre-LN" or "no residual"."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    layers = nn.ModuleList(EncoderLayer(d_model, num_heads, 4 * d_model, 0.0, pre_norm=mode == "pre-LN") for _ in range(depth))
    x = torch.randn(batch, seq_len, d_model, generator=g)        # (B, T, D)
    target = torch.randn(batch, seq_len, d_model, generator=g)   # (B, T, D)
    h = x
    for layer in layers:
        h = _layer_forward(layer, h, mode)
    loss = ((h - target) ** 2).mean()
    loss.backward()
    return [layer.ff.linear1.weight.grad.norm().item() for layer in layers]


def plot_gradient_norms(depth: int = 24, d_model: int = 32, log_scale: bool = True) -> plt.Figure:
    """Gradient norm of each layer's first feed-forward weight, bottom (layer 1) to top, for
    post-LN, pre-LN and no residual connections."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for mode in MODES:
        norms = gradient_norms_by_depth(depth, mode, d_model=d_model)
        ax.plot(range(1, depth + 1), norms, marker="o", ms=3, label=mode)
    if log_scale:
        ax.set_yscale("log")
    ax.set_xlabel("layer (1 = bottom, next to the input)")
    ax.set_ylabel("‖∂loss/∂W₁‖ of the layer's FFN")
    ax.set_title(f"gradient norm by depth ({depth} layers, d_model = {d_model})")
    ax.legend()
    fig.tight_layout()
    return fig
