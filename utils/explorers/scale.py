"""Explorer for notebook 10 (attention at scale): rotary positions make a score depend on the offset only."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from utils.scale import apply_rotary, rope_angles

__all__ = ["rope_scores", "plot_rope_scores"]


def rope_scores(q: torch.Tensor, k: torch.Tensor, m: int, offsets: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Scores rope(q, m) · rope(k, m - offset) for each offset: q (d,), k (d,), offsets (N,) -> (N,)."""
    d = q.shape[-1]
    qc, qs = rope_angles(torch.tensor([m]), d, base)
    kc, ks = rope_angles(m - offsets, d, base)
    return (apply_rotary(k.expand(len(offsets), d), kc, ks) @ apply_rotary(q[None], qc, qs)[0])


def plot_rope_scores(d_k: int = 16, base_exponent: float = 4.0, start: int = 200, seed: int = 0,
                     max_offset: int = 100) -> plt.Figure:
    """Score of one query and one key, rotated to positions m and m - offset, against the offset, for the
    query at position 0 + max_offset (grey) and at ``start`` + max_offset (orange): the curves coincide,
    because RoPE scores depend on the offset only. ``base_exponent`` sets the base 10^x of the frequencies."""
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(d_k, generator=g), torch.randn(d_k, generator=g)
    offsets = torch.arange(0, max_offset + 1)
    base = 10.0 ** base_exponent
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.plot(offsets, rope_scores(q, k, max_offset, offsets, base), color="0.6", lw=5, label=f"query at {max_offset}")
    ax.plot(offsets, rope_scores(q, k, start + max_offset, offsets, base), color="C1", lw=1.6,
            label=f"query at {start + max_offset}")
    ax.axhline(float(q @ k), color="k", lw=0.8, ls=":", label="unrotated q · k")
    ax.set_xlabel("offset m − n (how far back the key is)")
    ax.set_ylabel("score q_m · k_n")
    ax.set_title(f"RoPE, d_k = {d_k}, base = 10^{base_exponent:g}", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig
