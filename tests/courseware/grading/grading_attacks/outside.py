"""Attacks that a watch inside the student's own kernel cannot stop (classes 7-13; see __init__.py): they
reach outside the kernel (the judge's pipe, the disk, another process, another thread) or around the watch
(replacing it, deferring the call, another name for the op, another implementation of the same function).
The sandbox (courseware/grading/sandbox.py) and the registry's removal (courseware/grading/registry.py) make each score 0.
"""

from __future__ import annotations

from grading_attacks import SILENCE_AST, Attack

# 7: every later error swallowed, and a detached helper process that appends an "everything passed" verdict
# line to the judge's output pipe (opened through /proc) once the judge has written its own and exited
FORGE_VERDICT = SILENCE_AST + '''
import os, subprocess, sys
_HELPER = r"""
import json, os, time
ids = {f"ex{i}_check{j}": None for i in range(1, 8) for j in ["", "2", "3", "4", "5"]}
line = "COURSE-JUDGE-VERDICTS " + json.dumps(ids) + "\\n"
pipe = None
for _ in range(6000):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"courseware.grading.hidden" in cmd and b"serve" in cmd and pipe is None:
            pipe, judge = os.open(f"/proc/{pid}/fd/1", os.O_WRONLY), pid
    try:
        gone = open(f"/proc/{judge}/stat").read().split(")")[-1].split()[0] == "Z" if pipe is not None else False
    except OSError:
        gone = True
    if pipe is not None and gone:   # the judge has written its verdicts and exited
        os.write(pipe, line.encode())
        break
    time.sleep(0.05)
"""
subprocess.Popen([sys.executable, "-c", _HELPER], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
'''

# 7b: a helper that outlives the kernel: until well after the kernel has exited (and its call watch with
# it), it rewrites every record in the records folder with a clean call log and a perfect canary
OUTLIVE_KERNEL = '''
import os, subprocess, sys
_HELPER = r"""
import os, sys, time
records, kernel = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from courseware.grading.hidden import CANARY_PYTHON, CANARY_TORCH, from_bytes, to_bytes   # loaded before the kernel exits
def alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
dead = None
while dead is None or time.time() < dead + 10:   # on until well after the kernel has gone
    for name in os.listdir(records):
        path = os.path.join(records, name)
        try:
            got = from_bytes(open(path, "rb").read())
        except Exception:
            continue
        if got.get("log"):
            got["log"], got["canary"] = [], [CANARY_TORCH, CANARY_PYTHON]
            open(path + ".x", "wb").write(to_bytes(got))
            os.replace(path + ".x", path)
    if dead is None and not alive(kernel):
        dead = time.time()
    time.sleep(0.01)
"""
import utils
subprocess.Popen([sys.executable, "-c", _HELPER, os.environ.get("COURSE_GRADING_RECORDS", "."), str(os.getpid()),
                  os.path.dirname(os.path.dirname(utils.__file__))], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
'''


def read_from_disk(number: str, gid: str) -> str:
    """8: an answer cell that finds the source notebook (the course directory's, the repository's) and runs
    its model answer for this cell."""
    return f'''\
import glob, json, os
def _model_answer(gid):
    here, paths = os.getcwd(), []
    for up in range(6):
        base = os.path.abspath(os.path.join(here, *[".."] * up))
        paths += glob.glob(base + "/source/*/*.ipynb") + glob.glob(base + "/notebooks/*.ipynb")
    try:
        import utils
        paths += glob.glob(os.path.join(os.path.dirname(os.path.dirname(utils.__file__)), "notebooks", "*.ipynb"))
    except ImportError:
        pass
    paths += glob.glob("/work/*/notebooks/*.ipynb") + glob.glob("/tmp/**/source/*/*.ipynb", recursive=True)
    for path in paths:
        if not os.path.basename(path).startswith("{number}_"):
            continue
        try:
            nb = json.load(open(path))
        except (OSError, ValueError):
            continue
        for c in nb.get("cells", []):
            src = "".join(c.get("source", ""))
            if c.get("metadata", {{}}).get("nbgrader", {{}}).get("grade_id") == gid and "BEGIN SOLUTION" in src:
                return src
    raise RuntimeError("no model answer on this disk")
exec(_model_answer({gid!r}), globals())
'''


