"""utils.diagrams: every diagram carries its key labels, no two texts overlap, every text lies
inside the figure (and inside the box it is written on), fonts stay readable, bad options fail."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from utils import diagrams  # noqa: E402

# every diagram with each of its drawing options
VARIANTS = [
    ("rnn_encoder_decoder", {}),
    ("rnn_encoder_decoder", {"src": ["<bos>", "ein", "hund", "<eos>"], "tgt": ["a", "dog"]}),
    ("rnn_encoder_decoder", {"bidirectional": False}),
    ("additive_attention_step", {}),
    ("additive_attention_step", {"src": ["<bos>", "hallo", "<eos>"], "weights": [0.2, 0.7, 0.1]}),
    ("scaled_dot_product_pipeline", {}),
    ("scaled_dot_product_pipeline", {"mask": "padding"}),
    ("scaled_dot_product_pipeline", {"mask": None}),
    ("multi_head_attention", {}),
    ("multi_head_attention", {"num_heads": 2}),
    ("multi_head_attention", {"num_heads": 8}),
    ("transformer_layers", {}),
    ("transformer_layers", {"pre_ln": True}),
    ("kv_cache", {}),
    ("kv_cache", {"tokens": ["to", "be"]}),
    ("online_softmax", {}),
    ("online_softmax", {"num_blocks": 2}),
    ("online_softmax", {"num_blocks": 5}),
    ("flash_attention_tiles", {}),
    ("flash_attention_tiles", {"num_tiles": 3}),
    ("flash_attention_tiles", {"num_tiles": 6, "causal": True}),
    ("grouped_query_heads", {}),
    ("grouped_query_heads", {"num_heads": 4, "num_kv_heads": 4}),
    ("grouped_query_heads", {"num_heads": 8, "num_kv_heads": 1}),
    ("data_parallel", {}),
    ("data_parallel", {"num_processes": 3}),
    ("data_parallel", {"num_processes": 4}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(VARIANTS)]


def texts(fig: Figure) -> list[Text]:
    """The visible, non-empty texts of a drawn figure."""
    fig.canvas.draw()
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def overlaps(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of texts whose bounding boxes intersect (1 pixel of tolerance)."""
    ts = texts(fig)
    boxes = [t.get_window_extent().expanded(1, 1).padded(-1) for t in ts]
    return [(ts[i].get_text(), ts[j].get_text())
            for i in range(len(ts)) for j in range(i + 1, len(ts)) if boxes[i].overlaps(boxes[j])]


def outside(fig: Figure) -> list[str]:
    """Texts that are not entirely inside the figure."""
    W, H = fig.bbox.width, fig.bbox.height
    out = []
    for t in texts(fig):
        b = t.get_window_extent()
        if b.x0 < 0 or b.y0 < 0 or b.x1 > W or b.y1 > H:
            out.append(t.get_text())
    return out


