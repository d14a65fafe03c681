"""Explorers for notebooks 07 (the Transformer block) and 08 (translation): plotting
functions that a notebook calls once statically and then offers through :func:`utils.explorers.explore`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from torch import nn

from utils import checks
from utils.plotting import plot_attention
from utils.text import Vocab, tokenize
from utils.transformer import EncoderLayer, Transformer, attention_maps, beam_search, greedy_decode

__all__ = ["gradient_norms_by_depth", "plot_gradient_norms", "translate_sentence", "plot_translation"]

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


def translate_sentence(model: Transformer, src_vocab: Vocab, tgt_vocab: Vocab, sentence: str, method: str = "greedy",
                       beam_size: int = 4, max_len: int | None = None) -> dict:
    """Translate one raw sentence and collect the attention maps of the translation.

    Returns ``{"src": source tokens with <bos>/<eos>, "out": output tokens, "rows": the token
    each decoder position produced (the output, then <eos> if it stopped), "maps": attention_maps
    of the teacher-forced pass over <bos> + output}``."""
    if method not in ("greedy", "beam"):
        raise ValueError(f"method must be 'greedy' or 'beam', got {method!r}")
    checks.model_vocab(model, (src_vocab, tgt_vocab), "src_vocab and tgt_vocab")  # those it was saved with
    words = tokenize(sentence)
    if not words:
        raise ValueError("the sentence has no words to translate")
    device = next(model.parameters()).device
    src = torch.tensor([src_vocab.encode(words, add_bos=True, add_eos=True)], device=device)  # (1, S)
    n = max_len or min(2 * src.shape[1] + 10, model.cfg.max_len - 1)  # <bos> + n tokens fit attention_maps
    if method == "greedy":
        ids = greedy_decode(model, src, n, tgt_vocab.bos_id, tgt_vocab.eos_id)[0]
    else:
        ids = beam_search(model, src, beam_size, n, tgt_vocab.bos_id, tgt_vocab.eos_id)[0]
    stopped = len(ids) < n
    tgt_in = torch.tensor([[tgt_vocab.bos_id] + ids], device=device)  # (1, T)
    maps = attention_maps(model, src, tgt_in)
    out = [tgt_vocab.itos[i] for i in ids]
    return dict(src=[src_vocab.itos[i] for i in src[0].tolist()], out=out,
                rows=out + (["<eos>"] if stopped else [""]), maps=maps)


def plot_translation(model: Transformer, src_vocab: Vocab, tgt_vocab: Vocab, sentence: str, method: str = "greedy",
                     layer: int = -1, head: int | None = None) -> plt.Figure:
    """Translate ``sentence`` and draw the decoder's cross-attention of one ``layer`` (negative
    counts from the top) and one ``head`` (None: the mean over heads): one row per output token,
    one column per source token. ``layer`` and ``head`` are indices (from 0); the title counts
    layers and heads from 1, as the notebooks' text does."""
    L, H = len(model.decoder.layers), model.cfg.num_heads
    if not -L <= layer < L:
        raise ValueError(f"layer must be in [{-L}, {L - 1}] for a {L}-layer decoder, got {layer}")
    if head is not None and not 0 <= head < H:
        raise ValueError(f"head must be None (mean over heads) or in [0, {H - 1}], got {head}")
    t = translate_sentence(model, src_vocab, tgt_vocab, sentence, method)
    cross = t["maps"]["cross"][layer, 0]                  # (H, T, S)
    w = cross.mean(0) if head is None else cross[head]   # (T, S)
    fig, ax = plt.subplots(figsize=(0.5 * len(t["src"]) + 3, 0.4 * len(t["rows"]) + 2))
    which = f"layer {layer % L + 1}, " + ("mean of heads" if head is None else f"head {head + 1}")  # titles count from 1
    plot_attention(w, t["rows"], t["src"], ax=ax, title=f"{' '.join(t['out'])}\n(cross-attention, {which})")
    ax.set_xlabel("German source")
    ax.set_ylabel("English output")
    fig.tight_layout()
    return fig
