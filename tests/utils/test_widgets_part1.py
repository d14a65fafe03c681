"""Drive the explorers of notebooks 02-03 through ipywidgets, without a browser."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from ipywidgets import fixed  # noqa: E402
from utils.explorers import explorer  # noqa: E402

from utils.explorers import rnn as ex  # noqa: E402
from utils.rnn import Seq2Seq, beam_search, greedy_decode  # noqa: E402
from utils.text import PairDataset, Vocab, collate_pairs, detokenize, tokenize  # noqa: E402
from utils.translation import TranslationData  # noqa: E402

torch.set_num_threads(1)  # tiny models: threads only add overhead on a shared CPU

PAIRS = [
    ("Ein Mann mit einem Hut.", "A man in a hat."),
    ("Zwei Hunde laufen im Schnee.", "Two dogs run in the snow."),
    ("Eine Frau liest ein Buch im Park.", "A woman reads a book in the park."),
    ("Ein Kind spielt mit einem roten Ball.", "A child plays with a red ball."),
    ("Ein Mann mit einem Zebra.", "A man with a zebra."),  # "zebra" is not in the vocabulary: <unk>
]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def data() -> TranslationData:
    toks = [(tokenize(s), tokenize(t)) for s, t in PAIRS]
    src_vocab = Vocab.build([s for s, _ in toks[:4]])
    tgt_vocab = Vocab.build([t for _, t in toks[:4]])
    ds = PairDataset([src_vocab.encode(s, True, True) for s, _ in toks], [tgt_vocab.encode(t, True, True) for _, t in toks])
    return TranslationData("de", "en", src_vocab, tgt_vocab, {"test": ds}, {"test": list(PAIRS)}, {"test": toks})


def _model(data, attention=None, bidirectional=True, seed=0) -> Seq2Seq:
    torch.manual_seed(seed)
    return Seq2Seq(len(data.src_vocab), len(data.tgt_vocab), emb_dim=8, enc_hidden=8, dec_hidden=16,
                   bidirectional=bidirectional, attention=attention).eval()


def _title(ax) -> str:
    return " ".join(ax.get_title(loc="left").split())  # the explorer wraps long lines


def _ticks(labels) -> list[str]:
    return [t.get_text() for t in labels]


def test_context_sensitivity_explorer_callback(data):
    model = _model(data)
    w = explorer(ex.plot_context_sensitivity, model=fixed(model), data=fixed(data), index=(0, len(PAIRS) - 1),
                    split=fixed("test"))
    controls = {c.description: c for c in w.children[:-1]}
    assert list(controls) == ["index"]
    for index in [1, 4, 0, 2]:
        controls["index"].value = index  # fires the callback, as a slider move would
        fig = w.result
        assert isinstance(fig, plt.Figure)
        ax = fig.axes[0]
        src, _ = data.test[index]
        words = data.src_vocab.decode(src)
        assert _ticks(ax.get_xticklabels()) == words                       # one position per source word
        assert len(ax.patches) == 2 * len(words)                            # forward and backward bars
        b = collate_pairs([data.test[index]])
        ours = detokenize(data.tgt_vocab.decode(greedy_decode(model, b.src, b.src_mask)[0][0]))
        title = _title(ax)
        assert PAIRS[index][0] in title and PAIRS[index][1] in title and f"OURS {ours}" in title
        plt.close(fig)


def test_context_sensitivity_is_the_change_of_c_when_one_word_is_replaced(data):
    model = _model(data)
    src, _ = data.test[4]
    sens = ex.context_sensitivity(model, src)
    n = len(src) - 2
    assert all(sens[k].shape == (n,) for k in ("total", "forward", "backward"))
    encode = lambda ids: model.encode(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.bool)).context[0]  # noqa: E731
    with torch.no_grad():
        c = encode(src)
        H = c.shape[0] // 2
        for i in range(1, n + 1):
            c2 = encode(src[:i] + [1] + src[i + 1:])   # word i alone replaced by <unk>
            for key, part in [("total", slice(None)), ("forward", slice(None, H)), ("backward", slice(H, None))]:
                expected = (c2[part] - c[part]).norm() / c[part].norm()
                assert torch.isclose(sens[key][i - 1], expected, rtol=1e-4, atol=1e-6), (key, i)
    unk_word = data.src_vocab.decode(src).index("<unk>")
    assert sens["total"][unk_word] == 0                 # replacing <unk> by <unk> changes nothing
    one_way = ex.context_sensitivity(_model(data, bidirectional=False), src)
    assert one_way["forward"] is None and one_way["backward"] is None and one_way["total"].shape == (n,)


def test_context_sensitivity_marks_the_words_that_change_the_translation(data):
    model = _model(data, seed=3)
    fig = ex.plot_context_sensitivity(model, data, index=2)
    ax = fig.axes[0]
    src, _ = data.test[2]
    variants = [src] + [src[:i] + [1] + src[i + 1:] for i in range(1, len(src) - 1)]
    outs = [greedy_decode(model, torch.tensor([v]), torch.ones(1, len(v), dtype=torch.bool))[0][0] for v in variants]
    expected = [i for i, o in enumerate(outs[1:]) if o != outs[0]]
    markers = next(line for line in ax.lines if line.get_marker() == "v")
    assert list(markers.get_xdata()) == expected


def test_alignment_explorer_callback(data):
    model = _model(data, attention="additive")
    w = explorer(ex.plot_alignment, model=fixed(model), data=fixed(data), index=(0, len(PAIRS) - 1),
                    beam_size=(1, 5), split=fixed("test"))
    controls = {c.description: c for c in w.children[:-1]}
    assert set(controls) == {"index", "beam_size"}
    for name, value in [("index", 2), ("beam_size", 3), ("index", 4), ("beam_size", 1)]:
        controls[name].value = value  # fires the callback, as a slider move would
        fig = w.result
        assert isinstance(fig, plt.Figure)
        ax = fig.axes[0]
        index, k = controls["index"].value, controls["beam_size"].value
        b = collate_pairs([data.test[index]])
        decode = greedy_decode if k == 1 else lambda m, s, sm: beam_search(m, s, sm, beam_size=k)
        ids, ws = decode(model, b.src, b.src_mask)
        assert _ticks(ax.get_yticklabels()) == [data.tgt_vocab.itos[j] for j in ids[0]]   # rows: output words
        assert _ticks(ax.get_xticklabels()) == data.src_vocab.decode(b.src[0], strip_special=False)
        shown = np.asarray(ax.images[0].get_array())
        np.testing.assert_allclose(shown, ws[0].numpy(), atol=1e-6)
        np.testing.assert_allclose(shown.sum(1), 1.0, atol=1e-5)       # each row is a distribution
        circles = next(line for line in ax.lines if line.get_marker() == "o")
        assert list(circles.get_xdata()) == ws[0].argmax(1).tolist()
        title = _title(ax)
        assert ("greedy" in title) == (k == 1) and (f"k = {k}" in title) == (k > 1)
        assert PAIRS[index][1] in title and detokenize(data.tgt_vocab.decode(ids[0])) in title
        plt.close(fig)


def test_alignment_title_reports_the_mean_log_probability_of_the_output(data):
    model = _model(data, attention="additive", seed=1)
    b = collate_pairs([data.test[0]])
    ids, _ = greedy_decode(model, b.src, b.src_mask)
    with torch.no_grad():  # step by step, as decoding does it, not teacher-forced as the explorer does
        enc = model.encode(b.src, b.src_mask)
        state, y, total = model.decoder.start(enc), torch.tensor([2]), 0.0
        for tok in ids[0]:
            logp, state, _ = model.decoder.step(y, state, enc)
            total += logp[0, tok].item()
            y = torch.tensor([tok])
    title = _title(ex.plot_alignment(model, data, index=0).axes[0])
    assert f"mean log p per output word {total / len(ids[0]):.2f}" in title


def test_bad_input_names_what_was_expected(data):
    plain, attn = _model(data), _model(data, attention="dot")
    with pytest.raises(ValueError, match="with attention"):
        ex.plot_alignment(plain, data, 0)
    with pytest.raises(ValueError, match="beam_size"):
        ex.plot_alignment(attn, data, 0, beam_size=0)
    with pytest.raises(ValueError, match=r"index must be in 0\.\.4"):
        ex.plot_alignment(attn, data, 5)
    with pytest.raises(ValueError, match=r"index must be in 0\.\.4"):
        ex.plot_context_sensitivity(plain, data, -1)
    with pytest.raises(ValueError, match="split must be one of"):
        ex.plot_context_sensitivity(plain, data, 0, split="val")
    with pytest.raises(ValueError, match="Seq2Seq"):
        ex.plot_context_sensitivity(torch.nn.Linear(2, 2), data, 0)
    with pytest.raises(ValueError, match="<bos>"):
        ex.context_sensitivity(plain, [5, 6, 3])          # no <bos>
    with pytest.raises(ValueError, match="n >= 1"):
        ex.context_sensitivity(plain, [2, 3])             # no word between <bos> and <eos>
