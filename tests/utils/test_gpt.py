"""utils.gpt: the decoder-only language model of notebook 09."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from utils.gpt import (GPT, Block, CharTokenizer, GPTConfig, block_from_torch, estimate_loss, generate, get_batch,
                       gpt_parameter_count, sampling_distribution, show_char, split_text, text_loss, top_k_filter)
from utils.training import count_parameters


def tiny(**kw) -> GPT:
    torch.manual_seed(0)
    cfg = dict(vocab_size=11, block_size=12, n_layer=2, n_head=2, d_model=16, dropout=0.0)
    cfg.update(kw)
    return GPT(GPTConfig(**cfg)).eval()


def test_tokenizer_round_trip_and_unknown_characters():
    tok = CharTokenizer("hello world")
    assert len(tok) == 8 and tok.chars == sorted(set("hello world"))
    assert tok.decode(tok.encode("hold low")) == "hold low"
    assert tok.decode(torch.tensor(tok.encode("er"))) == "er"
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.encode("hex")
    with pytest.raises(ValueError, match=r"ids must be in \[0, 8\)"):
        tok.decode([8])
    with pytest.raises(ValueError, match="non-empty"):
        CharTokenizer("")


def test_split_is_contiguous_and_complete():
    ids = torch.arange(1000)
    parts = split_text(ids, 0.1, 0.1)
    assert [len(parts[k]) for k in ("train", "val", "test")] == [800, 100, 100]
    assert torch.equal(torch.cat([parts["train"], parts["val"], parts["test"]]), ids)
    with pytest.raises(ValueError, match=r"ids must be a torch.Tensor \(N,\) of integer token ids \(1 dims\)"):
        split_text(ids.view(10, 100))
    with pytest.raises(ValueError, match="val_frac"):
        split_text(ids, 0.6, 0.5)


def test_batches_are_next_token_targets():
    data = torch.arange(100)
    x, y = get_batch(data, 8, 5, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (5, 8)
    assert torch.equal(y, x + 1)  # in this text the next token is always id + 1
    with pytest.raises(ValueError, match="longer than block_size"):
        get_batch(torch.arange(8), 8, 2)


@pytest.mark.parametrize("layers,d,heads,T,V", [(2, 16, 2, 12, 11), (4, 128, 4, 64, 65), (12, 768, 12, 1024, 50257)])
def test_parameter_count_formula(layers, d, heads, T, V):
    cfg = GPTConfig(vocab_size=V, block_size=T, n_layer=layers, n_head=heads, d_model=d)
    if d <= 128:
        assert count_parameters(GPT(cfg)) == gpt_parameter_count(cfg)
    else:  # GPT-2 small: 124M with the tied output layer (without building it)
        assert round(gpt_parameter_count(cfg) / 1e6) == 124


def test_initial_loss_is_that_of_a_uniform_guess():
    model = tiny(vocab_size=65, d_model=32)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randint(65, (8, 12), generator=g), torch.randint(65, (8, 12), generator=g)
    _, loss = model(x, y)
    assert abs(loss.item() - math.log(65)) < 0.1


@settings(max_examples=25, deadline=None)
@given(t=st.integers(0, 10), seed=st.integers(0, 10_000))
def test_no_position_sees_its_future(t, seed):
    model = tiny()
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(11, (2, 12), generator=g)
    y = x.clone()
    y[:, t + 1:] = torch.randint(11, (2, 11 - t), generator=g)  # change every token after position t
    with torch.no_grad():
        a, b = model(x)[0], model(y)[0]
    assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-6)


def test_block_equals_torch_encoder_layer_with_a_causal_mask():
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=5, block_size=10, n_layer=1, n_head=4, d_model=32)
    ref = nn.TransformerEncoderLayer(32, 4, 128, dropout=0.0, activation="gelu", batch_first=True, norm_first=True).eval()
    for p in ref.parameters():  # non-default LayerNorm parameters too
        nn.init.normal_(p, std=0.2)
    ours = block_from_torch(Block(cfg), ref).eval()
    x = torch.randn(3, 10, 32)
    blocked = torch.ones(10, 10, dtype=torch.bool).triu(1)  # torch: True = may NOT attend
    with torch.no_grad():
        torch.testing.assert_close(ours(x), ref(x, src_mask=blocked), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="norm_first"):
        block_from_torch(Block(cfg), nn.TransformerEncoderLayer(32, 4, 128, batch_first=True))


def test_cached_forward_equals_full_forward(device_dtype, tol):
    device, dtype = device_dtype  # CPU float32, and a GPU in bfloat16 where there is one (tests/conftest.py)
    model = tiny().to(device=device, dtype=dtype)
    x = torch.randint(11, (3, 12), generator=torch.Generator().manual_seed(2)).to(device)
    with torch.no_grad():
        full = model(x)[0]
        cache = model.new_cache()
        first = model(x[:, :5], cache=cache)[0]
        steps = [model(x[:, t:t + 1], offset=t, cache=cache)[0] for t in range(5, 12)]
    torch.testing.assert_close(torch.cat([first, *steps], 1), full, **tol)


@pytest.mark.parametrize("prompt_len,new", [(1, 5), (4, 20), (12, 6)])
def test_cached_generation_equals_recomputation_also_past_block_size(prompt_len, new):
    model = tiny()
    prompt = torch.randint(11, (2, prompt_len), generator=torch.Generator().manual_seed(3))
    greedy = [generate(model, prompt, new, temperature=0, use_cache=c) for c in (True, False)]
    assert torch.equal(*greedy) and greedy[0].shape == (2, prompt_len + new)
    sampled = [generate(model, prompt, new, top_k=5, use_cache=c, generator=torch.Generator().manual_seed(4))
               for c in (True, False)]
    assert torch.equal(*sampled)


def test_wrong_inputs_say_what_was_expected():
    model = tiny()
    with pytest.raises(TypeError, match=r"idx must hold integer token ids, got a tensor of dtype torch.float32"):
        model(torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"idx must be a torch.Tensor \(B, T\) of integer token ids .*x\[None\]"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="exceed block_size 12"):
        model(torch.zeros(1, 13, dtype=torch.long))
    cache = model.new_cache()
    model(torch.zeros(1, 4, dtype=torch.long), cache=cache)
    with pytest.raises(ValueError, match="offset 4, not 2"):
        model(torch.zeros(1, 1, dtype=torch.long), offset=2, cache=cache)
    with pytest.raises(ValueError, match="temperature"):
        generate(model, torch.zeros(1, 1, dtype=torch.long), 2, temperature=-1)
    with pytest.raises(ValueError, match="d_model"):
        GPTConfig(vocab_size=5, d_model=10, n_head=3)


def test_top_k_keeps_the_k_largest():
    logits = torch.tensor([[1.0, 5.0, 3.0, 4.0], [0.0, -1.0, 2.0, 1.0]])
    kept = top_k_filter(logits, 2)
    assert torch.equal(torch.isfinite(kept), torch.tensor([[False, True, False, True], [False, False, True, True]]))
    assert torch.equal(top_k_filter(logits, 10), logits)
    with pytest.raises(ValueError):
        top_k_filter(logits, 0)


def test_training_lowers_the_loss_on_a_repeating_text():
    torch.manual_seed(0)
    data = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 50)
    model = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, d_model=16))
    before = estimate_loss(model, data, batch_size=8, batches=4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(60):
        _, loss = model(*get_batch(data, 8, 16, g))
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = estimate_loss(model, data, batch_size=8, batches=4)
    assert before > 2.0 and after < 0.1
    out = generate(model, torch.tensor([[3]]), 12, temperature=0)
    assert out[0].tolist() == [3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5]


def test_attention_maps_are_causal_distributions():
    model = tiny()
    maps = model.attention_maps(torch.randint(11, (2, 7), generator=torch.Generator().manual_seed(5)))
    assert maps.shape == (2, 2, 2, 7, 7)
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, 2, 2, 7))
    assert torch.all(maps.triu(1) == 0)


def test_sampling_distribution_temperature_and_top_k():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    torch.testing.assert_close(sampling_distribution(logits), torch.softmax(logits, -1))
    cold, hot = sampling_distribution(logits, 0.5), sampling_distribution(logits, 2.0)
    assert cold.max() > sampling_distribution(logits).max() > hot.max()
    p = sampling_distribution(logits, 1.0, top_k=2)
    assert torch.equal(p[0, 2:], torch.zeros(2)) and torch.isclose(p.sum(), torch.tensor(1.0))
    greedy = sampling_distribution(logits, 0)  # temperature 0 = greedy, as in generate: all on the argmax
    assert torch.equal(greedy, torch.tensor([[1.0, 0.0, 0.0, 0.0]]))


def test_text_loss_scores_every_position_of_whole_windows():
    model = tiny()
    data = torch.randint(11, (12 * 5 + 3,), generator=torch.Generator().manual_seed(6))
    xs, ys = data[:60].view(5, 12), data[1:61].view(5, 12)
    with torch.no_grad():
        expected = model(xs, ys)[1].item()
    assert abs(text_loss(model, data, batch_size=2) - expected) < 1e-5  # batching does not change the mean
    with pytest.raises(ValueError, match="longer than block_size"):
        text_loss(model, data[:12])


def test_show_char_labels():
    assert [show_char(c) for c in "a \n"] == ["a", "␣", "\\n"]


def test_ids_outside_the_vocabulary_name_its_size():
    model = tiny()
    with pytest.raises(ValueError, match=r"idx: id 11 is outside the vocabulary of size 11 \(valid ids: 0..10\)"):
        model(torch.tensor([[1, 11]]))
    with pytest.raises(ValueError, match="idx: id -1 is outside the vocabulary of size 11"):
        generate(model, torch.tensor([[-1]]), 3)
    with pytest.raises(TypeError, match="integer token ids, got float 2.0 at index 0"):
        CharTokenizer("hello").decode([2.0])


def test_generate_rejects_negative_lengths_and_bad_temperatures():
    model, idx = tiny(), torch.tensor([[1, 2]])
    assert torch.equal(generate(model, idx, 0), idx)  # nothing to add
    with pytest.raises(ValueError, match="max_new_tokens must be >= 0, got -1"):
        generate(model, idx, -1)
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match=r"temperature must be a finite number >= 0"):
            generate(model, idx, 2, temperature=bad)
        with pytest.raises(ValueError, match=r"temperature must be a finite number >= 0"):
            sampling_distribution(torch.randn(11), bad)
    with pytest.raises(ValueError, match=r"temperature 1e-45 is too small.*overflow.*temperature=0"):
        generate(model, idx, 2, temperature=1e-45)
    masked = torch.tensor([0.0, 1.0, float("-inf")])  # -inf logits are fine: they stay -inf
    assert sampling_distribution(masked, 0.01)[2] == 0


def test_batches_and_loss_estimates_need_a_positive_count():
    data = torch.arange(50) % 11
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 8 and 0"):
        get_batch(data, 8, 0)
    with pytest.raises(ValueError, match="batches must be >= 1, got 0"):
        estimate_loss(tiny(), data, batches=0)
