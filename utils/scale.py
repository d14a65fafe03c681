"""Attention at scale: the pieces today's language models add to the Transformer of notebooks 07–09.

Top to bottom:

- :func:`block_attention` computes softmax(q kᵀ / √d) v one block of keys at a time with a running
  maximum and a running sum (the online softmax behind FlashAttention), so no (Tq, Tk) matrix is ever
  held: its largest intermediate is (Tq, block);
- :func:`online_softmax_update` is one step of it;
- :func:`repeat_kv` and :class:`GroupedQueryAttention`: ``num_kv_heads`` key/value heads shared by
  groups of query heads (multi-query attention when 1, multi-head attention when ``num_heads``);
  :func:`kv_cache_bytes_per_token` is the size of the cache that saves;
- :func:`rope_angles` and :func:`apply_rotary`: rotary position embeddings (RoPE);
- :class:`RMSNorm` and :class:`SwiGLU`: the normalisation and feed-forward layer of LLaMA-style blocks;
- :func:`influence_by_distance`: how strongly an encoder's output at position t depends on its input at
  position s (the norm of the Jacobian block ∂h_t/∂x_s), by distance |t − s| (path length, measured).

Masks follow :mod:`utils.attention`: boolean, True = may attend; a query with nothing to attend to
gets a zero output.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from utils import checks
from utils.attention import check_mask
from utils.checks import Float, Ids, Tensor, contract

__all__ = ["online_softmax_update", "block_attention", "repeat_kv", "GroupedQueryAttention",
           "kv_cache_bytes_per_token", "rope_angles", "apply_rotary", "RMSNorm", "SwiGLU", "swiglu_hidden",
           "peak_memory", "influence_by_distance"]


@contract(neg_inf=("m", "scores"))  # -inf: no key seen yet, a masked score
def online_softmax_update(m: Float["... Tq 1"], l: Float["... Tq 1"], acc: Float["... Tq d_v"], scores: Float["... Tq b"],
                          v: Float["... b d_v"]) -> tuple[Float["... Tq 1"], Float["... Tq 1"], Float["... Tq d_v"]]:
    """Fold one block of keys into the running state of a softmax-weighted sum.

    State: ``m`` (..., Tq, 1) the largest score seen so far (-inf before any), ``l`` (..., Tq, 1) the sum
    of exp(score - m) so far, ``acc`` (..., Tq, d_v) the sum of exp(score - m) · value so far. ``scores``
    (..., Tq, b) are this block's scores (-inf where masked), ``v`` (..., b, d_v) its values. When the
    maximum grows, the old sums are rescaled by exp(m_old - m_new). After the last block,
    ``acc / l`` is softmax(scores) @ values over all keys."""
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))          # (..., Tq, 1)
    m_safe = m_new.masked_fill(m_new == float("-inf"), 0.0)               # rows with no key yet: nothing to subtract
    p = torch.exp(scores - m_safe)                                        # (..., Tq, b); masked scores give 0
    correction = torch.exp(m - m_safe)                                    # (..., Tq, 1); 0 when m was -inf
    return m_new, l * correction + p.sum(dim=-1, keepdim=True), acc * correction + p @ v


def _block_rules(q, k, mask, block_size, is_causal, **_) -> None:
    checks.integer(block_size, "block_size", minimum=1, what="keys per block")
    if is_causal and k.shape[-2] < q.shape[-2]:
        raise ValueError(f"is_causal needs Tq <= Tk (the queries are the last Tq positions), got Tq={q.shape[-2]}, "
                         f"Tk={k.shape[-2]}")
    if mask is not None:
        check_mask(mask, checks.broadcast(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2]), device=q.device)


@contract(rules=_block_rules)
def block_attention(q: Float["... Tq d_k"], k: Float["... Tk d_k"], v: Float["... Tk d_v"],
                    mask: Tensor["..."] | None = None, block_size: int = 128,
                    is_causal: bool = False) -> Float["... Tq d_v"]:
    """softmax(q kᵀ / √d_k) v, computed ``block_size`` keys at a time (online softmax).

    Shapes and mask as :func:`utils.attention.scaled_dot_product_attention`: q (..., Tq, d_k),
    k (..., Tk, d_k), v (..., Tk, d_v); ``mask`` bool, True = may attend, (Tq, Tk) or with as many dims as
    the scores. Returns the output (..., Tq, d_v) only: the weights are never formed. Peak extra memory
    is O(Tq · block_size) instead of O(Tq · Tk). A query with nothing to attend to gets zeros.
    ``is_causal=True`` applies :func:`utils.attention.causal_mask` (Tq, Tk) block by block, without
    forming it (the queries are the last Tq positions), combined with ``mask`` if one is given."""
    block_size = int(block_size)
    Tq, Tk = q.shape[-2], k.shape[-2]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    q = q / math.sqrt(q.shape[-1])
    m = q.new_full((*batch, Tq, 1), float("-inf"))
    l = q.new_zeros((*batch, Tq, 1))
    acc = q.new_zeros((*batch, Tq, v.shape[-1]))
    for s in range(0, Tk, block_size):
        scores = q @ k[..., s:s + block_size, :].transpose(-2, -1)       # (..., Tq, b)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., s:s + block_size], float("-inf"))
        if is_causal:  # key j is in the future of query i (at position Tk - Tq + i) when j > Tk - Tq + i
            j = torch.arange(s, min(s + block_size, Tk), device=q.device)
            i = torch.arange(Tk - Tq, Tk, device=q.device)
            scores = scores.masked_fill(j[None, :] > i[:, None], float("-inf"))
        m, l, acc = online_softmax_update(m, l, acc, scores, v[..., s:s + block_size, :])
    return acc / l.masked_fill(l == 0, 1.0)  # (..., Tq, d_v); l == 0 only where acc is 0 too


def _repeat_rules(x, n_rep) -> None:
    n_rep = checks.integer(n_rep, "n_rep", what="query heads per key/value head")
    if n_rep < 1:
        raise ValueError(f"n_rep must be >= 1, got {n_rep}")


@contract(rules=_repeat_rules)
def repeat_kv(x: Tensor["B H_kv T d_k"], n_rep: int) -> Tensor["B H T d_k"]:
    """(B, H_kv, T, d_k) -> (B, H_kv · n_rep, T, d_k): each key/value head repeated for its group of
    ``n_rep`` query heads (head h of the queries uses key/value head h // n_rep)."""
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


def kv_cache_bytes_per_token(n_layer: int, num_kv_heads: int, d_k: int, bytes_per_value: int = 2) -> int:
    """Bytes a key/value cache grows by per generated token: keys and values (2) for every layer and
    key/value head, ``d_k`` numbers each (2 bytes in float16/bfloat16, 4 in float32)."""
    n_layer, num_kv_heads, d_k, bytes_per_value = checks.sizes(n_layer=n_layer, num_kv_heads=num_kv_heads, d_k=d_k,
                                                              bytes_per_value=bytes_per_value)
    return 2 * n_layer * num_kv_heads * d_k * bytes_per_value


@contract
def rope_angles(positions: Ids["T"], d_k: int, base: float = 10000.0) -> tuple[Float["T d_k/2"], Float["T d_k/2"]]:
    """cos and sin of the rotation angles, each (T, d_k / 2): position p turns the pair of dims
    (2i, 2i + 1) by the angle p · base^(-2i / d_k), the frequencies of the sinusoidal encoding."""
    if d_k < 2 or d_k % 2:
        raise ValueError(f"RoPE rotates pairs of dimensions: d_k must be even, got {d_k}")
    base = checks.number(base, "base", above=1.0, what="the slowest pair turns by p · base^(-(d_k-2)/d_k); RoPE's is 10000")
    inv_freq = base ** (-torch.arange(0, d_k, 2, dtype=torch.float32, device=positions.device) / d_k)  # (d_k/2,)
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]  # (T, d_k/2)
    return angles.cos(), angles.sin()