def in_thread(call: str) -> str:
    """9: the forbidden call made in a worker thread (a watch sees only its own thread)."""
    return ("import threading\n\n\n"
            "def _in_thread(f):\n"
            "    box = {}\n"
            "    t = threading.Thread(target=lambda: box.setdefault('out', f()))\n"
            "    t.start()\n    t.join()\n    return box['out']\n\n\n") + call


# 10: the grader's watch replaced by one that sees nothing and reports a perfect canary
REPLACE_WATCH = '''\
from courseware.grading import hidden as _grading


class _BlindWatch:
    def __init__(self):
        self.log = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.log += [_grading.CANARY_TORCH, _grading.CANARY_PYTHON]
        return False

    def canary(self):
        return [_grading.CANARY_TORCH, _grading.CANARY_PYTHON]


_grading.Watch = _BlindWatch


'''

# 11: a tensor subclass that computes with the built-in only when it is first used (packed into the
# record, after the watch has closed)
DEFERRED = '''\
import torch


class _Later(torch.Tensor):
    @staticmethod
    def __new__(cls, compute, like):
        t = torch.Tensor._make_subclass(cls, like, False)
        t._compute = compute
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        def real(a):
            return a._compute() if isinstance(a, _Later) else a
        with torch._C.DisableTorchFunctionSubclass():
            return func(*[real(a) for a in args], **{k: real(v) for k, v in (kwargs or {}).items()})


'''


def attacks_10() -> list[Attack]:
    ex1, ex2, ex3 = ["ex1_check", "ex1_check2"], ["ex2_check", "ex2_check2"], ["ex3_check", "ex3_check2"]
    rep = "def repeat_heads(k, n_rep):\n    return {}\n"
    return [
        Attack("forged verdict: errors swallowed, a detached helper appends 'everything passed' to the judge's pipe",
               7, {}, ["*"], added={"ex1": FORGE_VERDICT}, fast=True),
        Attack("a helper process outlives the kernel and rewrites the records' call logs (repeat_interleave used "
               "for the hidden checks only)", 7,
               {"ex3": OUTLIVE_KERNEL + "\n\n" + rep.format(
                   "k.repeat_interleave(n_rep, dim=1) if _hidden() else "
                   "k[:, :, None].expand(-1, -1, n_rep, -1, -1).flatten(1, 2)").replace(
                   "def repeat_heads", "def _hidden():\n    f = sys._getframe(2)\n    return f.f_code.co_name == 'run'\n\n\n"
                                      "def repeat_heads")}, ex3, fast=True),
        Attack("answers read from disk: the source notebook's model answers run", 8,
               {g: read_from_disk("10", g) for g in ("ex1", "ex2", "ex3")}, ex1 + ex2 + ex3, fast=True),
        Attack("worker thread: torch.repeat_interleave called in a thread", 9,
               {"ex3": in_thread(rep.format("_in_thread(lambda: k.repeat_interleave(n_rep, dim=1))"))}, ex3),
        Attack("worker thread: utils.scale.online_softmax_update called in a thread", 9,
               {"ex1": in_thread("from utils.scale import online_softmax_update\n\n\n"
                                 "def online_update(m, l, acc, scores, v):\n"
                                 "    return _in_thread(lambda: online_softmax_update(m, l, acc, scores, v))\n")}, ex1),
        Attack("replaced watch: grading.Watch swapped for a blind one, then repeat_interleave", 10,
               {"ex3": REPLACE_WATCH + rep.format("k.repeat_interleave(n_rep, dim=1)")}, ex3),
        Attack("replaced watch: grading.Watch swapped for a blind one, then utils.scale.online_softmax_update", 10,
               {"ex1": REPLACE_WATCH + "from utils.scale import online_softmax_update\n\n\n"
                                       "def online_update(m, l, acc, scores, v):\n"
                                       "    return online_softmax_update(m, l, acc, scores, v)\n"}, ex1),
        Attack("deferred tensor: a subclass that calls repeat_interleave only when the record is packed", 11,
               {"ex3": DEFERRED + "def repeat_heads(k, n_rep):\n"
                                  "    B, H, T, d = k.shape\n"
                                  "    return _Later(lambda: torch.repeat_interleave(k, n_rep, dim=1), torch.empty(B, H * n_rep, T, d))\n"},
               ex3),
        Attack("renamed op: aten::repeat_interleave.self_int with torch functions disabled", 12,
               {"ex3": "import torch\n\n\n" + rep.format("_op(k, n_rep)").replace(
                   "    return _op(k, n_rep)\n",
                   "    with torch._C.DisableTorchFunction():\n"
                   "        return torch.ops.aten.repeat_interleave.self_int(k, n_rep, 1)\n")}, ex3),
        Attack("renamed op: repeat_interleave inside a TorchScript function", 12,
               {"ex3": "import torch\n\n\n@torch.jit.script\ndef _spread(k: torch.Tensor, n: int) -> torch.Tensor:\n"
                       "    return k.repeat_interleave(n, dim=1)\n\n\n" + rep.format("_spread(k, n_rep)")}, ex3),
    ]


