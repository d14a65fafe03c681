"""Drive the explorer of notebook 07 through ipywidgets, without a browser."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from ipywidgets import interactive  # noqa: E402

from utils import explorers_transformer as ex  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_gradient_norm_explorer_callback():
    w = interactive(ex.plot_gradient_norms, depth=(2, 48, 2), d_model=[16, 32, 64], log_scale=True)
    controls = {c.description: c for c in w.children[:-1]}
    for name, values in {"depth": [4, 8], "d_model": [16], "log_scale": [False, True]}.items():
        for value in values:
            controls[name].value = value  # fires the callback, as a slider move would
            assert isinstance(w.result, plt.Figure)
            ax = w.result.axes[0]
            assert len(ax.lines) == 3 and len(ax.lines[0].get_xdata()) == controls["depth"].value
            plt.close(w.result)


def test_gradient_norms_without_residuals_vanish_at_the_bottom():
    n = ex.gradient_norms_by_depth(16, "no residual", d_model=16)
    r = ex.gradient_norms_by_depth(16, "pre-LN", d_model=16)
    assert len(n) == len(r) == 16
    assert n[0] / n[-1] < r[0] / r[-1]
    with pytest.raises(ValueError, match="mode"):
        ex.gradient_norms_by_depth(4, "sideways")
    with pytest.raises(ValueError, match="depth"):
        ex.gradient_norms_by_depth(0)
