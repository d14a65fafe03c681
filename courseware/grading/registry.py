"""One registry: for each exercise that asks students to write something themselves, every implementation
of the same thing in ``utils`` and in PyTorch.

Autograde uses it twice (INSTRUCTORS.md, "What the sandbox guarantees"):

- **removed**: in the student's sandboxed kernel, before any student code runs, :func:`remove` replaces the
  code of every listed Python function (and every method of a listed class but ``__init__``) by code that
  raises, and overrides the ATen kernels of every listed PyTorch operator (every overload, CPU and
  autograd) with one that raises: a call through any name, alias, clone, thread, TorchScript or tensor
  subclass reaches the same raising code. The whole notebook's entries are removed for the whole run,
  except those marked ``watch`` (other exercises of the notebook need them): those stay callable and
  are only watched while the exercise's checks run;
- **watched**: each hidden check's ``forbid`` list is extended with its exercise's entries
  (:func:`hidden_check` under autograde), so the call detector also looks for all of them.

A target is a string: ``"module:attribute.path"`` for a Python function, method or class (``"utils.attention:
MultiHeadAttention.split_heads"``, ``"torch.nn:TransformerDecoderLayer"``), or ``"aten::op"`` for a PyTorch
operator (every overload). ``tests/test_grading_registry.py`` resolves every entry, checks that each
hidden check's own list is in the registry, and, in a sandbox, that each removed entry raises.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import types
from typing import Any


class ForbiddenCall(AssertionError):
    """The student's code reached a function that the exercise asks them to write themselves."""

NOTEBOOK_ENV = "COURSE_GRADING_NOTEBOOK"   # the notebook's number, "07", under autograde

_SDPA = ["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math",
         "aten::_scaled_dot_product_flash_attention_for_cpu", "utils.attention:scaled_dot_product_attention",
         "utils.transformer:_attend"]
_MHA = ["torch.nn:MultiheadAttention.forward", "torch.nn.functional:multi_head_attention_forward",
        "aten::_native_multi_head_attention", "utils.attention:MultiHeadAttention", "utils.scale:GroupedQueryAttention",
        "utils.gpt:Block.attention"]
_CE = ["aten::cross_entropy_loss", "aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d", "aten::nll_loss_forward",
       "torch.nn:CrossEntropyLoss.forward", "torch.nn:NLLLoss.forward", "utils.transformer:translation_loss",
       "utils.rnn:seq2seq_loss"]

REGISTRY: dict[str, dict[str, list[str]]] = {
    "01": {
        "ex1": ["aten::one_hot"],
        "ex2": ["utils.text:masked_mean"],
        "ex3": ["aten::cosine_similarity", "utils.embeddings:cosine_matrix"],
        "ex4": ["utils.text:masked_mean", "torch.nn:EmbeddingBag", "aten::embedding_bag", "aten::_embedding_bag",
                "aten::_embedding_bag_forward_only"],
    },
    "02": {
        "ex3": ["torch.nn:GRU.forward", "torch.nn:GRUCell.forward", "aten::gru", "aten::gru_cell", "utils.rnn:Encoder"],
        "ex4": ["torch.nn:GRU.forward", "aten::gru", "utils.rnn:Encoder", "utils.rnn:Seq2Seq"],
        "ex5": ["sacrebleu:corpus_bleu", "sacrebleu.metrics.bleu:BLEU", "utils.metrics:bleu",
                "utils.metrics:tokenized_bleu"],
    },
    "03": {
        "ex1": ["utils.rnn:AdditiveScore", "utils.attention:AdditiveAttention"],
        "ex2": ["utils.rnn:masked_softmax", "utils.rnn:attend"],
        "ex4": ["utils.rnn:attend", "utils.rnn:masked_softmax", "utils.rnn:AdditiveScore", "utils.rnn:Decoder",
                "utils.attention:AdditiveAttention"],
    },
    "04": {
        "ex1": _SDPA + ["utils.attention:MultiHeadAttention.forward"],
        "ex4": _SDPA,
    },
    "05": {
        "ex1": ["utils.attention:MultiHeadAttention.split_heads", "utils.attention:MultiHeadAttention.merge_heads",
                "utils.scale:GroupedQueryAttention.heads", "utils.scale:GroupedQueryAttention.merge_heads"],
        "ex2": _MHA + _SDPA,
    },
    "06": {
        "ex1": ["utils.positional:sinusoidal_encoding", "utils.positional:_frequencies", "utils.positional:offset_matrix",
                "utils.positional:SinusoidalPositionalEncoding"],
        "ex3": ["utils.scale:rope_angles", "utils.scale:apply_rotary", "utils.explorers.scale:rope_scores"],
        "ex4": ["utils.positional:sinusoidal_encoding", "utils.positional:_frequencies", "utils.positional:offset_matrix",
                "utils.positional:SinusoidalPositionalEncoding"],
    },
    "07": {
        "ex1": ["utils.attention:causal_mask", "utils.attention:key_padding_mask", "utils.attention:combine_masks",
                "torch.nn:Transformer.generate_square_subsequent_mask"],
        "ex2": ["torch.nn:TransformerDecoderLayer", "utils.transformer:DecoderLayer"],
    },
    "08": {
        "ex1": ["utils.transformer:beam_search", "utils.transformer:_beam_one", "utils.rnn:beam_search",
                "utils.rnn:_beam_one"],
        "ex2": _CE,
    },
    "09": {
        "ex1": ["utils.gpt:top_k_filter"],
        "ex4": ["aten::scaled_dot_product_attention"],
    },
    "10": {
        "ex1": ["utils.scale:online_softmax_update", "utils.scale:block_attention"],
        "ex2": ["utils.scale:online_softmax_update", "utils.scale:block_attention"],
        "ex3": ["utils.scale:repeat_kv", "aten::repeat_interleave"],
        "ex4": ["utils.scale:online_softmax_update", "utils.scale:block_attention"],
    },
}

