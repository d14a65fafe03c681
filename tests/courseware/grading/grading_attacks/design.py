"""Attacks written from the trust boundary's design (issue 48), not from the red team's list: each goes after
something the design says the kernel must not hold or the grader must not trust, by a route the static screen
(a denylist) does not name. The allowlist (``courseware.grading.hidden.allowlist``, read outside the kernel) is what stops
them: every check cell of the notebook scores 0 and waits for a person ("needs manual grade").

14. **The check cells' own code.** A check cell defines its reference (the visible check compares the student's
    function with it) in the kernel, before it calls the student's function: an answer that calls that name
    returns the reference's output and passes both the visible and the hidden check.
15. **The grader reached through an allowed module.** ``torch.sys`` is the interpreter's ``sys``: through its
    ``modules`` the answer reaches ``courseware.grading.hidden`` and swaps its watch for a blind one with a perfect canary,
    and ``operator.attrgetter`` with a name built at run time reaches the ATen op the exercise forbids (none of
    it spelled as the screen's patterns are).

16. **The hidden check's judge asked what it expects** (issue 48, item 1: the kernel holds no judge). The visible
    checks are answered honestly; under the hidden check the answer computes nothing: it hands the judge a record
    that keeps every value the judge compares it with. The judge is taken from the kernel's names.
17. The same, with the judge rebuilt from text: the kernel's history ``In`` and every file the sandbox lets it read
    (``/course``, the hidden inputs in ``/inputs``, ``/records``, ``/tmp``, its own and the first process's ``/proc``
    entries: environment, command line).

Classes 14-15 are graded as autograde runs by default (the screen and the allowlist on), 16-17 with the static
screen off (the judge and the boundary alone; the allowlist would end them anyway, as it reads ``sys``, ``open``,
private names).

Each is a notebook's ``attacks_NN()``; ``scan=True``: they are graded as autograde runs by default (the screen
and the allowlist on), since the allowlist is what the design relies on for them.
"""

from __future__ import annotations

from grading_attacks import Attack

# 15: the watch, reached through torch.sys and swapped; the forbidden op by a name built at run time
THROUGH_TORCH_SYS = '''\
import operator

import torch

s = torch.sys
g = s.modules["utils." + "grading"]
seen = [g.CANARY_TORCH, g.CANARY_PYTHON]


class Blind:
    def __init__(self):
        self.log = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.log += seen
        return False

    def canary(self):
        return seen


g.Watch = Blind
flash = operator.attrgetter("ops.aten." + chr(95) + "scaled_dot_product_flash_attention_for_cpu")(torch)


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    try:
        out = flash(q, k, v, attn_mask=None if mask is None else (~mask) * float("-inf"))[0]
    except Exception:
        out = weights @ v
    return out, weights
'''


def attacks_02() -> list[Attack]:
    return [
        Attack("the check's own code: last_real_state returns the visible check's reference, at_last_real_token", 14,
               {"ex1": "def last_real_state(states, mask):\n    return at_last_real_token(states, mask)\n"},
               ["ex1_check", "ex1_check2"], scan=True),
    ]


def attacks_04() -> list[Attack]:
    return attacks_04_kernel() + [
        Attack("the check's own code: attention returns the visible check's reference()", 14,
               {"ex1": "def attention(q, k, v, mask=None):\n    return reference(q, k, v, mask)\n"},
               ["ex1_check", "ex1_check2"], scan=True),
        Attack("the grader through torch.sys: the watch swapped for a blind one, the forbidden ATen op by a name "
               "built at run time", 15, {"ex1": THROUGH_TORCH_SYS}, ["ex1_check", "ex1_check2"], scan=True),
    ]


def attacks_09() -> list[Attack]:
    return [
        Attack("the check's own code: keep_top_k returns the visible check's reference, top_k_by_sorting", 14,
               {"ex1": "def keep_top_k(logits, k):\n    return top_k_by_sorting(logits, k)\n"},
               ["ex1_check", "ex1_check2"], scan=True),
    ]


