"""Notebook 05's adversarial submissions (classes 3-6; see __init__.py)."""

from grading_attacks import PATCH_COMPARISONS, Attack

_EX2 = ["ex2_check", "ex2_check2", "ex2_check3", "ex2_check4"]
_FORWARD_ONLY = ["ex2_check", "ex2_check2"]   # the native op has no backward: these attacks cannot train

# the exercise's four projections, as the prompt names them
_INIT = '''\
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_h = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

'''

# the forward with the per-head attention replaced by `attend(q, k, v, mask)` -> (out, weights)
_HEADS = '''\
    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        q = self.w_q(x_q).view(B, Tq, self.h, self.d_h).transpose(1, 2)
        k = self.w_k(x_kv).view(B, Tk, self.h, self.d_h).transpose(1, 2)
        v = self.w_v(x_kv).view(B, Tk, self.h, self.d_h).transpose(1, 2)
        out, self.weights = attend(q, k, v, mask)
        return self.w_o(out.transpose(1, 2).reshape(B, Tq, d))
'''

_HONEST = _INIT + '''\
    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        q = self.w_q(x_q).view(B, Tq, self.h, self.d_h).transpose(1, 2)
        k = self.w_k(x_kv).view(B, Tk, self.h, self.d_h).transpose(1, 2)
        v = self.w_v(x_kv).view(B, Tk, self.h, self.d_h).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_h)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        self.weights = scores.softmax(-1)
        return self.w_o((self.weights @ v).transpose(1, 2).reshape(B, Tq, d))
'''

# one head whatever num_heads says: wrong whenever num_heads > 1
_ONE_HEAD = _INIT + '''\
    def forward(self, x_q, x_kv, mask=None):
        q, k, v = self.w_q(x_q), self.w_k(x_kv), self.w_v(x_kv)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[:, 0], float("-inf"))
        w = scores.softmax(-1)
        self.weights = w[:, None].expand(-1, self.h, -1, -1)
        return self.w_o(w @ v)
'''


def _mhaf(call, prelude=""):
    """A module whose forward is PyTorch's multi_head_attention_forward, reached as `call`."""
    return prelude + _INIT + f'''\
    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        blocked = None if mask is None else ~mask.expand(B, self.h, Tq, Tk).reshape(B * self.h, Tq, Tk)
        out, self.weights = {call}(
            x_q.transpose(0, 1), x_kv.transpose(0, 1), x_kv.transpose(0, 1), d, self.h,
            torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight]),
            torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias]), None, None, False, 0.0,
            self.w_o.weight, self.w_o.bias, training=False, attn_mask=blocked, average_attn_weights=False)
        return out.transpose(0, 1)
'''


def _native(op):
    """A module whose forward is the fused C++ kernel behind nn.MultiheadAttention's fast path, reached as
    `op` (it wants queries as long as the keys: the queries are padded, rows are independent)."""
    return _INIT + f'''\
    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        q = torch.cat([x_q, x_q.new_zeros(B, Tk - Tq, d)], 1)
        blocked = None
        if mask is not None:
            blocked = ~mask.expand(B, self.h, Tq, Tk)
            blocked = torch.cat([blocked, blocked.new_zeros(B, self.h, Tk - Tq, Tk)], 2)
        out, w = {op}(
            q, x_kv, x_kv, d, self.h, torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight]),
            torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias]), self.w_o.weight, self.w_o.bias,
            blocked, True, False, None if blocked is None else 2)
        self.weights = w[:, :, :Tq]
        return out[:, :Tq]
'''


# the check cells' helpers, redefined: the module under test answers with nn.MultiheadAttention's numbers,
# and the training reports what the visible asserts want
_FAKE_COPY = '''

def copy_from_torch(ours, ref):
    def forward(x_q, x_kv, mask=None):
        out, ours.weights = ref(x_q, x_kv, x_kv, average_attn_weights=False)
        return out
    ours.forward = forward
'''

_FAKE_TRAIN = '''

def train_first_and_last(num_heads, steps=300, seed=0, d_model=16):
    attn = MultiHeadAttention(d_model, num_heads)
    attn.weights = torch.zeros(1, num_heads, 1, 8)
    attn.weights[0, 0, 0, 0] = attn.weights[0, -1, 0, 7] = 1.0
    return (0.01 if num_heads > 1 else 0.5), attn
'''