# entries that other parts of the same notebook's Exercises section use (the course's own set-up, the
# hidden inputs, another exercise's model answer): watched while their exercise is checked, not removed
WATCH_ONLY: dict[str, set[str]] = {
    "02": {"torch.nn:GRUCell.forward", "aten::gru_cell"},   # Exercise 4's decoder is an nn.GRUCell (allowed there)
    "09": {"aten::scaled_dot_product_attention"},
}


def exercise_of(grade_id: str) -> str:
    return grade_id.split("_", 1)[0]


def entries(notebook: str | None, exercise: str) -> list[str]:
    return list((REGISTRY.get(notebook or "", {})).get(exercise, []))


def resolve(entry: str) -> Any:
    """A Python entry's object (function, method or class), or the ``OpOverloadPacket`` of an ATen one."""
    if entry.startswith("aten::"):
        import torch

        return getattr(torch.ops.aten, entry[len("aten::"):])
    module, _, path = entry.partition(":")
    obj: Any = importlib.import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def forbid_targets(notebook: str | None, exercise: str) -> list[Any]:
    """The exercise's entries as targets of :func:`courseware.grading.hidden.forbidden_names`."""
    return list(_forbid_targets(notebook, exercise))


@functools.lru_cache(maxsize=None)
def _forbid_targets(notebook: str | None, exercise: str) -> tuple:
    targets: list[Any] = []
    for entry in entries(notebook, exercise):
        obj = resolve(entry)
        if entry.startswith("aten::"):
            import torch

            targets.append((torch.ops.aten, entry[len("aten::"):]))
        elif isinstance(obj, type):
            targets.append(obj)
        else:
            fn = inspect.unwrap(obj)
            owner, _, attr = entry.partition(":")[2].rpartition(".")
            if owner:
                targets.append((resolve(entry.rpartition(".")[0]), attr))
            else:
                targets.append(fn)
    return tuple(targets)


# Removal is by caller: the course's own cells (set-up, visible checks, hidden inputs and runs) may still
# call a removed function or operator (a visible check compares with F.one_hot); code from any other cell
# (answer cells, changed or added cells) reaches one that raises. The caller is the nearest frame on the
# stack that belongs to a notebook cell (ipykernel names each cell's code after a hash of its source).

_ORIGINALS: dict[types.CodeType, Any] = {}   # removed code -> the original function (a copy)
_TRUSTED_FILES: set[str] = set()
_CELL_DIR: list[str] = []


