"""Diagrams of the course's mechanisms, drawn with plain Matplotlib patches, arrows and text.

One function per diagram, each returning a :class:`matplotlib.figure.Figure`:

- :func:`rnn_encoder_decoder`         the RNN encoder-decoder and its fixed-size context (notebook 02);
- :func:`additive_attention_step`     one decoder step of Bahdanau's additive attention (notebook 03);
- :func:`scaled_dot_product_pipeline` softmax(Q Kᵀ / √d_k) V with a mask, and the shapes (notebook 04);
- :func:`multi_head_attention`        project, split into H heads, attend, concatenate, W_O (notebook 05);
- :func:`transformer_layers`          the encoder layer and the decoder layer, post-LN or pre-LN (notebook 07);
- :func:`kv_cache`                    one generation step with a key/value cache (notebooks 08 and 09);
- :func:`online_softmax`              attention over keys in blocks with a running max and sum (notebook 10);
- :func:`flash_attention_tiles`       FlashAttention's tiles of queries and keys, slow and fast memory (notebook 10);
- :func:`grouped_query_heads`         query heads sharing key/value heads (notebook 10);
- :func:`data_parallel`               DistributedDataParallel: replicas, batch shards, all-reduce (notebook 10).

The symbols are those of the notebooks and of ``utils``: rows are positions (``X`` is (T, D),
``Q = X W_Q``), the scores ``Q Kᵀ`` are (T_q, T_k), masks are boolean with True = may attend, the
RNN notebooks write h_i, s_{t-1}, e_{t,i}, a_{t,i} and c_t. One colour per role everywhere:
queries orange, keys blue, values green, recurrent states purple, attention weights and contexts
vermilion (the Okabe-Ito palette, readable with the common colour-vision deficiencies).

The figures are not registered with pyplot (they carry their own Agg canvas), so a notebook
shows one when it is the value of a cell, once, and nothing needs closing. Every figure is at
most 11 × 4.5 inches (a notebook cell and a 16:9 slide) and uses fonts of 11 pt or more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

__all__ = [
    "COLORS",
    "rnn_encoder_decoder",
    "additive_attention_step",
    "scaled_dot_product_pipeline",
    "multi_head_attention",
    "transformer_layers",
    "kv_cache",
    "online_softmax",
    "flash_attention_tiles",
    "grouped_query_heads",
    "data_parallel",
]

# (fill, edge) per role: light fills, dark edges, black text.
COLORS: dict[str, tuple[str, str]] = {
    "query": ("#FFE2B0", "#B86E00"),      # orange
    "key": ("#CDE6F7", "#0072B2"),        # blue
    "value": ("#C6EBDD", "#007A5A"),      # bluish green
    "state": ("#F1D3E5", "#9E4A7C"),      # reddish purple: recurrent states
    "attention": ("#FBD0BC", "#C0490A"),  # vermilion: scores, weights, contexts
    "norm": ("#FFF3A6", "#8A7400"),       # yellow: LayerNorm
    "op": ("#EDEDED", "#404040"),         # grey: other operations
    "token": ("#FFFFFF", "#404040"),      # white: tokens
}
FONT = 13       # box labels
SMALL = 11      # shapes and notes (the smallest size used)
INK = "#222222"
MAX_SIZE = (11.0, 4.5)


@dataclass
class _Box:
    cx: float
    cy: float
    w: float
    h: float

    @property
    def left(self):
        return (self.cx - self.w / 2, self.cy)

    @property
    def right(self):
        return (self.cx + self.w / 2, self.cy)

    @property
    def top(self):
        return (self.cx, self.cy + self.h / 2)

    @property
    def bottom(self):
        return (self.cx, self.cy - self.h / 2)

    def at(self, dx: float = 0.0, dy: float = 0.0):
        """A point relative to the centre, in inches."""
        return (self.cx + dx, self.cy + dy)


def _canvas(w: float, h: float):
    """A figure of w × h inches whose single axes uses inches as data units (origin bottom left)."""
    fig = Figure(figsize=(w, h))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)
    ax.set_xlim(0, w)
    ax.set_ylim(0, h)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def _box(ax, cx, cy, w, h, text="", role="op", fs=FONT, lw=1.8, ls="-", weight="normal", pad=0.04, z=2):
    fill, edge = COLORS[role]
    ax.add_patch(FancyBboxPatch((cx - w / 2 + pad, cy - h / 2 + pad), w - 2 * pad, h - 2 * pad,
                                boxstyle=f"round,pad={pad}", fc=fill, ec=edge, lw=lw, ls=ls, zorder=z))
    if text:
        ax.text(cx, cy, text, ha="center", va="center", fontsize=fs, color=INK, weight=weight, zorder=z + 1)
    return _Box(cx, cy, w, h)


def _text(ax, x, y, s, fs=SMALL, ha="center", va="center", color=INK, **kw):
    return ax.text(x, y, s, ha=ha, va=va, fontsize=fs, color=color, zorder=40, **kw)


def _arrow(ax, p, q, color=INK, lw=1.6, ls="-", z=1, style="-|>"):
    ax.add_patch(FancyArrowPatch(p, q, arrowstyle=style, mutation_scale=14, shrinkA=0, shrinkB=0,
                                 color=color, lw=lw, ls=ls, zorder=z))


def _path(ax, points, color=INK, lw=1.6, ls="-", z=1, arrow=True):
    """A polyline through ``points`` with an arrow head on its last segment."""
    xs, ys = zip(*points)
    if len(points) > 2 or not arrow:
        end = -1 if arrow else None
        ax.add_line(Line2D(xs[:end] if arrow else xs, ys[:end] if arrow else ys, color=color, lw=lw, ls=ls,
                           zorder=z, solid_capstyle="butt"))
    if arrow:
        _arrow(ax, points[-2], points[-1], color=color, lw=lw, ls=ls, z=z)


def _tokens(name: str, tokens, min_len: int, max_len: int) -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise ValueError(f"{name} must be a list or tuple of token strings, got {type(tokens).__name__}")
    tokens = list(tokens)
    if not min_len <= len(tokens) <= max_len or not all(isinstance(t, str) and t for t in tokens):
        raise ValueError(f"{name} must hold {min_len} to {max_len} non-empty strings, got {tokens!r}")
    if any(len(t) > 9 for t in tokens):
        raise ValueError(f"{name}: tokens of at most 9 characters fit the boxes, got {tokens!r}")
    return tokens


def _choice(name: str, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)!r}, got {value!r}")
    return value


# --------------------------------------------------------------------------- #
# 1. The RNN encoder-decoder (notebook 02)
# --------------------------------------------------------------------------- #

def rnn_encoder_decoder(
    src: Sequence[str] = ("<bos>", "männer", "spielen", "baseball", ".", "<eos>"),
    tgt: Sequence[str] = ("men", "play", "baseball", "."),
    bidirectional: bool = True,
) -> Figure:
    """The encoder-decoder of notebook 02 on one sentence pair.

    The encoder reads the source tokens x_i into states h_i = f_enc(x_i, h_{i-1}). With ``bidirectional``
    (the course's model, ``utils.rnn.Encoder``) each h_i is a forward state (after x_1..x_i) stacked on a
    backward state (after x_S..x_i), drawn as the two halves of one column, and the context joins the
    forward state after the last token with the backward state after the first: c = [h→_S; h←_1].
    Without it, one direction and c = h_S, S the source length. The decoder starts from
    s_0 = tanh(W_init c), receives the same c at every step, and is fed its previous output
    y_{t-1} (``<bos>`` first): s_t = f_dec(y_{t-1}, s_{t-1}, c). Everything the decoder knows about the
    source passes through c, one vector of fixed size: the bottleneck, drawn in vermilion.

    ``src`` (2-7 tokens, framed with ``<bos>``/``<eos>`` as ``utils.translation`` does) and ``tgt``
    (1-5 tokens, without them) default to a Multi30k training pair, lower-cased and tokenized.
    """
    src = _tokens("src", src, 2, 7)
    tgt = _tokens("tgt", tgt, 1, 5)
    if not isinstance(bidirectional, bool):
        raise ValueError(f"bidirectional must be True or False, got {bidirectional!r}")
    fig, ax = _canvas(11.0, 4.3)
    y_tok, y_cell, y_out, y_bus = 0.45, 1.85, 3.25, 1.15
    cw, ch = 0.55, 0.6
    pitch_e, pitch_d = 0.84, 0.88
    x0 = 0.55
    enc_x = [x0 + pitch_e * i for i in range(len(src))]
    cx_c = enc_x[-1] + 0.95
    dec_x = [cx_c + 1.0 + pitch_d * j for j in range(len(tgt) + 1)]

    # encoder
    state, bus = COLORS["state"][1], COLORS["attention"][1]
    c = _box(ax, cx_c, y_cell, 0.7, 0.95, "$c$", role="attention", fs=16, lw=3.2)
    if not bidirectional:
        for i, (x, tok) in enumerate(zip(enc_x, src)):
            _text(ax, x, y_tok, tok, fs=12)
            _arrow(ax, (x, y_tok + 0.18), (x, y_cell - ch / 2))
            _box(ax, x, y_cell, cw, ch, f"$h_{{{i + 1}}}$", role="state")
            if i:
                _arrow(ax, (enc_x[i - 1] + cw / 2, y_cell), (x - cw / 2, y_cell), color=state, lw=2)
        _text(ax, (enc_x[0] + enc_x[-1]) / 2, 3.85, r"encoder (GRU)   $h_i = f_\mathrm{enc}(x_i, h_{i-1})$", fs=FONT)
        _arrow(ax, (enc_x[-1] + cw / 2, y_cell), c.left, color=bus, lw=2.2)
        _text(ax, cx_c, 3.0, "bottleneck", fs=12, color=bus, weight="bold")
        _text(ax, cx_c, 2.62, "$c = h_S$", fs=12)
    else:
        # each column is h_i: the forward state (lower half) stacked on the backward state (upper half)
        hh = 0.47
        y_fw, y_bw = y_cell - hh / 2, y_cell + hh / 2
        for i, (x, tok) in enumerate(zip(enc_x, src)):
            _text(ax, x, y_tok, tok, fs=12)
            _arrow(ax, (x, y_tok + 0.18), (x, y_fw - hh / 2))
            _box(ax, x, y_fw, cw, hh, rf"$\overrightarrow{{h}}_{{{i + 1}}}$", role="state", fs=SMALL + 1)
            _box(ax, x, y_bw, cw, hh, rf"$\overleftarrow{{h}}_{{{i + 1}}}$", role="state", fs=SMALL + 1)
            if i:  # forward: left to right; backward: right to left
                _arrow(ax, (enc_x[i - 1] + cw / 2, y_fw), (x - cw / 2, y_fw), color=state, lw=2)
                _arrow(ax, (x - cw / 2, y_bw), (enc_x[i - 1] + cw / 2, y_bw), color=state, lw=2)
        _text(ax, (enc_x[0] + enc_x[-1]) / 2, 3.85,
              r"encoder (bidirectional GRU)   $h_i = [\overrightarrow{h}_i; \overleftarrow{h}_i]$", fs=FONT)
        # c joins the forward state after the last token and the backward state after the first
        _arrow(ax, (enc_x[-1] + cw / 2, y_fw), (c.left[0], y_fw), color=bus, lw=2.2)
        y_over = y_bw + hh / 2 + 0.3
        _path(ax, [(enc_x[0], y_bw + hh / 2), (enc_x[0], y_over), (cx_c, y_over), c.top], color=bus, lw=2.2)
        _text(ax, cx_c, 3.45, "bottleneck", fs=12, color=bus, weight="bold")
        _text(ax, cx_c, 3.05, r"$c = [\overrightarrow{h}_S; \overleftarrow{h}_1]$", fs=12)

    # decoder
    inputs, outputs = ["<bos>"] + tgt, tgt + ["<eos>"]
    _arrow(ax, c.right, (dec_x[0] - cw / 2, y_cell), color=COLORS["state"][1], lw=2)
    _text(ax, (c.right[0] + dec_x[0] - cw / 2) / 2, y_cell + 0.22, "$s_0$", fs=SMALL)
    _path(ax, [c.bottom, (cx_c, y_bus), (dec_x[-1] - 0.12, y_bus)], color=bus, lw=1.8, arrow=False)
    _text(ax, cx_c, 0.85, "same $c$", fs=SMALL, color=bus)
    _text(ax, cx_c, 0.55, "every step", fs=SMALL, color=bus)
    for j, (x, y_in, y_o) in enumerate(zip(dec_x, inputs, outputs)):
        _text(ax, x, y_tok, y_in, fs=12)
        _arrow(ax, (x + 0.1, y_tok + 0.18), (x + 0.1, y_cell - ch / 2))
        _arrow(ax, (x - 0.12, y_bus), (x - 0.12, y_cell - ch / 2), color=bus, lw=1.8)
        _box(ax, x, y_cell, cw, ch, f"$s_{{{j + 1}}}$", role="state")
        _arrow(ax, (x, y_cell + ch / 2), (x, y_out - 0.17))
        _text(ax, x, y_out, y_o, fs=12, weight="bold")
        if j:
            _arrow(ax, (dec_x[j - 1] + cw / 2, y_cell), (x - cw / 2, y_cell), color=COLORS["state"][1], lw=2)
        if j < len(tgt):  # the output of step t is the input of step t + 1
            _arrow(ax, (x + 0.1, y_out - 0.2), (dec_x[j + 1] - 0.1, y_tok + 0.2), color="#777777", lw=1.3, ls="--")
    _text(ax, (dec_x[0] + dec_x[-1]) / 2, 3.85, r"decoder (GRU)   $s_t = f_\mathrm{dec}(y_{t-1}, s_{t-1}, c)$", fs=FONT)
    return fig


# --------------------------------------------------------------------------- #
# 2. One step of additive (Bahdanau) attention (notebook 03)
# --------------------------------------------------------------------------- #

def additive_attention_step(
    src: Sequence[str] = ("<bos>", "männer", "spielen", "baseball", ".", "<eos>"),
    weights: Sequence[float] | None = None,
    y_prev: str = "men",
    y_out: str = "play",
) -> Figure:
    """One decoder step t of the attention decoder of notebook 03 (``utils.rnn.attend``).

    The previous decoder state s_{t-1} is scored against every encoder state h_i with the additive
    score e_{t,i} = v · tanh(s_{t-1} W_s + h_i W_h) (``utils.rnn.AdditiveScore``, in NOTATION.md's row form); a softmax over the
    real source positions gives the weights a_{t,i}; the context is c_t = Σ_i a_{t,i} h_i; the GRU
    then computes s_t = f_dec(y_{t-1}, s_{t-1}, c_t), from which the next word y_t is predicted.

    ``weights`` (one per source token, non-negative, summing to 1) are drawn as bars; the default
    is an illustration of a trained model putting most of its weight on *spielen* while writing
    *play*, not a measurement.
    """
    src = _tokens("src", src, 2, 7)
    _tokens("y_prev", [y_prev], 1, 1)
    _tokens("y_out", [y_out], 1, 1)
    if weights is None:
        base = [0.03, 0.12, 0.70, 0.10, 0.03, 0.02]
        weights = base if len(src) == len(base) else [1.0 / len(src)] * len(src)
    try:
        weights = [float(w) for w in weights]
    except (TypeError, ValueError):
        raise ValueError(f"weights must be a sequence of numbers, got {weights!r}") from None
    if len(weights) != len(src) or min(weights) < 0 or abs(sum(weights) - 1) > 1e-3:
        raise ValueError(f"weights must be {len(src)} non-negative numbers (one per source token) summing to 1, "
                         f"got {weights!r}")
    fig, ax = _canvas(11.0, 4.5)
    y_tok, y_h, y_bus, y_e, y_soft, y_a = 0.38, 0.95, 1.55, 2.12, 2.76, 3.45
    pitch, cw = 0.78, 0.64
    xs = [3.75 + pitch * i for i in range(len(src))]
    x_lo, x_hi = xs[0] - cw / 2, xs[-1] + cw / 2
    state, att = COLORS["state"][1], COLORS["attention"][1]

    _text(ax, 5.5, 4.15, r"decoder step $t$:   $e_{t,i} = v \cdot \tanh(s_{t-1} W_s + h_i W_h)$,   "
          r"$a_t = \mathrm{softmax}(e_t)$,   $c_t = \Sigma_i\, a_{t,i} h_i$", fs=FONT)
    for label, y in (("weights $a_{t,i}$", y_a), ("scores $e_{t,i}$", y_e), ("encoder states $h_i$", y_h),
                     ("source", y_tok)):
        _text(ax, x_lo - 0.3, y, label, fs=12, ha="right")

    # the query: the previous decoder state, on a line to every score and to the GRU
    s_prev = _box(ax, 2.55, y_bus, 0.9, 0.5, "$s_{t-1}$", role="state")
    _text(ax, 2.0, y_bus, "decoder state", fs=12, ha="right")
    gru = _Box(9.55, y_bus, 2.5, 0.62)
    _path(ax, [s_prev.right, gru.left], color=state, lw=2.0)

    for i, (x, tok, w) in enumerate(zip(xs, src, weights)):
        _text(ax, x, y_tok, tok, fs=12)
        _box(ax, x, y_h, cw, 0.5, f"$h_{{{i + 1}}}$", role="state")
        _arrow(ax, (x + 0.13, y_h + 0.25), (x + 0.13, y_e - 0.22))
        _arrow(ax, (x - 0.15, y_bus), (x - 0.15, y_e - 0.22), color=state, lw=1.8)
        _box(ax, x, y_e, cw, 0.45, f"$e_{{t,{i + 1}}}$", role="attention", fs=12)
        _arrow(ax, (x, y_e + 0.225), (x, y_soft - 0.21))
        _arrow(ax, (x, y_soft + 0.21), (x, y_a - 0.28))
        _box(ax, x, y_a, cw, 0.56, role="attention", lw=1.4)
        ax.add_patch(Rectangle((x - 0.17, y_a - 0.22), 0.34, 0.44 * w / max(weights), fc=att, ec="none", zorder=4))
    soft = "softmax over the source positions $i$" if len(src) >= 5 else "softmax over $i$"
    _box(ax, (x_lo + x_hi) / 2, y_soft, x_hi - x_lo, 0.42, soft, role="op", fs=12)

    # the context and the new state
    ctx = _box(ax, 9.5, y_a, 2.2, 0.56, r"$c_t = \Sigma_i\, a_{t,i} h_i$", role="attention", lw=2.6)
    _arrow(ax, (x_hi, y_a), ctx.left, color=att, lw=2.0)
    _arrow(ax, (x_hi, y_h), ctx.at(-0.95, -0.28), color=state, lw=1.6)
    _text(ax, 8.5, 2.15, "$h_i$", fs=12, color=state)
    _box(ax, gru.cx, gru.cy, gru.w, gru.h, r"$s_t = f_\mathrm{dec}(y_{t-1}, s_{t-1}, c_t)$", role="state", lw=2.2)
    _arrow(ax, (9.95, y_a - 0.28), (9.95, y_bus + 0.31), color=att, lw=2.0)
    _text(ax, 8.95, y_tok, f"$y_{{t-1}}$ = {y_prev}", fs=12)
    _arrow(ax, (8.95, y_tok + 0.17), (8.95, y_bus - 0.31))
    _text(ax, 10.35, y_tok, f"$y_t$ = {y_out}", fs=12, weight="bold")
    _arrow(ax, (10.35, y_bus - 0.31), (10.35, y_tok + 0.17))
    return fig


# --------------------------------------------------------------------------- #
# 3. Scaled dot-product attention (notebook 04)
# --------------------------------------------------------------------------- #

def _mini_grid(ax, x0, y0, allowed, shade=None, cell=0.16):
    """A small (rows, cols) picture of a score or weight matrix, top-left corner at (x0, y0):
    masked cells dark grey (or white when ``shade`` is given), allowed ones vermilion."""
    fill, edge = COLORS["attention"]
    for r, row in enumerate(allowed):
        for c_, ok in enumerate(row):
            if shade is None:
                fc = fill if ok else "#555555"
            else:
                fc = (edge if shade[r][c_] > 0.5 else fill) if ok else "#FFFFFF"
            ax.add_patch(Rectangle((x0 + c_ * cell, y0 - (r + 1) * cell), cell, cell, fc=fc, ec="#888888", lw=0.8, zorder=3))


def scaled_dot_product_pipeline(mask: str | None = "causal") -> Figure:
    """softmax(Q Kᵀ / √d_k) V step by step, with the shape of every intermediate
    (``utils.attention.scaled_dot_product_attention``).

    Q (T_q, d_k) and K (T_k, d_k) give the scores Q Kᵀ (T_q, T_k), divided by √d_k; where the boolean
    mask is False (True = may attend) the score becomes -∞; a softmax over the keys makes every row
    sum to 1; the weights times V (T_k, d_v) give the output (T_q, d_v). Leading batch and head
    dimensions (B, H, ...) are left out.

    ``mask``: ``"causal"`` (the lower triangle, ``causal_mask``), ``"padding"`` (the last key is a
    pad, ``key_padding_mask``) or ``None`` (no mask step). The small grids picture a 4 × 4 example.
    """
    _choice("mask", mask, ("causal", "padding", None))
    fig, ax = _canvas(11.0, 4.1)
    y = 2.45
    q = _box(ax, 0.75, 3.05, 0.9, 0.55, "$Q$", role="query", fs=15)
    k = _box(ax, 0.75, 1.9, 0.9, 0.55, "$K$", role="key", fs=15)
    v = _box(ax, 0.75, 0.75, 0.9, 0.55, "$V$", role="value", fs=15)
    for b, shape in ((q, "$(T_q, d_k)$"), (k, "$(T_k, d_k)$"), (v, "$(T_k, d_v)$")):
        _text(ax, b.cx, b.cy - 0.45, shape, fs=12)
    _text(ax, 2.75, 3.85, r"$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}(Q K^\top / \sqrt{d_k})\; V$", fs=FONT)

    steps = [(r"$Q K^\top$", "$(T_q, T_k)$", None, "op"),
             (r"$\div \sqrt{d_k}$", "$(T_q, T_k)$", None, "op")]
    if mask is not None:
        steps.append(("mask", "$(T_q, T_k)$", (r"$-\infty$ where False", "True = may attend"), "op"))
    steps += [("softmax", "$(T_q, T_k)$", ("over the keys:", "rows sum to 1"), "attention"),
              (r"$\cdot\; V$", "", None, "op")]
    n = len(steps)
    xs = [2.6 + i * (8.95 - 2.6) / (n - 1) for i in range(n)]
    bw, bh = 1.25, 0.55
    _arrow(ax, q.right, (xs[0] - bw / 2, y + 0.14))
    _arrow(ax, k.right, (xs[0] - bw / 2, y - 0.14))
    for i, (x, (label, shape, note, role)) in enumerate(zip(xs, steps)):
        _box(ax, x, y, bw, bh, label, role=role, fs=14)
        if shape:
            _text(ax, x, y - 0.45, shape, fs=12)
        for j, line in enumerate(note or ()):
            _text(ax, x, y - 0.85 - 0.3 * j, line, fs=SMALL)
        if i:
            _arrow(ax, (xs[i - 1] + bw / 2, y), (x - bw / 2, y))
    _path(ax, [v.right, (xs[-1], v.cy), (xs[-1], y - bh / 2)], color=COLORS["value"][1], lw=2.0)
    out = _box(ax, 10.3, y, 1.0, bh, "output", role="op", fs=13)
    _text(ax, out.cx, y - 0.45, "$(T_q, d_v)$", fs=12)
    _arrow(ax, (xs[-1] + bw / 2, y), out.left)

    # small pictures of the 4 x 4 scores after masking and of the weights after the softmax
    T = 4
    if mask == "causal":
        allowed = [[c_ <= r for c_ in range(T)] for r in range(T)]
    elif mask == "padding":
        allowed = [[c_ < T - 1 for c_ in range(T)] for r in range(T)]
    else:
        allowed = [[True] * T for _ in range(T)]
    shade = [[1.0 if c_ == (r if mask != "padding" else min(r, T - 2)) else 0.0 for c_ in range(T)] for r in range(T)]
    top = y + bh / 2 + 0.15 + T * 0.16
    if mask is not None:
        _mini_grid(ax, xs[2] - T * 0.08, top, allowed)
    _mini_grid(ax, xs[-2] - T * 0.08, top, allowed, shade=shade)
    _text(ax, 6.0, 0.32, "one sentence and one head; batched, every shape gets leading dims $(B, H, \\ldots)$", fs=SMALL)
    return fig


# --------------------------------------------------------------------------- #
# 4. Multi-head attention (notebook 05)
# --------------------------------------------------------------------------- #

def _segmented_bar(ax, cx, cy, w, h, n, text, role, fs=FONT, lw=1.8):
    """A (T, D) matrix drawn as a bar cut into n head slices of width d_k = D / n."""
    b = _box(ax, cx, cy, w, h, role=role, lw=lw)
    edge = COLORS[role][1]
    for i in range(1, n):
        x = cx - w / 2 + 0.04 + i * (w - 0.08) / n
        ax.add_line(Line2D([x, x], [cy - h / 2 + 0.05, cy + h / 2 - 0.05], color=edge, lw=1.3, ls="--", zorder=3))
    _text(ax, cx, cy, text, fs=fs, bbox=dict(fc=COLORS[role][0], ec="none", pad=0.5))
    return b


def _stack(ax, cx, cy, w, h, n, role, text="", fs=FONT, dx=0.07, dy=0.07):
    """n overlapping cards, the front one at (cx, cy) carrying ``text``."""
    for k in reversed(range(n)):
        _box(ax, cx + k * dx, cy + k * dy, w, h, text if k == 0 else "", role=role, fs=fs, lw=1.5, z=2 + 2 * (n - k))
    return _Box(cx, cy, w, h)


def multi_head_attention(num_heads: int = 4) -> Figure:
    """Multi-head attention as ``utils.attention.MultiHeadAttention`` computes it (self-attention, X (T, D)).

    Q = X W_Q, K = X W_K, V = X W_V, each (T, D); each is split into H heads of width d_k = D / H,
    (T, D) -> (H, T, d_k) (``split_heads``); the H scaled dot-product attentions run side by side; their
    outputs are concatenated back to (T, D) (``merge_heads``) and multiplied by W_O. The batch
    dimension B is left out. ``num_heads`` (2-8) is how many heads are drawn.
    """
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or not 2 <= num_heads <= 8:
        raise ValueError(f"num_heads must be an int from 2 to 8 (the number of heads drawn), got {num_heads!r}")
    H = num_heads
    off = min(0.07, 0.28 / (H - 1))  # the offset between stacked cards
    fig, ax = _canvas(11.0, 4.3)
    x_box = _box(ax, 0.6, 2.1, 0.8, 0.9, "$X$", role="op", fs=16)
    _text(ax, 0.6, 1.4, "$(T, D)$", fs=12)
    rows = (("query", "Q", 3.3), ("key", "K", 2.1), ("value", "V", 0.9))
    att = _Box(6.95, 2.1, 1.75, 1.3)
    for role, name, y in rows:
        bar = _segmented_bar(ax, 2.75, y, 1.5, 0.5, H, f"${name} = X W_{name}$", role)
        _text(ax, 2.75, y - 0.42, "$(T, D)$", fs=12)
        _arrow(ax, x_box.right, bar.left)
        st = _stack(ax, 4.75, y, 0.95, 0.46, H, role, f"${name}^{{(i)}}$", dx=off, dy=off)
        _text(ax, 4.75, y - 0.42, r"$H \times (T, d_k)$", fs=12)
        _arrow(ax, bar.right, st.left)
        _arrow(ax, (st.cx + st.w / 2 + (H - 1) * off, y), (att.cx - att.w / 2, att.cy + (y - 2.1) * 0.35))
    _text(ax, 3.75, 4.05, r"split: $(T, D) \to (H, T, d_k)$,  $d_k = D / H$", fs=12)
    _stack(ax, att.cx, att.cy, att.w, att.h, H, "attention", dx=off, dy=off)
    _text(ax, att.cx, att.cy + 0.25, "scaled dot-product", fs=12, bbox=dict(fc=COLORS["attention"][0], ec="none", pad=0.5))
    _text(ax, att.cx, att.cy - 0.1, "attention,", fs=12, bbox=dict(fc=COLORS["attention"][0], ec="none", pad=0.5))
    _text(ax, att.cx, att.cy - 0.4, "$H$ heads at once", fs=12, bbox=dict(fc=COLORS["attention"][0], ec="none", pad=0.5))
    _text(ax, att.cx + 0.1, att.cy - att.h / 2 - 0.2, r"$H \times (T, d_k)$", fs=12)
    cat = _segmented_bar(ax, 8.95, 2.1, 1.3, 0.5, H, "concat", "op")
    _text(ax, 8.95, 1.68, "$(T, D)$", fs=12)
    _arrow(ax, (att.cx + att.w / 2 + (H - 1) * off, att.cy), cat.left)
    out = _box(ax, 10.5, 2.1, 0.9, 0.5, "output", role="op")
    _text(ax, 10.5, 1.68, "$(T, D)$", fs=12)
    _arrow(ax, cat.right, out.left)
    _text(ax, (cat.right[0] + out.left[0]) / 2, 2.48, "$W_O$", fs=12)
    _text(ax, 5.5, 0.22, f"drawn with $H = {H}$; parameters $4D^2 + 4D$ whatever $H$ "
          r"($D$ = d_model, $d_k = D/H$ = d_k in utils.attention)", fs=SMALL)
    return fig


# --------------------------------------------------------------------------- #
# 5. The encoder layer and the decoder layer (notebook 07)
# --------------------------------------------------------------------------- #

def _tower(ax, cx, w, y0, sublayers, pre_ln, side, gap=0.15):
    """Draw one layer bottom-up from y0: each sub-layer wrapped in a residual connection and a
    LayerNorm (post-LN: sub-layer, then an "Add & LayerNorm" strip; pre-LN: a LayerNorm strip, the
    sub-layer, then an "Add" strip). Residual paths run on ``side`` (-1 left, +1 right).
    Returns the y of the top and the centre of every sub-layer box."""
    y, centres = y0, []
    x_res = cx + side * (w / 2 + 0.26)
    for i, (label, role) in enumerate(sublayers):
        branch = y - gap / 2 - (0.05 if i == 0 else 0.0)
        if pre_ln:
            _box(ax, cx, y + 0.13, w * 0.8, 0.26, "LayerNorm", role="norm", fs=SMALL, pad=0.03)
            sub = _box(ax, cx, y + 0.26 + 0.05 + 0.18, w, 0.36, label, role=role, fs=12)
            _arrow(ax, (cx, y + 0.26), (cx, sub.cy - 0.18))
            add = _box(ax, cx, sub.cy + 0.18 + 0.04 + 0.13, w * 0.8, 0.26, "Add", role="op", fs=SMALL, pad=0.03)
        else:
            sub = _box(ax, cx, y + 0.21, w, 0.42, label, role=role, fs=12)
            add = _box(ax, cx, y + 0.42 + 0.19, w, 0.34, "Add & LayerNorm", role="norm", fs=12, pad=0.03)
        _arrow(ax, (cx, y - gap), (cx, y))
        _path(ax, [(cx, branch), (x_res, branch), (x_res, add.cy), (cx + side * add.w / 2, add.cy)], color="#555555", lw=1.6)
        centres.append(sub.cy)
        y = add.cy + add.h / 2 + gap
    return y - gap, centres


def transformer_layers(pre_ln: bool = False) -> Figure:
    """The encoder layer and the decoder layer of ``utils.transformer`` side by side, with the three
    uses of attention: ① encoder self-attention, ② decoder masked self-attention, ③ cross-attention
    (queries from the decoder, keys and values from the encoder's output, the memory).

    Every sub-layer f is wrapped in a residual connection and a LayerNorm. ``pre_ln=False`` (the
    course's default, ``TransformerConfig(pre_norm=False)``, as in the paper) draws post-LN,
    x ← LayerNorm(x + Dropout(f(x))); ``pre_ln=True`` draws pre-LN, x ← x + Dropout(f(LayerNorm(x))),
    whose stacks end with one more LayerNorm (noted, not drawn: it follows the N-th layer).
    """
    if not isinstance(pre_ln, bool):
        raise ValueError(f"pre_ln must be True or False, got {pre_ln!r}")
    fig, ax = _canvas(11.0, 4.5)
    y0 = 0.45 if pre_ln else 0.5
    ex, ew, dx, dw = 1.75, 2.2, 5.55, 2.5
    e_top, _ = _tower(ax, ex, ew, y0, [("① self-attention", "attention"), ("feed-forward", "op")], pre_ln, side=-1)
    d_top, d_c = _tower(ax, dx, dw, y0, [("② masked self-attention", "attention"), ("③ cross-attention", "attention"),
                                         ("feed-forward", "op")], pre_ln, side=+1)
    _text(ax, ex, 0.2, "source $(B, S, D)$", fs=12)
    _text(ax, dx, 0.2, "target $(B, T, D)$", fs=12)
    _arrow(ax, (dx, d_top), (dx, d_top + 0.2))
    _text(ax, dx, d_top + 0.33, "$(B, T, D)$", fs=12)
    # the memory: the encoder's output, keys and values of every cross-attention
    y_mem, x_mid = e_top + 0.3, 3.75
    mem = COLORS["key"][1]
    _path(ax, [(ex, e_top), (ex, y_mem), (x_mid, y_mem), (x_mid, d_c[1]), (dx - dw / 2, d_c[1])], color=mem, lw=2.2)
    _text(ax, (ex + x_mid) / 2 + 0.1, y_mem + 0.45 if pre_ln else y_mem + 0.22, "memory $(B, S, D)$", fs=12, color=mem)
    if pre_ln:  # a pre-LN stack ends with one more LayerNorm, after its N-th layer
        _box(ax, (ex + x_mid) / 2 + 0.1, y_mem, 1.15, 0.28, "LayerNorm", role="norm", fs=SMALL, pad=0.03)
    _text(ax, (x_mid + dx - dw / 2) / 2, d_c[1] + 0.2, "$K, V$", fs=12, color=mem)
    top = 4.3
    _text(ax, ex, top, "encoder layer  (× N)", fs=FONT, weight="bold")
    _text(ax, dx, top, "decoder layer  (× N)", fs=FONT, weight="bold")

    notes = [("① encoder self-attention", True), ("Q, K, V: the source; padding mask", False),
             ("② masked self-attention", True), ("causal mask: no later target words", False),
             ("③ cross-attention", True), ("Q: decoder; K, V: the encoder's output", False)]
    post = [("post-LN (default, as in the paper)", True), (r"$x \leftarrow \mathrm{LN}(x + f(x))$", False)]
    pre = [("pre-LN (pre_norm=True)", True), (r"$x \leftarrow x + f(\mathrm{LN}(x))$, and one", False),
           ("more LN at the end of each stack", False)]
    notes += pre + post if pre_ln else post + pre
    y = 4.15
    for line, head in notes:
        y -= 0.36 if head else 0.28
        _text(ax, 7.4, y, line, fs=12 if head else SMALL, ha="left", weight="bold" if head else "normal")
    return fig


# --------------------------------------------------------------------------- #
# 6. Generation with a key/value cache (notebooks 08 and 09)
# --------------------------------------------------------------------------- #

def kv_cache(tokens: Sequence[str] = ("the", "dog", "wagged", "its", "tail")) -> Figure:
    """One generation step t with a key/value cache, in one attention layer (``utils.gpt.Block.attention``,
    ``utils.transformer.DecoderLayer`` with ``cache``).

    Only the newest token x_t goes through the layer: its query, key and value are x_t W_Q, x_t W_K,
    x_t W_V; k_t and v_t are appended to the keys and values kept from steps 1 … t-1; the one query
    q_t is scored against all t keys (softmax of q_t · k_j / √d_k), and the output is the weighted
    sum of the t values. The cache never needs a mask: every cached position is in the past.
    Per step the attention costs one row of t scores, O(t), where recomputing the whole prefix costs
    the t × t triangle, O(t²). The last token of ``tokens`` (2-5 of them) is the new one; the bar
    heights of the weights are an illustration.
    """
    tokens = _tokens("tokens", tokens, 2, 5)
    t = len(tokens)
    fig, ax = _canvas(11.0, 4.5)
    y_tok, y_k, y_a, y_v, y_o = 0.35, 1.15, 2.15, 3.0, 3.75
    y_q = y_a - 0.25 - 0.2  # the line that brings q_t to every score
    pitch, cw, chh = 0.85, 0.72, 0.5
    xs = [1.75 + pitch * j for j in range(t)]
    x_lo, x_hi = xs[0] - cw / 2, xs[-1] + cw / 2
    weights = [0.1, 0.3, 0.15, 0.35, 0.1][:t] if t == 5 else [1.0 / t] * t
    for label, y in (("output", y_o), ("V cache", y_v), ("weights", y_a), ("K cache", y_k), ("tokens", y_tok)):
        _text(ax, x_lo - 0.2, y, label, fs=12, ha="right")
    for j, (x, tok, w) in enumerate(zip(xs, tokens, weights)):
        new = j == t - 1
        lw = 3.0 if new else 1.4
        _text(ax, x, y_tok, tok, fs=12, weight="bold" if new else "normal")
        _box(ax, x, y_k, cw, chh, f"$k_{{{j + 1}}}$" if not new else "$k_t$", role="key", lw=lw)
        _box(ax, x, y_a, cw, chh, role="attention", lw=1.4)
        ax.add_patch(Rectangle((x - 0.15, y_a - 0.19), 0.3, 0.38 * w / max(weights), fc=COLORS["attention"][1],
                               ec="none", zorder=4))
        _box(ax, x, y_v, cw, chh, f"$v_{{{j + 1}}}$" if not new else "$v_t$", role="value", lw=lw)
        _arrow(ax, (x - 0.14, y_k + chh / 2), (x - 0.14, y_a - chh / 2), color=COLORS["key"][1])
        _arrow(ax, (x + 0.16, y_q), (x + 0.16, y_a - chh / 2), color=COLORS["query"][1], lw=1.8)
        _arrow(ax, (x, y_a + chh / 2), (x, y_v - chh / 2), color=COLORS["attention"][1])
        _arrow(ax, (x, y_v + chh / 2), (x, y_o - 0.2), color=COLORS["value"][1])
    if t > 2:
        _text(ax, (xs[0] + xs[-2]) / 2, 0.72, "kept from steps $1 \\ldots t-1$", fs=SMALL)
    out = _box(ax, (x_lo + x_hi) / 2, y_o, x_hi - x_lo, 0.4, r"$o_t = \Sigma_j\, a_{t,j} v_j$", role="op", fs=12)
    _arrow(ax, out.right, (x_hi + 0.45, y_o))
    _text(ax, x_hi + 0.5, y_o, "to $W_O$", fs=12, ha="left")

    # the new token's projections: k_t and v_t are appended, q_t scores every cached key
    px = x_hi + 1.05
    proj = _box(ax, px, (y_k + y_v) / 2, 1.0, y_v - y_k + 0.55, role="op", lw=2.0)
    for y, name, role in ((y_v, "V", "value"), (y_q, "Q", "query"), (y_k, "K", "key")):
        _text(ax, px, y, f"$x_t W_{name}$", fs=12)
        if name == "Q":
            _path(ax, [(px - 0.5, y), (xs[0] + 0.16, y)], color=COLORS[role][1], lw=2.2, arrow=False)
        else:
            _arrow(ax, (px - 0.5, y), (x_hi, y), color=COLORS[role][1], lw=2.2)
        _text(ax, (px - 0.5 + x_hi) / 2, y + 0.17, f"${name.lower()}_t$", fs=12, color=COLORS[role][1])
    _arrow(ax, (xs[-1] + 0.35, y_tok + 0.1), proj.at(0, -proj.h / 2), lw=1.6)
    _text(ax, (x_lo + x_hi) / 2 + 0.6, 4.22, r"step $t$: weights $a_{t,j} = \mathrm{softmax}_j(q_t \cdot k_j / \sqrt{d_k})$, "
          r"$j = 1 \ldots t$", fs=12)

    # the cost of one step: the whole t x t triangle again, or one new row
    gx, cell = 7.95, 0.2
    for k, (title, cost, rows_done) in enumerate((("no cache", "$O(t^2)$ scores", range(t)),
                                                  ("with cache", "$O(t)$ scores", [t - 1]))):
        x0 = gx + k * 1.55
        _text(ax, x0 + t * cell / 2, 3.45 + 0.2, title, fs=12, weight="bold")
        for r in range(t):
            for c_ in range(r + 1):
                fc = COLORS["attention"][1] if r in rows_done else "#FFFFFF"
                ax.add_patch(Rectangle((x0 + c_ * cell, 3.4 - (r + 1) * cell), cell, cell, fc=fc, ec="#777777", lw=0.8, zorder=3))
        _text(ax, x0 + t * cell / 2, 3.4 - t * cell - 0.2, cost, fs=12)
    _text(ax, 9.35, 1.55, "per step and layer; the cache holds", fs=SMALL)
    _text(ax, 9.35, 1.25, "$K$ and $V$ of shape $(B, H, t, d_k)$", fs=SMALL)
    _text(ax, 9.35, 0.95, "and grows by one position a step", fs=SMALL)
    return fig


# --------------------------------------------------------------------------- #
# 7. Attention at scale (notebook 10)
# --------------------------------------------------------------------------- #

def online_softmax(num_blocks: int = 4) -> Figure:
    """Attention of one query row over the keys in ``num_blocks`` (2-5) blocks, as
    ``utils.scale.block_attention`` computes it: each block's scores e_j = q·k_j / √d_k are folded into the
    running state (m, ℓ, acc) by ``online_softmax_update``; when the maximum m grows, the old ℓ and acc
    are rescaled by exp(m_old − m_new). The full row of T scores is never held, only one block of it."""
    if isinstance(num_blocks, bool) or not isinstance(num_blocks, int) or not 2 <= num_blocks <= 5:
        raise ValueError(f"num_blocks must be an int from 2 to 5 (the number of key blocks drawn), got {num_blocks!r}")
    n = num_blocks
    fig, ax = _canvas(11.0, 4.3)
    pitch = 8.4 / n
    xs = [2.3 + pitch * (i + 0.5) for i in range(n)]
    _text(ax, 1.05, 3.75, "keys, values", fs=12)
    _text(ax, 1.05, 2.6, "block scores", fs=12)
    _text(ax, 1.05, 1.35, "running state", fs=12)
    q = _box(ax, 1.05, 0.45, 1.1, 0.5, "$q$", role="query")
    prev = None
    for i, x in enumerate(xs):
        w = min(1.5, pitch - 0.3)
        _box(ax, x - w / 4, 3.75, w / 2 - 0.04, 0.5, f"$K_{{{i + 1}}}$", role="key")
        _box(ax, x + w / 4, 3.75, w / 2 - 0.04, 0.5, f"$V_{{{i + 1}}}$", role="value")
        s = _box(ax, x, 2.6, w, 0.5, f"$e_{{{i + 1}}} = q K_{{{i + 1}}}^\\top / \\sqrt{{d_k}}$" if w > 1.4 else f"$e_{{{i + 1}}}$",
                 role="attention", fs=12)
        _arrow(ax, (x - w / 4, 3.5), (x - w / 4, 2.85), color=COLORS["key"][1])
        st = _box(ax, x, 1.35, w, 0.75, "", role="op")
        _text(ax, x, 1.5, f"$m_{{{i + 1}}}, \\ell_{{{i + 1}}}$", fs=12)
        _text(ax, x, 1.18, f"$acc_{{{i + 1}}}$", fs=12)
        _arrow(ax, s.at(0, -0.25), st.at(0, 0.375), color=COLORS["attention"][1])
        _path(ax, [(x + w / 4, 3.5), (x + w / 2 + 0.08, 3.2), (x + w / 2 + 0.08, 1.9), (x + w / 4, 1.73)],
              color=COLORS["value"][1])
        if prev is not None:
            _arrow(ax, (prev + w / 2, 1.35), (x - w / 2, 1.35))
        _path(ax, [(q.right[0], 0.45), (x, 0.45), (x, 0.6)], color=COLORS["query"][1], arrow=False)
        _path(ax, [(x - w / 2 - 0.05, 0.45), (x - w / 2 - 0.05, 2.35)], color=COLORS["query"][1], lw=1.2)
        prev = x
    _text(ax, 6.5, 0.2, r"$m \leftarrow \max(m, \max_j e_j)$;  $\ell \leftarrow \ell\, \exp(m_{old} - m) + \Sigma_j \exp(e_j - m)$;  "
          r"$acc \leftarrow acc\, \exp(m_{old} - m) + \exp(e - m) V$;  output $= acc / \ell$", fs=SMALL)
    return fig


def flash_attention_tiles(num_tiles: int = 4, causal: bool = False) -> Figure:
    """FlashAttention's forward pass for one head, as notebook 10 writes it (queries in the outer loop, as in
    FlashAttention-2): the (T, T) matrix of scores is cut into ``num_tiles`` (3-6) tiles of queries by
    ``num_tiles`` tiles of keys. Tile (b, c) loads Q_b and K_c, V_c from slow memory (HBM) into fast memory
    (SRAM), computes its block of scores E there and folds it into the running m, ℓ and acc of the b_q queries;
    after the last key tile O_b = acc / ℓ and L_b = m + log ℓ go back to slow memory. The scores and weights
    never do. ``causal=True`` greys out the tiles above the diagonal, which the loop skips."""
    if isinstance(num_tiles, bool) or not isinstance(num_tiles, int) or not 3 <= num_tiles <= 6:
        raise ValueError(f"num_tiles must be an int from 3 to 6 (tiles per side of the score matrix), got {num_tiles!r}")
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False, got {causal!r}")
    n = num_tiles
    fig, ax = _canvas(11.0, 4.5)
    hbm_x, hbm_w = 1.3, 2.2
    _box(ax, hbm_x, 2.05, hbm_w, 3.7, "", role="token", lw=1.6, ls="--")
    _text(ax, hbm_x, 3.65, "slow memory (HBM)", fs=12, weight="bold")
    rows = ((3.05, r"$Q$  $(T, d_k)$", "query"), (2.45, r"$K$  $(T, d_k)$", "key"), (1.85, r"$V$  $(T, d_v)$", "value"),
            (1.25, r"$O$  $(T, d_v)$", "op"), (0.65, r"$L$  $(T)$", "op"))
    for y, label, role in rows:
        _box(ax, hbm_x, y, hbm_w - 0.3, 0.48, label, role=role, fs=12, z=4)

    side = 2.9  # the score matrix, tile by tile
    cell = side / n
    gx, gtop = 4.45, 3.45
    b_hi, c_hi = min(2, n - 1), min(2, n - 1) if causal else n - 2
    for b in range(n):
        for c in range(n):
            skipped = causal and c > b
            fc = "#D9D9D9" if skipped else "#FFFFFF"
            ec = COLORS["attention"][1] if (b, c) == (b_hi, c_hi) else "#888888"
            lw = 3.0 if (b, c) == (b_hi, c_hi) else 0.9
            ax.add_patch(Rectangle((gx + c * cell, gtop - (b + 1) * cell), cell, cell, fc=fc, ec=ec, lw=lw,
                                   zorder=5 if (b, c) == (b_hi, c_hi) else 3))
        _box(ax, gx - 0.33, gtop - (b + 0.5) * cell, 0.5, cell - 0.06, f"$Q_{{{b + 1}}}$", role="query", fs=11, pad=0.02)
    for c in range(n):
        _box(ax, gx + (c + 0.5) * cell, gtop + 0.3, cell - 0.06, 0.5, f"$K_{{{c + 1}}}$", role="key", fs=11, pad=0.02)
    hx, hy = gx + (c_hi + 0.5) * cell, gtop - (b_hi + 0.5) * cell
    _text(ax, hx, hy, "$E$", fs=12, weight="bold")
    # the inner loop runs along row b_hi, the outer loop down the query tiles
    last = b_hi if causal else n - 1
    _arrow(ax, (gx + 0.1, hy - 0.3 * cell), (gx + (last + 1) * cell - 0.1, hy - 0.3 * cell), color=COLORS["attention"][1],
           lw=2.0, z=6)
    _path(ax, [(gx - 0.72, gtop - 0.15), (gx - 0.72, gtop - side + 0.15)], color=COLORS["query"][1], lw=2.0)
    _text(ax, gx + side / 2, 0.3, "inner loop: key tiles $c$", fs=12, color=COLORS["attention"][1])
    _text(ax, gx - 0.95, gtop - side / 2, "outer loop: query tiles $b$", fs=12, rotation=90, color=COLORS["query"][1])
    if causal:
        _text(ax, gx + side - cell, gtop - 0.45 * cell, "skipped", fs=11)
    _arrow(ax, (hbm_x + hbm_w / 2 - 0.15, 3.05), (gx - 0.6, gtop - 0.5 * cell), color=COLORS["query"][1], lw=1.4)
    _arrow(ax, (hbm_x + hbm_w / 2 - 0.15, 2.45), (gx + 0.1, gtop + 0.3), color=COLORS["key"][1], lw=1.4)

    # fast memory: what one tile needs
    fx, fw = 9.15, 3.4
    _box(ax, fx, 2.3, fw, 2.9, "", role="norm", lw=1.8)
    _text(ax, fx, 3.5, "fast memory (SRAM), tile $(b, c)$", fs=12, weight="bold")
    lines = (r"load $Q_b$, $K_c$, $V_c$", r"$E = Q_b K_c^\top / \sqrt{d_k}$  $(b_q, b_k)$",
             r"$m' = \max(m, \mathrm{rowmax}\,E)$", r"$\tilde A = \exp(E - m')$;  $\ell$, acc $\times\, e^{m - m'}$",
             r"$m, \ell$  $(b_q)$;  acc  $(b_q, d_v)$", r"after the last $c$: write $O_b$, $L_b$")
    for k, line in enumerate(lines):
        _text(ax, fx, 3.12 - 0.4 * k, line, fs=12)
    _path(ax, [(hx + 0.2, hy + 0.15), (fx - fw / 2, 2.95)], color=COLORS["attention"][1], lw=1.4, ls="--", z=6)
    _text(ax, fx, 0.5, "the $T \\times T$ scores $E$ and weights $A$", fs=12)
    _text(ax, fx, 0.2, "never reach slow memory", fs=12)
    return fig


def grouped_query_heads(num_heads: int = 8, num_kv_heads: int = 2) -> Figure:
    """Which key/value head each query head reads (``utils.scale.GroupedQueryAttention``): query head h uses
    key/value head h // (H / H_kv). H_kv = H is multi-head attention, H_kv = 1 multi-query attention. The
    cache stores only the H_kv key/value heads. ``num_heads`` 2-8, ``num_kv_heads`` must divide it."""
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or not 2 <= num_heads <= 8:
        raise ValueError(f"num_heads must be an int from 2 to 8, got {num_heads!r}")
    if isinstance(num_kv_heads, bool) or not isinstance(num_kv_heads, int) or num_kv_heads < 1 or num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads must be an int that divides num_heads ({num_heads}), got {num_kv_heads!r}")
    H, G = num_heads, num_kv_heads
    fig, ax = _canvas(11.0, 3.6)
    qx = [2.4 + 7.6 * (h + 0.5) / H for h in range(H)]
    kx = [2.4 + 7.6 * (g + 0.5) / G for g in range(G)]
    _text(ax, 1.1, 3.0, "query heads", fs=12)
    _text(ax, 1.1, 1.2, "key/value heads", fs=12)
    _text(ax, 1.1, 0.9, "(the cache)", fs=12)
    for h, x in enumerate(qx):
        _box(ax, x, 3.0, 0.6, 0.5, f"$q_{{{h + 1}}}$", role="query")
        g = h // (H // G)
        _arrow(ax, (x, 2.75), (kx[g], 1.55), color=COLORS["key"][1], lw=1.4)
    bw = min(1.6, 7.6 / G - 0.2)
    for g, x in enumerate(kx):
        _box(ax, x - bw / 4, 1.2, bw / 2 - 0.04, 0.6, f"$k_{{{g + 1}}}$", role="key")
        _box(ax, x + bw / 4, 1.2, bw / 2 - 0.04, 0.6, f"$v_{{{g + 1}}}$", role="value")
    kind = "multi-head" if G == H else "multi-query" if G == 1 else "grouped-query"
    _text(ax, 6.2, 0.3, f"{kind} attention: {H} query heads share {G} key/value heads; "
          f"cache {H // G}x smaller than multi-head", fs=12)
    return fig


def data_parallel(num_processes: int = 2) -> Figure:
    """Data parallelism as ``DistributedDataParallel`` runs it (``utils.distributed.train_gpt`` under ``torchrun``):
    each of ``num_processes`` (2-4) processes holds a replica of the model with the same weights θ and takes its
    own shard of B windows of the global batch of N·B; forward and backward give each rank its gradient g_r;
    an all-reduce averages them, so every rank takes the same optimizer step with g = mean_r g_r and the
    replicas stay identical: the step of one process with the whole batch."""
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or not 2 <= num_processes <= 4:
        raise ValueError(f"num_processes must be an int from 2 to 4 (the ranks drawn), got {num_processes!r}")
    N = num_processes
    fig, ax = _canvas(11.0, 4.4)
    top, bottom = 3.55, 0.75
    pitch = (top - bottom) / N
    ys = [top - pitch * (r + 0.5) for r in range(N)]
    h = min(0.6, pitch - 0.15)
    cols = dict(shard=1.8, model=3.95, grad=6.1, reduce=7.85, step=9.7)
    for name, text in (("shard", f"batch of {N}·B windows"), ("model", "model replica"),
                       ("grad", "forward, backward"), ("reduce", "all-reduce"), ("step", "optimizer step")):
        _text(ax, cols[name], 4.05, text, fs=12, weight="bold")
    reduce = _box(ax, cols["reduce"], (top + bottom) / 2, 1.3, top - bottom, "", role="norm")
    _text(ax, reduce.cx, reduce.cy + 0.25, "average", fs=12)
    _text(ax, reduce.cx, reduce.cy - 0.2, r"$g = \frac{1}{N}\sum_r g_r$", fs=13)
    for r, y in enumerate(ys):
        _text(ax, 0.38, y, f"rank {r}", fs=12)
        shard = _box(ax, cols["shard"], y, 1.8, h, f"shard {r}: B windows", role="token", fs=12)
        model = _box(ax, cols["model"], y, 1.75, h, r"GPT, weights $\theta$", role="op", fs=12)
        grad = _box(ax, cols["grad"], y, 1.75, h, f"loss$_{r}$ → $g_{r}$", role="attention", fs=12)
        step = _box(ax, cols["step"], y, 1.75, h, r"$\theta \leftarrow$ step$(\theta, g)$", role="op", fs=12)
        _arrow(ax, shard.right, model.left)
        _arrow(ax, model.right, grad.left)
        _arrow(ax, grad.right, (reduce.cx - reduce.w / 2, y), color=COLORS["attention"][1])
        _arrow(ax, (reduce.cx + reduce.w / 2, y), step.left, color=COLORS["norm"][1])
    _text(ax, 5.5, 0.3, "every rank gets the same g, so the replicas stay identical: "
          "one step of a single process with batch N·B", fs=12)
    return fig
