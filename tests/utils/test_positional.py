"""utils.positional: the paper's formula, the offset property, and the modules."""

import math

import pytest
import torch

from utils.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, offset_matrix, sinusoidal_encoding


def test_known_values():
    pe = sinusoidal_encoding(50, 8, dtype=torch.float64)
    assert pe.shape == (50, 8)
    # position 0: sin 0 = 0 on even dims, cos 0 = 1 on odd dims
    assert pe[0].tolist() == [0.0, 1.0] * 4
    # position 1, dims 0/1 have frequency 1; dims 2/3 have 1/10000^(2/8)
    assert pe[1, 0].item() == pytest.approx(math.sin(1.0))
    assert pe[1, 1].item() == pytest.approx(math.cos(1.0))
    assert pe[7, 2].item() == pytest.approx(math.sin(7 / 10000 ** (2 / 8)))
    assert pe[7, 3].item() == pytest.approx(math.cos(7 / 10000 ** (2 / 8)))  # the paper: 2i/d, not (2i+1)/d
    assert pe[42, 6].item() == pytest.approx(math.sin(42 / 10000 ** (6 / 8)))
    assert pe[42, 7].item() == pytest.approx(math.cos(42 / 10000 ** (6 / 8)))


def test_explicit_formula_all_entries():
    d, T = 16, 30
    pe = sinusoidal_encoding(T, d, dtype=torch.float64)
    for pos in range(T):
        for j in range(d):
            i = j // 2
            f = math.sin if j % 2 == 0 else math.cos
            assert pe[pos, j].item() == pytest.approx(f(pos / 10000 ** (2 * i / d)), abs=1e-12)


def test_offset_and_odd_dims():
    full = sinusoidal_encoding(20, 6)
    torch.testing.assert_close(sinusoidal_encoding(5, 6, offset=15), full[15:])
    odd = sinusoidal_encoding(10, 7, dtype=torch.float64)
    assert odd.shape == (10, 7)
    assert odd[3, 6].item() == pytest.approx(math.sin(3 / 10000 ** (6 / 7)))


@pytest.mark.parametrize("k", [1, 3, 17])
def test_linear_offset_property(k):
    d = 32
    pe = sinusoidal_encoding(100, d, dtype=torch.float64)
    M = offset_matrix(k, d)
    torch.testing.assert_close(pe[k:] , pe[:-k] @ M.T)
    torch.testing.assert_close(M @ M.T, torch.eye(d, dtype=torch.float64))  # a rotation


def test_distance_symmetric_and_grows_with_offset():
    pe = sinusoidal_encoding(64, 128, dtype=torch.float64)
    dist = torch.cdist(pe, pe)
    torch.testing.assert_close(dist, dist.T)
    centre = 32
    row = dist[centre]
    for off in range(1, 11):  # strictly monotone over short offsets, on both sides (d=128)
        assert row[centre + off] > row[centre + off - 1]
        assert row[centre - off] > row[centre - off + 1]
    assert row[centre + 2] < row[centre + 10] < row[centre + 30]  # and the trend continues
    torch.testing.assert_close(row[centre + 5], row[centre - 5])  # depends on |i - j| only


def test_sinusoidal_module_offset_matches_full_sequence():
    m = SinusoidalPositionalEncoding(8, max_len=20)
    x = torch.randn(2, 10, 8)
    full = m(x)
    step = torch.cat([m(x[:, t:t + 1], offset=t) for t in range(10)], dim=1)
    torch.testing.assert_close(step, full)
    assert "pe" not in m.state_dict()
    with pytest.raises(ValueError, match="max_len"):
        m(torch.randn(1, 15, 8), offset=10)
    with pytest.raises(ValueError, match="d_model=8"):
        m(torch.randn(1, 3, 6))


def test_learned_module_offset_matches_full_sequence():
    torch.manual_seed(0)
    m = LearnedPositionalEmbedding(8, max_len=12)
    x = torch.randn(2, 10, 8)
    full = m(x)
    step = torch.cat([m(x[:, t:t + 1], offset=t) for t in range(10)], dim=1)
    torch.testing.assert_close(step, full)
    torch.testing.assert_close(full - x, m.embedding.weight[:10].expand(2, 10, 8))
    with pytest.raises(ValueError, match="max_len"):
        m(torch.randn(1, 13, 8))
    with pytest.raises(ValueError, match="offset"):
        m(x, offset=-1)
