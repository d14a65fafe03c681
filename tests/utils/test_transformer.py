"""Tests for utils.transformer: shapes, masks, the key/value cache, decoding, and
equality with torch.nn.Transformer given the same weights. Tiny configs only."""

import pytest
import torch
from torch import nn

from utils.attention import combine_masks, causal_mask, key_padding_mask
from utils.training import count_parameters
from utils.transformer import (
    DecoderLayer,
    EncoderLayer,
    EncoderTagger,
    FeedForward,
    Transformer,
    TransformerConfig,
    beam_search,
    greedy_decode,
    load_from_torch,
    parameter_breakdown,
)

BOS, EOS, PAD = 2, 3, 0
torch.set_num_threads(1)  # tiny models: threads only add overhead on a shared CPU


def tiny(pre_norm=False, **kw):
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab=17, tgt_vocab=19, d_model=16, num_heads=4, d_ff=32,
                            num_encoder_layers=2, num_decoder_layers=2, dropout=0.0, max_len=64, pre_norm=pre_norm, **kw)
    model = Transformer(cfg).eval()
    # Random init gives near-uniform outputs; sharpen the output layer so greedy/beam choices are clear.
    with torch.no_grad():
        model.out_proj.weight.mul_(4.0)
    return model


def random_src(B=3, S=7, lengths=(7, 4, 5), seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 17, (B, S), generator=g)
    for b, n in enumerate(lengths):
        src[b, n:] = PAD
    return src


@pytest.mark.parametrize("pre_norm", [False, True])
def test_forward_shape_and_errors(pre_norm):
    model = tiny(pre_norm)
    src, tgt = random_src(), torch.randint(4, 19, (3, 5))
    assert model(src, tgt).shape == (3, 5, 19)
    with pytest.raises(TypeError, match="src must hold integer token ids"):
        model(src.float(), tgt)
    with pytest.raises(TypeError, match="tgt_in must hold integer token ids"):
        model(src, tgt.float())
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig(10, 10, d_model=10, num_heads=3)
    with pytest.raises(ValueError, match="src_vocab == tgt_vocab"):
        TransformerConfig(10, 11, share_embeddings=True)


def test_feed_forward_is_two_linear_layers_and_count():
    ff = FeedForward(512, 2048)
    assert count_parameters(ff) == 2 * 512 * 2048 + 2048 + 512 == 2_099_712
    x = torch.randn(2, 3, 512)
    ref = torch.relu(x @ ff.linear1.weight.T + ff.linear1.bias) @ ff.linear2.weight.T + ff.linear2.bias
    assert torch.allclose(ff(x), ref, atol=1e-5)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_decoder_never_sees_future_tokens(pre_norm):
    model = tiny(pre_norm)
    src = random_src()
    tgt = torch.randint(4, 19, (3, 8))
    logits = model(src, tgt)
    changed = tgt.clone()
    changed[:, 5:] = torch.randint(4, 19, (3, 3))
    logits2 = model(src, changed)
    assert torch.allclose(logits[:, :5], logits2[:, :5], atol=1e-6)
    assert not torch.allclose(logits[:, 5:], logits2[:, 5:])
    # gradient view: output at position t depends on no input after t
    emb = model.embed(model.tgt_embed, tgt).detach().requires_grad_(True)
    memory = model.encode(src)
    out = model.decoder(emb, memory, model.src_mask(src))
    (out[:, 3] * torch.randn(out.shape[-1])).sum().backward()  # (a plain sum of a LayerNorm output is constant)
    assert emb.grad[:, 4:].abs().max() == 0
    assert emb.grad[:, :4].abs().sum() > 0


def test_source_padding_is_ignored():
    model = tiny()
    src = random_src()
    tgt = torch.randint(4, 19, (3, 5))
    longer = torch.cat([src, torch.full((3, 4), PAD)], dim=1)
    assert torch.allclose(model(src, tgt), model(longer, tgt), atol=1e-5)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_cached_decoding_equals_full_recomputation(pre_norm):
    model = tiny(pre_norm)
    src = random_src()
    tok_c, log_c = greedy_decode(model, src, 12, BOS, EOS, use_cache=True, return_logits=True)
    tok_f, log_f = greedy_decode(model, src, 12, BOS, EOS, use_cache=False, return_logits=True)
    assert tok_c == tok_f
    assert log_c.shape == log_f.shape
    assert torch.allclose(log_c, log_f, atol=1e-5)
    # step-by-step logits equal one teacher-forced pass over the same prefix
    ys = torch.tensor([[BOS] + t + [EOS] * (12 - len(t)) for t in tok_f])[:, :log_f.shape[1]]
    assert torch.allclose(model(src, ys), log_f, atol=1e-5)


