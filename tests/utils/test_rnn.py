"""utils.rnn: padding never leaks, attention weights are a distribution over real
positions, score functions match their formulas, decoding stops at <eos>, and
beam search with one beam is greedy decoding."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from utils.rnn import (
    SCORES, AdditiveScore, CosineScore, DotScore, Encoder, ScaledDotScore, Seq2Seq, attend,
    beam_search, greedy_decode, make_decode_fn, masked_softmax, seq2seq_loss,
)
from utils.text import collate_pairs, make_sequence_task, pad_sequences

V = 14  # 4 specials + 10 symbols


def _batch(n=6, seed=0, min_len=2, max_len=9):
    src, tgt, vocab = make_sequence_task("reverse", n=n, min_len=min_len, max_len=max_len, seed=seed)
    return collate_pairs(list(zip(src, tgt)))


def _model(attention="additive", cell="gru", bidirectional=True, seed=0):
    torch.manual_seed(seed)
    return Seq2Seq(V, V, emb_dim=12, enc_hidden=8, dec_hidden=16, cell=cell,
                   bidirectional=bidirectional, attention=attention).eval()


def _extra_pad(ids: torch.Tensor, mask: torch.Tensor, extra: int):
    ids = torch.cat([ids, torch.zeros(ids.shape[0], extra, dtype=ids.dtype)], 1)
    mask = torch.cat([mask, torch.zeros(mask.shape[0], extra, dtype=torch.bool)], 1)
    return ids, mask


# --------------------------------------------------------------------------- encoder

@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_encoder_ignores_padding_and_context_is_last_real_state(cell, bidirectional):
    torch.manual_seed(0)
    enc = Encoder(V, 6, 5, cell=cell, bidirectional=bidirectional).eval()
    b = _batch()
    out = enc(b.src, b.src_mask)
    H = 5
    assert out.states.shape == (*b.src.shape, H * (2 if bidirectional else 1))
    assert torch.all(out.states[~b.src_mask] == 0)
    for i in range(b.src.shape[0]):  # each sentence alone, no padding at all
        n = int(b.src_len[i])
        alone = enc(b.src[i : i + 1, :n], b.src_mask[i : i + 1, :n])
        torch.testing.assert_close(out.states[i, :n], alone.states[0], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(out.context[i], alone.context[0], atol=1e-6, rtol=1e-5)
        # forward half of the context = forward state at the real last token (not a pad)
        torch.testing.assert_close(out.context[i, :H], out.states[i, n - 1, :H], atol=1e-6, rtol=1e-5)
        if bidirectional:  # backward half = backward state at the first token
            torch.testing.assert_close(out.context[i, H:], out.states[i, 0, H:], atol=1e-6, rtol=1e-5)


def test_encoder_rejects_bad_inputs():
    enc = Encoder(V, 6, 5)
    b = _batch()
    with pytest.raises(TypeError, match=r"src must hold integer token ids, got a tensor of dtype torch.float32"):
        enc(b.src.float(), b.src_mask)
    with pytest.raises(TypeError, match=r"src_mask must hold bool values.*torch.int64"):  # a dtype: a TypeError
        enc(b.src, b.src_mask.long())
    with pytest.raises(ValueError, match=r"src_mask must be \(B, S\) = \(6, \d+\) with S=\d+ as in src \(B, S\)"):
        enc(b.src, b.src_mask[:, :-1])
    with pytest.raises(ValueError, match="right padding"):
        enc(b.src, b.src_mask.flip(1))
    with pytest.raises(ValueError, match="cell must be"):
        Encoder(V, 6, 5, cell="rnn")


# --------------------------------------------------------------------------- scores and attention

def _qk(B=3, S=7, D=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, D, generator=g), torch.randn(B, S, D, generator=g)


def test_scores_match_their_formulas():
    q, k = _qk()
    torch.testing.assert_close(DotScore(8, 8)(q, k), (k @ q[:, :, None])[..., 0])
    torch.testing.assert_close(ScaledDotScore(8, 8)(q, k), (k @ q[:, :, None])[..., 0] / math.sqrt(8))
    cos = CosineScore(8, 8, init_beta=1.0)
    torch.testing.assert_close(cos(q, k), F.cosine_similarity(q[:, None].expand_as(k), k, dim=-1))
    add = AdditiveScore(8, 8, attn_dim=5)
    ref = torch.tanh((q @ add.U.weight.T)[:, None, :] + k @ add.W.weight.T + add.W.bias) @ add.v.weight[0]
    torch.testing.assert_close(add(q, k), ref)
    torch.testing.assert_close(add(q, k, add.prepare(k)), ref)


def test_scores_reject_wrong_shapes_naming_them():
    q, k = _qk(D=8)
    with pytest.raises(ValueError, match=r"keys must be \(B, S, key_dim\) = \(3, S, 8\) with key_dim=8 .*got shape \(3, 7, 6\)"):
        DotScore(8, 8)(q, k[..., :6])
    with pytest.raises(ValueError, match="query_dim=16, key_dim=8"):
        DotScore(16, 8)
    AdditiveScore(16, 8)  # the additive score projects, so sizes may differ


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(1, 9), min_size=1, max_size=5), name=st.sampled_from(sorted(SCORES)), seed=st.integers(0, 10**6))
def test_attention_weights_are_a_distribution_over_real_positions(lengths, name, seed):
    torch.manual_seed(seed)
    B, S, D = len(lengths), max(lengths), 8
    mask = torch.arange(S)[None] < torch.tensor(lengths)[:, None]
    keys = torch.randn(B, S, D) * mask[..., None]
    query = torch.randn(B, D)
    score = SCORES[name](D, D)
    ctx, w = attend(score, query, keys, mask)
    assert torch.all(w >= 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(B))
    assert torch.all(w[~mask] == 0)  # exactly zero on pads
    torch.testing.assert_close(ctx, (w[..., None] * keys).sum(1))
    # the same as a plain softmax over the real positions only
    for b, n in enumerate(lengths):
        torch.testing.assert_close(w[b, :n], score(query[b : b + 1], keys[b : b + 1, :n])[0].softmax(-1))


def test_masked_softmax_checks_mask():
    with pytest.raises(TypeError, match=r"mask must hold bool values.*torch.float32"):
        masked_softmax(torch.zeros(2, 3), torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"mask must be bool of shape \(2, 3\)"):
        masked_softmax(torch.zeros(2, 3), torch.ones(1, 3, dtype=torch.bool))


# --------------------------------------------------------------------------- the whole model

@pytest.mark.parametrize("attention", [None, "additive", "dot", "scaled_dot", "cosine"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_extra_padding_does_not_change_outputs(attention, cell):
    m = _model(attention, cell)
    b = _batch()
    tgt_in = b.tgt[:, :-1]
    logits, w = m(b.src, b.src_mask, tgt_in)
    src2, mask2 = _extra_pad(b.src, b.src_mask, 5)
    tgt2 = torch.cat([tgt_in, torch.zeros(tgt_in.shape[0], 4, dtype=torch.long)], 1)
    logits2, w2 = m(src2, mask2, tgt2)
    real_t = b.tgt_mask[:, 1:]
    torch.testing.assert_close(logits2[:, : tgt_in.shape[1]][real_t], logits[real_t], atol=1e-5, rtol=1e-5)
    if attention is not None:
        S = b.src.shape[1]
        assert torch.all(w2[..., S:] == 0)
        torch.testing.assert_close(w2[:, : tgt_in.shape[1], :S][real_t], w[real_t], atol=1e-6, rtol=1e-5)
        assert torch.all(w[~b.src_mask[:, None, :].expand_as(w)] == 0)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:2]))
    # and the loss is the same
    b2 = b._replace(src=src2, src_mask=mask2)
    torch.testing.assert_close(seq2seq_loss(m, b2), seq2seq_loss(m, b), atol=1e-5, rtol=1e-5)
    # greedy decoding too
    assert greedy_decode(m, src2, mask2, max_len=12)[0] == greedy_decode(m, b.src, b.src_mask, max_len=12)[0]


def test_model_shape_errors_name_the_shapes():
    m = _model()
    b = _batch()
    with pytest.raises(ValueError, match=r"tgt_in must be \(B, T\) = \(6, \d+\) with B=6 as in src \(B, S\), got shape \(5, \d+\).*the source's B"):
        m(b.src, b.src_mask, b.tgt[:5])
    with pytest.raises(ValueError, match=r"src_mask must be \(B, S\)"):
        m(b.src, b.src_mask[:, :-1], b.tgt)
    with pytest.raises(ValueError, match="unknown score"):
        Seq2Seq(V, V, attention="mlp")


def test_loss_ignores_pads_and_trains():
    torch.manual_seed(0)
    src, tgt, vocab = make_sequence_task("reverse", n=64, min_len=2, max_len=5, seed=1)
    b = collate_pairs(list(zip(src, tgt)))
    m = Seq2Seq(V, V, 16, 16, 32, bidirectional=True, attention="additive")
    opt = torch.optim.Adam(m.parameters(), 1e-2)
    first = None
    for _ in range(60):
        loss = seq2seq_loss(m, b)
        first = first if first is not None else loss.item()
        opt.zero_grad(), loss.backward(), opt.step()
    assert loss.item() < 0.5 * first


# --------------------------------------------------------------------------- decoding

def _force_eos_after(m: Seq2Seq, k: int):
    """Make the decoder output <eos> (id 3) after k steps, whatever the input: bias the output layer."""
    steps = {"n": 0}
    orig = m.decoder.step

    def step(y, state, enc, prepared=None):
        logp, state, w = orig(y, state, enc, prepared)
        forced = torch.full_like(logp, -1e4)
        forced[:, 3 if steps["n"] >= k else 5] = 0.0
        steps["n"] += 1
        return forced.log_softmax(-1), state, w

    m.decoder.step = step
    return steps


@pytest.mark.parametrize("attention", [None, "additive"])
def test_greedy_stops_at_eos_and_returns_weights_per_step(attention):
    m = _model(attention)
    b = _batch()
    steps = _force_eos_after(m, 3)
    ids, ws = greedy_decode(m, b.src, b.src_mask, max_len=50)
    assert steps["n"] == 4  # the loop stopped as soon as every sentence had <eos>
    assert all(seq == [5, 5, 5, 3] for seq in ids)
    for w, n in zip(ws, b.src_len.tolist()):
        assert (w is None) == (attention is None)
        if w is not None:
            assert w.shape == (4, n)
            torch.testing.assert_close(w.sum(-1), torch.ones(4))


def test_decoding_truncates_after_eos_in_each_sentence():
    m = _model("additive")
    b = _batch(n=10, seed=3)
    ids, ws = greedy_decode(m, b.src, b.src_mask, max_len=20)
    for seq, w in zip(ids, ws):
        assert 3 not in seq[:-1]  # nothing after the first <eos>
        assert w.shape[0] == len(seq)


@pytest.mark.parametrize("attention", [None, "additive", "dot"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_size_one_is_greedy(attention, cell, seed):
    m = _model(attention, cell, seed=seed)
    b = _batch(n=8, seed=seed)
    g_ids, g_w = greedy_decode(m, b.src, b.src_mask, max_len=15)
    b_ids, b_w = beam_search(m, b.src, b.src_mask, beam_size=1, max_len=15)
    assert b_ids == g_ids
    for gw, bw in zip(g_w, b_w):
        if attention is None:
            assert gw is None and bw is None
        else:
            torch.testing.assert_close(bw, gw, atol=1e-5, rtol=1e-4)


def test_beam_search_finds_a_translation_at_least_as_probable_as_greedy():
    m = _model("additive", seed=4)
    b = _batch(n=6, seed=4)

    def logp(src, mask, ids):
        tgt_in = torch.tensor([[2] + ids[:-1]])
        logits, _ = m(src, mask, tgt_in)
        return logits.log_softmax(-1)[0, torch.arange(len(ids)), torch.tensor(ids)].sum().item()

    g_ids, _ = greedy_decode(m, b.src, b.src_mask, max_len=12)
    b_ids, b_w = beam_search(m, b.src, b.src_mask, beam_size=4, max_len=12, alpha=0.0)  # alpha=0: raw log-prob
    for i in range(6):
        n = int(b.src_len[i])
        src, mask = b.src[i : i + 1, :n], b.src_mask[i : i + 1, :n]
        if g_ids[i][-1] == 3 and b_ids[i][-1] == 3:  # both finished: beam's is at least as likely
            assert logp(src, mask, b_ids[i]) >= logp(src, mask, g_ids[i]) - 1e-4
        assert b_w[i].shape == (len(b_ids[i]), n)


def test_make_decode_fn():
    m = _model("additive")
    b = _batch()
    assert make_decode_fn(m)(b) == greedy_decode(m, b.src, b.src_mask)[0]
    assert make_decode_fn(m, "beam", beam_size=1)(b) == greedy_decode(m, b.src, b.src_mask)[0]
    with pytest.raises(ValueError, match="greedy"):
        make_decode_fn(m, "sample")
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(m, b.src, b.src_mask, beam_size=0)


def test_masked_softmax_fully_masked_row_is_zeros_like_utils_attention():
    scores = torch.randn(3, 4, requires_grad=True)
    mask = torch.tensor([[True, True, False, False], [False] * 4, [True] * 4])
    w = masked_softmax(scores, mask)
    assert torch.equal(w[1], torch.zeros(4)) and not w.isnan().any()
    torch.testing.assert_close(w[0, :2], scores[0, :2].softmax(-1))
    w.sum().backward()
    assert torch.isfinite(scores.grad).all()


@pytest.mark.parametrize("max_len", [0, -1])
def test_decoders_reject_max_len_below_one(max_len):
    m, b = _model("additive"), _batch()
    for decode in (greedy_decode, beam_search):
        with pytest.raises(ValueError, match=rf"max_len must be >= 1.*got {max_len}"):
            decode(m, b.src, b.src_mask, max_len=max_len)


def test_ids_outside_the_vocabulary_name_its_size():
    m, b = _model("additive"), _batch()
    bad = b.src.clone()
    bad[0, 0] = V
    with pytest.raises(ValueError, match=rf"src: id {V} is outside the vocabulary of size {V}"):
        greedy_decode(m, bad, b.src_mask)
    with pytest.raises(ValueError, match=rf"tgt_in: id 99 is outside the vocabulary of size {V}"):
        m(b.src, b.src_mask, torch.full_like(b.tgt, 99))
    for decode in (greedy_decode, beam_search):
        with pytest.raises(ValueError, match=rf"bos_id: id {V} is outside the vocabulary of size {V}"):
            decode(m, b.src, b.src_mask, bos_id=V)
    assert all(len(seq) == 4 for seq in greedy_decode(m, b.src, b.src_mask, max_len=4, eos_id=V)[0])  # never ends


def test_empty_batch_decodes_to_nothing():
    m = _model("additive")
    src, mask = torch.zeros(0, 5, dtype=torch.long), torch.zeros(0, 5, dtype=torch.bool)
    assert greedy_decode(m, src, mask) == ([], [])
    assert beam_search(m, src, mask) == ([], [])
    with pytest.raises(ValueError, match="at least one real token"):  # an empty sentence is still refused
        greedy_decode(m, torch.tensor([[5, 0]]), torch.tensor([[False, False]]))