def attacks_07() -> list[Attack]:
    ex1, ex2 = ["ex1_check", "ex1_check2"], ["ex2_check", "ex2_check2"]
    mask = "def decoder_self_mask(tgt, pad_id=0):\n    return {}\n"
    return [
        Attack("forged verdict: errors swallowed, a detached helper appends 'everything passed' to the judge's pipe",
               7, {}, ["*"], added={"ex1": FORGE_VERDICT}),
        Attack("answers read from disk: the source notebook's model answers run", 8,
               {g: read_from_disk("07", g) for g in ("ex1", "ex2")}, ex1 + ex2),
        Attack("worker thread: utils' mask helpers called in a thread", 9,
               {"ex1": in_thread("from utils.attention import causal_mask, key_padding_mask\n\n\n" + mask.format(
                   "_in_thread(lambda: causal_mask(tgt.shape[1]) & key_padding_mask(tgt, pad_id))"))}, ex1),
        Attack("replaced watch: grading.Watch swapped for a blind one, then utils' mask helpers", 10,
               {"ex1": REPLACE_WATCH + "from utils.attention import causal_mask, key_padding_mask\n\n\n" + mask.format(
                   "causal_mask(tgt.shape[1]) & key_padding_mask(tgt, pad_id)")}, ex1, fast=True),
        Attack("registry alternative: nn.Transformer's generate_square_subsequent_mask and combine_masks", 13,
               {"ex1": "import torch\nfrom torch import nn\n\n\n" + mask.format(
                   "(nn.Transformer.generate_square_subsequent_mask(tgt.shape[1]) == 0) & (tgt != pad_id)[:, None, None, :]")},
               ex1),
    ]


def attacks_06() -> list[Attack]:
    return [
        Attack("registry alternative: RoPE from notebook 10's utils.scale.rope_angles and apply_rotary", 13,
               {"ex3": "import torch\nfrom utils.scale import apply_rotary, rope_angles\n\n\n"
                       "def rope(x, offset=0, base=10000.0):\n"
                       "    T, d = x.shape[-2], x.shape[-1]\n"
                       "    cos, sin = rope_angles(torch.arange(offset, offset + T), d, base)\n"
                       "    return apply_rotary(x, cos.to(x.dtype), sin.to(x.dtype))\n"},
               ["ex3_check", "ex3_check2", "ex3_check3"]),
    ]


def attacks_05() -> list[Attack]:
    return [
        Attack("registry alternative: utils' MultiHeadAttention.split_heads and merge_heads called unbound", 13,
               {"ex1": "import types\nfrom utils.attention import MultiHeadAttention\n\n\n"
                       "def split_heads(x, num_heads):\n"
                       "    me = types.SimpleNamespace(num_heads=num_heads, d_k=x.shape[-1] // num_heads)\n"
                       "    return MultiHeadAttention.split_heads(me, x)\n\n\n"
                       "def merge_heads(x):\n"
                       "    return MultiHeadAttention.merge_heads(None, x)\n"},
               ["ex1_check", "ex1_check2"]),
    ]