def test_cached_decoding_equals_recomputation_on_each_device_and_dtype(device_dtype, tol):
    device, dtype = device_dtype  # CPU float32, and a GPU in bfloat16 where there is one (tests/conftest.py)
    model = tiny().to(device=device, dtype=dtype)
    src = random_src().to(device)
    tgt = torch.randint(4, 19, (3, 6), generator=torch.Generator().manual_seed(5)).to(device)
    tgt[:, 0] = BOS
    with torch.no_grad():  # teacher-forced: the same tokens both ways, whatever the argmax in bfloat16
        memory, mask = model.encode(src), model.src_mask(src)
        full = model.decode(tgt, memory, mask)
        cache = model.new_cache()
        steps = [model.decode(tgt[:, t:t + 1], memory, mask, cache, offset=t) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), full, **tol)


def test_cache_prefill_several_tokens_then_step():
    model = tiny()
    src = random_src()
    tgt = torch.randint(4, 19, (3, 6))
    mask = model.src_mask(src)
    memory = model.encode(src, mask)
    full = model.decode(tgt, memory, mask)
    cache = model.new_cache()
    a = model.decode(tgt[:, :4], memory, mask, cache, offset=0)
    b = model.decode(tgt[:, 4:], memory, mask, cache, offset=4)
    assert torch.allclose(torch.cat([a, b], 1), full, atol=1e-5)
    with pytest.raises(ValueError, match="offset"):
        model.decode(tgt[:, :1], memory, mask, cache, offset=3)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_beam_size_one_equals_greedy(pre_norm):
    model = tiny(pre_norm)
    src = random_src()
    assert beam_search(model, src, 1, 12, BOS, EOS) == greedy_decode(model, src, 12, BOS, EOS)


def test_beam_finds_at_least_greedy_score_and_returns_attention():
    model = tiny()
    src = random_src()
    toks, attn = beam_search(model, src, 4, 10, BOS, EOS, length_penalty=0.0, return_attention=True)
    greedy = greedy_decode(model, src, 10, BOS, EOS)

    def logprob(b, seq):
        ys = torch.tensor([[BOS] + seq])
        lp = model(src[b:b + 1], ys).log_softmax(-1)[0]
        target = seq + [EOS] if len(seq) < 10 else seq
        return sum(lp[i, t].item() for i, t in enumerate(target))

    for b in range(3):
        assert logprob(b, toks[b]) >= logprob(b, greedy[b]) - 1e-4
        assert attn[b].shape[1] == src.shape[1]
        assert torch.allclose(attn[b].sum(-1), torch.ones(attn[b].shape[0]), atol=1e-5)
        n_real = int((src[b] != PAD).sum())
        assert (attn[b][:, n_real:] == 0).all()  # no attention on source padding


def test_padded_batch_equals_one_by_one():
    model = tiny()
    lengths = (7, 4, 5)
    src = random_src(lengths=lengths)
    batch_g = greedy_decode(model, src, 12, BOS, EOS)
    batch_b = beam_search(model, src, 3, 12, BOS, EOS)
    for b, n in enumerate(lengths):
        alone = src[b:b + 1, :n]
        assert greedy_decode(model, alone, 12, BOS, EOS)[0] == batch_g[b]
        assert beam_search(model, alone, 3, 12, BOS, EOS)[0] == batch_b[b]
    assert any(len(t) > 0 for t in batch_g)


def test_greedy_attention_rows():
    model = tiny()
    src = random_src()
    toks, attn = greedy_decode(model, src, 12, BOS, EOS, return_attention=True)
    for t, a in zip(toks, attn):
        assert a.shape[0] in (len(t), len(t) + 1)


