"""utils.plotting: figures carry the tokens as tick labels and reject bad shapes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pytest  # noqa: E402
import torch  # noqa: E402

from utils.plotting import plot_attention, plot_attention_grid, plot_loss  # noqa: E402
from utils.training import History  # noqa: E402


def test_plot_attention_labels_and_crops_padding():
    w = torch.softmax(torch.randn(5, 6), -1)
    ax = plot_attention(w, ["a", "dog", "runs"], ["ein", "hund", "läuft", "."], title="t")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["ein", "hund", "läuft", "."]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "dog", "runs"]
    assert ax.images[0].get_array().shape == (3, 4)
    plt.close("all")


def test_plot_attention_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"weights must be a torch.Tensor \(Tq, Tk\).*\(2 dims\), got shape \(2, 3, 4\)"):
        plot_attention(torch.zeros(2, 3, 4), ["a"], ["b"])
    with pytest.raises(ValueError, match="smaller"):
        plot_attention(torch.zeros(2, 2), ["a", "b", "c"], ["x"])


def test_plot_attention_grid_shapes():
    fig = plot_attention_grid(torch.rand(2, 3, 4, 4), list("abcd"), list("wxyz"))
    assert len(fig.axes) == 6
    assert fig.axes[0].get_title() == "layer 1 · head 1"
    fig = plot_attention_grid(torch.rand(4, 3, 3), list("abc"), list("xyz"))
    assert len(fig.axes) == 4 and fig.axes[3].get_title() == "head 4"
    with pytest.raises(ValueError, match=r"weights must be \(\.\.\., C, Tq, Tk\): at least 3 dims"):
        plot_attention_grid(torch.rand(3, 3), list("abc"), list("abc"))
    with pytest.raises(ValueError, match=r"weights must be \(R, C, Tq, Tk\)"):
        plot_attention_grid(torch.rand(1, 2, 3, 3, 3), list("abc"), list("abc"))
    fig = plot_attention_grid(np.random.rand(2, 3, 3), list("abc"), list("xyz"))  # a NumPy array will do too
    assert len(fig.axes) == 2
    plt.close("all")


def test_plot_loss():
    h = History(train_loss=[3.0, 2.0, 1.5, 1.0], val_loss=[1.2], val_step=[4])
    ax = plot_loss(h, window=2)
    assert ax.get_xlabel() == "optimizer step"
    assert len(ax.lines) == 3
    plt.close("all")


def test_plot_loss_draws_each_mean_at_the_middle_of_its_window_in_the_raw_curves_colour():
    losses = [float(10 - i) for i in range(10)]          # a straight line: a centred mean lies on it
    h = History(train_loss=losses)
    ax = plot_loss(h, window=4)
    smooth, raw = ax.lines
    x, y = smooth.get_data()
    np.testing.assert_allclose(np.interp(x, np.arange(1, 11), losses), y)   # no lag: on the raw line
    assert x[-1] == 10 - 1.5 and x[0] == 1                                 # steps 7..10 averaged, drawn at 8.5
    assert smooth.get_color() == raw.get_color()
    plt.close("all")
    _, ax = plt.subplots()
    for name in ("a", "b"):                               # two labelled histories on one axes: two colours, each shared
        plot_loss(History(train_loss=losses, val_loss=[5.0], val_step=[10]), ax=ax, label=name)
    colours = [line.get_color() for line in ax.lines]
    assert colours[0] == colours[1] == colours[2] != colours[3] == colours[4] == colours[5]
    plt.close("all")


def test_plot_attention_grid_colorbar_shares_one_scale():
    w = torch.rand(2, 3, 4, 4) * 0.5                    # every weight below 0.5
    fig = plot_attention_grid(w, list("abcd"), list("wxyz"), colorbar=True)
    panels = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"][:6]
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in panels)   # one scale for all, not each panel's max
    assert len(fig.axes) == 7                                            # 6 panels and one colour bar
    plt.close(fig)
    fig = plot_attention_grid(w, list("abcd"), list("wxyz"))
    assert len(fig.axes) == 6 and fig.axes[0].images[0].get_clim()[1] == pytest.approx(float(w[0, 0].max()))
    plt.close(fig)
