"""Explorer for notebook 09 (the GPT language model): a plotting function that the notebook
calls once statically and then offers through :func:`utils.explorers.explore`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from utils import checks
from utils.gpt import GPT, CharTokenizer, generate, sampling_distribution, show_char

__all__ = ["next_char_probabilities", "plot_next_char"]


@torch.no_grad()
def next_char_probabilities(model: GPT, tok: CharTokenizer, prompt: str, temperature: float = 1.0,
                            top_k: int | None = None) -> torch.Tensor:
    """(V,) the distribution the sampler draws the character after ``prompt`` from."""
    checks.model_vocab(model, tok, "tok")  # a model saved with its tokenizer meets another text's
    if not prompt:
        raise ValueError("prompt must hold at least one character")
    model.eval()
    device = next(model.parameters()).device
    idx = torch.tensor([tok.encode(prompt)[-model.cfg.block_size:]], device=device)  # (1, T)
    return sampling_distribution(model(idx)[0][0, -1], temperature, top_k).cpu()  # (V,)


def plot_next_char(model: GPT, tok: CharTokenizer, prompt: str = "ROMEO:\nBut soft", temperature: float = 1.0,
                   top_k: int = 0, length: int = 120, seed: int = 0, show: int = 15) -> plt.Figure:
    """Left: the ``show`` most probable next characters after ``prompt`` at this temperature
    (``top_k`` 0 = no top-k filter). Right: a continuation of ``length`` characters sampled
    with the same settings and ``seed``."""
    k = top_k or None
    checks.model_vocab(model, tok, "tok")
    probs = next_char_probabilities(model, tok, prompt, temperature, k)
    top = torch.topk(probs, min(show, len(probs)))
    device = next(model.parameters()).device
    idx = torch.tensor([tok.encode(prompt)], device=device)
    g = torch.Generator(device=device).manual_seed(seed)
    out = tok.decode(generate(model, idx, length, temperature=temperature, top_k=k, generator=g)[0, idx.shape[1]:])
    fig, (ax, ax_text) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [1, 1.3]})
    ax.bar(range(len(top.values)), top.values.numpy(), color="C0")
    ax.set_xticks(range(len(top.values)), [show_char(tok.chars[i]) for i in top.indices.tolist()])
    ax.set_ylabel("probability of the next character")
    ax.set_title(f"after {''.join(map(show_char, prompt[-12:]))}   (T = {temperature:g}, top-k = {k or 'off'})", fontsize=10)
    ax_text.axis("off")
    ax_text.text(0, 1, prompt + "▌" + out, va="top", family="monospace", fontsize=8.5, wrap=True,
                 transform=ax_text.transAxes)
    ax_text.set_title("a sampled continuation (after ▌)", fontsize=10)
    fig.tight_layout()
    return fig