def test_sharing_and_tying():
    model = tiny(share_embeddings=False, tie_output=True)
    assert model.out_proj.weight is model.tgt_embed.weight
    assert parameter_breakdown(model)["output"] == 0
    torch.manual_seed(0)
    shared = Transformer(TransformerConfig(20, 20, d_model=16, num_heads=2, d_ff=32, num_encoder_layers=1,
                                           num_decoder_layers=1, share_embeddings=True, tie_output=True))
    assert shared.src_embed is shared.tgt_embed
    bd = parameter_breakdown(shared)
    assert bd["embeddings"] == 20 * 16 and bd["output"] == 0
    assert bd["total"] == count_parameters(shared)


def test_parameter_counts_of_the_paper():
    with torch.device("meta"):
        base = Transformer(TransformerConfig(37000, 37000, share_embeddings=True, tie_output=True))
        big = Transformer(TransformerConfig(37000, 37000, d_model=1024, num_heads=16, d_ff=4096,
                                            share_embeddings=True, tie_output=True))
    assert count_parameters(base.decoder.layers[0].ff) == 2_099_712
    assert count_parameters(base.decoder.layers[0].self_attn) == 1_050_624
    assert count_parameters(base.decoder.layers[0]) == 2 * 1_050_624 + 2_099_712 + 3 * 1024 == 4_204_032
    bd = parameter_breakdown(base)
    assert bd["total"] == count_parameters(base)
    assert 60e6 < bd["total"] < 66e6 and 205e6 < count_parameters(big) < 216e6
    with torch.device("meta"):
        ref = nn.Transformer(512, 8, 6, 6, 2048)
    # nn.Transformer = our two stacks + its two final LayerNorms (post-LN has none of its own)
    assert count_parameters(ref) == bd["encoder"] + bd["decoder"] + 2 * 2 * 512


@pytest.mark.parametrize("pre_norm", [False, True])
def test_layers_equal_torch_layers(pre_norm):
    torch.manual_seed(0)
    d, h, ff = 16, 4, 32
    ours_e, ours_d = EncoderLayer(d, h, ff, 0.0, pre_norm).eval(), DecoderLayer(d, h, ff, 0.0, pre_norm).eval()
    ref_e = nn.TransformerEncoderLayer(d, h, ff, 0.0, batch_first=True, norm_first=pre_norm).eval()
    ref_d = nn.TransformerDecoderLayer(d, h, ff, 0.0, batch_first=True, norm_first=pre_norm).eval()
    for p in list(ref_e.parameters()) + list(ref_d.parameters()):  # make the norms non-trivial too
        nn.init.normal_(p, std=0.3)
    from utils.transformer import _copy_layer
    _copy_layer(ours_e, ref_e), _copy_layer(ours_d, ref_d)
    x, mem = torch.randn(2, 5, d), torch.randn(2, 6, d)
    pad = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    with torch.no_grad():
        assert torch.allclose(ours_e(x), ref_e(x), atol=1e-5)
        got = ours_d(x, mem, causal_mask(5), key_padding_mask(pad))
        want = ref_d(x, mem, tgt_mask=~causal_mask(5), memory_key_padding_mask=~pad, tgt_is_causal=False)
        assert torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_stacks_equal_nn_transformer(pre_norm):
    torch.manual_seed(0)
    model = tiny(pre_norm)
    cfg = model.cfg
    ref = nn.Transformer(cfg.d_model, cfg.num_heads, cfg.num_encoder_layers, cfg.num_decoder_layers, cfg.d_ff, 0.0,
                         batch_first=True, norm_first=pre_norm).eval()
    load_from_torch(model, ref)
    src, tgt = random_src(), torch.randint(4, 19, (3, 5))
    src_x, tgt_x = model.embed(model.src_embed, src), model.embed(model.tgt_embed, tgt)
    real = src != PAD
    with torch.no_grad():
        mem = model.encoder(src_x, key_padding_mask(real))
        out = model.decoder(tgt_x, mem, key_padding_mask(real))
        mem_ref = ref.encoder(src_x, src_key_padding_mask=~real)
        out_ref = ref.decoder(tgt_x, mem_ref, tgt_mask=~causal_mask(5), memory_key_padding_mask=~real)
    if not pre_norm:  # nn.Transformer ends each stack with one more LayerNorm; apply it to ours to compare
        mem, out = ref.encoder.norm(mem), ref.decoder.norm(out)
    # nn's fast path may zero padded encoder positions: compare real positions only
    assert torch.allclose(mem[real], mem_ref[real], atol=1e-5)
    assert torch.allclose(out, out_ref, atol=1e-5)


