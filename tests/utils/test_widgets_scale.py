"""Drive the explorer of notebook 10 through ipywidgets, without a browser."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from utils.explorers import explorer  # noqa: E402

from utils.explorers import scale as ex  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_rope_explorer_curves_coincide_for_every_setting():
    w = explorer(ex.plot_rope_scores, d_k=(4, 64, 4), base_exponent=(1.0, 5.0), start=(0, 1000, 50), seed=(0, 5))
    controls = {c.description: c for c in w.children[:-1]}
    for name, value in [("d_k", 32), ("base_exponent", 2.0), ("start", 950), ("seed", 3)]:
        controls[name].value = value
        fig = w.result
        assert isinstance(fig, plt.Figure)
        a, b = (line.get_ydata() for line in fig.axes[0].lines[:2])
        assert np.allclose(a, b, atol=1e-3)  # the same curve wherever the query sits


def test_rope_scores_without_rotation_is_the_plain_dot_product():
    q, k = torch.randn(8), torch.randn(8)
    s = ex.rope_scores(q, k, 0, torch.tensor([0]))
    assert torch.allclose(s, (q @ k)[None], atol=1e-6)
