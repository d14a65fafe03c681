"""utils.gpt's switches for notebook 09's incremental build: residual, feed_forward, norm="none"."""

import pytest
import torch
from torch import nn

from utils.gpt import GPT, GPTConfig, generate, gpt_parameter_count
from utils.training import count_parameters

STAGES = [dict(n_layer=1, n_head=1, feed_forward=False, residual=False, norm="none"),
          dict(n_layer=1, feed_forward=False, residual=False, norm="none"),
          dict(n_layer=1, residual=False, norm="none"),
          dict(residual=False, norm="none"),
          dict(norm="none"),
          dict(feed_forward=False),
          dict(feed_forward=False, norm="rms", bias=False),
          dict(residual=False)]


@pytest.mark.parametrize("kw", STAGES)
def test_parameter_count_and_causality_of_every_stage(kw):
    cfg = GPTConfig(vocab_size=11, block_size=12, d_model=16, **{"n_layer": 2, "n_head": 2, **kw})
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    assert count_parameters(model) == gpt_parameter_count(cfg)
    x = torch.randint(11, (2, 12))
    x2 = x.clone()
    x2[:, 7:] = (x2[:, 7:] + 1) % 11
    with torch.no_grad():
        assert torch.allclose(model(x)[0][:, :7], model(x2)[0][:, :7], atol=1e-6)  # the future stays out
    new = generate(model, x[:, :3], 20, temperature=0)
    assert torch.equal(new, generate(model, x[:, :3], 20, temperature=0, use_cache=False))


def test_switches_remove_exactly_their_piece():
    cfg = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=16, residual=False,
                    feed_forward=False, norm="none")
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    block = model.blocks[0]
    assert block.mlp is None and block.ln2 is None
    assert isinstance(block.ln1, nn.Identity) and isinstance(model.ln_f, nn.Identity)
    x = torch.randint(11, (3, 8))
    with torch.no_grad():
        h = model.tok_emb(x) + model.pos_emb(torch.arange(8))
        out, _ = block.attention(h)  # no residual, no norm, no MLP: the block is its attention
        assert torch.allclose(model(x)[0], model.head(out), atol=1e-6)
        on = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=16, norm="none",
                           feed_forward=False))
        on.load_state_dict(model.state_dict())
        assert torch.allclose(on.eval()(x)[0], model.head(h + out), atol=1e-6)  # with the residual: h + attn(h)


def test_defaults_are_notebook_09s_block_and_bad_norm_is_refused():
    cfg = GPTConfig(vocab_size=11)
    assert cfg.residual and cfg.feed_forward and cfg.norm == "layer"
    with pytest.raises(ValueError, match="norm must be one of"):
        GPTConfig(vocab_size=11, norm="batch")
