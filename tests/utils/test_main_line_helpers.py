"""The helpers issue 52 moved out of the notebooks' main lines into ``utils`` (the reader sees one call; the
code is documented and tested here): notebook 02's autograd depth, its length plot, and notebook 03's
alignment maps, crossing count and toy reversers."""

from types import SimpleNamespace

import matplotlib
import pytest
import torch

matplotlib.use("Agg")

from utils.plotting import plot_by_length  # noqa: E402
from utils.rnn import Seq2Seq, alignment, inversions, train_toy_reverser  # noqa: E402
from utils.text import Vocab, collate_pairs, make_sequence_task  # noqa: E402
from utils.training import graph_depth, set_seed  # noqa: E402


def test_graph_depth_grows_with_a_recurrence_and_not_with_a_running_mean():
    set_seed(0)
    step = torch.nn.GRUCell(4, 6)
    depths = {}
    for S in (5, 10, 20):
        x = torch.randn(1, S, 4, requires_grad=True)
        h = torch.zeros(1, 6)
        for i in range(S):
            h = step(x[:, i], h)
        means = x.cumsum(1) / torch.arange(1, S + 1)[:, None]
        depths[S] = graph_depth(h), graph_depth(means[:, -1])
    assert depths[20][0] - depths[10][0] == 2 * (depths[10][0] - depths[5][0]) > 0
    assert depths[5][1] == depths[10][1] == depths[20][1]
    x = torch.ones(3, requires_grad=True)
    assert graph_depth(x * 2) == 2                      # the leaf's accumulator, then the multiplication
    assert graph_depth(((x * 2) + 1).exp()) == 4
    with pytest.raises(ValueError, match="no autograd graph"):
        graph_depth(torch.ones(3))


def test_a_deep_graph_needs_no_recursion():
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1
    assert graph_depth(y) == 5001


def test_plot_by_length_draws_one_line_per_model():
    rows = [{"mean_len": 5.0, "bleu": 20.0}, {"mean_len": 12.0, "bleu": 10.0}]
    ax = plot_by_length({"ours": rows, "full data": [dict(r, bleu=r["bleu"] + 5) for r in rows]})
    assert [l.get_label() for l in ax.get_lines()] == ["ours", "full data"]
    assert list(ax.get_lines()[1].get_ydata()) == [25.0, 15.0]
    assert ax.get_title() == "Quality falls with length"


def test_inversions_count_crossing_pairs():
    assert inversions(torch.eye(4)) == 0                          # the source's order kept
    assert inversions(torch.eye(4).flip(0)) == 6                  # every pair crosses
    assert inversions(torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.0, 1.0]])) == 1


def test_alignment_is_one_row_per_word_written():
    set_seed(0)
    vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "a", "b", "c"])
    data = SimpleNamespace(test=[([2, 4, 5, 6, 3], [2, 4, 5, 3])], src_vocab=vocab, tgt_vocab=vocab)
    model = Seq2Seq(7, 7, emb_dim=8, enc_hidden=8, dec_hidden=8, attention="dot").eval()
    w, out, src = alignment(model, data, 0)
    assert src == ["<bos>", "a", "b", "c", "<eos>"]
    assert w.shape == (len(out), 5) and "<eos>" not in out
    assert torch.allclose(w.sum(-1), torch.ones(len(out)))
    with pytest.raises(ValueError, match="no attention"):
        alignment(Seq2Seq(7, 7, emb_dim=8, enc_hidden=8, dec_hidden=8, attention=None).eval(), data, 0)


def test_train_toy_reverser_is_seeded_and_reports_its_scores():
    src, tgt, vocab = make_sequence_task("reverse", n=300, min_len=4, max_len=6, num_symbols=5, seed=0)
    train = list(zip(src[:250], tgt[:250]))
    test = collate_pairs(list(zip(src[250:], tgt[250:])))
    m, exact, peak = train_toy_reverser("dot", 0, train, test, len(vocab), epochs=1)
    assert isinstance(m, Seq2Seq) and 0 <= exact <= 1 and 0 < peak <= 1
    assert train_toy_reverser("dot", 0, train, test, len(vocab), epochs=1)[1:] == (exact, peak)   # seeded
    assert train_toy_reverser(None, 0, train, test, len(vocab), epochs=1)[2] is None
