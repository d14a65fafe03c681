"""utils.grading.forbid: the hidden tests' switch that makes the course's own implementations unusable."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import utils.attention
from utils.attention import scaled_dot_product_attention as imported_by_name
from utils.grading import forbid


def test_a_python_function_is_caught_under_any_name_and_restored():
    q = torch.randn(1, 2, 4)
    with forbid(utils.attention.scaled_dot_product_attention):
        for call in (lambda: imported_by_name(q, q, q), lambda: utils.attention.scaled_dot_product_attention(q, q, q)):
            with pytest.raises(AssertionError, match="write it yourself.*scaled_dot_product_attention"):
                call()
    out, _ = imported_by_name(q, q, q)
    assert out.shape == (1, 2, 4)


def test_builtins_and_inherited_methods_are_caught_and_restored():
    layer = nn.TransformerDecoderLayer(8, 2, batch_first=True)
    x = torch.randn(1, 3, 8)
    with forbid((F, "one_hot"), (nn.TransformerDecoderLayer, "forward")):
        with pytest.raises(AssertionError, match="one_hot"):
            F.one_hot(torch.tensor([1]), 3)
        with pytest.raises(AssertionError, match="forward"):
            layer(x, x)
    assert F.one_hot(torch.tensor([1]), 3).tolist() == [[0, 1, 0]]
    assert layer(x, x).shape == (1, 3, 8)

    class Child(nn.Linear):
        pass

    with forbid((Child, "forward")):  # inherited: shadowed, then removed again
        with pytest.raises(AssertionError):
            Child(2, 2)(torch.ones(1, 2))
    assert "forward" not in Child.__dict__
    assert Child(2, 2)(torch.ones(1, 2)).shape == (1, 2)


def test_restored_even_when_the_block_raises():
    with pytest.raises(ValueError):
        with forbid((F, "one_hot")):
            raise ValueError("boom")
    assert F.one_hot(torch.tensor([0]), 1).tolist() == [[1]]


def test_refuses_what_it_cannot_switch_off():
    with pytest.raises(TypeError, match="plain Python functions or"):
        with forbid(F.one_hot):
            pass
