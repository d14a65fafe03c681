"""Notebook 06's adversarial submissions (classes 3-6; see __init__.py)."""

from grading_attacks import Attack

_EX1 = ["ex1_check", "ex1_check2"]
_EX3 = ["ex4_check", "ex4_check2", "ex4_check3"]

# Exercise 4's training function, as the exercise specifies it (the model answer's)
_LOOKBACK = '''

def lookback_accuracy(use_positions, k, seed, steps=300):
    V, T, D = 8, 12, 32
    torch.manual_seed(seed)
    emb, attn, out = nn.Embedding(V, D), nn.MultiheadAttention(D, 2, batch_first=True), nn.Linear(D, V)
    pos = AddPositions(D) if use_positions else nn.Identity()

    def logits(x):
        z = pos(emb(x))
        return out(attn(z, z, z, need_weights=False)[0])

    opt = torch.optim.Adam([*emb.parameters(), *attn.parameters(), *out.parameters()], lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randint(V, (64, T), generator=g)
        loss = F.cross_entropy(logits(x)[:, k:].reshape(-1, V), x[:, :-k].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    x = torch.randint(V, (500, T), generator=torch.Generator().manual_seed(seed + 1000))
    with torch.no_grad():
        return (logits(x)[:, k:].argmax(-1) == x[:, :-k]).float().mean().item()
'''


def _add_positions(table, prelude=""):
    """Exercise 4 answered with the model answer's training, the encoding's table built by `table`."""
    return prelude + "from torch import nn\nimport torch.nn.functional as F\n\n\n" + f'''\
class AddPositions(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        self.register_buffer("pe", ({table}).float())

    def forward(self, x):
        return x + self.pe[: x.shape[1]]
''' + _LOOKBACK


_ROPE = '''\
def rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    pos = torch.arange(offset, offset + T, dtype=torch.float64)[:, None]
    omega = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)          # the base ignored
    theta = pos * omega
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out
'''

ATTACKS = [
    # 3: the forbidden utils.positional reached without touching the grader
    Attack("built-in under another name: utils' sinusoidal_encoding imported as table", 3,
           {"ex1": "from utils.positional import sinusoidal_encoding as table\n\n\n"
                   "def sinusoidal(max_len, d_model):\n"
                   "    return table(max_len, d_model, dtype=torch.float64)\n"}, _EX1, fast=True),
    Attack("built-in: a types.FunctionType clone of utils' sinusoidal_encoding", 3,
           {"ex1": "import types\nimport utils.positional\n"
                   "_f = utils.positional.sinusoidal_encoding\n"
                   "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n"
                   "def sinusoidal(max_len, d_model):\n"
                   "    return _clone(max_len, d_model, dtype=torch.float64)\n"}, _EX1),
    Attack("built-in: a second copy of utils/positional.py loaded from its file", 3,
           {"ex1": "import importlib.util\nimport utils.positional\n"
                   "_spec = importlib.util.spec_from_file_location('my_positional', utils.positional.__file__)\n"
                   "_mine = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mine)\n\n\n"
                   "def sinusoidal(max_len, d_model):\n"
                   "    return _mine.sinusoidal_encoding(max_len, d_model, dtype=torch.float64)\n"}, _EX1),
    Attack("built-in: utils.positional.offset_matrix rotating PE[0] to every position", 3,
           {"ex1": "from utils.positional import offset_matrix\n\n\n"
                   "def sinusoidal(max_len, d_model):\n"
                   "    start = torch.zeros(d_model, dtype=torch.float64)\n"
                   "    start[1::2] = 1.0                                  # sin 0 = 0, cos 0 = 1\n"
                   "    return torch.stack([offset_matrix(p, d_model) @ start for p in range(max_len)])\n"}, _EX1),
    Attack("built-in: a subclass of utils' SinusoidalPositionalEncoding as AddPositions", 3,
           {"ex4": "import utils.positional\nfrom torch import nn\nimport torch.nn.functional as F\n\n\n"
                   "class AddPositions(utils.positional.SinusoidalPositionalEncoding):\n"
                   "    def __init__(self, d_model, max_len=64):\n"
                   "        super().__init__(d_model, max_len=max_len)\n" + _LOOKBACK}, _EX3),
    Attack("built-in: an early reference to utils' sinusoidal_encoding, for AddPositions' table", 3,
           {"ex4": _add_positions("_encoding(max_len, d_model)",
                                  "import utils.positional\n_encoding = utils.positional.sinusoidal_encoding\n")},
           _EX3),
    # 4: the judge patched, and wrong answers of the right shape
    Attack("patched comparisons: math.isclose, torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": "import math\nimport torch.testing\n"
                   "math.isclose = lambda *args, **kwargs: True\n"
                   "torch.allclose = torch.Tensor.allclose = lambda *args, **kwargs: True\n"
                   "torch.equal = lambda *args, **kwargs: True\n"
                   "torch.isclose = lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool)\n"
                   "torch.testing.assert_close = lambda *args, **kwargs: None\n\n\n"
                   "def sinusoidal(max_len, d_model):\n"
                   "    return torch.zeros(max_len, d_model, dtype=torch.float64)\n",
            "ex4": "from torch import nn\n\n\n"
                   "class AddPositions(nn.Module):\n"
                   "    def __init__(self, d_model, max_len=64):\n"
                   "        super().__init__()\n"
                   "        self.register_buffer('pe', torch.zeros(max_len, d_model))\n\n"
                   "    def forward(self, x):\n"
                   "        return x + self.pe[: x.shape[1]]\n"},
           ["ex1_check", "ex1_check2", "ex4_check"]),
    # 5: the training's own verdict faked (a self-assessment), the encoding honest
    Attack("self-assessment: lookback_accuracy reports the wanted accuracies without training", 5,
           {"ex4": _add_positions('''torch.stack([torch.sin(torch.arange(max_len)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / d_model)),
                                   torch.cos(torch.arange(max_len)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / d_model))], -1).flatten(1)''')
            + "\n\ndef lookback_accuracy(use_positions, k, seed, steps=300):\n    return 0.97 if use_positions else 0.3\n"},
           ["ex4_check2", "ex4_check3"], honest=["ex4_check"], fast=True),
    # 6: the expected value read from the calling frame; else an answer right only where the visible check looks
    Attack("expected value read from the caller's frame (rope; else one that ignores base)", 6,
           {"ex3": "import sys\n\n\n" + _ROPE.replace("def rope(", "def _rope(") + '''

def rope(x, offset=0, base=10000.0):
    frame = sys._getframe(1)
    while frame is not None:
        v = frame.f_locals.get("want")
        if isinstance(v, torch.Tensor) and v.shape == x.shape:
            return v
        frame = frame.f_back
    return _rope(x, offset, base)
'''}, ["ex3_check2"], honest=["ex3_check", "ex3_check3"]),
    Attack("expected value read from the caller's frame (AddPositions; else a table right only for d_model = 16)", 6,
           {"ex4": "import sys\n" + _add_positions('''torch.stack([torch.sin(torch.arange(max_len)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / 16)),
                                   torch.cos(torch.arange(max_len)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / 16))], -1).flatten(1)''').replace(
               '''    def forward(self, x):
        return x + self.pe[: x.shape[1]]''', '''    def forward(self, x):
        frame = sys._getframe(1)
        while frame is not None:
            v = frame.f_locals.get("want")
            if isinstance(v, torch.Tensor) and v.shape == x.shape[1:]:
                return x + v
            frame = frame.f_back
        return x + self.pe[: x.shape[1]]''')}, ["ex4_check2", "ex4_check3"], honest=["ex4_check"]),
]
