"""Notebook 07's adversarial submissions (classes 3-6; see __init__.py)."""

from grading_attacks import PATCH_COMPARISONS, Attack

_EX1 = ["ex1_check", "ex1_check2"]
_EX2 = ["ex2_check", "ex2_check2"]
_EX3 = ["ex4_check", "ex4_check2"]

_CALL = "x, memory, tgt_mask=tgt_mask, memory_key_padding_mask=memory_key_padding_mask"


def _forward(body, prelude=""):
    return (prelude + "def decoder_layer_forward(layer, x, memory, tgt_mask, memory_key_padding_mask):\n"
            + body)


# Exercise 4: the Block's sub-modules as the exercise names them; attacks change its forward
_BLOCK_INIT = '''\
class Block(nn.Module):
    def __init__(self, d_model, num_heads, residual=True):
        super().__init__()
        self.residual = residual
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))

'''

_HONEST_FORWARD = '''\
    def forward(self, x):
        h = self.ln1(x)
        a = self.attn(h, h, h, need_weights=False)[0]
        x = x + a if self.residual else a
        f = self.ffn(self.ln2(x))
        return x + f if self.residual else f
'''

# the check cell's helper, redefined to report what the visible asserts want
_FAKE_MEASURE = '''

def train_and_measure(residual, seed=0):
    return 1.0 if residual else 0.05
'''

