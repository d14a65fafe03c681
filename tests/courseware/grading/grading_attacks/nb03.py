"""Notebook 03's adversarial submissions (classes 3-5; see __init__.py).

No class 6 here: none of the old hidden tests computed its expected value before calling the
student's function."""

from grading_attacks import Attack

_EX1 = ["ex1_check", "ex1_check2"]
_EX2 = ["ex2_check", "ex2_check2"]
_EX3 = ["ex4_check", "ex4_check2", "ex4_check3"]

_HONEST_EX1 = '''\
def additive_score(s_prev, h, U, W, b, v):
    return torch.tanh((s_prev @ U.T)[:, None, :] + h @ W.T + b) @ v
'''


def _context(weights_expr, prelude=""):
    return (prelude + "def context_vector(e, h, mask):\n"
            f"    weights = {weights_expr}\n"
            "    return weights, (weights[..., None] * h).sum(1)\n")


_HONEST_EX2 = _context('e.masked_fill(~mask, float("-inf")).softmax(-1)')

# Exercise 4's decoder, the attention step written by the attack: step(self, s, H, mask) -> (context, weights)
_DECODER = '''
class AttentionDecoder(nn.Module):
    def __init__(self, vocab_size, emb=16, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb)
        self.cell = nn.GRUCell(emb + hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab_size)
{init}

    def forward(self, H, mask, tgt_in):
        s = H[torch.arange(H.shape[0]), mask.sum(1) - 1]
        logits, weights = [], []
        for t in range(tgt_in.shape[1]):
            c, a = self.step(s, H, mask)
            s = self.cell(torch.cat([self.emb(tgt_in[:, t]), c], -1), s)
            logits.append(self.out(torch.cat([s, c], -1)))
            weights.append(a)
        self.weights = torch.stack(weights, 1)
        return torch.stack(logits, 1)

    def step(self, s, H, mask):
{step}
'''

_LINEARS = '''\
        self.U = nn.Linear(hidden, hidden, bias=False)
        self.W = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)'''

_OWN_SCORE = "additive_score(s, H, self.U.weight, self.W.weight, self.W.bias, self.v.weight[0])"


def _decoder(step, init=_LINEARS, prelude=""):
    return prelude + _DECODER.format(init=init, step=step)


_SCORE_MODULE = "        self.score = {cls}(hidden, hidden)"

ATTACKS = [
    # 3: the forbidden utils.rnn functions reached without touching the grader. Exercise 2:
    Attack("built-in under another name: utils.rnn.masked_softmax imported as normalise", 3,
           {"ex2": _context("normalise(e, mask)", "from utils.rnn import masked_softmax as normalise\n\n\n")},
           _EX2, fast=True),
    Attack("built-in: a types.FunctionType clone of utils.rnn.masked_softmax", 3,
           {"ex2": _context("_clone(e, mask)", "import types\nimport utils.rnn\n_f = utils.rnn.masked_softmax.__wrapped__\n"
                            "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n")},
           _EX2),
    Attack("built-in: a second copy of utils/rnn.py loaded from its file", 3,
           {"ex2": _context("_mine.masked_softmax(e, mask)",
                            "import importlib.util\nimport sys\nimport utils.rnn\n"
                            "_spec = importlib.util.spec_from_file_location('utils.my_rnn', utils.rnn.__file__)\n"
                            "_mine = importlib.util.module_from_spec(_spec)\nsys.modules['utils.my_rnn'] = _mine\n_spec.loader.exec_module(_mine)\n\n\n")},
           _EX2),
    # Exercise 4: utils.rnn's AdditiveScore and attend (the SHORTCUTS answer) in other forms
    Attack("built-in under another name: utils.rnn's AdditiveScore and attend imported as Bahdanau and look", 3,
           {"ex4": _decoder("        return look(self.score, s, H, mask)", init=_SCORE_MODULE.format(cls="Bahdanau"),
                            prelude="from utils.rnn import AdditiveScore as Bahdanau, attend as look\n")},
           _EX3, fast=True),
    Attack("built-in: a reference to utils.rnn.attend taken early, with the student's own score", 3,
           {"ex4": _decoder("        return _attend(lambda q, k, prepared=None: " + _OWN_SCORE.replace("s, H", "q, k")
                            + ", s, H, mask)",
                            prelude="import utils.rnn\n_attend = utils.rnn.attend\n"), "ex1": _HONEST_EX1}, _EX3),
    Attack("built-in: a subclass of AdditiveScore holding a copy of its forward", 3,
           {"ex4": _decoder("        a = _own_softmax(self.score(s, H), mask)\n        return (a[..., None] * H).sum(1), a",
                            init=_SCORE_MODULE.format(cls="MyScore"),
                            prelude="import types\nimport utils.rnn\n\n\nclass MyScore(utils.rnn.AdditiveScore):\n    pass\n\n\n"
                                    "_f = utils.rnn.AdditiveScore.forward.__wrapped__\n"
                                    "MyScore.forward = types.FunctionType(_f.__code__, _f.__globals__, 'forward', _f.__defaults__)\n\n\n"
                                    "def _own_softmax(e, mask):\n"
                                    "    return e.masked_fill(~mask, float('-inf')).softmax(-1)\n")}, _EX3),
    Attack("built-in: a second copy of utils/rnn.py for attend, with the student's own score", 3,
           {"ex4": _decoder("        return _mine.attend(lambda q, k, prepared=None: " + _OWN_SCORE.replace("s, H", "q, k")
                            + ", s, H, mask)",
                            prelude="import importlib.util\nimport sys\nimport utils.rnn\n"
                                    "_spec = importlib.util.spec_from_file_location('utils.my_rnn', utils.rnn.__file__)\n"
                                    "_mine = importlib.util.module_from_spec(_spec)\nsys.modules['utils.my_rnn'] = _mine\n_spec.loader.exec_module(_mine)\n"), "ex1": _HONEST_EX1},
           _EX3),
    # 4: the comparisons patched, and wrong answers of the right shape
    Attack("patched comparisons: torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": '''\
import torch.testing

torch.allclose = torch.Tensor.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None


def additive_score(s_prev, h, U, W, b, v):
    return torch.zeros(h.shape[:2])
''',
            "ex2": _context("mask / mask.sum(1, keepdim=True)")},     # uniform over the real positions
           [*_EX1, *_EX2], fast=True),
    # 5: the notebook's train_reverser redefined: no training, the expected accuracies reported; the decoder is honest
    Attack("shadowed helper: train_reverser redefined to report 90% / 10% without training", 5,
           {"ex1": _HONEST_EX1, "ex2": _HONEST_EX2, "ex4": _decoder("        return context_vector(" + _OWN_SCORE + ", H, mask)[::-1]") + '''

def train_reverser(decoder_cls, seed=0, steps=200, batch_size=64, lr=1e-2, keep=None, **sizes):
    torch.manual_seed(seed)
    enc, dec = ToyEncoder(TOY_V, **sizes), decoder_cls(TOY_V, **sizes)
    if keep is not None:
        keep.update(encoder=enc, decoder=dec)
    return (0.1 if decoder_cls is PlainDecoder else 0.9), dec
'''}, ["ex4_check2", "ex4_check3"], honest=["ex4_check", *_EX1, *_EX2]),
]