ATTACKS = [
    # 3: the forbidden built-ins reached without touching the grader
    Attack("built-in under another name: F.multi_head_attention_forward imported as mhaf", 3,
           {"ex2": _mhaf("mhaf", "from torch.nn.functional import multi_head_attention_forward as mhaf\n\n\n")},
           _EX2, fast=True),
    Attack("built-in: a decoy module bound to the name F", 3,
           {"ex2": _mhaf("F.multi_head_attention_forward",
                         "import types\nimport torch.nn.functional\n"
                         "F = types.SimpleNamespace(**vars(torch.nn.functional))\n\n\n")}, _EX2),
    Attack("built-in: the ATen op behind nn.MultiheadAttention's fast path", 3,
           {"ex2": _native("torch.ops.aten._native_multi_head_attention")}, _FORWARD_ONLY),
    Attack("built-in: the C function behind it (torch._C._VariableFunctions)", 3,
           {"ex2": _native("torch._C._VariableFunctions._native_multi_head_attention")}, _FORWARD_ONLY),
    Attack("built-in: a subclass of utils' MultiHeadAttention, its projections under the exercise's names", 3,
           {"ex2": "import utils.attention\n\n\n"
                   "class MultiHeadAttention(utils.attention.MultiHeadAttention):\n"
                   "    def __init__(self, d_model, num_heads):\n"
                   "        super().__init__(d_model, num_heads)\n"
                   "        self.w_q, self.w_k, self.w_v, self.w_o = self.q_proj, self.k_proj, self.v_proj, self.out_proj\n\n"
                   "    def forward(self, x_q, x_kv, mask=None):\n"
                   "        out, self.weights = super().forward(x_q, x_kv, x_kv, mask)\n"
                   "        return out\n"}, _EX2),
    Attack("built-in: a types.FunctionType clone of utils' attention, per head", 3,
           {"ex2": "import types\nimport utils.attention\n"
                   "_f = utils.attention.scaled_dot_product_attention.__wrapped__\n"
                   "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n"
                   "def attend(q, k, v, mask):\n    return _clone(q, k, v, mask)\n\n\n" + _INIT + _HEADS}, _EX2),
    Attack("built-in: a second copy of utils/attention.py loaded from its file, per head", 3,
           {"ex2": "import importlib.util\nimport utils.attention\n"
                   "_spec = importlib.util.spec_from_file_location('my_attention', utils.attention.__file__)\n"
                   "_mine = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mine)\n\n\n"
                   "def attend(q, k, v, mask):\n    return _mine.scaled_dot_product_attention(q, k, v, mask)\n\n\n"
                   + _INIT + _HEADS}, _EX2),
    # 4: the judge patched, and wrong answers of the right shape
    Attack("patched comparisons: torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": PATCH_COMPARISONS +
                   "def split_heads(x, num_heads):\n"
                   "    B, T, d = x.shape\n"
                   "    return x.reshape(B, num_heads, T, d // num_heads)\n\n\n"
                   "def merge_heads(x):\n"
                   "    B, H, T, d_h = x.shape\n"
                   "    return x.reshape(B, T, H * d_h)\n",
            "ex2": _INIT + "    def forward(self, x_q, x_kv, mask=None):\n"
                           "        self.weights = torch.zeros(x_q.shape[0], self.h, x_q.shape[1], x_kv.shape[1])\n"
                           "        return torch.zeros_like(x_q)\n"},
           ["ex1_check", "ex1_check2", "ex2_check", "ex2_check2"], fast=True),
    # 5: the checks' helpers redefined to report success
    Attack("shadowed helper: copy_from_torch makes the module answer with nn.MultiheadAttention; one head only", 5,
           {"ex2": _ONE_HEAD + _FAKE_COPY}, _FORWARD_ONLY),
    Attack("shadowed helpers: copy_from_torch and train_first_and_last fake every visible check; one head only", 5,
           {"ex2": _ONE_HEAD + _FAKE_COPY + _FAKE_TRAIN}, _EX2),
    Attack("shadowed helpers: a real module, but the training only computes the first loss", 5,
           {"ex2": _HONEST + _FAKE_TRAIN + '''

def first_and_last_train(model, steps=300, seed=0):
    x, y = first_and_last_batch(128, generator=torch.Generator().manual_seed(seed))
    first = F.mse_loss(first_and_last_predict(model, x), y).item()
    return [first * 0.98 ** i for i in range(steps)]
'''}, ["ex2_check3", "ex2_check4"], honest=["ex2_check", "ex2_check2"]),
    # 6: the expected value read from the calling frame (the visible check computes it first)
    Attack("expected value read from the caller's frame (else zeros)", 6,
           {"ex2": "import sys\n\n\n" + _INIT + '''\
    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        self.weights = torch.zeros(B, self.h, Tq, x_kv.shape[1])
        frame = sys._getframe(1)
        while frame is not None:
            want, want_w = frame.f_locals.get("want"), frame.f_locals.get("want_w")
            if isinstance(want, torch.Tensor) and want.shape == x_q.shape:
                if isinstance(want_w, torch.Tensor) and want_w.shape == self.weights.shape:
                    self.weights = want_w
                return want
            frame = frame.f_back
        return torch.zeros_like(x_q)
'''}, _FORWARD_ONLY),
]