def test_masks_combine_causal_and_padding():
    ids = torch.tensor([[5, 6, 0, 0]])
    m = combine_masks(key_padding_mask(ids), causal_mask(4))
    assert m.shape == (1, 1, 4, 4)
    assert m[0, 0, 3].tolist() == [True, True, False, False]


def test_translation_loss_ignores_padding_and_matches_cross_entropy():
    from utils.text import collate_pairs
    from utils.transformer import translation_loss

    model = tiny()
    pairs = [([BOS, 5, 6, 7, EOS], [BOS, 8, 9, EOS]), ([BOS, 5, EOS], [BOS, 10, 11, 12, 13, EOS])]
    batch = collate_pairs(pairs)
    loss = translation_loss(model, batch)
    # one sentence at a time, token-weighted: the batch loss is the mean over real target tokens
    total, n = 0.0, 0
    for src, tgt in pairs:
        logits = model(torch.tensor([src]), torch.tensor([tgt[:-1]]))[0]
        total += nn.functional.cross_entropy(logits, torch.tensor(tgt[1:]), reduction="sum").item()
        n += len(tgt) - 1
    assert loss.item() == pytest.approx(total / n, rel=1e-5)
    assert translation_loss(model, batch, label_smoothing=0.1).item() > 0


def test_make_decode_fn_greedy_and_beam():
    from utils.text import collate_pairs
    from utils.transformer import make_decode_fn

    model = tiny()
    batch = collate_pairs([([BOS, 5, 6, 7, EOS], [BOS, EOS]), ([BOS, 9, EOS], [BOS, EOS])])
    greedy = make_decode_fn(model, "greedy", max_len=6)(batch)
    assert greedy == greedy_decode(model, batch.src, 6, BOS, EOS)
    assert make_decode_fn(model, "beam", beam_size=1, max_len=6)(batch) == greedy
    with pytest.raises(ValueError, match="greedy"):
        make_decode_fn(model, "sampling")


def test_attention_maps_shapes_masks_and_rows():
    from utils.transformer import attention_maps

    model = tiny()
    src = random_src()                                       # (3, 7), lengths 7, 4, 5
    tgt = torch.tensor([[BOS, 5, 6, 7], [BOS, 8, 0, 0], [BOS, 9, 10, 0]])
    maps = attention_maps(model, src, tgt)
    L, H = 2, 4
    assert maps["encoder"].shape == (L, 3, H, 7, 7)
    assert maps["decoder"].shape == (L, 3, H, 4, 4) and maps["cross"].shape == (L, 3, H, 4, 7)
    for kind in maps:
        assert torch.allclose(maps[kind].sum(-1), torch.ones(maps[kind].shape[:-1]), atol=1e-5)
    assert maps["decoder"].triu(1).abs().max() == 0         # nothing from the future
    assert maps["cross"][:, 1, :, :, 4:].abs().max() == 0    # nothing from source padding
    assert maps["encoder"][:, 1, :, :, 4:].abs().max() == 0
    # the maps are the weights the forward pass really used: the last cross-attention matches
    model(src, tgt)
    assert torch.allclose(maps["cross"][-1], model.decoder.layers[-1].cross_weights)


def test_wrong_offset_with_a_cache_is_refused():
    model = tiny()
    src = random_src()
    memory, mask = model.encode(src), model.src_mask(src)
    cache = model.new_cache()
    model.decode(torch.full((3, 1), BOS), memory, mask, cache, offset=0)
    with pytest.raises(ValueError, match="must start at position 1"):
        model.decode(torch.full((3, 1), 5), memory, mask, cache, offset=0)  # forgot to advance the position
    assert model.decode(torch.full((3, 1), 5), memory, mask, cache, offset=1).shape == (3, 1, 19)


@pytest.mark.parametrize("max_len", [0, -1])
def test_decoders_reject_max_len_below_one(max_len):
    model, src = tiny(), random_src()
    with pytest.raises(ValueError, match=rf"max_len must be >= 1.*got {max_len}"):
        greedy_decode(model, src, max_len, BOS, EOS)
    with pytest.raises(ValueError, match=rf"max_len must be >= 1.*got {max_len}"):
        beam_search(model, src, 2, max_len, BOS, EOS)


