"""Drive the explorers of notebooks 04-06 through ipywidgets, without a browser."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from ipywidgets import fixed  # noqa: E402
from utils.explorers import explorer  # noqa: E402

from utils import explorers  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _drive(fn, settings: dict, **widget_args):
    """Build the same explorer the notebook shows, then move each control."""
    w = explorer(fn, **widget_args)
    controls = {c.description: c for c in w.children[:-1]}
    for name, values in settings.items():
        for value in values:
            controls[name].value = value  # fires the callback, as a slider move would
            assert isinstance(w.result, plt.Figure)
            plt.close(w.result)
    return w


def test_softmax_saturation_explorer():
    _drive(explorers.plot_softmax_saturation, {"d_k": [4, 1024, 64], "scaled": [False, True]},
           d_k=[4, 16, 64, 256, 1024], scaled=True, seed=(0, 5), key_tokens=fixed(explorers.DEFAULT_KEYS))
    big_unscaled = explorers.plot_softmax_saturation(1024, scaled=False)
    assert "max weight 1.00" in big_unscaled.axes[1].get_title()
    small = explorers.plot_softmax_saturation(1024, scaled=True)
    assert "max weight 1.00" not in small.axes[1].get_title()
    with pytest.raises(ValueError):
        explorers.plot_softmax_saturation(0)


def test_head_maps_explorer():
    w = torch.softmax(torch.randn(2, 4, 5, 5), -1)
    toks = ["a", "dog", "runs", "on", "grass"]
    _drive(lambda layer, head: explorers.plot_head_maps(w, toks, toks, head=head, layer=layer),
           {"layer": [1, 0], "head": [3, 0]}, layer=(0, 1), head=(0, 3))
    fig = explorers.plot_head_maps(w[0], toks, toks, head=2)
    assert fig.axes[0].get_title() == "head 3"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == toks
    with pytest.raises(ValueError):
        explorers.plot_head_maps(w, toks, toks, head=0)  # 4-D needs a layer
    with pytest.raises(ValueError):
        explorers.plot_head_maps(w[0], toks, toks, head=9)


def test_positional_encoding_explorer():
    _drive(explorers.plot_positional_encoding, {"position": [0, 63], "dimension": [0, 1, 63]},
           max_len=(16, 128), d_model=[16, 64, 128], position=(0, 63), dimension=(0, 63))
    fig = explorers.plot_positional_encoding(64, 64, position=0, dimension=1)
    assert "cos" in fig.axes[1].get_title()
    with pytest.raises(ValueError):
        explorers.plot_positional_encoding(16, 16, position=20)