ATTACKS = [
    # 3: the forbidden built-in called before any check runs, its results cached for the function to return
    Attack("built-in called when the answer cell runs: causal masks precomputed for every length", 3,
           {"ex1": "from utils.attention import causal_mask as cm, key_padding_mask as kpm\n"
                   "_CAUSAL = {T: cm(T) for T in range(1, 129)}\n\n\n"
                   "def decoder_self_mask(tgt, pad_id=0):\n"
                   "    return _CAUSAL[tgt.shape[1]] & (tgt != pad_id)[:, None, None, :]\n"}, _EX1, fast=True),
    Attack("built-in called in a cell the student added: causal masks precomputed there", 3,
           {"ex1": "def decoder_self_mask(tgt, pad_id=0):\n"
                   "    return _CAUSAL[tgt.shape[1]] & (tgt != pad_id)[:, None, None, :]\n"},
           _EX1, added={"ex1": "from utils.attention import causal_mask\n"
                               "_CAUSAL = {T: causal_mask(T) for T in range(1, 129)}\n"}),
    # 3: the forbidden built-in reached without touching the grader
    Attack("built-in under another name: utils' mask helpers imported as cm and kpm", 3,
           {"ex1": "from utils.attention import causal_mask as cm, key_padding_mask as kpm\n\n\n"
                   "def decoder_self_mask(tgt, pad_id=0):\n"
                   "    return cm(tgt.shape[1]) & kpm(tgt, pad_id)\n"}, _EX1),
    Attack("built-in: types.FunctionType clones of the utils mask helpers", 3,
           {"ex1": "import types\nimport utils.attention\n\n\n"
                   "def _clone(f):\n"
                   "    f = getattr(f, '__wrapped__', f)  # the code behind a contract's door\n"
                   "    return types.FunctionType(f.__code__, f.__globals__, 'mine', f.__defaults__)\n\n\n"
                   "_causal, _padding = _clone(utils.attention.causal_mask), _clone(utils.attention.key_padding_mask)\n\n\n"
                   "def decoder_self_mask(tgt, pad_id=0):\n"
                   "    return _causal(tgt.shape[1]) & _padding(tgt, pad_id)\n"}, _EX1),
    Attack("built-in: a second copy of utils/attention.py loaded from its file", 3,
           {"ex1": "import importlib.util\nimport utils.attention\n"
                   "_spec = importlib.util.spec_from_file_location('my_attention', utils.attention.__file__)\n"
                   "_mine = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mine)\n\n\n"
                   "def decoder_self_mask(tgt, pad_id=0):\n"
                   "    return _mine.causal_mask(tgt.shape[1]) & _mine.key_padding_mask(tgt, pad_id)\n"}, _EX1),
    Attack("built-in under another name: the layer called through nn.Module.__call__", 3,
           {"ex2": _forward(f"    return _call(layer, {_CALL})\n", "_call = nn.Module.__call__\n\n\n")}, _EX2),
    Attack("built-in: torch's private _sa_block, _mha_block and _ff_block", 3,
           {"ex2": _forward("    x = layer.norm1(x + layer._sa_block(x, tgt_mask, None))\n"
                            "    x = layer.norm2(x + layer._mha_block(x, memory, None, memory_key_padding_mask))\n"
                            "    return layer.norm3(x + layer._ff_block(x))\n")}, _EX2, fast=True),
    Attack("built-in: an early reference to nn.TransformerDecoderLayer.forward", 3,
           {"ex2": _forward(f"    return _forward_ref(layer, {_CALL})\n",
                            "_forward_ref = nn.TransformerDecoderLayer.forward\n\n\n")}, _EX2),
    Attack("built-in: a subclass of nn.TransformerDecoderLayer holding a copy of its forward", 3,
           {"ex2": _forward(f"    return _Mine.step(layer, {_CALL})\n",
                            "class _Mine(nn.TransformerDecoderLayer):\n"
                            "    step = nn.TransformerDecoderLayer.forward\n\n\n")}, _EX2),
    Attack("built-in: a types.FunctionType clone of the layer's forward", 3,
           {"ex2": _forward(f"    return _clone(layer, {_CALL})\n",
                            "import types\n"
                            "_f = nn.TransformerDecoderLayer.forward\n"
                            "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n")},
           _EX2),
    Attack("built-in: a second copy of torch/nn/modules/transformer.py, the layer's class swapped for it", 3,
           {"ex2": _forward(f"    mine = copy.copy(layer)\n    mine.__class__ = _mine.TransformerDecoderLayer\n"
                            f"    return mine({_CALL})\n",
                            "import copy\nimport importlib.util\nimport torch.nn.modules.transformer\n"
                            "_spec = importlib.util.spec_from_file_location('torch.nn.modules.my_transformer',\n"
                            "                                               torch.nn.modules.transformer.__file__)\n"
                            "_mine = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mine)\n\n\n")},
           _EX2),
    # 4: the judge patched, and wrong answers of the right shape
    Attack("patched comparisons: torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex2": PATCH_COMPARISONS
                   + _forward("    return torch.zeros_like(x)\n")}, _EX2),
    # 5: the checks' helper redefined to report success, with blocks that do not do the work
    Attack("identity block: Block passes its input through, train_and_measure reports the wanted accuracies", 5,
           {"ex4": _BLOCK_INIT + "    def forward(self, x):\n        return x if self.residual else 0 * x\n"
                   + _FAKE_MEASURE}, _EX3, fast=True),
    Attack("block without attention: x + ffn(ln2(x)), train_and_measure reports the wanted accuracies", 5,
           {"ex4": _BLOCK_INIT + "    def forward(self, x):\n"
                   "        f = self.ffn(self.ln2(x))\n        return x + f if self.residual else f\n"
                   + _FAKE_MEASURE}, _EX3),
    Attack("shadowed helper: a real Block, but train_first_token only computes the first loss", 5,
           {"ex4": _BLOCK_INIT + _HONEST_FORWARD + '''

def train_first_token(model, steps=40, seed=0, lr=1e-2):
    first = first_token_loss(model, *first_token_batch(64, torch.Generator().manual_seed(seed))).item()
    return [first * 0.9 ** i for i in range(steps)]
''' + _FAKE_MEASURE}, _EX3),
    # 6: the expected value read from the calling frame
    Attack("expected value read from the caller's frame (decoder layer; else the layer itself)", 6,
           {"ex2": "import sys\n\n\n" + _forward(f'''\
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("want", "expected"):
            v = frame.f_locals.get(name)
            if isinstance(v, torch.Tensor) and v.shape == x.shape:
                return v
        frame = frame.f_back
    return layer({_CALL})
''')}, _EX2),
    Attack("expected value read from the caller's frame (Block; else a GELU block that also learns)", 6,
           {"ex4": "import sys\n\n\n" + _BLOCK_INIT + '''\
    def forward(self, x):
        frame = sys._getframe(1)
        while frame is not None:
            for name in ("want", "expected"):
                v = frame.f_locals.get(name)
                if isinstance(v, torch.Tensor) and v.shape == x.shape:
                    return v
            frame = frame.f_back
        h = self.ln1(x)
        a = self.attn(h, h, h, need_weights=False)[0]
        x = x + a if self.residual else a
        f = self.ffn[2](F.gelu(self.ffn[0](self.ln2(x))))      # GELU where the exercise says ReLU
        return x + f if self.residual else f
'''}, _EX3),
]