def spilling(fig: Figure) -> list[str]:
    """Texts whose centre lies on a box (the top-most one there) but which do not fit inside it."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    patches = [p for p in fig.findobj(FancyBboxPatch) if p.get_visible()]
    bad = []
    for t in texts(fig):
        b = t.get_window_extent()
        cx, cy = (b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2
        under = [p for p in patches if p.get_window_extent(r).contains(cx, cy) and p.axes is not None]
        if not under:
            continue
        p = max(under, key=lambda p: p.get_zorder()).get_window_extent(r)
        if b.x0 < p.x0 - 1 or b.x1 > p.x1 + 1 or b.y0 < p.y0 - 1 or b.y1 > p.y1 + 1:
            bad.append(t.get_text())
    return bad


@pytest.fixture(params=VARIANTS, ids=IDS)
def fig(request):
    name, kwargs = request.param
    return getattr(diagrams, name)(**kwargs)


def test_figure_size_and_fonts(fig):
    assert isinstance(fig, Figure)
    w, h = fig.get_size_inches()
    assert w <= 11.0 and h <= 4.5, (w, h)
    small = [(t.get_text(), t.get_fontsize()) for t in texts(fig) if t.get_fontsize() < 11]
    assert not small, small


def test_no_overlapping_text(fig):
    assert not overlaps(fig)


def test_texts_inside_figure_and_boxes(fig):
    assert not outside(fig)
    assert not spilling(fig)


def test_tight_layout_safe(fig):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # tight_layout warns (UserWarning) when it cannot fit the axes
        # matplotlib < 3.10.1 calls pyparsing's old camelCase names, which pyparsing >= 3.3 marks deprecated:
        # not ours, and not a layout problem (seen with the range's lowest matplotlib, 3.10.0)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        fig.tight_layout()
    assert not outside(fig)
    assert not overlaps(fig)


def test_checks_catch_a_deliberately_bad_figure():
    """The three checks above are real: they fail on a figure built to break them."""
    good, ax = diagrams._canvas(4.0, 2.0)
    diagrams._text(ax, 1.0, 1.0, "alone", fs=12)
    assert not overlaps(good) and not outside(good) and not spilling(good)
    bad, ax = diagrams._canvas(4.0, 2.0)
    diagrams._text(ax, 1.0, 1.0, "softmax", fs=12)
    diagrams._text(ax, 1.2, 1.05, "weights", fs=12)          # on top of the first
    diagrams._text(ax, 3.9, 1.0, "off the edge", fs=12)       # runs past the right border
    diagrams._box(ax, 2.0, 0.4, 0.5, 0.3, "far too long for its box", fs=12)
    assert ("softmax", "weights") in overlaps(bad)
    assert outside(bad) == ["off the edge"]
    assert spilling(bad) == ["far too long for its box"]


def labels(fig: Figure) -> str:
    return "\n".join(t.get_text() for t in fig.findobj(Text))


def test_rnn_encoder_decoder_labels():
    common = ("$c$", "bottleneck", "$s_0$", "$s_{1}$", "$s_{5}$", "männer", "baseball", "<eos>",
              r"s_t = f_\mathrm{dec}(y_{t-1}, s_{t-1}, c)")
    # the course's encoder (the default): both directions, and c joins the two ends
    text = labels(diagrams.rnn_encoder_decoder())
    for key in common + (r"$c = [\overrightarrow{h}_S; \overleftarrow{h}_1]$", r"$\overrightarrow{h}_{1}$",
                         r"$\overleftarrow{h}_{1}$", r"$\overrightarrow{h}_{6}$", r"$\overleftarrow{h}_{6}$",
                         "bidirectional GRU"):
        assert key in text, key
    assert "$c = h_S$" not in text and "$h_{1}$" not in text
    text = labels(diagrams.rnn_encoder_decoder(bidirectional=False))
    for key in common + ("$c = h_S$", "$h_{1}$", "$h_{6}$", r"h_i = f_\mathrm{enc}(x_i, h_{i-1})"):
        assert key in text, key
    assert "overleftarrow" not in text


def test_additive_attention_step_labels():
    text = labels(diagrams.additive_attention_step())
    for key in ("$s_{t-1}$", r"v \cdot \tanh(s_{t-1} W_s + h_i W_h)", "softmax", "$e_{t,1}$", "$h_{6}$", "c_t =",
                "weights $a_{t,i}$", r"s_t = f_\mathrm{dec}(y_{t-1}, s_{t-1}, c_t)", "= men", "= play"):
        assert key in text, key


def test_scaled_dot_product_pipeline_labels():
    text = labels(diagrams.scaled_dot_product_pipeline())
    for key in (r"\sqrt{d_k}", "softmax", "mask", "True = may attend", r"-\infty", "$(T_q, T_k)$", "$(T_q, d_k)$",
                "$(T_k, d_v)$", "$(T_q, d_v)$", "rows sum to 1", r"$Q K^\top$"):
        assert key in text, key
    assert "mask" not in [t.get_text() for t in diagrams.scaled_dot_product_pipeline(mask=None).findobj(Text)]


def test_multi_head_attention_labels():
    text = labels(diagrams.multi_head_attention())
    for key in ("$W_O$", "concat", "$Q = X W_Q$", "$K = X W_K$", "$V = X W_V$", r"(T, D) \to (H, T, d_k)",
                "d_k = D / H", r"$H \times (T, d_k)$", "scaled dot-product", "4D^2 + 4D"):
        assert key in text, key


def test_transformer_layers_labels():
    post = labels(diagrams.transformer_layers())
    for key in ("Add & LayerNorm", "① self-attention", "② masked self-attention", "③ cross-attention",
                "feed-forward", "memory", "$K, V$", "post-LN (default, as in the paper)", "pre-LN (pre_norm=True)"):
        assert key in post, key
    assert post.count("Add & LayerNorm") == 5  # 2 encoder + 3 decoder sub-layers
    pre = [t.get_text() for t in diagrams.transformer_layers(pre_ln=True).findobj(Text)]
    assert "Add & LayerNorm" not in pre
    assert pre.count("LayerNorm") == 6 and pre.count("Add") == 5  # one per sub-layer + the encoder stack's final one


def test_transformer_default_matches_utils():
    """The diagram's default (post-LN) is the default of utils.transformer."""
    from utils.transformer import TransformerConfig

    assert TransformerConfig(src_vocab=5, tgt_vocab=5).pre_norm is False


