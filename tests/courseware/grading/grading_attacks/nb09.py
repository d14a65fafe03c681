"""Notebook 09's adversarial submissions (classes 3-6; see __init__.py)."""

from grading_attacks import PATCH_COMPARISONS, Attack

_EX1 = ["ex1_check", "ex1_check2"]
_EX2 = ["ex2_check", "ex2_check2", "ex2_check3"]
_EX4 = ["ex4_check", "ex4_check2", "ex4_check3"]   # Exercise 4's answer cell is ex3 (Exercise 3 is a question)

_GREEDY = '''

@torch.no_grad()
def generate_greedy(model, idx, n_new):
    cache = {}
    for t in range(idx.shape[1]):
        x_t = model.embed(idx[:, t:t + 1], offset=t)[:, 0]
        h = attend_step(x_t, cache, model.Wq, model.Wk, model.Wv)
    for _ in range(n_new):
        nxt = model.out(x_t + h).argmax(-1, keepdim=True)
        idx = torch.cat([idx, nxt], dim=1)
        x_t = model.embed(nxt, offset=idx.shape[1] - 1)[:, 0]
        h = attend_step(x_t, cache, model.Wq, model.Wk, model.Wv)
    return idx
'''


def _step(attention, prelude=""):
    """attend_step with its attention over the cache computed by ``attention`` (q (B, 1, D), k, v (B, t, D))."""
    return prelude + f'''def attend_step(x_new, cache, Wq, Wk, Wv):
    q, k, v = x_new @ Wq, x_new @ Wk, x_new @ Wv
    cache["k"] = torch.cat([cache["k"], k[:, None]], 1) if "k" in cache else k[:, None]
    cache["v"] = torch.cat([cache["v"], v[:, None]], 1) if "v" in cache else v[:, None]
    return {attention}[:, 0]
''' + _GREEDY


_HONEST_STEP = _step('(((cache["k"] @ q[:, :, None])[:, :, 0] / math.sqrt(q.shape[-1])).softmax(-1)[:, None] @ cache["v"])')