def _rotary_rules(x: torch.Tensor, cos: torch.Tensor, **_) -> None:
    """What the letters cannot say: d_k/2 is half of x's d_k."""
    if x.shape[-1] != 2 * cos.shape[-1]:
        raise ValueError(f"x (..., T, d_k) needs cos and sin of shape (T, d_k/2) from rope_angles(positions, d_k); got "
                         f"x {tuple(x.shape)}, cos {tuple(cos.shape)}")


# cos and sin stay float32 (rope_angles) whatever x's dtype: the rotation is computed in float32
@contract(rules=_rotary_rules, any_dtype=("cos", "sin"),
          hint="cos and sin are (T, d_k/2), from rope_angles(positions, d_k) for x's T positions")
def apply_rotary(x: Float["... T d_k"], cos: Float["T d_k/2"], sin: Float["T d_k/2"]) -> Float["... T d_k"]:
    """Rotate each pair of dims (2i, 2i + 1) of ``x`` (..., T, d_k) by the angles of its position:
    (a, b) -> (a cos − b sin, a sin + b cos), with ``cos``/``sin`` (T, d_k / 2) from :func:`rope_angles`.
    Then q_m · k_n depends on m and n only through m − n."""
    a, b = x[..., 0::2].float(), x[..., 1::2].float()  # (..., T, d_k/2) each
    out = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., T, d_k/2, 2)
    return out.flatten(-2).type_as(x)