def test_ids_outside_the_vocabulary_name_its_size():
    model, src = tiny(), random_src()
    with pytest.raises(ValueError, match=r"source ids: id 17 is outside the vocabulary of size 17 \(valid ids: 0..16\)"):
        model(src.masked_fill(src == PAD, 17), torch.full((3, 2), BOS))
    with pytest.raises(ValueError, match="target ids: id -3 is outside the vocabulary of size 19"):
        model(src, torch.full((3, 2), -3))
    with pytest.raises(ValueError, match="bos_id: id 19 is outside the vocabulary of size 19"):
        greedy_decode(model, src, 5, 19, EOS)
    with pytest.raises(ValueError, match="bos_id: id -1 is outside"):
        beam_search(model, src, 2, 5, -1, EOS)
    # an <eos> outside the vocabulary is never produced: every output runs to max_len (the benchmark's idiom)
    assert all(len(seq) == 5 for seq in greedy_decode(model, src, 5, BOS, 19))


def test_empty_or_fully_padded_source_is_refused():
    model = tiny()
    padded = random_src()
    padded[1] = PAD
    only_pad = r"at least one real token; row\(s\) \[.*\] hold only <pad> \(id 0\)"
    no_token = r"src \(B, S\) is empty: S=0"  # sentences of no token at all: the door's empty size (issue 51)
    for src, says in ((padded, only_pad), (torch.zeros(2, 0, dtype=torch.long), no_token)):
        with pytest.raises(ValueError, match=says):
            greedy_decode(model, src, 5, BOS, EOS)
        with pytest.raises(ValueError, match=says):
            beam_search(model, src, 2, 5, BOS, EOS)
    empty_batch = torch.zeros(0, 5, dtype=torch.long)
    assert greedy_decode(model, empty_batch, 5, BOS, EOS) == [] and beam_search(model, empty_batch, 2, 5, BOS, EOS) == []


def test_config_sizes_must_be_positive():
    with pytest.raises(ValueError, match="num_heads must be >= 1, got 0"):
        TransformerConfig(10, 10, num_heads=0)
    with pytest.raises(ValueError, match="src_vocab must be >= 1, got 0"):
        TransformerConfig(0, 10)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_encoder_tagger_is_the_transformers_encoder_with_a_read_out(pre_norm):
    model = tiny(pre_norm)
    torch.manual_seed(1)
    tagger = EncoderTagger(model.cfg).eval()
    assert count_parameters(tagger) == count_parameters(model.src_embed) + parameter_breakdown(model)["encoder"] \
        + count_parameters(model.out_proj)
    tagger.src_embed.load_state_dict(model.src_embed.state_dict())
    tagger.encoder.load_state_dict(model.encoder.state_dict())
    tagger.out_proj.load_state_dict(model.out_proj.state_dict())
    src = random_src()
    logits = tagger(src)
    assert logits.shape == (3, 7, 19)                                  # (B, S, tgt_vocab)
    assert torch.allclose(logits, model.out_proj(model.encode(src)), atol=1e-6)
    # padding is ignored at the real positions, as in the Transformer's encoder
    longer = torch.cat([src, torch.full((3, 4), PAD)], dim=1)
    real = src != PAD
    assert torch.allclose(tagger(longer)[:, :7][real], logits[real], atol=1e-5)


def test_encoder_tagger_is_initialised_as_the_transformer_and_checks_its_input():
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab=50, tgt_vocab=11, d_model=64, num_heads=4, d_ff=128, num_encoder_layers=2,
                            num_decoder_layers=5, dropout=0.0)
    tagger = EncoderTagger(cfg)
    assert abs(tagger.src_embed.weight.std().item() - 64 ** -0.5) < 0.02       # N(0, 1/d_model)
    bound = (6 / (64 + 11)) ** 0.5                                              # Xavier-uniform
    assert tagger.out_proj.weight.abs().max() <= bound and tagger.out_proj.weight.abs().max() > 0.9 * bound
    assert len(tagger.encoder.layers) == 2 and not hasattr(tagger, "decoder")
    with pytest.raises(TypeError, match="src must hold integer token ids"):
        tagger(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="source ids: id 50 is outside the vocabulary of size 50"):
        tagger(torch.full((2, 3), 50))