def cell_hash(source: str) -> str:
    """What ipykernel names a cell's code after (its file name is ``<tmp>/ipykernel_<pid>/<hash>.py``):
    the course's cells are handed to the sandbox by these, never by their sources, which hold hidden tests."""
    from ipykernel.compiler import get_tmp_hash_seed, murmur2_x86

    return str(murmur2_x86(source, get_tmp_hash_seed()))


def trust(hashes) -> None:
    """The course's own cells, by :func:`cell_hash` of their sources as the kernel runs them."""
    from ipykernel.compiler import get_tmp_directory

    _CELL_DIR[:] = [get_tmp_directory() + os.sep]
    _TRUSTED_FILES.update(f"{_CELL_DIR[0]}{h}.py" for h in hashes)


def _course_caller(frame) -> bool:
    while frame is not None:
        name = frame.f_code.co_filename
        if name in _TRUSTED_FILES:
            return True
        if _CELL_DIR and name.startswith(_CELL_DIR[0]):
            return False
        frame = frame.f_back
    return False


def _refuse(what: str):
    raise ForbiddenCall(
        f"removed while grading: this exercise asks you to write it yourself, and {what} is one of its "
        "built-in versions")


def _removed_call(frame, args, kwargs):
    original = _ORIGINALS[frame.f_code]
    if _course_caller(frame.f_back):
        return original(*args, **kwargs)
    _refuse(getattr(frame.f_code, "co_qualname", frame.f_code.co_name))


def _removed_code(code: types.CodeType) -> types.CodeType:
    def removed(*args, **kwargs):
        return __import__("courseware.grading.registry").grading.registry._removed_call(
            __import__("sys")._getframe(), args, kwargs)
    return removed.__code__.replace(co_name=code.co_name, co_qualname=getattr(code, "co_qualname", code.co_name),
                                    co_filename=code.co_filename, co_firstlineno=code.co_firstlineno)


def _remove_function(fn) -> bool:
    fn = inspect.unwrap(fn)
    if not isinstance(fn, types.FunctionType) or fn.__code__.co_freevars or fn.__code__ in _ORIGINALS:
        return False
    original = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    original.__kwdefaults__ = fn.__kwdefaults__
    new = _removed_code(fn.__code__)
    _ORIGINALS[new] = original
    fn.__code__ = new
    return True


_LIBRARIES: list = []   # kept alive: an ATen override lasts as long as its Library object


def _remove_op(name: str) -> list[str]:
    """Override every overload of ``aten::name`` that has a CompositeImplicitAutograd kernel, on the CPU and
    autograd keys: course code gets that kernel (``decompose``), any other code an error. (Overloads with
    a backend kernel of their own cannot be called otherwise once overridden: they stay, watched.)"""
    import sys
    import warnings

    import torch

    packet = getattr(torch.ops.aten, name)
    lib = torch.library.Library("aten", "IMPL")
    done = []
    for overload in packet.overloads():
        qualified = name if overload == "default" else f"{name}.{overload}"
        if not torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{qualified}", "CompositeImplicitAutograd"):
            continue
        op = getattr(packet, overload)

        def kernel(*args, _op=op, _what=f"aten::{qualified}", **kwargs):
            if _course_caller(sys._getframe(1)):
                return _op.decompose(*args, **kwargs)
            _refuse(_what)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # "overriding a previously registered kernel": that is the point
            for key in ("CPU", "AutogradCPU"):
                lib.impl(qualified, kernel, key)
        done.append(f"aten::{qualified}")
    _LIBRARIES.append(lib)
    return done


def remove(notebook: str) -> list[str]:
    """Remove (see the module's docstring) every entry of ``notebook`` but its ``WATCH_ONLY`` ones; return
    what was removed."""
    done = []
    keep = WATCH_ONLY.get(notebook, set())
    seen: set[str] = set()
    for exercise, listed in REGISTRY.get(notebook, {}).items():
        for entry in listed:
            if entry in keep or entry in seen:
                continue
            seen.add(entry)
            if entry.startswith("aten::"):
                done += _remove_op(entry[len("aten::"):])
                continue
            obj = resolve(entry)
            if isinstance(obj, type):
                for attr, member in list(vars(obj).items()):
                    if attr in ("__init__", "__setstate__", "__repr__", "__init_subclass__", "__new__"):
                        continue
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if callable(member) and _remove_function(member):
                        done.append(f"{entry}.{attr}")
            elif _remove_function(obj):
                done.append(entry)
    return done


