"""Drive the explorer of notebook 07 through ipywidgets, without a browser."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from utils.explorers import explorer  # noqa: E402

from utils.explorers import transformer as ex  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_gradient_norm_explorer_callback():
    w = explorer(ex.plot_gradient_norms, depth=(2, 48, 2), d_model=[16, 32, 64], log_scale=True)
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


def _tiny_translator():
    import torch

    from utils.text import Vocab
    from utils.transformer import Transformer, TransformerConfig

    src_vocab = Vocab.build([["ein", "hund", "rennt", "im", "schnee", "."]])
    tgt_vocab = Vocab.build([["a", "dog", "runs", "in", "the", "snow", "."]])
    torch.manual_seed(0)
    cfg = TransformerConfig(len(src_vocab), len(tgt_vocab), d_model=16, num_heads=2, d_ff=32,
                            num_encoder_layers=2, num_decoder_layers=2, dropout=0.0)
    return Transformer(cfg).eval(), src_vocab, tgt_vocab


def test_translation_explorer_callback():
    model, sv, tv = _tiny_translator()
    w = explorer(lambda sentence, method, layer, head: ex.plot_translation(model, sv, tv, sentence, method, layer,
                                                                              None if head == "mean" else head),
                    sentence="ein hund rennt im schnee .", method=["greedy", "beam"],
                    layer=[("1", 0), ("2", 1)], head=[("mean", "mean"), ("1", 0), ("2", 1)])  # as notebook 08: shown from 1
    controls = {c.description: c for c in w.children[:-1]}
    for name, value in [("sentence", "ein hund ."), ("method", "beam"), ("layer", 1), ("head", 0)]:
        controls[name].value = value  # fires the callback, as typing or a click would
        fig = w.result
        assert isinstance(fig, plt.Figure)
        ax = fig.axes[0]
        src_labels = [t.get_text() for t in ax.get_xticklabels()]
        assert src_labels[0] == "<bos>" and src_labels[-1] == "<eos>" and "hund" in src_labels
        assert len(src_labels) == len(controls["sentence"].value.split()) + 2
        plt.close(fig)
    assert controls["layer"].label == "2" and "(cross-attention, layer 2, head 1)" in ax.get_title()  # labels match titles


def test_translate_sentence_maps_and_errors():
    model, sv, tv = _tiny_translator()
    t = ex.translate_sentence(model, sv, tv, "Ein Hund rennt im Schnee.", max_len=5)
    assert t["src"] == ["<bos>", "ein", "hund", "rennt", "im", "schnee", ".", "<eos>"]
    L, T = 2, len(t["rows"])
    assert t["maps"]["cross"].shape == (L, 1, 2, T, len(t["src"]))
    assert t["maps"]["decoder"].shape == (L, 1, 2, T, T)
    with pytest.raises(ValueError, match="no words"):
        ex.translate_sentence(model, sv, tv, "   ")
    with pytest.raises(ValueError, match="layer"):
        ex.plot_translation(model, sv, tv, "ein hund", layer=2)
    with pytest.raises(ValueError, match="head"):
        ex.plot_translation(model, sv, tv, "ein hund", head=5)
    with pytest.raises(ValueError, match="method"):
        ex.translate_sentence(model, sv, tv, "ein hund", method="sample")
