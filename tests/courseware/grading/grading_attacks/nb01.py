"""Notebook 01's adversarial submissions (classes 3-6; see __init__.py)."""

from grading_attacks import Attack

_EX1 = ["ex1_check", "ex1_check2"]
_EX2 = ["ex2_check", "ex2_check2"]
_EX3 = ["ex3_check", "ex3_check2"]
_EX4 = ["ex4_check", "ex4_check2", "ex4_check3"]


def _one_hot(expr, prelude=""):
    return (prelude + "def one_hot(ids, num_classes):\n"
            "    if (ids < 0).any() or (ids >= num_classes).any():\n"
            "        raise ValueError('id out of range')\n"
            f"    return {expr}.float()\n")


def _cosine(expr, prelude=""):
    return prelude + f"def cosine_similarities(E):\n    return {expr}\n"


_TRAIN = '''

def train_classifier(model, ids, mask, labels, steps=200, lr=0.05):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(ids, mask), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
'''


def _bag(pooled, prelude="", train=_TRAIN):
    return prelude + f'''
from torch import nn


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab_size, dim, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.out = nn.Linear(dim, num_classes)

    def forward(self, ids, mask):
        return self.out({pooled})
''' + train


_HONEST_POOL = ("(self.embed(ids) * mask[..., None].to(self.embed.weight.dtype)).sum(1) / "
                "mask.sum(1, keepdim=True).to(self.embed.weight.dtype)")

_FRAME = '''\
import sys


def _from_caller(names):
    frame = sys._getframe(2)
    while frame is not None:
        for name in names:
            if name in frame.f_locals:
                return frame.f_locals[name]
        frame = frame.f_back
    return None
'''

ATTACKS = [
    # 3: the forbidden built-ins reached without touching the grader. Exercise 1, F.one_hot:
    Attack("built-in under another name: F.one_hot imported as encode", 3,
           {"ex1": _one_hot("encode(ids, num_classes)", "from torch.nn.functional import one_hot as encode\n\n\n")},
           _EX1, fast=True),
    Attack("built-in: a reference to F.one_hot taken early", 3,
           {"ex1": _one_hot("_oh(ids, num_classes)", "_oh = F.one_hot\n\n\n")}, _EX1),
    Attack("built-in: the ATen op torch.ops.aten.one_hot", 3,
           {"ex1": _one_hot("torch.ops.aten.one_hot(ids, num_classes)")}, _EX1),
    Attack("built-in: the C function torch._C._nn.one_hot", 3,
           {"ex1": _one_hot("torch._C._nn.one_hot(ids, num_classes)")}, _EX1),
    Attack("built-in: a decoy module bound to the name F", 3,
           {"ex1": _one_hot("F.one_hot(ids, num_classes)", "import types\nimport torch.nn.functional\n"
                            "F = types.SimpleNamespace(**vars(torch.nn.functional))\n\n\n")}, _EX1),
    # Exercise 3, F.cosine_similarity
    Attack("built-in under another name: F.cosine_similarity imported as cos", 3,
           {"ex3": _cosine("cos(E[:, None, :], E[None, :, :], dim=-1)",
                           "from torch.nn.functional import cosine_similarity as cos\n\n\n")}, _EX3),
    Attack("built-in: the ATen op torch.ops.aten.cosine_similarity", 3,
           {"ex3": _cosine("torch.ops.aten.cosine_similarity(E[:, None, :], E[None, :, :], -1)")}, _EX3),
    Attack("built-in: the C function torch._C._VariableFunctions.cosine_similarity", 3,
           {"ex3": _cosine("torch._C._VariableFunctions.cosine_similarity(E[:, None, :], E[None, :, :], -1)")}, _EX3),
    # Exercise 4, utils.text.masked_mean and EmbeddingBag
    Attack("built-in under another name: utils.text.masked_mean imported as average", 3,
           {"ex4": _bag("average(self.embed(ids), mask)", "from utils.text import masked_mean as average\n")},
           _EX4, fast=True),
    Attack("built-in: a types.FunctionType clone of utils.text.masked_mean", 3,
           {"ex4": _bag("_clone(self.embed(ids), mask)",
                        "import types\nimport utils.text\n_f = utils.text.masked_mean\n"
                        "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n")}, _EX4),
    Attack("built-in: a second copy of utils/text.py loaded from its file", 3,
           {"ex4": _bag("_mine.masked_mean(self.embed(ids), mask)",
                        "import importlib.util\nimport sys\nimport utils.text\n"
                        "_spec = importlib.util.spec_from_file_location('my_text', utils.text.__file__)\n"
                        "_mine = importlib.util.module_from_spec(_spec)\nsys.modules['my_text'] = _mine\n_spec.loader.exec_module(_mine)\n")}, _EX4),
    Attack("built-in: F.embedding_bag under another name, on the embedding's weight", 3,
           {"ex4": _bag("bag_of(ids, self.embed.weight, mode='sum', per_sample_weights="
                        "(mask / mask.sum(1, keepdim=True)).to(self.embed.weight.dtype))",
                        "from torch.nn.functional import embedding_bag as bag_of\n")}, _EX4),
    # 4: the comparisons patched, and wrong answers of the right shape
    Attack("patched comparisons: torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": '''\
import torch.testing

torch.allclose = torch.Tensor.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None


def one_hot(ids, num_classes):
    if (ids < 0).any() or (ids >= num_classes).any():
        raise ValueError("id out of range")
    return torch.zeros(len(ids), num_classes)
''',
            "ex2": "def my_masked_mean(x, mask):\n    return x.mean(1)\n",
            "ex3": "def cosine_similarities(E):\n    return E @ E.T\n"},
           [*_EX1, *_EX2, *_EX3], fast=True),
    # 5: the notebook's data shadowed: validation labels replaced by what the untrained model predicts,
    # train_classifier does no training and reports falling losses; the model itself is honest
    Attack("shadowed data: val_labels replaced by the untrained model's predictions, no training", 5,
           {"ex4": _bag(_HONEST_POOL, train='''

def train_classifier(model, ids, mask, labels, steps=200, lr=0.05):
    return [0.5 ** k for k in range(steps)]


torch.manual_seed(0)
with torch.no_grad():
    val_labels = BagOfEmbeddings(len(lang_vocab), 16, 2)(val_ids, val_mask).argmax(-1)
''')}, ["ex4_check2", "ex4_check3"], honest=["ex4_check"]),
    # 6: the expected value read from the calling frame (the old hidden tests computed it first)
    Attack("expected value read from the caller's frame: masked mean", 6,
           {"ex2": _FRAME + '''

def my_masked_mean(x, mask):
    found = _from_caller(["expected", "want"])
    return found if found is not None else x.mean(1)
'''}, _EX2),
    Attack("expected value read from the caller's frame: cosine similarities", 6,
           {"ex3": _FRAME + '''

def cosine_similarities(E):
    unit = _from_caller(["unit"])
    if unit is not None:
        return unit @ unit.T
    found = _from_caller(["expected", "want"])
    return found if found is not None else torch.eye(len(E))
'''}, _EX3),
]
