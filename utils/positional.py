"""Positional information for attention, which on its own sees a set, not a sequence.

- :func:`sinusoidal_encoding` is the fixed encoding of "Attention Is All You Need":
  ``PE[pos, 2i] = sin(pos / 10000^(2i/d_model))`` and
  ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))``; both members of a (sin, cos)
  pair share the frequency of index 2i. (Some lecture slides write the cosine's
  exponent as (2i+1)/d_model; the paper, and this code, use 2i/d_model.)
- :func:`offset_matrix` is the fixed rotation M_k with PE[pos + k] = M_k · PE[pos].
- :class:`SinusoidalPositionalEncoding` and :class:`LearnedPositionalEmbedding` add
  positions to a (B, T, D) batch; both take ``offset`` so that step-by-step decoding
  (one new token at position ``offset``) gets the right positions.
"""

from __future__ import annotations

import torch
from torch import nn

from utils import checks
from utils.checks import Float, contract

__all__ = ["sinusoidal_encoding", "offset_matrix", "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding"]


def _frequencies(d_model: int, base: float) -> torch.Tensor:
    """ω_i = 1 / base^(2i/d_model) for i = 0 .. ceil(d_model/2) - 1, in float64."""
    base = checks.number(base, "base", above=1.0, what="the wavelengths grow up to 2π·base; the paper's is 10000")
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return base ** (-two_i / d_model)


def sinusoidal_encoding(max_len: int, d_model: int, offset: int = 0, base: float = 10000.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(max_len, d_model) sinusoidal encodings of positions ``offset .. offset + max_len - 1``.

    Even dimensions 2i hold sin(pos·ω_i), odd dimensions 2i+1 hold cos(pos·ω_i), with
    ω_i = 1 / 10000^(2i/d_model). Computed in float64, returned as ``dtype``.
    """
    max_len, d_model = checks.sizes(max_len=max_len, d_model=d_model)
    offset = checks.integer(offset, "offset", minimum=0, what="the position of the first row")
    pos = torch.arange(offset, offset + max_len, dtype=torch.float64)[:, None]  # (T, 1)
    angles = pos * _frequencies(d_model, base)[None, :]  # (T, ceil(D/2))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe.to(dtype)


def offset_matrix(k: int, d_model: int, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """(d_model, d_model) matrix M_k with ``PE[pos + k] = M_k @ PE[pos]`` for every pos.

    Block diagonal: the (sin, cos) pair of frequency ω is rotated by the angle k·ω,
    [[cos kω, sin kω], [-sin kω, cos kω]]; it depends on k, not on pos. ``d_model`` must be even.
    """
    k = checks.integer(k, "k", what="the offset in positions")
    (d_model,) = checks.sizes(d_model=d_model)
    if d_model % 2:
        raise ValueError(f"offset_matrix needs an even d_model (sin/cos pairs), got {d_model}")
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    a = k * _frequencies(d_model, base)
    c, s = torch.cos(a), torch.sin(a)
    idx = torch.arange(0, d_model, 2)
    M[idx, idx], M[idx, idx + 1] = c, s
    M[idx + 1, idx], M[idx + 1, idx + 1] = -s, c
    return M.to(dtype)


def _check_input(x: torch.Tensor, d_model: int, offset: int, max_len: int, what: str) -> int:
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{what} expects (B, T, d_model={d_model}), got shape {tuple(x.shape)}")
    if not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a non-negative int (the position of the first token), got {offset!r}")
    T = x.shape[1]
    if offset + T > max_len:
        raise ValueError(f"{what} covers positions 0..{max_len - 1}, but positions {offset}..{offset + T - 1} were asked for; build it with a larger max_len")
    return T


class SinusoidalPositionalEncoding(nn.Module):
    """x + PE[offset : offset + T], then dropout. The table is a non-persistent
    buffer (not in the state dict): it is a formula, not a parameter."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0, base: float = 10000.0):
        super().__init__()
        d_model, max_len = checks.sizes(d_model=d_model, max_len=max_len)
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, base=base), persistent=False)
        self.dropout = nn.Dropout(dropout)

    @contract(rules=lambda self, x, offset: _check_input(x, self.d_model, offset, self.max_len, "SinusoidalPositionalEncoding"))
    def forward(self, x: Float["B T d_model"], offset: int = 0) -> Float["B T d_model"]:
        """x (B, T, d_model) -> (B, T, d_model), the first token being at position ``offset``."""
        T = x.shape[1]
        return self.dropout(x + self.pe[offset:offset + T].to(x.dtype))


class LearnedPositionalEmbedding(nn.Module):
    """x + E[offset : offset + T] with E a trained (max_len, d_model) table, then dropout.

    Positions never seen in training keep their random initial vectors, so a learned
    table does not extrapolate to longer sequences."""

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0, init_std: float = 0.02):
        super().__init__()
        d_model, max_len = checks.sizes(d_model=d_model, max_len=max_len)
        self.d_model, self.max_len = d_model, max_len
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=init_std)
        self.dropout = nn.Dropout(dropout)

    @contract(rules=lambda self, x, offset: _check_input(x, self.d_model, offset, self.max_len, "LearnedPositionalEmbedding"))
    def forward(self, x: Float["B T d_model"], offset: int = 0) -> Float["B T d_model"]:
        """x (B, T, d_model) -> (B, T, d_model), the first token being at position ``offset``."""
        T = x.shape[1]
        pos = torch.arange(offset, offset + T, device=x.device)
        return self.dropout(x + self.embedding(pos).to(x.dtype))
