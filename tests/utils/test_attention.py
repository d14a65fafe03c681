"""utils.attention against PyTorch's own attention, plus the properties the lessons rely on."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from utils.attention import (
    additive_mask,
    AdditiveAttention,
    MultiHeadAttention,
    causal_mask,
    combine_masks,
    key_padding_mask,
    mha_from_torch,
    scaled_dot_product_attention,
)


@settings(max_examples=50, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    tq=st.integers(1, 7),
    tk=st.integers(1, 7),
    dk=st.integers(1, 9),
    dv=st.integers(1, 9),
    mask_kind=st.sampled_from(["none", "full", "row", "key", "causal"]),
    seed=st.integers(0, 2**16),
)
def test_equals_torch_sdpa(batch, tq, tk, dk, dv, mask_kind, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, tq, dk, generator=g, dtype=torch.float64)
    k = torch.randn(*batch, tk, dk, generator=g, dtype=torch.float64)
    v = torch.randn(*batch, tk, dv, generator=g, dtype=torch.float64)
    if mask_kind == "none":
        mask = None
    elif mask_kind == "full":
        mask = torch.rand(*batch, tq, tk, generator=g) < 0.6
    elif mask_kind == "row":
        mask = torch.rand(tq, tk, generator=g) < 0.6  # broadcast over batch dims
    elif mask_kind == "key":
        mask = torch.rand(*batch, 1, tk, generator=g) < 0.6
    else:
        mask = causal_mask(tq, max(tq, tk)) if tk >= tq else torch.ones(tq, tk, dtype=torch.bool).tril()
    if mask_kind in ("full", "row", "key"):
        # A mask in the course's convention lets some query see the first key (a sentence starts with a
        # real token); random masks that do not may read as True = blocked and are refused (test_errors.py).
        mask[(0,) * mask.dim()] = True
    if mask is not None and mask.dim() == 2 and batch and batch[0] == tq and not (mask == mask[:1]).all():
        with pytest.raises(ValueError, match="ambiguous"):  # could be (Tq, Tk) or a (B, Tk) padding mask
            scaled_dot_product_attention(q, k, v, mask)
        mask = mask.expand(*[1] * len(batch), tq, tk)  # the unambiguous spelling: (1, ..., Tq, Tk)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert out.shape == (*batch, tq, dv) and w.shape == (*batch, tq, tk)
    assert not torch.isnan(out).any() and not torch.isnan(w).any()
    if mask is not None:
        live = mask.expand(*batch, tq, tk).any(-1)  # rows with at least one key allowed
        torch.testing.assert_close(out[live], ref[live])
        assert (w[~mask.expand_as(w)] == 0).all()
        assert (out[~live] == 0).all() and (w[~live] == 0).all()
        torch.testing.assert_close(w.sum(-1)[live], torch.ones_like(w.sum(-1)[live]))
    else:
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(w.sum(-1), torch.ones(*batch, tq, dtype=torch.float64))


def test_fully_masked_row_gives_zeros_and_finite_grads():
    q, k, v = (torch.randn(1, 3, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert (out[0, 1] == 0).all() and (w[0, 1] == 0).all()
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_gradcheck():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 5, 4, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 5, 3, dtype=torch.float64, generator=g, requires_grad=True)
    mask = torch.rand(2, 3, 5, generator=g) < 0.7
    mask[..., 0] = True
    assert torch.autograd.gradcheck(lambda a, b, c: scaled_dot_product_attention(a, b, c, mask)[0], (q, k, v))
    assert torch.autograd.gradcheck(lambda a, b, c: scaled_dot_product_attention(a, b, c)[0], (q, k, v))


def test_mha_gradcheck():
    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 2).double()
    x = torch.randn(2, 4, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: mha(t, t, t, causal_mask(4))[0], (x,))


def test_causal_mask_values():
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    # two new queries at positions 3 and 4 of a 5-long cache
    assert causal_mask(2, 5).tolist() == [[True] * 4 + [False], [True] * 5]
    with pytest.raises(ValueError):
        causal_mask(4, 2)


def test_causal_mask_leaks_nothing():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).double()
    x = torch.randn(2, 8, 16, dtype=torch.float64)
    mask = causal_mask(8)
    y, w = mha(x, x, x, mask)
    assert (w.triu(1) == 0).all()
    for t in range(8):
        x2 = x.clone()
        x2[:, t + 1:] = torch.randn_like(x2[:, t + 1:]) * 10
        y2, _ = mha(x2, x2, x2, mask)
        torch.testing.assert_close(y2[:, : t + 1], y[:, : t + 1], rtol=0, atol=1e-12)


def test_self_attention_is_permutation_equivariant():
    torch.manual_seed(1)
    mha = MultiHeadAttention(12, 3).double()
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    perm = torch.randperm(7)
    y, w = mha(x, x, x)
    yp, wp = mha(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(yp, y[:, perm])
    torch.testing.assert_close(wp, w[:, :, perm][..., perm])


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("masking", ["none", "causal", "padding"])
def test_mha_equals_torch(bias, masking):
    torch.manual_seed(0)
    D, H, B, Tq, Tk = 24, 4, 3, 5, 6
    ref = nn.MultiheadAttention(D, H, bias=bias, batch_first=True).double()
    ours = MultiHeadAttention(D, H, bias=bias).double().load_from_torch(ref)
    q = torch.randn(B, Tq, D, dtype=torch.float64)
    kv = torch.randn(B, Tk, D, dtype=torch.float64)
    kw_ref, mask = {}, None
    if masking == "causal":
        kv = torch.randn(B, Tq, D, dtype=torch.float64)
        mask = causal_mask(Tq)
        kw_ref["attn_mask"] = ~mask  # nn.MultiheadAttention: True = blocked
    elif masking == "padding":
        ids = torch.tensor([[5, 6, 7, 8, 9, 4], [5, 6, 7, 0, 0, 0], [4, 0, 0, 0, 0, 0]])
        mask = key_padding_mask(ids)
        kw_ref["key_padding_mask"] = ids == 0
    y_ref, w_ref = ref(q, kv, kv, need_weights=True, average_attn_weights=False, **kw_ref)
    y, w = ours(q, kv, kv, mask)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(w, w_ref)
    y_fused, w_none = ours(q, kv, kv, mask, need_weights=False)
    assert w_none is None
    torch.testing.assert_close(y_fused, y_ref)
    copy = mha_from_torch(ref)
    torch.testing.assert_close(copy(q, kv, kv, mask)[0], y_ref)


def test_mha_parameter_count():
    mha = MultiHeadAttention(512, 8)
    assert sum(p.numel() for p in mha.parameters()) == 4 * 512**2 + 4 * 512 == 1_050_624


def test_key_padding_mask():
    ids = torch.tensor([[4, 5, 0], [6, 0, 0]])
    m = key_padding_mask(ids)
    assert m.shape == (2, 1, 1, 3) and m.dtype == torch.bool
    assert m[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]
    assert torch.equal(key_padding_mask(ids != 0), m)
    with pytest.raises(TypeError):
        key_padding_mask(ids.float())
    assert combine_masks(m, causal_mask(3)).shape == (2, 1, 3, 3)
    assert combine_masks(None, None) is None


def test_clear_errors():
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="d_k"):
        scaled_dot_product_attention(q, torch.randn(2, 5, 3), v)
    with pytest.raises(ValueError, match="Tk"):
        scaled_dot_product_attention(q, k, torch.randn(2, 4, 6))
    with pytest.raises(TypeError, match="bool"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(3, 5))
    with pytest.raises(ValueError, match="broadcast"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(5, 3, dtype=torch.bool))
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match="d_model=8"):
        mha(torch.randn(2, 3, 6), x, x)
    with pytest.raises(ValueError, match="broadcast"):
        mha(x, x, x, mask=torch.ones(2, 3, dtype=torch.bool), need_weights=False)
    with pytest.raises(TypeError, match="bool"):
        mha(x, x, x, mask=torch.zeros(3, 3), need_weights=False)


def test_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 5, 8)
    mha.eval()
    torch.testing.assert_close(mha(x, x, x)[0], mha(x, x, x)[0])
    mha.train()
    assert not torch.allclose(mha(x, x, x)[0], mha(x, x, x)[0])


def test_additive_attention_shapes_and_mask():
    torch.manual_seed(0)
    att = AdditiveAttention(4, 6, 8)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 6), torch.randn(2, 5, 7)
    mask = key_padding_mask(torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]))[:, 0]  # (B, 1, Tk)
    out, w = att(q, k, v, mask)
    assert out.shape == (2, 3, 7) and w.shape == (2, 3, 5)
    assert (w[0, :, 3:] == 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3))
    # the scores are w·tanh(W_q q + W_k k), checked for one pair
    with torch.no_grad():
        s = att.w(torch.tanh(att.W_q(q[1, 2]) + att.W_k(k[1, 4])))
    s_all = att.w(torch.tanh(att.W_q(q[1, 2])[None] + att.W_k(k[1]))).squeeze(-1)
    torch.testing.assert_close(w[1, 2, 4], torch.softmax(s_all, -1)[4])
    assert math.isfinite(s.item())


def test_raw_padding_mask_is_never_read_as_tq_tk():
    """A (B, Tk) padding mask where (..., Tq, Tk) is expected: refused, whatever B and Tq are."""
    torch.manual_seed(0)
    B, T, d = 3, 3, 4
    q = k = v = torch.randn(B, T, d)
    real = torch.tensor([[True, True, True], [True, True, False], [True, False, False]])  # (B, Tk) from pad_sequences
    with pytest.raises(ValueError, match=r"ambiguous.*both 3.*key_padding_mask\(mask\) or mask\[:, None, None, :\]"):
        scaled_dot_product_attention(q, k, v, real)
    mha = MultiHeadAttention(d, 2)
    for need_weights in (True, False):
        with pytest.raises(ValueError, match="ambiguous"):
            mha(q, k, v, real, need_weights=need_weights)
    with pytest.raises(ValueError, match="ambiguous"):
        AdditiveAttention(d, d, 5)(q, k, v, real)
    with pytest.raises(ValueError, match=r"does not broadcast.*key_padding_mask"):  # B != Tq: no broadcast either
        scaled_dot_product_attention(torch.randn(3, 5, d), k, v, real)
    with pytest.raises(ValueError, match=r"ambiguous.*mask\[None, None\]"):  # a causal mask when B == T
        mha(q, k, v, causal_mask(T))
    # the unambiguous spellings work and agree with each other
    out, w = scaled_dot_product_attention(q, k, v, key_padding_mask(real)[:, 0])  # (B, 1, Tk)
    assert (w[2, :, 1:] == 0).all() and (w[1, :, 2] == 0).all()
    torch.testing.assert_close(mha(q, k, v, causal_mask(T)[None, None])[0], mha(q, k, v, combine_masks(causal_mask(T)[None, None]))[0])
    # rows all equal: both readings agree, so a 2-D mask is fine
    scaled_dot_product_attention(q, k, v, torch.ones(T, T, dtype=torch.bool))
    # a mask with fewer dims than the scores but more than 2 is refused: (B, Tq, Tk) against (B, H, Tq, Tk)
    with pytest.raises(ValueError, match=r"has 3 dims.*2, \(Tq, Tk\).*as many as the scores"):
        mha(q, k, v, torch.ones(B, T, T, dtype=torch.bool))


def test_combine_masks_names_what_is_not_a_bool_tensor():
    with pytest.raises(TypeError, match=r"masks\[1\] must be a torch.Tensor.*bool values.*got a list"):
        combine_masks(causal_mask(2), [[True]])
    with pytest.raises(TypeError, match=r"masks\[1\] must hold bool values.*got a tensor of dtype torch.int64"):
        combine_masks(causal_mask(2), torch.ones(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"masks of shapes \(2, 2\), \(3, 3\) do not broadcast"):
        combine_masks(causal_mask(2), causal_mask(3))


@settings(max_examples=30, deadline=None)
@given(tq=st.integers(1, 6), tk=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_additive_mask_is_the_bool_mask(tq, tk, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(2, tq, 4, generator=g), torch.randn(2, tk, 4, generator=g), torch.randn(2, tk, 3, generator=g)
    mask = torch.rand(2, tq, tk, generator=g) < 0.7
    mask[..., 0] = True                                   # every query may attend somewhere
    M = additive_mask(mask)
    assert M.dtype == torch.float32 and M.shape == mask.shape
    assert (M[mask] == 0).all() and torch.isinf(M[~mask]).all() and (M[~mask] < 0).all()
    scores = q @ k.transpose(-2, -1) / 2.0
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.allclose(torch.softmax(scores + M, dim=-1), weights, atol=1e-6)
    assert torch.allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=M), out, atol=1e-5)


def test_additive_mask_errors():
    with pytest.raises(TypeError, match="True = may attend"):
        additive_mask(torch.ones(2, 2))
    with pytest.raises(TypeError, match="floating-point"):
        additive_mask(torch.ones(2, 2, dtype=torch.bool), dtype=torch.long)


# --------------------------------------------------------------------------- on every device and dtype (tests/conftest.py)


def test_equals_torch_sdpa_on_each_device_and_dtype(qkv, mask, tol):
    q, k, v = qkv
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, ref, **tol)
    assert out.dtype == q.dtype and out.device == q.device
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


def test_mha_fused_and_written_out_agree_on_each_device_and_dtype(device_dtype, mask, tol):
    device, dtype = device_dtype
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2).to(device=device, dtype=dtype).eval()
    x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(1)).to(device=device, dtype=dtype)
    fused, _ = mha(x, x, x, mask, need_weights=False)
    written, _ = mha(x, x, x, mask)
    torch.testing.assert_close(fused, written, **tol)
    with pytest.raises(TypeError, match=rf"query has dtype torch.float64 but the model's weights have {dtype}"):
        mha(x.double(), x, x)
