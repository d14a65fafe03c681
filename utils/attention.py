"""Attention: scaled dot-product attention, masks, multi-head attention, and
additive (Bahdanau) attention for comparison.

Shapes follow ``torch.nn.functional.scaled_dot_product_attention``:

- ``q`` (..., Tq, d_k), ``k`` (..., Tk, d_k), ``v`` (..., Tk, d_v);
- a mask is **boolean** and broadcastable to (..., Tq, Tk), with **True = may
  attend** (False positions get -inf before the softmax, hence weight exactly 0). It has
  2 dims, a (Tq, Tk) pattern for the whole batch, or as many dims as the scores, such as
  ``key_padding_mask(ids)`` (B, 1, 1, Tk); a raw (B, Tk) padding mask is refused, since it
  would be read as (Tq, Tk) (see :func:`check_mask`);
- a query row that may attend to nothing (all False) gets all-zero weights and a
  zero output instead of NaN. PyTorch's fused kernel does the same.

``MultiHeadAttention`` works on (B, T, d_model) batches and returns the weights
of every head, (B, H, Tq, Tk); ``load_from_torch`` copies the weights of an
``nn.MultiheadAttention`` so the two can be compared number for number.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from utils import checks
from utils.checks import Bool, Float, Ids, Tensor, contract

__all__ = [
    "scaled_dot_product_attention",
    "causal_mask",
    "key_padding_mask",
    "combine_masks",
    "check_mask",
    "MultiHeadAttention",
    "mha_from_torch",
    "AdditiveAttention",
]


def check_mask(mask: torch.Tensor, target_shape: tuple[int, ...] | torch.Size, name: str = "mask",
               device: torch.device | None = None) -> None:
    """Raise a clear error unless ``mask`` is a bool tensor that can only mean one thing for
    scores of ``target_shape`` (..., Tq, Tk).

    A mask has either **2 dims**, a (Tq, Tk) pattern shared by every sentence and head (e.g.
    ``causal_mask(T)``), or **as many dims as the scores**, broadcastable to them (e.g.
    ``key_padding_mask(ids)``, (B, 1, 1, Tk)). A raw (B, Tk) padding mask is refused: it would
    be read as (Tq, Tk). When B == Tq a 2-D mask could be either, so it is refused too, unless
    its rows are all equal (then both readings agree).

    A mask in the other convention (True = blocked, as ``nn.MultiheadAttention`` takes) is refused
    where it can be recognised: ``~causal_mask(T)``, ``ids == pad`` (True at the padding of right-padded
    ids), the two combined, and a mask that blocks every key for every query; see
    :func:`_inverted_convention`. With ``device``, the mask must be on it (the scores' device).
    """
    checks.tensor(mask, name, "of dtype bool (True = may attend)")
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must have dtype torch.bool with True = may attend (the convention of "
            f"F.scaled_dot_product_attention), got {mask.dtype}. If you have an additive float mask or a "
            f"True = blocked mask (nn.MultiheadAttention's convention), convert it first, e.g. `~blocked`."
        )
    if device is not None and mask.device != device:
        raise ValueError(f"{name} is on {mask.device} but the scores are on {device}; move it with {name}.to({str(device)!r}) "
                         f"(causal_mask(T, device=...) builds it there)")
    target_shape = torch.Size(target_shape)
    how = ("for key padding, turn a (B, Tk) mask into (B, 1, 1, Tk) with key_padding_mask(mask) or "
           "mask[:, None, None, :] (mask[:, None, :] for 3-D scores)")
    if mask.dim() not in (2, len(target_shape)):
        raise ValueError(f"{name} of shape {tuple(mask.shape)} has {mask.dim()} dims; a mask has 2, (Tq, Tk), shared "
                         f"by the whole batch, or as many as the scores {tuple(target_shape)} (..., Tq, Tk); {how}")
    try:
        shape = checks.broadcast(mask.shape, target_shape)
    except RuntimeError:
        shape = None
    if shape != target_shape:
        raise ValueError(f"{name} of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
                         f"{tuple(target_shape)} (..., Tq, Tk); use (Tq, Tk) for a pattern such as causal_mask(Tq); {how}")
    if mask.dim() == 2 < len(target_shape) and mask.shape[0] == target_shape[0] > 1 and not bool((mask == mask[:1]).all()):
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} is ambiguous for scores {tuple(target_shape)}: the batch size and "
            f"the number of queries are both {mask.shape[0]}, so it could be a (Tq, Tk) pattern or a (B, Tk) "
            f"padding mask. Give it the scores' number of dims: {how}; for a pattern shared by the batch, such as "
            f"causal_mask(T), add leading dims of size 1 (mask[None, None] for (B, H, Tq, Tk) scores)"
        )
    refuse_inverted(mask, target_shape[-2], target_shape[-1], name)


def refuse_inverted(mask: torch.Tensor, T_q: int, T_k: int, name: str = "mask",
                    build: str = "causal_mask(T) and key_padding_mask(ids) (True at real tokens)") -> None:
    """A ValueError, saying which convention is expected, if the bool ``mask`` (..., Tq, Tk) is
    recognisably written as True = blocked (see :func:`_inverted_convention`); ``build`` says how
    to build the right one. Costs one reduction (a GPU sync), so it belongs at entry points, not in
    a per-step loop. Used by :func:`check_mask` and by :func:`utils.rnn.masked_softmax`."""
    inverted = _inverted_convention(mask, T_q, T_k)
    if inverted:
        raise ValueError(
            f"{name} {inverted}. Masks here are True = may attend (F.scaled_dot_product_attention's convention); "
            f"this looks like a True = blocked mask (nn.MultiheadAttention's convention, e.g. ~causal_mask(T) or "
            f"ids == pad). Build it with {build}, or invert it: ~{name}"
        )


def _inverted_convention(mask: torch.Tensor, T_q: int, T_k: int) -> str | None:
    """What gives ``mask`` away as written in the other convention (True = blocked), or None.

    In the course's convention some query may always attend the first key: a right-padded sentence
    starts with a real token and no query has it in its future. So the common inverted masks, with
    nothing allowed at key 0, are recognised by one cheap test and told apart only then:
    ``~causal_mask(T)`` (each query sees only its future), ``ids == pad`` (only the padding, a
    trailing run of keys in every row), or both (nn.MultiheadAttention's combined mask), and a mask
    that blocks everything."""
    if mask.numel() == 0 or bool(mask[..., 0].any()):
        return None
    if not bool(mask.any()):
        return "blocks every key for every query (it is False everywhere), so the output would be all zeros"
    if mask.shape[-2] > 1 and T_k >= T_q and not bool((mask & causal_mask(T_q, T_k, device=mask.device)).any()):
        return ("lets each query attend only to keys after its own position (its future), never to itself or "
                "the past, as ~causal_mask(T) does")
    if bool((mask[..., :-1] <= mask[..., 1:]).all()):
        return ("lets no query attend the first key and every row only a trailing run of keys: the padding of "
                "right-padded ids, as ids == pad (True at padding) gives")
    return None


def _sdpa_rules(q, k, v, mask, dropout_p, **_) -> None:
    """What the shapes cannot say: a dropout rate in [0, 1), and a mask of the course's convention for
    the scores (..., Tq, Tk)."""
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)) or not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be a number in [0, 1), got {dropout_p!r}")
    if mask is not None:
        check_mask(mask, checks.broadcast(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2]),
                   device=q.device)


@contract(rules=_sdpa_rules)
def scaled_dot_product_attention(
    q: Float["... Tq d_k"],
    k: Float["... Tk d_k"],
    v: Float["... Tk d_v"],
    mask: Tensor["..."] | None = None,
    dropout_p: float = 0.0,
) -> tuple[Float["... Tq d_v"], Float["... Tq Tk"]]:
    """softmax(q kᵀ / √d_k) v, written out so the weights can be returned.

    Args:
        q: (..., Tq, d_k) queries; k: (..., Tk, d_k) keys; v: (..., Tk, d_v) values.
        mask: optional bool tensor broadcastable to (..., Tq, Tk), **True = may attend**: 2-D
            (Tq, Tk), or with as many dims as the scores (see :func:`check_mask`).
        dropout_p: dropout on the attention weights (applied whenever > 0; pass 0.0 at
            evaluation time, as :class:`MultiHeadAttention` does).

    Returns:
        ``(output, weights)``: output (..., Tq, d_v) and weights (..., Tq, Tk), the
        softmax before dropout. Masked positions have weight exactly 0; a query row
        with nothing to attend to has all-zero weights and a zero output (not NaN).
    """
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
        # A row with no allowed key would be softmax(-inf, ..., -inf) = NaN; give it
        # finite scores here and zero its weights below.
        empty = ~mask.any(dim=-1, keepdim=True)  # (..., Tq, 1)
        scores = scores.masked_fill(empty, 0.0)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    attn = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return attn @ v, weights


def causal_mask(T_q: int, T_k: int | None = None, device: torch.device | str | None = None) -> torch.Tensor:
    """(T_q, T_k) bool, True where query i may attend key j, i.e. j is not in its future.

    With ``T_k > T_q`` (step-by-step decoding with cached keys) the queries are the
    *last* ``T_q`` positions, so query i sits at position ``T_k - T_q + i``.
    """
    if checks.trusted():  # built inside a model: the sizes are its own
        return torch.ones(T_q, T_q if T_k is None else T_k, dtype=torch.bool, device=device).tril(
            diagonal=(T_q if T_k is None else T_k) - T_q)
    T_q = checks.integer(T_q, "T_q", what="the number of queries")
    T_k = T_q if T_k is None else checks.integer(T_k, "T_k", what="the number of keys")
    if T_q < 1 or T_k < T_q:
        raise ValueError(f"causal_mask needs 1 <= T_q <= T_k, got T_q={T_q}, T_k={T_k}")
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


def _key_padding_rules(ids_or_bool: torch.Tensor, pad_id: int) -> None:
    """What the shape cannot say: ``pad_id`` is a whole number, and a bool mask is True at real tokens (a
    right-padded sentence starts with one), not True at the padding."""
    checks.integer(pad_id, "pad_id")
    if ids_or_bool.dtype == torch.bool and ids_or_bool.numel() and not bool(ids_or_bool[:, 0].any()):
        raise ValueError(
            "key_padding_mask got an ids_or_bool mask that is False at the first position of every sentence"
            + (" (False everywhere)" if not bool(ids_or_bool.any()) else "")
            + ": a bool mask here is True at real tokens (as pad_sequences and ids != pad give) and batches are "
            "right-padded, so every sentence starts True. This looks like ids == pad (True at padding, "
            "nn.MultiheadAttention's key_padding_mask convention): pass ids != pad, ~mask, or the ids themselves")


@contract(rules=_key_padding_rules)
def key_padding_mask(ids_or_bool: Ids["B Tk"] | Bool["B Tk"], pad_id: int = 0) -> Bool["B 1 1 Tk"]:
    """(B, 1, 1, Tk) bool, True at real tokens, ready to broadcast over heads and queries.

    ``ids_or_bool`` is either (B, Tk) integer token ids (``pad_id`` marks padding) or
    a (B, Tk) bool mask that is already True at real tokens (as from
    ``utils.text.pad_sequences``).
    """
    real = ids_or_bool if ids_or_bool.dtype == torch.bool else ids_or_bool != pad_id  # (B, Tk)
    return real[:, None, None, :]


def _broadcast_rules(masks: tuple[torch.Tensor | None, ...]) -> None:
    """What the shapes cannot say: the masks broadcast to one shape."""
    shapes = [tuple(m.shape) for m in masks if m is not None]
    try:
        checks.broadcast(*shapes)
    except RuntimeError:
        raise ValueError(f"masks of shapes {', '.join(map(str, shapes))} do not broadcast to one shape; give each the "
                         f"scores' number of dims, e.g. (B, 1, 1, Tk) from key_padding_mask(ids) and (Tq, Tk) from "
                         f"causal_mask(T)") from None


@contract(rules=_broadcast_rules)
def combine_masks(*masks: Bool["..."] | None) -> Bool["..."] | None:
    """Logical AND of bool masks (None = no constraint), with broadcasting; e.g.
    ``combine_masks(key_padding_mask(ids), causal_mask(T))`` gives (B, 1, T, T)."""
    out = None
    for m in masks:
        if m is not None:
            out = m if out is None else out & m
    return out


def additive_mask(mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The bool mask (True = may attend) written additively, as equations write it:
    ``M = 0`` where attending is allowed and ``-inf`` where it is not, so that
    ``softmax(scores + M)`` equals ``softmax(scores.masked_fill(~mask, -inf))``. PyTorch's
    ``F.scaled_dot_product_attention`` accepts either form as ``attn_mask``."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"additive_mask expects a bool mask with True = may attend, got {getattr(mask, 'dtype', type(mask).__name__)}")
    if not dtype.is_floating_point:
        raise TypeError(f"additive_mask needs a floating-point dtype for -inf, got {dtype}")
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, float("-inf"))


_BATCH_FIRST = ("MultiHeadAttention takes batch-first (B, T, d_model) tensors: with PyTorch's default (T, B, d_model) "
                "layout, pass x.transpose(0, 1)")


class MultiHeadAttention(nn.Module):
    """Multi-head attention as in "Attention Is All You Need".

    Projects queries, keys and values with ``W_Q, W_K, W_V`` (d_model -> d_model),
    splits them into ``num_heads`` heads of size ``d_k = d_model // num_heads``,
    attends in each head, concatenates the heads and projects with ``W_O``.
    Parameters: 4·d_model² weights + 4·d_model biases.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        d_model, num_heads = checks.sizes(d_model=d_model, num_heads=num_heads)
        checks.probability(dropout)
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads}): each head gets d_model // num_heads dimensions")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d_model) -> (B, H, T, d_k)."""
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, T, d_k) -> (B, T, d_model), the concatenation of the heads."""
        B, H, T, d_k = x.shape
        return x.transpose(1, 2).reshape(B, T, H * d_k)

    def _rules(self, query, key, mask, **_) -> None:
        if mask is not None:
            check_mask(mask, (query.shape[0], self.num_heads, query.shape[1], key.shape[1]), device=query.device)

    @contract(rules=_rules, hint=_BATCH_FIRST)
    def forward(
        self,
        query: Float["B Tq d_model"],
        key: Float["B Tk d_model"],
        value: Float["B Tk d_model"],
        mask: Tensor["..."] | None = None,
        need_weights: bool = True,
    ) -> tuple[Float["B Tq d_model"], Float["B H Tq Tk"] | None]:
        """query (B, Tq, D), key and value (B, Tk, D); ``mask`` bool broadcastable to
        (B, H, Tq, Tk), True = may attend. Returns ``(output (B, Tq, D), weights
        (B, H, Tq, Tk))``; with ``need_weights=False`` PyTorch's fused kernel is used
        and the weights are ``None``.

        The layout is batch-first. A (T, B, D) tensor (PyTorch's default layout, as
        ``nn.MultiheadAttention(batch_first=False)`` takes) cannot always be told from a (B, T, D)
        one: it would attend across the batch instead of along the sentence. Transpose it first
        with ``x.transpose(0, 1)``; where query and key disagree on the first dim, the error says so."""
        q = self.split_heads(self.q_proj(query))  # (B, H, Tq, d_k)
        k = self.split_heads(self.k_proj(key))    # (B, H, Tk, d_k)
        v = self.split_heads(self.v_proj(value))  # (B, H, Tk, d_k)
        p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=p)
        else:
            out, weights = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p), None
        return self.out_proj(self.merge_heads(out)), weights  # (B, Tq, D)

    @torch.no_grad()
    def load_from_torch(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of a ``torch.nn.MultiheadAttention`` with the same
        ``embed_dim``/``num_heads`` (and no kdim/vdim, bias_k or add_zero_attn). Returns self.

        Note the mask conventions differ: ``nn.MultiheadAttention``'s bool masks are
        True = *blocked*, ours True = may attend; pass ``~mask`` to it."""
        if mha.embed_dim != self.d_model or mha.num_heads != self.num_heads:
            raise ValueError(f"shape mismatch: nn.MultiheadAttention(embed_dim={mha.embed_dim}, num_heads={mha.num_heads}) vs ours (d_model={self.d_model}, num_heads={self.num_heads})")
        if not mha._qkv_same_embed_dim or mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError("only nn.MultiheadAttention without kdim/vdim, add_bias_kv or add_zero_attn can be loaded")
        has_bias = mha.in_proj_bias is not None
        if has_bias != (self.q_proj.bias is not None):
            raise ValueError(f"bias mismatch: nn.MultiheadAttention bias={has_bias}, ours bias={self.q_proj.bias is not None}")
        D = self.d_model
        for i, lin in enumerate((self.q_proj, self.k_proj, self.v_proj)):
            lin.weight.copy_(mha.in_proj_weight[i * D:(i + 1) * D])
            if has_bias:
                lin.bias.copy_(mha.in_proj_bias[i * D:(i + 1) * D])
        self.out_proj.weight.copy_(mha.out_proj.weight)
        if has_bias:
            self.out_proj.bias.copy_(mha.out_proj.bias)
        return self