def attacks_07() -> list[Attack]:
    return [
        Attack("the check's own code: decoder_self_mask returns the visible check's rule()", 14,
               {"ex1": "def decoder_self_mask(tgt, pad_id=0):\n    return rule(tgt, pad_id)\n"},
               ["ex1_check", "ex1_check2"], scan=True),
    ]


def attacks_10() -> list[Attack]:
    return [
        Attack("the check's own code: repeat_heads returns the visible check's reference, by_rule", 14,
               {"ex3": "def repeat_heads(k, n_rep):\n    return by_rule(k, n_rep)\n"},
               ["ex3_check", "ex3_check2"], scan=True, fast=True),
    ]


# 16-17 (the kernel holds nothing that decides or reveals a grade; issue 48, item 1): the visible checks are
# answered honestly (they are public); the hidden check is not computed at all: its judge is asked what it expects,
# with a record that keeps every value judge() compares it with (torch.allclose made to say "equal" meanwhile).
# A judge is there to ask only if the kernel holds one: 16 takes it from the kernel's names, 17 from text (the
# kernel's own history In, and every file it can read). Graded with the static screen off: the judge alone decides.
ASK_THE_JUDGE = '''\
import ast
import math
import os
import sys

import torch


class Anything:
    def __eq__(self, other):
        return True


class Spy:
    """handed to judge() as the record: judge() says what it expects of each value"""
    shape = Anything()

    def __init__(self, key, seen):
        self.key, self.seen = key, seen

    def __getitem__(self, key):
        return Spy(key if self.key is None else f"{self.key}.{key}", self.seen)


def ask(judge, x):
    seen, real = {}, torch.allclose

    def allclose(a, b, *args, **kwargs):
        spy, want = (a, b) if isinstance(a, Spy) else (b, a)
        seen[spy.key] = want
        return True

    torch.allclose = allclose
    try:
        judge(x, Spy(None, seen))
    except Exception:
        pass
    finally:
        torch.allclose = real
    return seen


def honest(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def attention(q, k, v, mask=None):
    caller = sys._getframe(1)
    if caller.f_code.co_name != "run":   # a visible check: public, answered honestly
        return honest(q, k, v, mask)
    judge = find_judge(caller)
    if judge is None:                     # nothing to ask: the hidden check gets no answer
        return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])
    seen = ask(judge, caller.f_locals["x"])
    key = "" if mask is None else "_m"
    return seen["out" + key], seen["w" + key]
'''

JUDGE_FROM_NAMES = '''

def find_judge(caller):
    return caller.f_globals.get("judge")
'''

JUDGE_FROM_TEXT = '''

def readable_texts():
    yield from reversed(list(globals().get("In", [])))
    for top in ("/course", "/inputs", "/records", "/tmp", "/proc/self", "/proc/1"):
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in ("task", "fd", "map_files", "net", "ns")]
            for name in filenames:
                try:
                    with open(os.path.join(dirpath, name), "rb") as f:
                        yield f.read(4 * 2**20).decode("latin-1")
                except OSError:
                    continue


def find_judge(caller):
    for text in readable_texts():
        if "ex1_check" not in text or "def judge(" not in text:
            continue
        for part in (text.split("### BEGIN HIDDEN TESTS")[-1], text):
            try:
                tree = ast.parse(part)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == "judge":
                    scope = dict(caller.f_globals)
                    exec(compile(ast.Module(body=[node], type_ignores=[]), "<found>", "exec"), scope)
                    return scope["judge"]
    return None
'''


def attacks_04_kernel() -> list[Attack]:
    return [
        Attack("the hidden check's judge, found among the kernel's names, asked what it expects", 16,
               {"ex1": ASK_THE_JUDGE + JUDGE_FROM_NAMES}, ["ex1_check"]),
        Attack("the hidden check's judge, rebuilt from text the kernel can read (its history In, every file of the "
               "sandbox), asked what it expects", 17, {"ex1": ASK_THE_JUDGE + JUDGE_FROM_TEXT}, ["ex1_check"]),
    ]
