"""Drive the explorer of notebook 09 through ipywidgets, without a browser."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from ipywidgets import fixed  # noqa: E402
from utils.explorers import explorer  # noqa: E402

from utils.explorers import gpt as ex  # noqa: E402
from utils.gpt import GPT, CharTokenizer, GPTConfig  # noqa: E402

TEXT = "to be, or not to be: that is the question.\n"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def model_and_tokenizer():
    tok = CharTokenizer(TEXT)
    torch.manual_seed(0)
    return GPT(GPTConfig(len(tok), block_size=16, n_layer=1, n_head=2, d_model=16)), tok


def test_next_char_explorer_callback():
    model, tok = model_and_tokenizer()
    w = explorer(ex.plot_next_char, model=fixed(model), tok=fixed(tok), prompt="to be", temperature=(0.1, 2.0),
                    top_k=(0, 20), length=fixed(30), seed=fixed(0), show=fixed(8))
    controls = {c.description: c for c in w.children[:-1]}
    for name, value in [("temperature", 0.5), ("top_k", 3), ("prompt", "that is the question, to be or not to be")]:
        controls[name].value = value  # fires the callback, as moving a slider would
        assert isinstance(w.result, plt.Figure)
        bars = w.result.axes[0].patches
        assert len(bars) == 8
        heights = [b.get_height() for b in bars]
        assert heights == sorted(heights, reverse=True)
        if controls["top_k"].value == 3:
            assert sum(h > 0 for h in heights) == 3  # top-k leaves exactly k candidates
        plt.close(w.result)


def test_probabilities_follow_temperature():
    model, tok = model_and_tokenizer()
    cold, hot = (ex.next_char_probabilities(model, tok, "to be", t) for t in (0.2, 5.0))
    torch.testing.assert_close(cold.sum(), torch.tensor(1.0))
    assert cold.max() > hot.max()  # lower temperature sharpens the distribution
    greedy = ex.next_char_probabilities(model, tok, "to be", 0)  # temperature 0 = greedy, as in generate
    assert greedy.max() == 1 and greedy.sum() == 1 and greedy.argmax() == cold.argmax()
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        ex.next_char_probabilities(model, tok, "to be", -0.5)
    with pytest.raises(ValueError, match="prompt"):
        ex.next_char_probabilities(model, tok, "", 1.0)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        ex.next_char_probabilities(model, tok, "xyz", 1.0)
