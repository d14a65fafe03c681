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
    return [
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