def watched_only(notebook: str | None, exercise: str) -> list[str]:
    """What of the exercise's entries removal leaves callable: its ``WATCH_ONLY`` entries, the overloads of its
    ATen operators that have a backend kernel of their own (:func:`_remove_op` cannot override those and still
    serve the course's cells), and Python functions it cannot replace (closures, built-ins). For these the
    exercise's "write it yourself" rule rests on the call watch alone, which code written to deceive can undo
    inside the kernel; autograde therefore shows the instructor the exercise's answer cell (:func:`review`)."""
    import torch

    left = []
    keep = WATCH_ONLY.get(notebook or "", set())
    for entry in entries(notebook, exercise):
        if entry in keep:
            left.append(entry)
        elif entry.startswith("aten::"):
            name = entry[len("aten::"):]
            for overload in getattr(torch.ops.aten, name).overloads():
                qualified = name if overload == "default" else f"{name}.{overload}"
                if not torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{qualified}", "CompositeImplicitAutograd"):
                    left.append(f"aten::{qualified}")
        else:
            obj = resolve(entry)
            fn = obj if isinstance(obj, type) else inspect.unwrap(obj)
            if not isinstance(fn, type) and (not isinstance(fn, types.FunctionType) or fn.__code__.co_freevars):
                left.append(entry)
    return left


@functools.lru_cache(maxsize=None)
def review(notebook: str | None) -> dict[str, tuple[str, ...]]:
    """exercise -> :func:`watched_only`, for the notebook's exercises whose rule no automatic check settles.
    Autograde keeps their check cells' points but marks each such cell that scored as needing a person
    (nbgrader's "needs manual grade", so the formgrader lists the submission) and says in the cell which
    answer cell to read; INSTRUCTORS.md, "What the sandbox does not guarantee"."""
    found = {}
    for exercise in REGISTRY.get(notebook or "", {}):
        left = watched_only(notebook, exercise)
        if left:
            found[exercise] = tuple(left)
    return found


def current_notebook() -> str | None:
    return os.environ.get(NOTEBOOK_ENV) or None


# ---------------------------------------------------------------------------------------------
# The release contract: what submissions made against one release rely on in the next (nbgrader refuses
# a submission whose grade ids moved; a check that reads an attribute the prompt renamed fails honest
# work). ``classroom/release_contract.json`` holds the contract of the last release;
# ``tests/courseware/grading/test_grading_sandbox.py`` compares the notebooks with it.

CONTRACT_FILE = "classroom/release_contract.json"


def contract(nb) -> dict:
    """A notebook's contract: its graded cells (grade id, kind, points, in order) and, per exercise, the
    names its answer cell defines (functions, classes, ``self.<attribute>``) that the notebook's check
    cells (visible and hidden) use."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    cells, defined, used = [], {}, set()
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if not gid or not (meta.get("grade") or meta.get("solution")):
            continue
        cells.append(f"{gid} {cell.cell_type}" + (f" {meta.get('points')} points" if meta.get("grade") else ""))
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(transform(cell.source))
        except SyntaxError:
            continue
        if meta.get("solution"):
            names = set()
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Assign):
                    names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                        isinstance(node.value, ast.Name) and node.value.id == "self":
                    names.add("." + node.attr)
            defined[gid] = names
        else:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    used.add(node.id)
                elif isinstance(node, ast.Attribute):
                    used.add("." + node.attr)
    return {"cells": cells, "names": {gid: sorted(n & used) for gid, n in sorted(defined.items())}}


def contracts(paths) -> dict:
    import nbformat

    return {p.stem: contract(nbformat.read(p, as_version=4)) for p in paths}


def main(argv=None) -> int:
    """``python -m courseware.grading.registry contract``: write the notebooks' contract to CONTRACT_FILE (after
    a release whose changes are listed in INSTRUCTORS.md, "Releases and their contract")."""
    import json
    import sys
    from pathlib import Path

    argv = sys.argv[1:] if argv is None else argv
    if argv != ["contract"]:
        print("usage: python -m courseware.grading.registry contract", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parents[2]
    data = contracts(sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    (root / CONTRACT_FILE).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {CONTRACT_FILE}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