def mha_from_torch(mha: nn.MultiheadAttention) -> MultiHeadAttention:
    """A :class:`MultiHeadAttention` holding a copy of ``mha``'s weights (same dtype and device)."""
    ours = MultiHeadAttention(mha.embed_dim, mha.num_heads, dropout=mha.dropout, bias=mha.in_proj_bias is not None)
    ours = ours.to(device=mha.in_proj_weight.device, dtype=mha.in_proj_weight.dtype)
    return ours.load_from_torch(mha)


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: score(q, k) = wᵀ tanh(W_q q + W_k k).

    Same call and mask convention as :func:`scaled_dot_product_attention`; kept here
    to compare speed and behaviour with dot-product attention.
    """

    def __init__(self, d_q: int, d_k: int, d_hidden: int):
        super().__init__()
        d_q, d_k, d_hidden = checks.sizes(d_q=d_q, d_k=d_k, d_hidden=d_hidden)
        self.d_q, self.d_k = d_q, d_k
        self.W_q = nn.Linear(d_q, d_hidden, bias=False)
        self.W_k = nn.Linear(d_k, d_hidden, bias=False)
        self.w = nn.Linear(d_hidden, 1, bias=False)

    def _rules(self, q, k, mask, **_) -> None:
        if mask is not None:
            check_mask(mask, checks.broadcast(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2]),
                       device=q.device)

    @contract(rules=_rules)
    def forward(self, q: Float["... Tq d_q"], k: Float["... Tk d_k"], v: Float["... Tk d_v"],
                mask: Tensor["..."] | None = None) -> tuple[Float["... Tq d_v"], Float["... Tq Tk"]]:
        """q (..., Tq, d_q), k (..., Tk, d_k), v (..., Tk, d_v) -> (output (..., Tq, d_v), weights (..., Tq, Tk))."""
        # Every (query, key) pair goes through the hidden layer: (..., Tq, Tk, d_hidden).
        hidden = torch.tanh(self.W_q(q).unsqueeze(-2) + self.W_k(k).unsqueeze(-3))
        scores = self.w(hidden).squeeze(-1)  # (..., Tq, Tk)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~mask.any(-1, keepdim=True), 0.0)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
        return weights @ v, weights
