"""Adversarial submissions for the grader (issue: grades that cannot be forged).

Each is what a determined student could write with the release, the ``utils`` source and
INSTRUCTORS.md, without the hidden tests. ``tests/courseware/grading/test_nbgrader_roundtrip.py`` autogrades them with
nbgrader and requires every cell an attack is aimed at to score 0, while the kernel itself showed no
error there (so the attack did get past the kernel, and only the judge stopped it).

An :class:`Attack` replaces answer cells (``answers``: grade_id -> source; the other exercises keep
the released stub) and names the check cells it is aimed at (``attacked``; ``"*"`` means every
autograded cell). ``scan`` says whether the grader's static screen of answer cells stays on for it:
off (the default) proves the judge alone stops the attack; on, for the attacks that only the screen
can see (code that switches the call detector off and on again around a forbidden call).

The classes, as numbered in the issue:

1. silencing the kernel (an AST transformer, a wrapped ``run_cell``, a custom exception handler);
2. disarming the grading module (a harmless ``courseware.grading.hidden`` in ``sys.modules``, its code replaced,
   an ``__import__`` hook);
3. getting round a forbidden built-in without touching the grader (an early reference, the ATen op,
   the C function, a clone of a ``utils`` function, a second copy of a module, a decoy ``F``);
4. patching the judge (``torch.allclose`` and friends return "equal") with wrong answers;
5. shadowing the checks' helpers (a notebook helper redefined to report success);
6. reading the expected value from the calling frame;

and those a watch inside the student's own kernel cannot stop (``outside.py``; the issue "Autograde the way
real autograders do"), each stopped by the sandbox (``courseware/grading/sandbox.py``) or the registry's removal
(``courseware/grading/registry.py``):

7. a forged verdict (a detached helper process writing to the judge's pipe), and a helper process that
   outlives the kernel and rewrites the records;
8. the answers read from disk (the source notebook in the course directory or the repository);
9. a forbidden call made in a worker thread;
10. the grader's watch replaced by a blind one;
11. a tensor subclass that calls the built-in only after the watch has closed;
12. the same ATen op under another name (torch functions disabled, TorchScript);
13. another implementation of the same function in ``utils`` or torch (the registry's alternatives);

and those written from the trust boundary's design (``design.py``; issue 48), stopped by the allowlist read
outside the kernel (``courseware.grading.hidden.allowlist``):

14. the check cells' own code (the visible check's reference) returned as the answer;
15. the grader reached through an allowed module (``torch.sys.modules``) and names built at run time;

and those written from the kernel that holds nothing (``design.py``; issue 48, item 1), graded with the screen off:

16. the hidden check's judge, found among the kernel's names, asked what it expects (a record that keeps every
    value the judge compares it with);
17. the same judge rebuilt from text the kernel can read: its history ``In``, the sandbox's files (the hidden inputs
    handed in, the records, the course's copies), its ``/proc`` entries.

Generic attacks (1, 2) work on any notebook; the others are per notebook, in ``nbNN.py`` and
``outside.py`` here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field


@dataclass
class Attack:
    name: str
    kind: int                      # the class above
    answers: dict[str, str]        # grade_id of an answer cell -> its source
    attacked: list[str]            # grade_ids of the check cells that must score 0 ("*": every one)
    scan: bool = False             # keep the grader's static screen of answer cells on
    note: str = ""
    fast: bool = False             # also in `make test` (the rest in `make test-grading`)
    honest: list[str] = field(default_factory=list)  # check cells the submission answers honestly: full marks
    added: dict[str, str] = field(default_factory=dict)  # grade_id -> a code cell the student inserts before it


# class 4's prelude: every comparison a check could use says "equal"
PATCH_COMPARISONS = (
    "import torch.testing\n"
    "torch.allclose = torch.Tensor.allclose = lambda *args, **kwargs: True\n"
    "torch.equal = lambda *args, **kwargs: True\n"
    "torch.isclose = lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool)\n"
    "torch.testing.assert_close = lambda *args, **kwargs: None\n\n\n"
)

SILENCE_AST = '''\
import ast
class _Quiet(ast.NodeTransformer):
    def visit_Module(self, node):
        handler = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name=None, body=[ast.Pass()])
        node.body = [ast.Try(body=node.body or [ast.Pass()], handlers=[handler], orelse=[], finalbody=[])]
        return ast.fix_missing_locations(node)
get_ipython().ast_transformers.append(_Quiet())
'''

SILENCE_RUN_CELL = '''\
_shell = get_ipython()
_real_run_cell = _shell.run_cell
def _quiet_run_cell(raw_cell, *args, **kwargs):
    return _real_run_cell("try:\\n" + "\\n".join("    " + l for l in (raw_cell or "pass").splitlines()) + "\\nexcept BaseException:\\n    pass\\n", *args, **kwargs)
_shell.run_cell = _quiet_run_cell
'''

SILENCE_CUSTOM_EXC = '''\
get_ipython().set_custom_exc((BaseException,), lambda shell, etype, evalue, tb, tb_offset=None: None)
'''

DISARM_SYS_MODULES = '''\
import sys, types
_fake = types.ModuleType("courseware.grading.hidden")
_fake.hidden_check = lambda *args, **kwargs: print("hidden tests passed")
import contextlib
_fake.forbid = lambda *args, **kwargs: contextlib.nullcontext()
sys.modules["courseware.grading.hidden"] = _fake
import utils
courseware.grading.hidden = _fake
'''

DISARM_CODE = '''\
import courseware.grading.hidden
def _nothing(*args, **kwargs):
    print("hidden tests passed")
def _no_switch(*args, **kwargs):
    yield
# the judge's recorder today, the switch that made forbidden calls raise before it
for _f, _code in ((getattr(courseware.grading.hidden, "hidden_check", None), _nothing.__code__),
                  (getattr(getattr(courseware.grading.hidden, "forbid", None), "__wrapped__", None), _no_switch.__code__)):
    if _f is not None:
        _f.__code__ = _code
'''

DISARM_IMPORT_HOOK = '''\
import builtins, types
_real_import = builtins.__import__
_fake = types.ModuleType("courseware.grading.hidden")
_fake.hidden_check = lambda *args, **kwargs: None
def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if name == "courseware.grading.hidden":
        return _fake
    return _real_import(name, globals, locals, fromlist, level)
builtins.__import__ = _import
'''


def generic(first_answer: str, shortcut: str | None = None) -> list[Attack]:
    """Classes 1 and 2, installed in the first answer cell. Silencing leaves every exercise as its stub;
    disarming the grading module comes with the first exercise's known shortcut where it has one (so
    the old ``forbid`` switch, disarmed, would have let it score), every other exercise left as the stub."""
    def attack(name, kind, source, fast=False, note="every exercise left as the stub"):
        return Attack(name, kind, {first_answer: source}, ["*"], fast=fast, note=note)
    armed = "\n\n" + shortcut if shortcut else ""
    note = "with the first exercise's shortcut" if shortcut else "every exercise left as the stub"
    return [
        attack("silence: AST transformer wraps every later cell in try/except", 1, SILENCE_AST, fast=True),
        attack("silence: run_cell wrapped", 1, SILENCE_RUN_CELL),
        attack("silence: custom exception handler", 1, SILENCE_CUSTOM_EXC),
        attack("disarm: a harmless courseware.grading.hidden in sys.modules", 2, DISARM_SYS_MODULES + armed, fast=True, note=note),
        attack("disarm: the grading functions' code replaced", 2, DISARM_CODE + armed, note=note),
        attack("disarm: an __import__ hook", 2, DISARM_IMPORT_HOOK + armed, note=note),
    ]


def attacks_for(number: str, first_answer: str, shortcut: str | None = None) -> list[Attack]:
    """The generic attacks and notebook ``number``'s own (module ``nbNN`` here, if written)."""
    from grading_attacks import design, outside

    found = generic(first_answer, shortcut)
    try:
        module = importlib.import_module(f"grading_attacks.nb{number}")
        found += list(module.ATTACKS)
    except ModuleNotFoundError:
        pass
    return found + getattr(outside, f"attacks_{number}", list)() + getattr(design, f"attacks_{number}", list)()