def test_kv_cache_labels():
    text = labels(diagrams.kv_cache())
    for key in ("K cache", "V cache", "$k_t$", "$v_t$", "$q_t$", "$x_t W_Q$", "$O(t)$", "$O(t^2)$", r"\sqrt{d_k}",
                "$k_{1}$", "tail", "(B, H, t, d_k)"):
        assert key in text, key


@pytest.mark.parametrize("call, message", [
    (lambda: diagrams.rnn_encoder_decoder(src="ein hund"), "list or tuple"),
    (lambda: diagrams.rnn_encoder_decoder(tgt=[]), "1 to 5"),
    (lambda: diagrams.rnn_encoder_decoder(src=["<bos>", "donaudampfschiff"]), "at most 9 characters"),
    (lambda: diagrams.rnn_encoder_decoder(bidirectional="yes"), "True or False"),
    (lambda: diagrams.additive_attention_step(weights=[0.5, 0.5]), "6 non-negative numbers"),
    (lambda: diagrams.additive_attention_step(weights=[0.5] * 6), "summing to 1"),
    (lambda: diagrams.additive_attention_step(weights="abc"), "sequence of numbers"),
    (lambda: diagrams.scaled_dot_product_pipeline(mask="future"), r"mask must be one of \['causal', 'padding', None\]"),
    (lambda: diagrams.multi_head_attention(num_heads=1), "int from 2 to 8"),
    (lambda: diagrams.multi_head_attention(num_heads=True), "int from 2 to 8"),
    (lambda: diagrams.transformer_layers(pre_ln="yes"), "True or False"),
    (lambda: diagrams.kv_cache(tokens=["only"]), "2 to 5"),
])
def test_bad_options_raise(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_scale_diagrams_labels_and_bad_options():
    text = labels(diagrams.online_softmax())
    for key in ("$K_{1}$", "$V_{4}$", "$m_{4}, \\ell_{4}$", "running state", "acc / \\ell"):
        assert key in text, key
    text = labels(diagrams.grouped_query_heads(8, 2))
    for key in ("$q_{8}$", "$k_{2}$", "grouped-query", "4x smaller"):
        assert key in text, key
    assert "multi-query" in labels(diagrams.grouped_query_heads(4, 1))
    with pytest.raises(ValueError, match="divides num_heads"):
        diagrams.grouped_query_heads(8, 3)
    with pytest.raises(ValueError, match="num_blocks"):
        diagrams.online_softmax(1)


def test_flash_attention_tiles_labels_and_bad_options():
    text = labels(diagrams.flash_attention_tiles())
    for key in ("slow memory (HBM)", "fast memory (SRAM)", "$Q_{4}$", "$K_{4}$", "$(T, d_k)$", r"\sqrt{d_k}", "$L$  $(T)$",
                "write $O_b$, $L_b$", "never reach slow memory", "inner loop", "outer loop"):
        assert key in text, key
    assert "skipped" not in text and "skipped" in labels(diagrams.flash_attention_tiles(4, causal=True))
    for bad in (2, 7, True, 4.0):
        with pytest.raises(ValueError, match="num_tiles"):
            diagrams.flash_attention_tiles(bad)
    with pytest.raises(ValueError, match="causal"):
        diagrams.flash_attention_tiles(4, causal="yes")


def test_data_parallel_labels_and_bad_options():
    text = labels(diagrams.data_parallel(3))
    for key in ("rank 0", "rank 2", "shard 2: B windows", "all-reduce", "\\frac{1}{N}\\sum_r g_r", "$g_2$",
                "batch of 3·B windows", "replicas stay identical"):
        assert key in text, key
    assert "rank 3" not in text
    for bad in (1, 5, True, 2.0):
        with pytest.raises(ValueError, match="num_processes"):
            diagrams.data_parallel(bad)
