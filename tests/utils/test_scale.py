"""utils.scale and the modern options of utils.gpt (notebook 10)."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from utils.attention import MultiHeadAttention, causal_mask, key_padding_mask, scaled_dot_product_attention
from utils.gpt import GPT, GPTConfig, generate, gpt_parameter_count, matched_swiglu_hidden, text_loss
from utils.scale import (GroupedQueryAttention, RMSNorm, SwiGLU, apply_rotary, block_attention, kv_cache_bytes_per_token,
                         influence_by_distance, online_softmax_update, peak_memory, repeat_kv,
                         rope_angles, swiglu_hidden)
from utils.training import count_parameters


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 3), H=st.integers(1, 3), Tq=st.integers(1, 20), Tk=st.integers(1, 40),
       d=st.sampled_from([1, 4, 8]), block=st.integers(1, 17), seed=st.integers(0, 1000),
       kind=st.sampled_from(["none", "causal", "padding", "both"]))
def test_block_attention_equals_sdpa(B, H, Tq, Tk, d, block, seed, kind):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, T, d, generator=g, dtype=torch.float64) for T in (Tq, Tk, Tk))
    if kind in ("causal", "both"):
        Tq = min(Tq, Tk)
        q = q[:, :, :Tq]
    lengths = torch.randint(0, Tk + 1, (B,), generator=g)  # a length of 0: a row with nothing to attend to
    lengths[0] = lengths[0].clamp(min=1)  # a batch with no real token at all is refused (tests/utils/test_errors.py)
    pad = key_padding_mask(torch.arange(Tk)[None, :] < lengths[:, None])  # (B, 1, 1, Tk)
    causal = causal_mask(Tq, Tk)[None, None] if kind in ("causal", "both") else None  # (1, 1, Tq, Tk)
    mask = {"none": None, "causal": causal, "padding": pad, "both": pad & causal if causal is not None else None}[kind]
    ours = block_attention(q, k, v, mask, block_size=block)
    ref, _ = scaled_dot_product_attention(q, k, v, mask)
    assert ours.shape == (B, H, Tq, d)
    torch.testing.assert_close(ours, ref, atol=1e-10, rtol=1e-10)
    if kind == "none" or bool(mask.any(-1).all()):  # torch's kernel agrees where every row has a key
        torch.testing.assert_close(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-10, rtol=1e-10)


def test_block_attention_float32_within_1e5_of_torch_and_errors():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 300, 32), torch.randn(2, 4, 300, 32), torch.randn(2, 4, 300, 32)
    mask = causal_mask(300)
    assert (block_attention(q, k, v, mask, 64) - F.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max() < 1e-5
    with pytest.raises(ValueError, match=r"\(B, 1, 1, Tk\)"):
        block_attention(q, k, v, torch.ones(2, 300, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool"):
        block_attention(q, k, v, mask.float())
    with pytest.raises(ValueError, match="block_size"):
        block_attention(q, k, v, block_size=0)
    with pytest.raises(ValueError, match=r"\(\.\.\., Tq, d_k\)"):
        block_attention(q, k[..., :8], v)


def test_block_attention_is_causal_flag_and_peak_memory_grows_linearly():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8)
    torch.testing.assert_close(block_attention(q, k, v, block_size=4, is_causal=True),
                               scaled_dot_product_attention(q, k, v, causal_mask(5, 9))[0])
    with pytest.raises(ValueError, match="Tq <= Tk"):
        block_attention(k, q, q, is_causal=True)
    peaks = {}
    for T in (256, 512, 1024):
        x = torch.randn(1, 1, T, 16)
        _, peaks[T] = peak_memory(lambda: block_attention(x, x, x, block_size=64, is_causal=True))
        _, naive = peak_memory(lambda: scaled_dot_product_attention(x, x, x, causal_mask(T)))
        assert naive >= T * T * 4  # at least the float32 weights
    assert 1.7 < peaks[1024] / peaks[512] < 2.3 and 1.7 < peaks[512] / peaks[256] < 2.3
    a = torch.ones(100)
    _, p = peak_memory(lambda: (a * 2).sum())
    assert p == 400 + 4  # the product (400 bytes) and the sum, alive together


def test_online_update_one_block_at_a_time_is_softmax():
    torch.manual_seed(1)
    scores, v = torch.randn(3, 10, dtype=torch.float64), torch.randn(10, 5, dtype=torch.float64)
    m, l, acc = torch.full((3, 1), float("-inf"), dtype=torch.float64), torch.zeros(3, 1, dtype=torch.float64), torch.zeros(3, 5, dtype=torch.float64)
    for s in range(0, 10, 3):
        m, l, acc = online_softmax_update(m, l, acc, scores[:, s:s + 3], v[s:s + 3])
    torch.testing.assert_close(acc / l, torch.softmax(scores, -1) @ v)
    torch.testing.assert_close(m, scores.amax(-1, keepdim=True))


@pytest.mark.parametrize("H,H_kv", [(4, 4), (4, 2), (4, 1), (6, 3)])
def test_gqa_equals_mha_with_repeated_kv_weights(H, H_kv):
    torch.manual_seed(0)
    d, d_k = 24, 24 // H
    gqa = GroupedQueryAttention(d, H, H_kv)
    mha = MultiHeadAttention(d, H)
    with torch.no_grad():  # an MHA whose key/value heads are copies of the GQA's shared ones
        for ours, theirs in ((mha.q_proj, gqa.q_proj), (mha.out_proj, gqa.out_proj)):
            ours.weight.copy_(theirs.weight), ours.bias.copy_(theirs.bias)
        for ours, theirs in ((mha.k_proj, gqa.k_proj), (mha.v_proj, gqa.v_proj)):
            ours.weight.copy_(theirs.weight.view(H_kv, d_k, d).repeat_interleave(H // H_kv, 0).reshape(d, d))
            ours.bias.copy_(theirs.bias.view(H_kv, d_k).repeat_interleave(H // H_kv, 0).reshape(d))
    x = torch.randn(2, 7, d)
    mask = causal_mask(7)[None, None]
    torch.testing.assert_close(gqa(x, mask), mha(x, x, x, mask)[0], atol=1e-6, rtol=1e-5)
    assert count_parameters(gqa) == 2 * d * d + 2 * d * H_kv * d_k + 2 * d + 2 * H_kv * d_k


def test_repeat_kv_and_errors():
    x = torch.arange(2 * 3 * 1 * 1.).view(2, 3, 1, 1)
    assert repeat_kv(x, 2)[0, :, 0, 0].tolist() == [0, 0, 1, 1, 2, 2]
    assert repeat_kv(x, 1) is x
    with pytest.raises(ValueError, match=r"\(B, H_kv, T, d_k\)"):
        repeat_kv(x[0], 2)
    with pytest.raises(ValueError, match="multiple of num_kv_heads"):
        GroupedQueryAttention(24, 4, 3)
    with pytest.raises(ValueError, match="d_model=24"):
        GroupedQueryAttention(24, 4, 2)(torch.randn(2, 3, 8))


def test_kv_cache_bytes_formula_matches_the_cache():
    for kv in (4, 2, 1):
        torch.manual_seed(0)
        m = GPT(GPTConfig(vocab_size=11, block_size=32, n_layer=3, n_head=4, d_model=32, n_kv_head=kv, pos="rope")).eval()
        cache = m.new_cache()
        m(torch.randint(0, 11, (1, 20)), cache=cache)
        stored = sum(c[k].numel() * c[k].element_size() for c in cache for k in ("k", "v"))
        assert stored == 20 * kv_cache_bytes_per_token(3, kv, 8, bytes_per_value=4)
    assert kv_cache_bytes_per_token(32, 8, 128) == 131072  # LLaMA-3 8B in bf16: 128 KiB per token
    with pytest.raises(ValueError, match="num_kv_heads"):
        kv_cache_bytes_per_token(2, 0, 8)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(0, 500), n=st.integers(0, 500), shift=st.integers(1, 300), seed=st.integers(0, 100))
def test_rope_score_depends_only_on_the_offset(m, n, shift, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(16, generator=g, dtype=torch.float64), torch.randn(16, generator=g, dtype=torch.float64)

    def score(i, j):
        pos = torch.tensor([i, j])
        cos, sin = (t.double() for t in rope_angles(pos, 16))
        qr, kr = apply_rotary(torch.stack([q, q]), cos, sin), apply_rotary(torch.stack([k, k]), cos, sin)
        return qr[0] @ kr[1]

    assert abs(score(m, n) - score(m + shift, n + shift)) < 1e-4
    pos = torch.tensor([m])
    cos, sin = rope_angles(pos, 16)
    assert torch.allclose(apply_rotary(q[None].float(), cos, sin).norm(), q.float().norm(), atol=1e-5)  # a rotation


def test_rope_errors_and_position_zero_is_identity():
    x = torch.randn(2, 5, 8)
    cos, sin = rope_angles(torch.zeros(5, dtype=torch.long), 8)
    assert torch.equal(apply_rotary(x, cos, sin), x)
    with pytest.raises(ValueError, match="even"):
        rope_angles(torch.arange(3), 7)
    with pytest.raises(ValueError, match=r"cos must be \(T, d_k/2\) = \(5, 4\) with T=5.*from rope_angles"):
        apply_rotary(x, cos[:3], sin[:3])
    with pytest.raises(ValueError, match=r"x \(\.\.\., T, d_k\) needs cos and sin of shape \(T, d_k/2\)"):
        apply_rotary(torch.randn(2, 5, 6), cos, sin)  # d_k = 6, angles for d_k = 8
    torch.testing.assert_close(apply_rotary(x.double(), cos, sin), apply_rotary(x, cos, sin).double())  # float32 angles


def test_online_softmax_update_names_a_block_of_the_wrong_shape():
    m, l, acc = torch.full((2, 1), float("-inf")), torch.zeros(2, 1), torch.zeros(2, 5)
    with pytest.raises(ValueError, match=r"v must be \(\.\.\., b, d_v\) = \(\.\.\., 4, 5\) with b=4"):
        online_softmax_update(m, l, acc, torch.randn(2, 4), torch.randn(3, 5))
    with pytest.raises(ValueError, match=r"l must be \(\.\.\., Tq, 1\)"):
        online_softmax_update(m, torch.zeros(2, 5), acc, torch.randn(2, 4), torch.randn(4, 5))


def test_rmsnorm_equals_torch_and_swiglu_formula():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16)
    ours, ref = RMSNorm(16), nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ours.weight.uniform_(), ref.weight.copy_(ours.weight)
    torch.testing.assert_close(ours(x), ref(x))
    with pytest.raises(ValueError, match=r"\(\.\.\., 16\)"):
        ours(torch.randn(2, 8))
    f = SwiGLU(16, 40)
    torch.testing.assert_close(f(x), F.silu(x @ f.gate.weight.T) * (x @ f.up.weight.T) @ f.proj.weight.T)
    assert swiglu_hidden(128) == 352 and swiglu_hidden(64) % 16 == 0


OPTIONS = [dict(), dict(norm="rms"), dict(mlp="swiglu"), dict(bias=False), dict(pos="rope"), dict(pos="sinusoidal"),
           dict(n_kv_head=2), dict(norm="rms", mlp="swiglu", bias=False, pos="rope", n_kv_head=1)]


@pytest.mark.parametrize("opts", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_modern_options_count_cache_and_causality(opts):
    cfg = GPTConfig(vocab_size=11, block_size=12, n_layer=2, n_head=4, d_model=16, **opts)
    torch.manual_seed(0)
    m = GPT(cfg).eval()
    assert count_parameters(m) == gpt_parameter_count(cfg)
    if opts.get("bias") is False:
        assert all(not n.endswith("bias") for n, _ in m.named_parameters())
    x = torch.randint(0, 11, (2, 12))
    logits, _ = m(x)
    x2 = x.clone()
    x2[:, 8:] = (x2[:, 8:] + 1) % 11  # changing the future leaves earlier logits unchanged
    assert torch.allclose(m(x2)[0][:, :8], logits[:, :8], atol=1e-5)
    g = torch.Generator().manual_seed(0)
    a = generate(m, x[:, :3], 20, use_cache=True, generator=g)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(a, generate(m, x[:, :3], 20, use_cache=False, generator=torch.Generator().manual_seed(0)))


def test_longer_context_only_without_a_position_table():
    data = torch.randint(0, 11, (500,))
    for pos in ("rope", "sinusoidal"):
        m = GPT(GPTConfig(vocab_size=11, block_size=12, n_layer=1, n_head=2, d_model=8, pos=pos))
        assert text_loss(m, data, block_size=48) > 0
    m = GPT(GPTConfig(vocab_size=11, block_size=12, n_layer=1, n_head=2, d_model=8))
    with pytest.raises(ValueError, match="exceed block_size 12"):
        text_loss(m, data, block_size=48)
    with pytest.raises(ValueError, match="norm must be one of"):
        GPTConfig(vocab_size=11, norm="batch")
    with pytest.raises(ValueError, match="multiple of n_kv_head"):
        GPTConfig(vocab_size=11, n_head=4, n_kv_head=3)


BASE = dict(vocab_size=65, block_size=64, n_layer=2, n_head=4, d_model=64)


@pytest.mark.parametrize("opts", [dict(mlp="swiglu"), dict(mlp="swiglu", bias=False),
                                  dict(norm="rms", mlp="swiglu", bias=False, pos="rope"),
                                  dict(norm="rms", mlp="swiglu", bias=False, pos="rope", n_kv_head=2),
                                  dict(norm="rms", mlp="swiglu", bias=False, pos="rope", n_kv_head=1)])
def test_matched_swiglu_width_gives_the_classic_parameter_count(opts):
    classic = count_parameters(GPT(GPTConfig(**BASE)))
    assert classic == 108_352
    h = matched_swiglu_hidden(GPTConfig(**BASE, **opts), classic)
    cfg = GPTConfig(**BASE, **opts, mlp_hidden=h)
    n = count_parameters(GPT(cfg))
    assert n == gpt_parameter_count(cfg) and abs(n - classic) / classic < 0.01
    for other in (h - 1, h + 1):  # the nearest width: no other is closer to the target
        assert abs(gpt_parameter_count(GPTConfig(**BASE, **opts, mlp_hidden=other)) - classic) >= abs(n - classic)
    assert GPT(cfg).blocks[0].mlp.gate.out_features == h


def test_mlp_hidden_default_and_errors():
    assert GPTConfig(**BASE, mlp="swiglu").mlp_hidden is None
    a, b = GPT(GPTConfig(**BASE, mlp="swiglu")), GPT(GPTConfig(**BASE, mlp="swiglu", mlp_hidden=swiglu_hidden(64)))
    assert count_parameters(a) == count_parameters(b)  # None = today's width
    assert GPTConfig(**BASE, norm="rms", mlp="swiglu", bias=False, pos="rope", n_kv_head=2) is not None
    assert count_parameters(GPT(GPTConfig(**BASE, norm="rms", mlp="swiglu", bias=False, pos="rope", n_kv_head=2))) == 96_640
    with pytest.raises(ValueError, match="mlp_hidden"):
        GPTConfig(**BASE, mlp_hidden=100)  # GELU's width is fixed at 4d
    with pytest.raises(ValueError, match="mlp_hidden"):
        GPTConfig(**BASE, mlp="swiglu", mlp_hidden=0)
    with pytest.raises(ValueError, match="cfg.mlp must be 'swiglu'"):
        matched_swiglu_hidden(GPTConfig(**BASE), 100_000)


def _linear_recurrence(a):
    def encode(x):  # h_t = a h_{t-1} + x_t, so ∂h_t/∂x_s = a^(t-s) I for s <= t and 0 otherwise
        h, out = torch.zeros_like(x[:, 0]), []
        for t in range(x.shape[1]):
            h = a * h + x[:, t]
            out.append(h)
        return torch.stack(out, 1)
    return encode


def test_influence_by_distance_exact_on_known_jacobians():
    g = torch.Generator().manual_seed(0)
    inputs = [torch.randn(6, 3, generator=g), torch.randn(4, 3, generator=g)]
    mean, pairs = influence_by_distance(_linear_recurrence(0.7), inputs, probes=3)
    assert pairs.tolist() == [10, 16, 12, 8, 4, 2]  # ordered pairs (t, s) at each distance, both sentences
    want = torch.tensor([3 ** 0.5] + [0.7 ** k * 3 ** 0.5 / 2 for k in range(1, 6)], dtype=torch.float64)
    assert torch.allclose(mean, want, atol=1e-6)  # ‖a^k I_3‖ = a^k √3, and half the pairs (s > t) are 0
    mix = lambda x: x.mean(1, keepdim=True).expand_as(x) * 2  # every output sees every input alike: flat
    mean, _ = influence_by_distance(mix, [torch.randn(5, 4, generator=g)], probes=2, max_distance=3)
    assert mean.shape == (4,) and torch.allclose(mean, torch.full((4,), 2 / 5 * 2.0, dtype=torch.float64))


def test_influence_by_distance_estimates_the_frobenius_norm():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 5), nn.Tanh())
    mixer = torch.randn(4, 4)
    encode = lambda x: net(torch.einsum("ts,bsd->btd", mixer, x))  # (B, 4, 3) -> (B, 4, 5)
    x = torch.randn(4, 3)
    J = torch.autograd.functional.jacobian(lambda x: encode(x[None])[0], x)  # (4, 5, 4, 3)
    norms = J.pow(2).sum((1, 3)).sqrt()  # (t, s)
    dist = (torch.arange(4)[:, None] - torch.arange(4)[None]).abs()
    want = torch.stack([norms[dist == k].mean() for k in range(4)]).double()
    got, _ = influence_by_distance(encode, [x], probes=4000)
    assert torch.allclose(got, want, rtol=0.05)
    with pytest.raises(ValueError, match="probes"):
        influence_by_distance(encode, [x], probes=0)
    with pytest.raises(ValueError, match=r"\(S, D_in\)"):
        influence_by_distance(encode, [x[None]])