ATTACKS = [
    # 3: utils.gpt.top_k_filter and F.scaled_dot_product_attention reached without touching the grader
    Attack("built-in under another name: utils.gpt's top_k_filter imported as keep", 3,
           {"ex1": "from utils.gpt import top_k_filter as keep\n\n\n"
                   "def keep_top_k(logits, k):\n    return keep(logits, k)\n"}, _EX1, fast=True),
    Attack("built-in: a types.FunctionType clone of utils.gpt.top_k_filter", 3,
           {"ex1": "import types\nimport utils.gpt\n"
                   "_f = utils.gpt.top_k_filter.__wrapped__\n"
                   "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n"
                   "def keep_top_k(logits, k):\n    return _clone(logits, k)\n"}, _EX1),
    Attack("built-in: a second copy of utils/gpt.py loaded from its file", 3,
           {"ex1": "import importlib.util\nimport utils.gpt\n"
                   "_spec = importlib.util.spec_from_file_location('my_gpt', utils.gpt.__file__)\n"
                   "_mine = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mine)\n\n\n"
                   "def keep_top_k(logits, k):\n    return _mine.top_k_filter(logits, k)\n"}, _EX1),
    Attack("built-in: a reference to F.scaled_dot_product_attention taken early", 3,
           {"ex4": _step('_sdpa(q[:, None], cache["k"], cache["v"])', "_sdpa = F.scaled_dot_product_attention\n\n\n")},
           _EX4),
    Attack("built-in: the ATen op torch.ops.aten.scaled_dot_product_attention", 3,
           {"ex4": _step('torch.ops.aten.scaled_dot_product_attention(q[:, None], cache["k"], cache["v"])')}, _EX4),
    Attack("built-in: the C function torch._C._nn.scaled_dot_product_attention", 3,
           {"ex4": _step('torch._C._nn.scaled_dot_product_attention(q[:, None], cache["k"], cache["v"])')}, _EX4),
    # 4: the comparisons patched to say "equal", and a wrong answer of the right shape in every exercise
    Attack("patched comparisons: torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": PATCH_COMPARISONS +
                   "def keep_top_k(logits, k):   # the right tokens kept, but their logits set to 0\n"
                   "    kth = torch.topk(logits, k, dim=-1).values[:, -1:]\n"
                   "    return torch.zeros_like(logits).masked_fill(logits < kth, float('-inf'))\n",
            "ex2": "def keep_top_p(logits, p):   # the right tokens kept, but their logits set to 0\n"
                   "    probs, order = logits.softmax(-1).sort(-1, descending=True)\n"
                   "    drop_sorted = probs.cumsum(-1) - probs >= p\n"
                   "    drop = drop_sorted.scatter(-1, order, drop_sorted)\n"
                   "    return torch.zeros_like(logits).masked_fill(drop, float('-inf'))\n\n\n"
                   "def sample_top_p(logits, p, generator=None):   # so each kept token is equally likely\n"
                   "    return torch.multinomial(keep_top_p(logits, p).softmax(-1), 1, generator=generator).squeeze(-1)\n",
            "ex4": _step('(((cache["k"] @ q[:, :, None])[:, :, 0]).softmax(-1)[:, None] @ cache["v"])').replace(
                       _GREEDY, '''

@torch.no_grad()
def generate_greedy(model, idx, n_new):   # the prompt's last prediction, repeated
    nxt = model(idx)[:, -1].argmax(-1, keepdim=True)
    return torch.cat([idx, nxt.expand(-1, n_new)], dim=1)
''')},
           _EX1 + _EX2 + _EX4, fast=True),
    # 5: the reference the check cells compare with, generate_recompute (defined in the section's first,
    # unlocked cell), redefined to return the student's own (wrong) text
    Attack("shadowed helper: generate_recompute redefined to agree with a wrong generate_greedy", 5,
           {"ex4": _HONEST_STEP.replace(_GREEDY, '''

@torch.no_grad()
def generate_greedy(model, idx, n_new):   # every new token embedded at position 0
    for _ in range(n_new):
        cache = {}
        for t in range(idx.shape[1]):
            x_t = model.embed(idx[:, t:t + 1], offset=0)[:, 0]
            h = attend_step(x_t, cache, model.Wq, model.Wk, model.Wv)
        idx = torch.cat([idx, model.out(x_t + h).argmax(-1, keepdim=True)], dim=1)
    return idx


def generate_recompute(model, idx, n_new):
    return generate_greedy(model, idx, n_new)
''')}, ["ex4_check2", "ex4_check3"], honest=["ex4_check"]),
    Attack("shadowed helper: TinyAttentionLM redefined to a model that always predicts token 0", 5,
           {"ex4": _HONEST_STEP.replace(_GREEDY, '''

_Real = TinyAttentionLM


class TinyAttentionLM(_Real):
    def __init__(self, V, D, block_size):
        super().__init__(V, D, block_size)
        nn.init.zeros_(self.out.weight), nn.init.zeros_(self.out.bias)


@torch.no_grad()
def generate_greedy(model, idx, n_new):
    return torch.cat([idx, idx.new_zeros(idx.shape[0], n_new)], dim=1)
''')}, ["ex4_check2", "ex4_check3"], honest=["ex4_check"]),
    # 6: the visible check's full causal attention read from the caller's frame; the fallback attends to
    # the new position only (wrong, but the visible part of the third check cell only calls it)
    Attack("expected value read from the caller's frame (the visible check's full)", 6,
           {"ex4": '''\
import sys


def attend_step(x_new, cache, Wq, Wk, Wv):
    k, v = x_new @ Wk, x_new @ Wv
    cache["k"] = torch.cat([cache["k"], k[:, None]], 1) if "k" in cache else k[:, None]
    cache["v"] = torch.cat([cache["v"], v[:, None]], 1) if "v" in cache else v[:, None]
    t = cache["k"].shape[1] - 1
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            full = scope.get("full")
            if isinstance(full, torch.Tensor) and full.dim() == 3 and full.shape[0] == v.shape[0] \\
                    and full.shape[2] == v.shape[1] and t < full.shape[1]:
                return full[:, t]
        frame = frame.f_back
    return v


def _step(x_new, cache, Wq, Wk, Wv):
    q, k, v = x_new @ Wq, x_new @ Wk, x_new @ Wv
    cache["k"] = torch.cat([cache["k"], k[:, None]], 1) if "k" in cache else k[:, None]
    cache["v"] = torch.cat([cache["v"], v[:, None]], 1) if "v" in cache else v[:, None]
    w = ((cache["k"] @ q[:, :, None])[:, :, 0] / math.sqrt(q.shape[-1])).softmax(-1)
    return (w[:, None] @ cache["v"])[:, 0]
''' + _GREEDY.replace("attend_step(", "_step(")}, ["ex4_check", "ex4_check3"], honest=["ex4_check2"]),
]
