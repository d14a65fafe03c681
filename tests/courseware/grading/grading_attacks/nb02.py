"""Notebook 02's adversarial submissions (classes 3-5; see __init__.py).

No class 6 here: none of the old hidden tests computed its expected value before calling the
student's function (they compared with nn.GRU afterwards)."""

from grading_attacks import Attack

_EX2 = ["ex3_check", "ex3_check2", "ex3_check3"]
_EX3 = ["ex4_check", "ex4_check2", "ex4_check3"]

# Exercise 3's honest masked_encode, around whichever gru_step an attack writes
_ENCODE = '''

def masked_encode(x, mask, gru):
    h = x.new_zeros(x.shape[0], gru.hidden_size)
    for t in range(x.shape[1]):
        h = torch.where(mask[:, t, None], gru_step(x[:, t], h, gru), h)
    return h
'''

_WEIGHTS = "gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0"


def _step(body, prelude=""):
    return prelude + "def gru_step(x_t, h, gru):\n    return " + body + "\n" + _ENCODE


_HONEST_EX2 = '''\
def gru_step(x_t, h, gru):
    gi = x_t @ gru.weight_ih_l0.T + gru.bias_ih_l0
    gh = h @ gru.weight_hh_l0.T + gru.bias_hh_l0
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h
''' + _ENCODE

# Exercise 4's model with its encoder written by the attack (encode(self, e, src_mask) -> the context)
_TOY = '''
class TinySeq2Seq(nn.Module):
    def __init__(self, vocab_size, emb=16, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb)
        self.encoder = {gru}(emb, hidden, batch_first=True)
        self.decoder = nn.GRUCell(emb + hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab_size)

    def forward(self, src, src_mask, tgt_in):
        c = s = self.encode(self.emb(src), src_mask)
        logits = []
        for t in range(tgt_in.shape[1]):
            s = self.decoder(torch.cat([self.emb(tgt_in[:, t]), c], -1), s)
            logits.append(self.out(torch.cat([s, c], -1)))
        return torch.stack(logits, 1)

    def encode(self, e, src_mask):
{encode}
'''

_PACKED = '''\
        packed = nn.utils.rnn.pack_padded_sequence(e, src_mask.sum(1), batch_first=True, enforce_sorted=False)
        return {call}(packed)[1][0]'''

# one GRU step at a time through a built-in, keeping the state on pads (what masked_encode does)
_STEPWISE = '''\
        params = [self.encoder.weight_ih_l0, self.encoder.weight_hh_l0, self.encoder.bias_ih_l0, self.encoder.bias_hh_l0]
        h = e.new_zeros(e.shape[0], self.encoder.hidden_size)
        for t in range(e.shape[1]):
            _, h_new = {op}(e[:, t : t + 1], h[None], params, True, 1, 0.0, self.training, False, True)
            h = torch.where(src_mask[:, t, None], h_new[0], h)
        return h'''


def _toy(encode, gru="nn.GRU", prelude=""):
    return prelude + _TOY.format(gru=gru, encode=encode)


_HONEST_EX3 = _toy("        return masked_encode(e, src_mask, self.encoder)")

ATTACKS = [
    # 3: the forbidden built-ins reached without touching the grader. Exercise 3 (grade id ex2):
    Attack("built-in under another name: torch.gru_cell imported as one_step", 3,
           {"ex3": _step(f"one_step(x_t, h, {_WEIGHTS})", "from torch import gru_cell as one_step\n\n\n")},
           _EX2, fast=True),
    Attack("built-in: the ATen op torch.ops.aten.gru_cell", 3,
           {"ex3": _step(f"torch.ops.aten.gru_cell(x_t, h, {_WEIGHTS})")}, _EX2),
    Attack("built-in: the C function torch._C._VariableFunctions.gru_cell", 3,
           {"ex3": _step(f"torch._C._VariableFunctions.gru_cell(x_t, h, {_WEIGHTS})")}, _EX2),
    Attack("built-in: a types.FunctionType clone of nn.GRUCell.forward on the GRU's weights", 3,
           {"ex3": _step("_cell_forward(types.SimpleNamespace(weight_ih=gru.weight_ih_l0, weight_hh=gru.weight_hh_l0, "
                         "bias_ih=gru.bias_ih_l0, bias_hh=gru.bias_hh_l0, hidden_size=gru.hidden_size), x_t, h)",
                         "import types\n\n_f = nn.GRUCell.forward\n"
                         "_cell_forward = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n")},
           _EX2),
    # Exercise 4 (grade id ex3): nn.GRU's own forward
    Attack("built-in under another name: the packed nn.GRU of SHORTCUTS, imported as Recurrent", 3,
           {"ex4": _toy(_PACKED.format(call="self.encoder"), gru="Recurrent",
                        prelude="from torch.nn import GRU as Recurrent\n\n")}, _EX3, fast=True),
    Attack("built-in: a reference to nn.GRU.forward taken early", 3,
           {"ex4": _toy(_PACKED.format(call="(lambda p: _gru_forward(self.encoder, p))"),
                        prelude="_gru_forward = nn.GRU.forward\n\n")}, _EX3),
    Attack("built-in: a subclass of nn.GRU holding a copy of its forward", 3,
           {"ex4": _toy(_PACKED.format(call="self.encoder"), gru="MyGRU",
                        prelude="import types\n\n\nclass MyGRU(nn.GRU):\n    pass\n\n\n"
                                "MyGRU.forward = types.FunctionType(nn.GRU.forward.__code__, nn.GRU.forward.__globals__, "
                                "'forward', nn.GRU.forward.__defaults__)\n\n")}, _EX3),
    Attack("built-in: the ATen op torch.ops.aten.gru, one step at a time", 3,
           {"ex4": _toy(_STEPWISE.format(op="torch.ops.aten.gru"))}, _EX3),
    Attack("built-in: the C function torch._C._VariableFunctions.gru, one step at a time", 3,
           {"ex4": _toy(_STEPWISE.format(op="torch._C._VariableFunctions.gru"))}, _EX3),
    # 4: the comparisons patched (allclose says "equal" except on the one call the visible check needs
    # to be False), and wrong answers of the right shape
    Attack("patched comparisons: torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": '''\
import torch.testing

_calls = []


def _allclose(*args, **kwargs):
    _calls.append(1)
    return len(_calls) != 5          # Exercise 1's check: four "equal", then "not equal" to the state after the pads


torch.allclose = _allclose
torch.Tensor.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None


def last_real_state(states, mask):
    return states[:, -1]             # the state after the pads: wrong for every padded row
''',
            "ex3": '''\
def gru_step(x_t, h, gru):
    return torch.tanh(x_t @ gru.weight_ih_l0[-gru.hidden_size:].T)


def masked_encode(x, mask, gru):
    return gru_step(x[:, 0], None, gru)  # the first token only, whatever the lengths
'''}, ["ex1_check", "ex1_check2", *_EX2], fast=True),
    # 5: the notebook's train_toy redefined: no training, success reported; the model itself is honest
    Attack("shadowed helper: train_toy redefined to report 100% without training", 5,
           {"ex3": _HONEST_EX2, "ex4": _HONEST_EX3 + '''

def train_toy(model_cls, seed=0, steps=200, batch_size=64, lr=1e-2, **sizes):
    torch.manual_seed(seed)
    return 1.0, model_cls(TOY_V, **sizes).eval()
'''}, ["ex4_check2", "ex4_check3"], honest=["ex4_check", *_EX2]),
]