class GroupedQueryAttention(nn.Module):
    """Multi-head attention with ``num_kv_heads`` key/value heads shared by groups of query heads.

    ``num_kv_heads == num_heads`` is multi-head attention (:class:`utils.attention.MultiHeadAttention`
    with the same weights gives the same output); ``num_kv_heads == 1`` is multi-query attention.
    Keys and values are projected to ``num_kv_heads · d_k`` dims only, which is what shrinks the
    key/value cache. Parameters: 2·d² + 2·d·(num_kv_heads · d_k) weights (+ biases)."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int | None = None, dropout: float = 0.0,
                 bias: bool = True):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        d_model, num_heads, num_kv_heads = checks.sizes(d_model=d_model, num_heads=num_heads, num_kv_heads=num_kv_heads)
        checks.probability(dropout)
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads}): each "
                             f"key/value head serves num_heads // num_kv_heads query heads")
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_k, self.dropout = d_model // num_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        """(B, T, n · d_k) -> (B, n, T, d_k)."""
        B, T, _ = x.shape
        return x.view(B, T, n, self.d_k).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, T, d_k) -> (B, T, H · d_k), the concatenation of the heads."""
        B, H, T, d_k = x.shape
        return x.transpose(1, 2).reshape(B, T, H * d_k)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, d_model) -> q (B, H, T, d_k), k and v (B, H_kv, T, d_k)."""
        return (self.heads(self.q_proj(x), self.num_heads), self.heads(self.k_proj(x), self.num_kv_heads),
                self.heads(self.v_proj(x), self.num_kv_heads))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """q (B, H, Tq, d_k), k and v (B, H_kv, Tk, d_k) -> (B, Tq, d_model), through the fused kernel."""
        rep = self.num_heads // self.num_kv_heads
        p = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, repeat_kv(k, rep), repeat_kv(v, rep), attn_mask=mask, dropout_p=p)
        return self.out_proj(self.merge_heads(out))

    def _rules(self, x, mask, **_) -> None:
        if mask is not None:
            check_mask(mask, (x.shape[0], self.num_heads, x.shape[1], x.shape[1]), device=x.device)

    @contract(rules=_rules)
    def forward(self, x: Float["B T d_model"], mask: Tensor["..."] | None = None) -> Float["B T d_model"]:
        """Self-attention of x (B, T, d_model); ``mask`` bool, True = may attend. Returns (B, T, d_model)."""
        return self.attend(*self.project(x), mask)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight: LayerNorm without subtracting the mean and without a bias."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps, self.d_model = eps, d_model
        self.weight = nn.Parameter(torch.ones(d_model))

    @contract
    def forward(self, x: Float["... d_model"]) -> Float["... d_model"]:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def swiglu_hidden(d_model: int, multiple_of: int = 16) -> int:
    """Hidden size of a SwiGLU layer with as many weights as a 4·d GELU MLP: 3·d·h ≈ 8·d², so h ≈ 8d/3,
    rounded up to a multiple of ``multiple_of`` (LLaMA's rule)."""
    d_model, multiple_of = checks.sizes(d_model=d_model, multiple_of=multiple_of)
    h = int(8 * d_model / 3)
    return multiple_of * math.ceil(h / multiple_of)


class SwiGLU(nn.Module):
    """Gated feed-forward layer: down(silu(gate(x)) * up(x)), (B, T, d) -> (B, T, h) -> (B, T, d)."""

    def __init__(self, d_model: int, hidden: int | None = None, dropout: float = 0.0, bias: bool = False):
        super().__init__()
        hidden = swiglu_hidden(d_model) if hidden is None else hidden
        self.d_model = d_model
        self.gate = nn.Linear(d_model, hidden, bias=bias)
        self.up = nn.Linear(d_model, hidden, bias=bias)
        self.proj = nn.Linear(hidden, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    @contract
    def forward(self, x: Float["... d_model"]) -> Float["... d_model"]:
        return self.dropout(self.proj(F.silu(self.gate(x)) * self.up(x)))


class _PeakMemory(TorchDispatchMode):
    """Counts the bytes of every storage a PyTorch operation returns while it is alive (a weak reference
    to the storage tells when it is freed); views share their base's storage and count once."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.now = self.peak = 0

    def _free(self, key: int) -> None:
        self.now -= self.live.pop(key)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key and key not in self.live:
                    self.live[key] = storage.nbytes()
                    self.now += storage.nbytes()
                    self.peak = max(self.peak, self.now)
                    weakref.finalize(storage, self._free, key)
        return out


def peak_memory(fn: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``fn()`` and return ``(result, peak bytes)``: the most CPU tensor memory that the operations
    inside ``fn`` held allocated at one time (their outputs and intermediates; the inputs that existed
    before the call are not counted, and neither is a kernel's internal scratch memory that never
    becomes a tensor). On a GPU use ``torch.cuda.max_memory_allocated`` instead."""
    with _PeakMemory() as tracker:
        result = fn()
    return result, tracker.peak


def influence_by_distance(encode: Callable[[torch.Tensor], torch.Tensor], inputs: Sequence[torch.Tensor],
                          probes: int = 32, seed: int = 0, max_distance: int | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """How strongly an encoder's output at position t depends on its input at position s, by distance |t − s|.

    ``encode`` maps inputs (B, S, D_in) to outputs (B, S, D_out) (every position of every row, no padding);
    ``inputs`` is a list of (S, D_in) tensors, one per sentence (lengths may differ). For each sentence and
    each pair (t, s) the influence is the Frobenius norm ‖∂h_t/∂x_s‖ of that (D_out, D_in) block of the
    Jacobian, estimated with ``probes`` random ±1 vectors v (E‖vᵀJ‖² = ‖J‖², exact for a multiple of the
    identity): one backward pass per probe and output position, all in one batch per sentence.

    Returns ``(mean, pairs)``, both (max_distance + 1,): the mean influence over all pairs at each distance
    (nan where there are none) and how many pairs were averaged."""
    if probes < 1:
        raise ValueError(f"probes must be >= 1, got {probes}")
    if not inputs:
        raise ValueError("inputs must hold at least one (S, D_in) tensor")
    longest = max(x.shape[0] for x in inputs)
    max_distance = longest - 1 if max_distance is None else max_distance
    total, pairs = torch.zeros(max_distance + 1, dtype=torch.float64), torch.zeros(max_distance + 1, dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    for x in inputs:
        if x.dim() != 2:
            raise ValueError(f"each input must be (S, D_in), got shape {tuple(x.shape)}")
        S = x.shape[0]
        xb = x.detach()[None].repeat(S * probes, 1, 1).requires_grad_(True)  # (S·P, S, D_in): row (t, p)
        with torch.enable_grad():
            out = encode(xb)  # (S·P, S, D_out)
            if out.shape[:2] != (S * probes, S):
                raise ValueError(f"encode must return (B, S, D_out) = ({S * probes}, {S}, ...), got {tuple(out.shape)}")
            v = torch.randint(0, 2, (S, probes, out.shape[-1]), generator=g).to(out) * 2 - 1  # (S, P, D_out) ±1
            pick = torch.zeros(S, probes, S, out.shape[-1], dtype=out.dtype, device=out.device)
            pick[torch.arange(S), :, torch.arange(S)] = v  # row (t, p) probes output position t only
            (grad,) = torch.autograd.grad(out, xb, pick.reshape(S * probes, S, -1))  # (S·P, S, D_in): vᵀ ∂h_t/∂x_s
        sq = grad.double().pow(2).sum(-1).reshape(S, probes, S).mean(1)  # (t, s): estimate of ‖∂h_t/∂x_s‖²
        infl = sq.sqrt().cpu()
        dist = (torch.arange(S)[:, None] - torch.arange(S)[None]).abs()  # (t, s) -> |t - s|
        keep = dist <= max_distance
        total.index_add_(0, dist[keep], infl[keep])
        pairs.index_add_(0, dist[keep], torch.ones_like(dist[keep]))
    mean = torch.where(pairs > 0, total / pairs.clamp(min=1), torch.full_like(total, float("nan")))
    return mean, pairs
