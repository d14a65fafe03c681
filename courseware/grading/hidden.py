"""The exercises' hidden checks: the student's kernel computes, a separate judge decides.

nbgrader scores a check cell by the absence of an error in the student's own kernel, after the
student's code has run there: an answer cell can silence that kernel, patch ``torch.allclose``, or
read the expected value from the test. So the course never decides a grade in that kernel. Every
graded check cell ends in one hidden block (``### BEGIN HIDDEN TESTS``, removed from the release)
that calls :func:`hidden_check` with four things::

    def inputs():            # the hidden inputs, from seeds: run in the kernel and again by the judge
        g = torch.Generator().manual_seed(14)
        return {"q": torch.randn(3, 4, 16, generator=g), ...}

    def run(x):              # the student's code on them: run in the student's kernel only
        out, w = attention(x["q"], x["k"], x["v"])
        return {"out": out, "w": w}

    def judge(x, got):       # run only by the judge, on what run() returned (tensors and numbers)
        assert torch.allclose(got["w"], (x["q"] @ x["k"].mT / 4).softmax(-1), atol=1e-6), "the weights"

    hidden_check("ex1_check2", inputs, run, judge, forbid=[(F, "scaled_dot_product_attention")])

Three modes, chosen by the environment:

- **self-check** (the course notebook, nbval, a learner with the source): inputs, run, a round trip
  through the record format, judge, all in this process; a failure raises ``AssertionError``.
- **record** (``COURSE_GRADING_RECORDS`` set): inputs and run only; what run() returned is written to
  ``<dir>/<grade_id>.safetensors`` (tensors, plus a JSON skeleton in its metadata: no pickled code). Nothing
  is compared here, so nothing here can be patched to say "equal". Autograde's kernel does not even get
  the hidden block: it runs :func:`kernel_block` of it (``run`` and the helpers ``run`` calls, then
  :func:`record_run`, which reads the inputs the judge handed in under ``COURSE_GRADING_INPUTS``), so
  ``inputs``, ``judge``, the references and the key never enter the student's kernel.
- **judge** (:class:`Judge`; ``python -I -m courseware.grading.hidden serve`` under autograde): a fresh process
  runs the trusted source notebook's ``## Exercises`` section (its set-up cells and model answers,
  never the student's code) before the student's kernel reaches a check, drawing each check's inputs
  (with a fresh key of its own per grading run) and handing them in (:func:`pack_inputs`), and afterwards,
  for each graded check cell, the hidden block in judge mode: the same inputs, the record loaded, judge(). A cell's verdict is "passed" only if its judge returned and its record passed the
  forbidden-call check; anything else (no record, an exception, a record of the wrong shape) fails.
  ``courseware/editions/nbgrader_course.py``'s autograde step writes the verdicts into the graded cells, so a check
  cell scores only on a positive verdict.

Forbidden built-ins are found by behaviour: while run() executes, :class:`Watch` logs every PyTorch
function reached (a ``TorchFunctionMode``: ``torch.ops.aten.*``, the C function behind a wrapper and
any alias are all seen by name) and every Python function of ``utils`` or ``torch.nn`` entered (``cProfile``'s
code objects, read by their file and qualified name: clones, second copies of a module and subclasses holding a copied
method share the code). After run(), a canary touches both channels; the judge requires the canary in
the log, so a detector that was switched off is itself a failure. Under autograde every code cell
that is not the course's own (answer cells, changed or added cells) runs under a watch as well
(:func:`cell_watch_start`), so a forbidden call made to precompute results is seen. What this cannot see: code that
switches the detector off and on again around a forbidden call, or that rewrites the record; see
INSTRUCTORS.md, "What the grader guarantees".

Under autograde the student's kernel runs in a sandbox (``courseware/grading/sandbox.py``) where threads, processes and
TorchScript are unavailable and every implementation of what an exercise forbids is removed
(``courseware/grading/registry.py``) before any student code runs; the hidden inputs' seeds are drawn from the
judge's key (:func:`keyed_seeds`), and each check's watch also looks for the registry's entries.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections import OrderedDict
import os
import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

import utils
from courseware.grading.registry import ForbiddenCall
from courseware.sections import appendix_start, exercise_cells, exercises_start  # noqa: F401 (part of this API)

RECORDS_ENV = "COURSE_GRADING_RECORDS"
JUDGE_ENV = "COURSE_GRADING_JUDGE"
KEY_ENV = "COURSE_GRADING_KEY"          # autograde: the key the hidden inputs' seeds are drawn with (see keyed_seeds)
_UTILS_DIR = str(Path(utils.__file__).resolve().parent)
_GRADING_DIR = str(Path(__file__).resolve().parent)
_TORCH_NN_DIR = str(Path(torch.nn.__file__).resolve().parent)
# sacreBLEU (notebook 02's Exercise 5 writes BLEU itself), found without importing it
_SACREBLEU_SPEC = importlib.util.find_spec("sacrebleu")
_SACREBLEU_DIR = str(Path(_SACREBLEU_SPEC.origin).resolve().parent) if _SACREBLEU_SPEC else None
CANARY_TORCH = "canary_sentinel_op"      # never a real torch name: the canary calls torch.sin, logged under this alias
CANARY_PYTHON = "courseware/grading/hidden.py:_canary"


# ---------------------------------------------------------------------------------------------
# The record format: tensors in safetensors, everything else in a JSON skeleton.

_NOT_SCALAR = object()


def _scalar(o):
    """bool, None and str as themselves; int and float as exact strings (JSON loses big ints, nan and inf);
    anything else ``_NOT_SCALAR``."""
    if isinstance(o, bool) or o is None or isinstance(o, str):
        return o
    if isinstance(o, int):
        return {"__int__": str(o)}
    if isinstance(o, float):
        return {"__float__": repr(o)}
    return _NOT_SCALAR


def pack(obj: Any) -> tuple[dict[str, torch.Tensor], Any]:
    """Split ``obj`` (dicts with str keys, lists, tuples, tensors, numbers, bools, str, None) into
    named tensors and a JSON-serialisable skeleton that points at them."""
    tensors: dict[str, torch.Tensor] = {}

    def walk(o, path):
        if isinstance(o, torch.Tensor):
            name = f"t{len(tensors)}"
            t = o.detach().to("cpu")
            if t.is_complex() or t.layout != torch.strided:
                raise TypeError(f"{path}: a record holds dense real tensors, got {t.dtype} {t.layout}")
            if type(t) is not torch.Tensor:
                t = t.as_subclass(torch.Tensor)
            tensors[name] = t.contiguous().clone()
            return {"__tensor__": name}
        if (scalar := _scalar(o)) is not _NOT_SCALAR:
            return scalar
        if isinstance(o, dict):
            if not all(isinstance(k, str) for k in o):
                raise TypeError(f"{path}: dict keys in a record must be str")
            return {"__dict__": {k: walk(v, f"{path}.{k}") for k, v in o.items()}}
        if isinstance(o, (list, tuple)):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(o)]
        if isinstance(o, torch.nn.Module):
            raise TypeError(f"{path}: record the module's state_dict(), not the module itself")
        raise TypeError(f"{path}: a record holds tensors, numbers, str, None, lists and dicts; got {type(o).__name__}")

    return tensors, walk(obj, "got")


def unpack(tensors: dict[str, torch.Tensor], skeleton: Any) -> Any:
    """The inverse of :func:`pack` (plain tensors, ints, floats, lists and dicts)."""
    def walk(o):
        if isinstance(o, list):
            return [walk(v) for v in o]
        if isinstance(o, dict):
            if "__tensor__" in o:
                return tensors[o["__tensor__"]]
            if "__int__" in o:
                return int(o["__int__"])
            if "__float__" in o:
                return float(o["__float__"])
            if "__dict__" in o:
                return {k: walk(v) for k, v in o["__dict__"].items()}
            raise ValueError(f"malformed record skeleton: {o!r}")
        if o is None or isinstance(o, (bool, str)):
            return o
        raise ValueError(f"malformed record skeleton: {o!r}")
    return walk(skeleton)


def to_bytes(obj: Any) -> bytes:
    from safetensors.torch import save

    tensors, skeleton = pack(obj)
    return save(tensors, metadata={"skeleton": json.dumps(skeleton)})


def from_bytes(data: bytes) -> Any:
    from safetensors.torch import load  # the format's own reader: no code is unpickled

    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + header_len])
    skeleton = json.loads(header.get("__metadata__", {}).get("skeleton", "null"))
    return unpack(load(data), skeleton)


MAX_RECORD_BYTES = 64 * 2**20


def read_record(path: str | os.PathLike) -> Any | None:
    """A record the student's kernel wrote, read by the judge: None when there is none. Only a regular
    file with one link, opened without following a symbolic link (the kernel writes the folder; the judge
    reads with the grader's rights, so a link there must not lead it to the gradebook, the grading secret or
    any other file of the host), of at most ``MAX_RECORD_BYTES``."""
    import errno
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):
            raise AssertionError(f"{Path(path).name}: the record is a link, not a file the check wrote") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise AssertionError(f"{Path(path).name}: the record is not a file the check wrote")
        if info.st_size > MAX_RECORD_BYTES:
            raise AssertionError(f"{Path(path).name}: the record is larger than {MAX_RECORD_BYTES >> 20} MiB")
        with os.fdopen(fd, "rb") as f:
            fd = None
            data = f.read(MAX_RECORD_BYTES + 1)
    finally:
        if fd is not None:
            os.close(fd)
    return from_bytes(data)


def record_path(directory: str | os.PathLike, grade_id: str) -> Path:
    if not grade_id.replace("_", "").isalnum():
        raise ValueError(f"grade_id must be letters, digits and underscores, got {grade_id!r}")
    return Path(directory) / f"{grade_id}.safetensors"


# ---------------------------------------------------------------------------------------------
# The hidden inputs as the judge hands them to the student's kernel (autograde): drawn by the judge, outside,
# with a key of its own, and written to a file the kernel reads (a folder bound read-only into the sandbox).
# A richer form than a record's: tuples stay tuples, a tensor keeps its strides (a non-contiguous case stays
# non-contiguous), its dtype and requires_grad, and the cases of courseware.grading.cases stay Case objects.

INPUTS_ENV = "COURSE_GRADING_INPUTS"    # autograde: the folder the judge writes each check's inputs to
INPUTS_DONE = "all.done"                # written there by the judge once it has drawn every check's inputs
INPUTS_WAIT = 900.0                     # seconds the kernel waits for a check's inputs


def pack_inputs(obj: Any) -> bytes:
    """``obj`` (what a hidden block's inputs() returns) as safetensors bytes with a JSON skeleton: no pickled code."""
    from safetensors.torch import save

    from courseware.grading.cases import Case

    tensors: dict[str, torch.Tensor] = {}

    def walk(o, path):
        if isinstance(o, torch.Tensor):
            name = f"t{len(tensors)}"
            t = o.detach().to("cpu")
            if t.is_complex() or t.layout != torch.strided or type(t) is not torch.Tensor and not isinstance(o, torch.nn.Parameter):
                raise TypeError(f"{path}: hidden inputs hold dense real tensors, got {type(o).__name__} {t.dtype} {t.layout}")
            t = t.as_subclass(torch.Tensor) if type(t) is not torch.Tensor else t
            n = t.untyped_storage().nbytes() // max(t.element_size(), 1)
            base = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,)).clone()
            tensors[name] = base
            return {"__strided__": name, "size": list(t.shape), "stride": list(t.stride()),
                    "offset": t.storage_offset(), "grad": bool(o.requires_grad),
                    "parameter": isinstance(o, torch.nn.Parameter)}
        if (scalar := _scalar(o)) is not _NOT_SCALAR:
            return scalar
        if isinstance(o, torch.dtype):
            return {"__dtype__": str(o).removeprefix("torch.")}
        if isinstance(o, torch.Size):
            return {"__size__": list(o)}
        if isinstance(o, Case):
            return {"__case__": o.name, "args": walk(tuple(o.args), f"{path}.args"), "kwargs": walk(dict(o.kwargs), f"{path}.kwargs")}
        if isinstance(o, torch.nn.Module):
            made = o.__dict__.get(_MADE_WITH)
            cls = type(o)
            if made is None or not cls.__module__.startswith(_MODULE_SOURCES):
                raise TypeError(f"{path}: a {cls.__name__} made outside the hidden inputs' draw, or not of torch.nn or utils")
            return {"__module__": f"{cls.__module__}:{cls.__qualname__}", "args": walk(made[0], f"{path}(args)"),
                    "kwargs": walk(made[1], f"{path}(kwargs)"),
                    "state": walk(dict(o.state_dict(keep_vars=True)), f"{path}.state_dict()"),
                    "training": {name: m.training for name, m in o.named_modules()}}
        if isinstance(o, dict):
            if type(o) not in (dict, OrderedDict):
                raise TypeError(f"{path}: hidden inputs hold plain dicts, got {type(o).__name__}")
            if not all(isinstance(k, str) for k in o):
                return {"__pairs__": [[walk(k, f"{path} key"), walk(v, f"{path}[{k!r}]")] for k, v in o.items()],
                        "ordered": type(o) is OrderedDict}
            return {"__dict__": {k: walk(v, f"{path}.{k}") for k, v in o.items()}, "ordered": type(o) is OrderedDict}
        if isinstance(o, tuple):
            return {"__tuple__": [walk(v, f"{path}[{i}]") for i, v in enumerate(o)]}
        if isinstance(o, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(o)]
        raise TypeError(f"{path}: hidden inputs hold tensors, numbers, str, None, dtypes, cases, tuples, lists and dicts; "
                        f"got {type(o).__name__}")

    skeleton = walk(obj, "x")
    return save(tensors, metadata={"skeleton": json.dumps(skeleton)})


_MADE_WITH = "_course_made_with"           # a module made during the judge's draw: the arguments it was made with
_MODULE_SOURCES = ("torch.nn.", "utils.")


class made_with:
    """While the judge draws the hidden inputs: every ``nn.Module`` made keeps the arguments it was made with,
    so that :func:`pack_inputs` can hand it in as (class, arguments, state) and the kernel make the same one."""

    _on: list[bool] = []

    def __enter__(self):
        if vars(torch.nn.Module).get("__new__") is not _module_new:   # installed once, in the judge's process
            torch.nn.Module.__new__ = _module_new   # (a __new__ cannot be taken back out of a class cleanly)
        made_with._on.append(True)
        return self

    def __exit__(self, *exc):
        made_with._on.pop()
        return False


def _module_new(cls, *args, **kwargs):
    obj = object.__new__(cls)
    if made_with._on:
        obj.__dict__[_MADE_WITH] = (tuple(args), dict(kwargs))
    return obj


def same_inputs(a: Any, b: Any, path: str = "x") -> str | None:
    """None when ``b`` (the kernel's copy, :func:`unpack_inputs`) is ``a`` (what the judge drew) to the bit: the
    same types, values, dtypes, strides and modules; else where they differ."""
    from courseware.grading.cases import Case

    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        if (a.dtype, a.shape, a.stride(), a.requires_grad) != (b.dtype, b.shape, b.stride(), b.requires_grad):
            return f"{path}: dtype, shape, strides or requires_grad differ"
        return None if torch.equal(a.detach().nan_to_num(0.0) if a.is_floating_point() else a.detach(),
                                   b.detach().nan_to_num(0.0) if b.is_floating_point() else b.detach()) \
            and (not a.is_floating_point() or torch.equal(a.isnan(), b.isnan())) else f"{path}: values differ"
    if isinstance(a, torch.nn.Module):
        if repr(a) != repr(b):
            return f"{path}: the module differs ({repr(a)[:80]} / {repr(b)[:80]})"
        if [m.training for m in a.modules()] != [m.training for m in b.modules()]:
            return f"{path}: training flags differ"
        return same_inputs(dict(a.state_dict(keep_vars=True)), dict(b.state_dict(keep_vars=True)), f"{path}.state_dict()")
    if isinstance(a, Case):
        if a.name != b.name:
            return f"{path}: case names differ"
        return same_inputs((a.args, a.kwargs), (b.args, b.kwargs), path)
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys differ"
        return next((d for k in a if (d := same_inputs(a[k], b[k], f"{path}[{k!r}]"))), None)
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: lengths differ"
        return next((d for i, (u, v) in enumerate(zip(a, b)) if (d := same_inputs(u, v, f"{path}[{i}]"))), None)
    if isinstance(a, float) and a != a:
        return None if b != b else f"{path}: values differ"
    return None if a == b else f"{path}: {a!r} became {b!r}"


def unpack_inputs(data: bytes) -> Any:
    """The inverse of :func:`pack_inputs` (in the student's kernel)."""
    from safetensors.torch import load

    from courseware.grading.cases import Case

    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + header_len])
    skeleton = json.loads(header.get("__metadata__", {}).get("skeleton", "null"))
    tensors = load(data)

    def walk(o):
        if isinstance(o, list):
            return [walk(v) for v in o]
        if isinstance(o, dict):
            if "__strided__" in o:
                t = tensors[o["__strided__"]].as_strided(o["size"], o["stride"], o["offset"])
                if o.get("parameter"):
                    return torch.nn.Parameter(t, requires_grad=bool(o.get("grad")))
                return t.requires_grad_() if o.get("grad") else t
            if "__int__" in o:
                return int(o["__int__"])
            if "__float__" in o:
                return float(o["__float__"])
            if "__dtype__" in o:
                dtype = getattr(torch, str(o["__dtype__"]), None)
                if not isinstance(dtype, torch.dtype):
                    raise ValueError(f"malformed inputs: dtype {o['__dtype__']!r}")
                return dtype
            if "__size__" in o:
                return torch.Size(int(v) for v in o["__size__"])
            if "__case__" in o:
                return Case(str(o["__case__"]), walk(o["args"]), walk(o["kwargs"]))
            if "__pairs__" in o:
                return (OrderedDict if o.get("ordered") else dict)((walk(k), walk(v)) for k, v in o["__pairs__"])
            if "__module__" in o:
                import importlib

                where, _, qualname = str(o["__module__"]).partition(":")
                if not where.startswith(_MODULE_SOURCES):
                    raise ValueError(f"malformed inputs: module {o['__module__']!r}")
                cls = importlib.import_module(where)
                for part in qualname.split("."):
                    cls = getattr(cls, part)
                with torch.random.fork_rng(devices=[]):   # made as the judge made it, without touching the kernel's RNG
                    m = cls(*walk(o["args"]), **walk(o["kwargs"]))
                state = walk(o["state"])
                m.load_state_dict(state, assign=True)
                for name, p in m.named_parameters():
                    if name in state:
                        p.requires_grad_(state[name].requires_grad)
                for name, sub in m.named_modules():
                    sub.training = bool(o["training"].get(name, sub.training))
                return m
            if "__tuple__" in o:
                return tuple(walk(v) for v in o["__tuple__"])
            if "__dict__" in o:
                return (OrderedDict if o.get("ordered") else dict)((k, walk(v)) for k, v in o["__dict__"].items())
            raise ValueError(f"malformed inputs skeleton: {o!r}")
        if o is None or isinstance(o, (bool, str)):
            return o
        raise ValueError(f"malformed inputs skeleton: {o!r}")
    return walk(skeleton)


def inputs_path(directory: str | os.PathLike, grade_id: str) -> Path:
    return record_path(directory, grade_id).with_suffix(".inputs")


def handed_inputs(grade_id: str, directory: str | None = None, wait: float = INPUTS_WAIT) -> Any:
    """In the student's kernel, under autograde: the inputs the judge drew for ``grade_id`` (waiting, while the
    judge is still preparing, for its file to appear)."""
    import time

    directory = directory or os.environ.get(INPUTS_ENV)
    if not directory:
        raise RuntimeError(f"{grade_id}: no hidden inputs folder ({INPUTS_ENV} is not set)")
    path, done = inputs_path(directory, grade_id), Path(directory) / INPUTS_DONE
    deadline = time.monotonic() + wait
    while not path.is_file():
        if done.is_file() and not path.is_file():
            raise RuntimeError(f"{grade_id}: the judge drew no inputs for this check (see the judge's verdict)")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{grade_id}: the judge's inputs did not come within {wait:.0f} s")
        time.sleep(0.02)
    return unpack_inputs(path.read_bytes())


def record_run(grade_id: str, run: Callable[[Any], Any]) -> None:
    """What the kernel runs of a hidden check under autograde (:func:`kernel_block`): ``run`` on the inputs the
    judge handed in, under a :class:`Watch`, and the outputs, the watch's log and the canary written as the
    record. Nothing here computes or compares an expected value."""
    x = handed_inputs(grade_id)
    with Watch() as watch:
        result = run(x)
        canary = watch.canary()
    got = {"result": result, "log": watch.log[:len(watch.log) - len(canary)], "canary": canary}
    data = to_bytes(got)
    directory = os.environ.get(RECORDS_ENV)
    if not directory:
        raise RuntimeError(f"{grade_id}: no records folder ({RECORDS_ENV} is not set)")
    path = record_path(directory, grade_id)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    print(f"{grade_id}: recorded for the judge (the grade is decided outside this kernel)")


def _names_loaded(node) -> set[str]:
    import ast

    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _binds(stmt) -> set[str]:
    import ast

    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] \
        if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else [stmt]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def kernel_block(block: str) -> str:
    """The part of a hidden block (:func:`hidden_block`) the student's kernel runs under autograde: its imports,
    ``run`` and the top-level definitions ``run`` reaches (helpers that call the student's code), then
    ``record_run(grade_id, run)``. Not ``inputs`` (the judge draws them), not ``judge``, not a definition only
    those use (references, expected values, case makers): they stay in the judge's process. Raises ``ValueError``
    when the block does not end in one ``hidden_check("<id>", inputs, run, judge, ...)`` call."""
    import ast

    tree = ast.parse(block)
    calls = [s for s in tree.body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
             and isinstance(s.value.func, ast.Name) and s.value.func.id == "hidden_check"]
    if len(calls) != 1 or not calls[0].value.args or not isinstance(calls[0].value.args[0], ast.Constant):
        raise ValueError("a hidden block ends in one hidden_check(\"<grade id>\", inputs, run, judge, ...) call")
    call = calls[0].value
    grade_id = call.args[0].value
    run_arg = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "run"), None)
    if not isinstance(run_arg, ast.Name):
        raise ValueError(f"{grade_id}: hidden_check's run is a function defined in the block")
    defined = {}
    for stmt in tree.body:
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for name in _binds(stmt):
                defined.setdefault(name, []).append(stmt)
    need, todo = set(), [run_arg.id]
    while todo:
        name = todo.pop()
        if name in need or name not in defined:
            continue
        need.add(name)
        for stmt in defined[name]:
            todo += sorted(_names_loaded(stmt) - need)
    keep = [s for s in tree.body if isinstance(s, ast.Import)
            or isinstance(s, ast.ImportFrom) and any(a.name != "hidden_check" for a in s.names)
            or (s is not calls[0] and _binds(s) & need)]
    lines = [ast.unparse(s) for s in keep]
    lines.append("from courseware.grading.hidden import record_run")
    lines.append(f"record_run({grade_id!r}, {run_arg.id})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The detector: which PyTorch functions and which utils / torch.nn Python functions a call reaches.

def _canary() -> None:
    """Called after the student's code, under the watch: both channels must log it."""
    torch.sin(torch.zeros(1))


def _short(func: Any) -> str:
    """A torch function's bare name: ``F.one_hot``, ``torch._C._nn.one_hot``, ``torch.ops.aten.one_hot``
    and the overload ``torch.ops.aten.one_hot.default`` are all ``one_hot``."""
    if isinstance(func, torch._ops.OpOverload):
        func = func.overloadpacket
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    return str(name).rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=4096)
def _real(path: str) -> str:
    return os.path.realpath(path)


def _where(code: types.CodeType) -> str | None:
    path = _real(code.co_filename)   # a virtual environment reached through a symbolic link names torch by that link
    for root, label in ((_UTILS_DIR, "utils"), (_GRADING_DIR, "courseware/grading"), (_TORCH_NN_DIR, "torch/nn"),
                        (_SACREBLEU_DIR, "sacrebleu")):
        if root and path.startswith(root + os.sep):
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            return f"{label}/{rel}:{getattr(code, 'co_qualname', code.co_name)}"
    return None


_ACTIVE: list["Watch"] = []   # watches entered and not yet left, innermost last


class Watch:
    """Context manager: ``log`` gets every torch function name and every utils / torch.nn Python
    function (``utils/attention.py:scaled_dot_product_attention``) reached inside the block.

    Two channels, both cheap enough to leave on during training: a ``TorchFunctionMode`` that only
    adds each function object to a set, and ``cProfile`` (a C profiler: no Python runs per call) whose
    code objects are read when the log is collected (at :meth:`canary` and on exit). Where another
    profiler holds the interpreter's hook (Python 3.12+ allows one), a Python profile function is used
    instead. The log is filled when the watch collects: read it after :meth:`canary` or after the block.
    """

    def __init__(self):
        self.log: list[str] = []
        self._seen: set[str] = set()
        self._funcs: set[Any] = set()
        self._canary_funcs: set[Any] = set()
        self._codes: set[types.CodeType] = set()   # the Python-hook fallback's code objects
        self._prof = None
        self._in_canary = False

    def _add(self, name: str) -> None:
        if name not in self._seen:
            self._seen.add(name)
            self.log.append(name)

    def __enter__(self):
        from torch.overrides import TorchFunctionMode

        watch = self

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                try:
                    (watch._canary_funcs if watch._in_canary else watch._funcs).add(func)
                except TypeError:   # an unhashable callable: named at once
                    watch._add(_short(func))
                return func(*args, **(kwargs or {}))

        self._mode = _Mode()
        self._old_profile = sys.getprofile()
        if _ACTIVE:
            _ACTIVE[-1]._pause()
        _ACTIVE.append(self)
        self._resume()
        self._mode.__enter__()
        return self

    def _resume(self) -> None:
        import cProfile

        if self._prof is None:
            self._prof = cProfile.Profile()
        if self._prof is not False:
            try:
                self._prof.enable(subcalls=False, builtins=False)
                return
            except ValueError:   # Python 3.12+: another profiler holds sys.monitoring's profiler slot
                self._prof = False
        codes = self._codes

        def profile(frame, event, arg):
            if event == "call":
                codes.add(frame.f_code)

        sys.setprofile(profile)

    def _pause(self) -> None:
        if self._prof:
            self._prof.disable()
        else:
            sys.setprofile(None)

    def _calls(self) -> dict[types.CodeType, int]:
        if not self._prof:
            return dict.fromkeys(tuple(self._codes), 1)   # a copy first: the hook may add while this runs
        return {s.code: s.callcount for s in self._prof.getstats() if not isinstance(s.code, str)}

    def _collect(self) -> None:
        for func in self._funcs:
            self._add(_short(func))
        self._funcs.clear()
        for code in self._calls():
            where = _where(code)
            if where is not None and not where.startswith("courseware/grading/hidden.py:"):
                self._add(where)

    def canary(self) -> list[str]:
        """Collect the log, run the canary and append what each channel saw of it (``CANARY_TORCH``,
        ``CANARY_PYTHON``, when still armed); return those entries, the log's last ones."""
        self._collect()
        self._codes.discard(_canary.__code__)
        before = self._calls().get(_canary.__code__, 0)
        self._canary_funcs.clear()
        self._in_canary = True
        try:
            _canary()
        finally:
            self._in_canary = False
        seen = []
        if any(_short(f) == "sin" for f in self._canary_funcs):
            seen.append(CANARY_TORCH)
        if self._calls().get(_canary.__code__, 0) > before:
            seen.append(CANARY_PYTHON)
        self.log += seen
        self._canary_seen = seen
        return seen

    def __exit__(self, *exc):
        import cProfile

        try:
            self._mode.__exit__(*exc)
        except RuntimeError:  # already popped by the code under watch (the canary has said so)
            pass
        finally:
            self._pause()
            if self in _ACTIVE:
                _ACTIVE.remove(self)
            if _ACTIVE:
                _ACTIVE[-1]._resume()
            elif self._old_profile is not None and not isinstance(self._old_profile, cProfile.Profile):
                sys.setprofile(self._old_profile)   # a foreign Python profile function that was there before
        seen = getattr(self, "_canary_seen", None) or []
        del self.log[len(self.log) - len(seen):]   # keep the canary's entries last
        self._collect()
        if _ACTIVE:   # what a nested watch saw, the enclosing one reached too
            for name in self.log:
                _ACTIVE[-1]._add(name)
        self.log += seen
        return False


def forbidden_names(targets: Iterable[Any]) -> dict[str, str]:
    """What each forbidden target looks like in a :class:`Watch` log -> a readable name.

    A target is ``(owner, "attribute")`` (a torch function or method, e.g. ``(F, "one_hot")``,
    ``(torch.Tensor, "repeat_interleave")``, or a Python method such as ``(nn.TransformerDecoderLayer,
    "forward")``), a Python function (``utils.attention.scaled_dot_product_attention``) or a class (every
    method it defines except ``__init__``: ``forward`` and private helpers such as ``_sa_block``).
    """
    names: dict[str, str] = {}

    def python(fn, label):
        import inspect

        fn = inspect.unwrap(fn)   # a contract's door (utils.checks.contract) is shared: the function behind it is not
        code = getattr(fn, "__code__", None)
        where = _where(code) if code is not None else None
        if where is None:
            raise TypeError(f"forbid: {label} is not a function of utils, torch.nn or sacrebleu")
        names[where] = label

    for target in targets:
        if isinstance(target, tuple):
            owner, attr = target
            obj = getattr(owner, attr)
            label = f"{getattr(owner, '__name__', owner)}.{attr}"
            if isinstance(obj, types.FunctionType):
                python(obj, label)
            else:
                names[attr] = label
        elif isinstance(target, type):
            import inspect

            for attr, obj in vars(target).items():
                obj = inspect.unwrap(obj) if callable(obj) else obj   # a method under @torch.no_grad() too
                if isinstance(obj, types.FunctionType) and attr not in ("__init__", "__setstate__", "__repr__") \
                        and _where(obj.__code__) is not None:
                    python(obj, f"{target.__name__}.{attr}")
        elif isinstance(target, types.FunctionType):
            python(target, f"{target.__module__}.{target.__qualname__}")
        else:
            raise TypeError(f"forbid takes (owner, 'attribute') pairs, Python functions or classes, got {target!r}")
    return names


def check_log(log: list[str], canary: list[str], forbidden: dict[str, str]) -> None:
    """The judge's reading of a watch log: no forbidden entry, and the canary seen on both channels."""
    hit = [label for key, label in forbidden.items() if key in log]
    if hit:
        raise ForbiddenCall(f"this exercise asks you to write it yourself, but your code called {', '.join(hit)}")
    missing = [c for c in (CANARY_TORCH, CANARY_PYTHON) if c not in canary]
    if missing:
        raise ForbiddenCall("the grader's call detector was switched off while your code ran "
                            f"(canary not seen: {', '.join(missing)})")


class forbid:
    """For visible check cells: the code inside the block may not reach these built-ins (the targets
    of :func:`forbidden_names`), found by the detector the grader uses, so a learner meets an
    exercise's rule where the notebook states it and not only when graded::

        with forbid([(F, "scaled_dot_product_attention"), utils.attention.scaled_dot_product_attention]):
            out, w = attention(q, k, v)

    Raises :class:`ForbiddenCall` naming what was called (the block's own exception, if any, first).
    """

    def __init__(self, targets: Iterable[Any]):
        self.names = forbidden_names(list(targets))

    def __enter__(self):
        self._watch = Watch().__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            canary = self._watch.canary()
        finally:
            self._watch.__exit__(exc_type, exc, tb)
        if exc_type is None:
            log = self._watch.log
            check_log(log[:len(log) - len(canary)], canary, self.names)
        return False


# ---------------------------------------------------------------------------------------------
# Cells watched whole: under autograde, every code cell of the section that is not the course's own
# (answer cells, set-up cells the student changed, cells the student added) runs between
# cell_watch_start and cell_watch_stop, so a forbidden built-in called when the cell runs (to
# precompute tables or masks that a function then returns) is in a log too.

_CELL_WATCHES: dict[str, Watch] = {}


def cell_watch_start(cell_id: str) -> None:
    watch = Watch()
    watch.__enter__()
    _CELL_WATCHES[cell_id] = watch


def cell_watch_stop(cell_id: str) -> None:
    watch = _CELL_WATCHES.pop(cell_id)
    try:
        canary = watch.canary()
    finally:
        watch.__exit__(None, None, None)
    got = {"result": None, "log": watch.log[:len(watch.log) - len(canary)], "canary": canary}
    directory = os.environ.get(RECORDS_ENV)
    if directory:
        path = record_path(directory, f"cell_{cell_id}")
        path.with_suffix(".tmp").write_bytes(to_bytes(got))
        os.replace(path.with_suffix(".tmp"), path)


_WATCHED_CELLS: list[str] = []   # judge mode: the cells autograde watched (Judge.decide sets it)


# ---------------------------------------------------------------------------------------------
# The hidden check.

_VERDICTS: dict[str, str | None] = {}   # judge mode: grade_id -> None (passed) or the reason
_DRAWN: dict[str, Any] = {}              # the judge: grade_id -> the inputs it drew (and handed to the kernel)
_DRAWING: list[bool] = []               # non-empty while the judge prepares: hidden_check only draws the inputs


def hidden_check(grade_id: str, inputs: Callable[[], Any], run: Callable[[Any], Any],
                 judge: Callable[[Any, Any], None], forbid: Iterable[Any] = ()) -> None:
    """One graded check; see the module docstring for the three modes."""
    forbid = list(forbid)
    notebook = os.environ.get("COURSE_GRADING_NOTEBOOK")
    if notebook:   # under autograde: every other implementation of the exercise's function too
        from courseware.grading.registry import exercise_of, forbid_targets

        forbid += forbid_targets(notebook, exercise_of(grade_id))
    judging = os.environ.get(JUDGE_ENV)
    key = os.environ.get(KEY_ENV)
    if key and not _DRAWING:   # (the judge draws the whole block under the key: Judge)
        inputs = keyed_seeds(inputs, key, grade_id)
    if _DRAWING:
        _DRAWN[grade_id] = inputs()
        return
    if judging:
        x = _DRAWN[grade_id] if grade_id in _DRAWN else inputs()
        got = read_record(record_path(judging, grade_id))
        if got is None:
            raise AssertionError(f"{grade_id}: no record (the check cell did not run to its end in the student's kernel)")
        _judge(grade_id, x, got, judge, forbid)
        _VERDICTS[grade_id] = None
        return

    x = inputs()
    if forbid:
        with Watch() as watch:
            result = run(x)
            canary = watch.canary()
        got = {"result": result, "log": watch.log[:len(watch.log) - len(canary)], "canary": canary}
    else:
        got = {"result": run(x)}
    data = to_bytes(got)
    directory = os.environ.get(RECORDS_ENV)
    if directory:
        path = record_path(directory, grade_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        print(f"{grade_id}: recorded for the judge (the grade is decided outside this kernel)")
        return
    _judge(grade_id, inputs(), from_bytes(data), judge, forbid)
    print(f"{grade_id}: hidden tests passed")


def _derive_seed(key: str, grade_id: str, seed: int) -> int:
    import hashlib
    import hmac

    digest = hmac.new(bytes.fromhex(key), f"{grade_id}/{int(seed)}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:7], "little")


def keyed_seeds(inputs: Callable[[], Any], key: str, grade_id: str) -> Callable[[], Any]:
    """``inputs`` with every seed it sets (``torch.manual_seed(s)``, ``torch.Generator().manual_seed(s)``)
    replaced by one drawn from ``key`` (hex), the check's grade id and ``s``. Under autograde, ``key`` is made
    at random by the judge's process for each grading run (:func:`serve`) and never leaves it, so the published
    seeds say nothing about the inputs a submission is graded on; the judge draws the inputs, hands them to the
    kernel and computes its references on them. Without a key (a learner's notebook) the seeds are the
    published ones."""
    real_generator, real_manual_seed = torch.Generator, torch.manual_seed

    class KeyedGenerator(real_generator):
        def manual_seed(self, seed):
            return super().manual_seed(_derive_seed(key, grade_id, seed))

    def manual_seed(seed):
        return real_manual_seed(_derive_seed(key, grade_id, seed))

    @functools.wraps(inputs)
    def keyed():
        import torch.random

        saved = (torch.Generator, torch.manual_seed, torch.random.manual_seed)
        torch.Generator, torch.manual_seed, torch.random.manual_seed = KeyedGenerator, manual_seed, manual_seed
        try:
            return inputs()
        finally:
            torch.Generator, torch.manual_seed, torch.random.manual_seed = saved
    return keyed


def _judge(grade_id, x, got, judge, forbid):
    if not isinstance(got, dict) or "result" not in got:
        raise AssertionError(f"{grade_id}: malformed record")
    if forbid:
        names = forbidden_names(forbid)
        log, canary = got.get("log"), got.get("canary")
        if not (isinstance(log, list) and isinstance(canary, list)):
            raise AssertionError(f"{grade_id}: the record has no call log")
        check_log(log, canary, names)
        judging = os.environ.get(JUDGE_ENV)
        import courseware.grading.hidden as this
        for cell_id in (this._WATCHED_CELLS if judging else []):
            cell = read_record(record_path(judging, f"cell_{cell_id}"))
            if cell is None:
                raise AssertionError(f"{grade_id}: your cell {cell_id} left no call log (it was cut short)")
            try:
                check_log(cell.get("log") or [], cell.get("canary") or [], names)
            except ForbiddenCall as e:
                raise ForbiddenCall(f"{e} (when your cell {cell_id} ran, before the checks)") from None
    judge(x, got["result"])


# ---------------------------------------------------------------------------------------------
# The judge process.

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def hidden_block(source: str) -> str | None:
    """The code between the hidden-test markers of a cell (None when it has none)."""
    lines = source.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == HIDDEN_BEGIN)
        end = next(i for i, l in enumerate(lines) if l.strip() == HIDDEN_END)
    except StopIteration:
        return None
    return "\n".join(lines[start + 1:end])


class Judge:
    """The judge, in two steps, so that it is ready before the student's code runs.

    ``Judge(nb)`` (*prepare*) runs the trusted source notebook's Exercises section: its set-up cells
    and model answers, and every hidden block in draw mode (its definitions, and ``hidden_check`` only
    drawing the inputs, with the key in ``COURSE_GRADING_KEY`` when there is one), and keeps, for each
    graded code cell, its hidden block, the inputs drawn and a copy of the namespace as it stood at that
    cell. With ``inputs_dir`` (autograde) each check's inputs are written there (:func:`pack_inputs`) as
    they are drawn, for the student's kernel to read (:func:`record_run`), then :data:`INPUTS_DONE`.
    ``decide(records)`` then runs each hidden block in judge mode on the records and the same inputs.
    Under autograde the first step starts before the student's kernel does, so what that kernel later does
    to files on disk (the source notebook, ``utils``) cannot change code the judge has already loaded; see
    INSTRUCTORS.md for what remains.
    """

    def __init__(self, nb, inputs_dir: str | os.PathLike | None = None):
        import ast
        import contextlib
        import io

        import nbformat
        from IPython.core.inputtransformer2 import TransformerManager
        from safetensors.torch import load  # noqa: F401 (loaded now, before any student code runs)

        import courseware.grading.hidden as this  # under `python -m` this file is __main__: hidden blocks import courseware.grading.hidden
        self._this = this
        records_before = os.environ.pop(RECORDS_ENV, None)   # the model answers must not record
        os.environ.setdefault("MPLBACKEND", "Agg")
        nb = nbformat.from_dict(nb)
        transform = TransformerManager().transform_cell
        namespace: dict[str, Any] = {"__name__": "__main__", "display": lambda *a, **k: None}
        self.checks: list[tuple[str, str | None, dict[str, Any]]] = []
        self.not_drawn: dict[str, str] = {}   # grade_id -> why its inputs could not be drawn
        self.drawn: dict[str, Any] = {}       # grade_id -> the inputs drawn (and handed in)
        sink = io.StringIO()
        this._DRAWN.clear()
        try:
            for cell in exercise_cells(nb.cells):
                if cell.cell_type != "code":
                    continue
                meta = cell.metadata.get("nbgrader", {})
                if meta.get("grade"):
                    gid = meta.get("grade_id")
                    block = hidden_block(cell.source)
                    code = None
                    mine = dict(namespace)
                    if block is not None:
                        code = transform(block)
                        this._DRAWING[:] = [True]
                        key = os.environ.get(KEY_ENV)

                        def draw(code=code, gid=gid, mine=mine):
                            exec(compile(code, f"<{gid}: inputs>", "exec"), mine)

                        try:   # the whole block under the key: case lists it draws at its top level too
                            with contextlib.redirect_stdout(sink), made_with():
                                (keyed_seeds(draw, key, gid) if key else draw)()
                            if gid not in this._DRAWN:
                                raise AssertionError(f"{gid}: the hidden block never called hidden_check")
                            self.drawn[gid] = this._DRAWN.pop(gid)
                            if inputs_dir is not None:   # handed in only if the kernel's copy is the judge's to the bit
                                data = pack_inputs(self.drawn[gid])
                                differ = same_inputs(self.drawn[gid], unpack_inputs(data))
                                if differ:
                                    raise TypeError(f"the hidden inputs do not survive the hand-in: {differ}")
                                path = inputs_path(inputs_dir, gid)
                                path.with_suffix(".part").write_bytes(data)
                                os.chmod(path.with_suffix(".part"), 0o644)
                                os.replace(path.with_suffix(".part"), path)
                        except Exception as e:  # noqa: BLE001 (this check fails; the others go on)
                            self.not_drawn[gid] = f"{gid}: the judge could not draw its inputs: {type(e).__name__}: {e}"
                        finally:
                            this._DRAWING.clear()
                    self.checks.append((gid, code, mine))
                else:  # the trusted set-up cells and model answers
                    with contextlib.redirect_stdout(sink):
                        exec(compile(transform(cell.source), "<setup>", "exec"), namespace)
        finally:
            if inputs_dir is not None:   # the kernel stops waiting for inputs that will not come
                done = Path(inputs_dir) / INPUTS_DONE
                done.write_text("")
                os.chmod(done, 0o644)
            if records_before is not None:
                os.environ[RECORDS_ENV] = records_before

    def decide(self, records: str | os.PathLike, watched: list[str] | None = None) -> dict[str, str | None]:
        """grade_id -> None (passed) or the reason it failed, for every graded code cell. ``watched``:
        the ids of the cells autograde ran under :func:`cell_watch_start` (their logs must be clean)."""
        import contextlib
        import io
        import traceback

        self._this._WATCHED_CELLS[:] = list(watched or [])
        self._this._DRAWN.clear()
        self._this._DRAWN.update(self.drawn)   # judged on the inputs this judge drew (and handed in)
        old = os.environ.get(JUDGE_ENV)
        os.environ[JUDGE_ENV] = str(Path(records).resolve())
        verdicts: dict[str, str | None] = {}
        sink = io.StringIO()
        try:
            for gid, code, namespace in self.checks:
                if code is None:
                    verdicts[gid] = "this check cell has no hidden check, so it cannot be judged"
                    continue
                if gid in self.not_drawn:
                    verdicts[gid] = self.not_drawn[gid]
                    continue
                self._this._VERDICTS.pop(gid, None)
                try:
                    with contextlib.redirect_stdout(sink):
                        exec(compile(code, f"<{gid}>", "exec"), namespace)
                    verdicts[gid] = None if gid in self._this._VERDICTS else f"{gid}: the hidden block never called hidden_check"
                except BaseException as e:  # noqa: BLE001 (anything at all is a failed check)
                    verdicts[gid] = "".join(traceback.format_exception_only(type(e), e)).strip()[-2000:]
        finally:   # a judge used in a process that goes on (a test) must not leave judge mode on for what it starts
            self._this._DRAWN.clear()
            if old is None:
                os.environ.pop(JUDGE_ENV, None)
            else:
                os.environ[JUDGE_ENV] = old
        return verdicts


def judge_notebook(source_path: str | os.PathLike, records: str | os.PathLike) -> dict[str, str | None]:
    """Both steps of :class:`Judge` at once, on a source notebook file."""
    import nbformat

    return Judge(nbformat.read(source_path, as_version=4)).decide(records)


# ---------------------------------------------------------------------------------------------
# What an answer cell must not touch: a static screen of the student's code, flagged for a person.

TAMPER_PATTERNS = (
    "get_ipython", "ast_transformers", "input_transformers", "run_cell", "events.register", "set_custom_exc",
    "setprofile", "getprofile", "settrace", "cProfile", "_lsprof", "sys.monitoring", "sys.modules", "__code__",
    "_getframe", "f_back", "f_locals", "f_globals",
    "courseware.grading.hidden", "COURSE_GRADING", "TorchFunctionMode", "TorchDispatchMode", "_pop_mode", "_push_mode",
    "DisableTorch", "torch.ops", "torch._C", "__builtins__", "builtins", "importlib", "__import__",
    "gc.get_", "exec(", "eval(", "compile(", "globals()", "setattr(torch", "torch.allclose =",
    # reaching outside the kernel: files, processes, the environment the judge runs in
    "open(", "subprocess", "os.system", "os.popen", "os.kill", "shutil", "write_text", "write_bytes",
    "ctypes", "/proc/", "site-packages", "sitecustomize", "multiprocessing", "threading",
)


def tamper_flags(source: str) -> list[str]:
    """The patterns of :data:`TAMPER_PATTERNS` found in an answer cell's source (a call such as
    ``eval(`` only as a name of its own: ``model.eval()`` and ``train_retrieval(`` are not flagged)."""
    import re

    found = []
    for p in TAMPER_PATTERNS:
        if p.endswith("(") and p[0].isalpha():
            hit = re.search(r"(?<![\w.])" + re.escape(p), source)
        else:
            hit = p in source
        if hit:
            found.append(p)
    return found


# The screen by capability: what an answer cell, a changed set-up cell or an added cell can do, read from
# its syntax tree (the exercises need none of it). An aid for the person grading: a flagged cell is shown
# to them, and the notebook is not scored automatically.

_INTERPRETER_MODULES = {"sys", "gc", "inspect", "importlib", "ctypes", "builtins", "types", "marshal", "pickle",
                        "code", "codeop", "runpy", "cProfile", "profile", "_lsprof", "dis", "ast", "IPython",
                        "traceback", "weakref", "copyreg", "atexit", "faulthandler", "tracemalloc", "dill", "cloudpickle"}
_PROCESS_MODULES = {"threading", "_thread", "multiprocessing", "concurrent", "subprocess", "signal", "asyncio",
                    "socket", "pty", "sched"}
_FILE_MODULES = {"glob", "shutil", "pathlib", "tempfile", "io", "fnmatch", "zipfile", "tarfile", "mmap", "fcntl"}
_GRADER_NAMES = {"grading", "sandbox", "grading_registry"}
_DYNAMIC_CALLS = {"exec", "eval", "compile", "globals", "locals", "vars", "__import__", "breakpoint",
                  "get_ipython", "open", "input", "memoryview"}
_FILE_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "listdir", "scandir", "walk", "glob",
                 "rglob", "iterdir", "open", "fdopen", "system", "popen", "fork", "forkpty", "kill", "execv",
                 "execve", "spawnv", "chmod", "remove", "unlink", "rename", "replace", "getenv", "environ", "putenv"}
_TORCH_INTERNALS = {"_C", "ops", "library", "jit", "compile", "_dynamo", "overrides", "_python_dispatch", "fx",
                    "_ops", "_subclasses", "_functorch", "_inductor", "export"}
_ALLOWED_DUNDERS = {"__init__", "__name__"}


def _syntax_tree(source: str):
    """``source``'s syntax tree, read after IPython's own transformation where it does not parse as Python
    (magics, ``!`` lines); a sentence saying why where it does not parse even then."""
    import ast

    try:
        return ast.parse(source)
    except SyntaxError:
        try:
            from IPython.core.inputtransformer2 import TransformerManager

            return ast.parse(TransformerManager().transform_cell(source))
        except SyntaxError as e:
            return f"code that does not parse (line {e.lineno})"


def screen(source: str) -> list[str]:
    """The capabilities a cell's code uses, each with its line: dunder access, computed ``getattr``,
    attribute assignment on a module or class, tensor subclasses, threads and processes, files and the
    environment, the interpreter's machinery, PyTorch's internals, the grader itself. A cell that does not
    parse (IPython magics) is read after IPython's own transformation."""
    import ast

    tree = _syntax_tree(source)
    if isinstance(tree, str):
        return [tree]
    imported: set[str] = set()
    classes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.ClassDef):
            classes.add(node.name)
    found: list[str] = []

    def flag(what, node):
        entry = f"{what} (line {getattr(node, 'lineno', '?')})"
        if entry not in found:
            found.append(entry)

    def root(node):
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.value if not isinstance(node, ast.Call) else node.func
        return node.id if isinstance(node, ast.Name) else None

    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            names = [a.name for a in node.names]
            for m in mods:
                top = m.split(".")[0]
                if top in _INTERPRETER_MODULES:
                    flag(f"the interpreter's machinery (import {m})", node)
                if top in _PROCESS_MODULES:
                    flag(f"threads, processes or the network (import {m})", node)
                if top in _FILE_MODULES or top == "os":
                    flag(f"files or the environment (import {m})", node)
                if any(part in _GRADER_NAMES for part in m.split(".")) or (top == "utils" and set(names) & _GRADER_NAMES):
                    flag(f"the grader (import {m})", node)
                if top == "torch" and set(m.split(".")[1:] + names) & _TORCH_INTERNALS:
                    flag(f"PyTorch's internals ({m}: {', '.join(sorted(set(m.split('.')[1:] + names) & _TORCH_INTERNALS))})", node)
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in _ALLOWED_DUNDERS:
                flag(f"dunder access (.{node.attr})", node)
            elif node.attr.startswith("_") and not node.attr.startswith("__") and root(node) not in ("self", "cls"):
                flag(f"a private attribute (.{node.attr})", node)
            if node.attr in _TORCH_INTERNALS and root(node) in ("torch", "nn", "F"):
                flag(f"PyTorch's internals (.{node.attr})", node)
            if node.attr in _FILE_METHODS and isinstance(node.ctx, ast.Load):
                flag(f"files, processes or the environment (.{node.attr})", node)
            if node.attr in _GRADER_NAMES:
                flag(f"the grader (.{node.attr})", node)
        elif isinstance(node, ast.Name):
            if node.id.startswith("__") and node.id not in _ALLOWED_DUNDERS:
                flag(f"dunder access ({node.id})", node)
            if node.id in _GRADER_NAMES and node.id in imported:
                flag(f"the grader ({node.id})", node)
        elif isinstance(node, ast.Call):
            fn = node.func.id if isinstance(node.func, ast.Name) else None
            if fn in ("getattr", "setattr", "delattr", "hasattr") and (
                    len(node.args) < 2 or not isinstance(node.args[1], ast.Constant)):
                flag(f"computed {fn}", node)
            if fn in ("setattr", "delattr"):
                flag(f"attribute assignment through {fn}", node)
            if fn in _DYNAMIC_CALLS:
                flag(f"{fn}()", node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and root(sub) in imported | classes:
                        flag(f"assignment to a module's or class's attribute ({root(sub)}...{sub.attr})", node)
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                text = ast.unparse(base)
                if "Tensor" in text or "Parameter" in text or "Mode" in text:
                    flag(f"a subclass of {text}", node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in ("__torch_function__", "__torch_dispatch__"):
                flag(f"a tensor subclass hook ({node.name})", node)
            if isinstance(node, ast.AsyncFunctionDef):
                flag("asynchronous code", node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and isinstance(node, ast.Global):
            pass
    return found


# What an answer cell may touch: an allowlist, read from its syntax tree by autograde's own process (never in
# the student's kernel, where the in-process watch can be undone; that watch is a second opinion). A cell
# outside it is not scored automatically: every check cell of the notebook scores 0 and is marked "needs
# manual grade" with the cell to read (courseware/editions/nbgrader_course.py). INSTRUCTORS.md lists the rules.

ALLOWED_IMPORTS = frozenset({
    "math", "itertools", "collections", "torch", "torch.nn", "torch.nn.functional", "torch.optim",
    "utils.attention", "utils.rnn", "utils.text", "utils.positional", "utils.transformer", "utils.gpt",
    "utils.scale", "utils.embeddings",
})
# built-ins and IPython names that reach files, other code, any attribute by a string, or the kernel
ALLOWLIST_CALLS = frozenset({
    "getattr", "setattr", "delattr", "hasattr", "exec", "eval", "compile", "open", "globals", "locals", "vars",
    "dir", "breakpoint", "input", "memoryview", "help", "exit", "quit", "get_ipython", "display", "In", "Out",
})
# the grader's names, and attributes that lead out of the exercise (PyTorch's internals and loaders, the
# interpreter, files and processes)
GRADER_NAMES = frozenset({
    "grading", "sandbox", "grading_registry", "cases", "hidden_check", "forbid", "Watch", "ForbiddenCall",
    "cell_watch_start", "cell_watch_stop", "lockdown", "judge", "records",
})
ALLOWLIST_ATTRS = frozenset({
    "ops", "library", "jit", "compile", "fx", "export", "overrides", "hub", "load", "save", "serialization",
    "package", "multiprocessing", "distributed", "from_file", "tofile", "fromfile", "modules", "os", "sys",
    "builtins", "importlib", "subprocess", "ctypes", "environ", "system", "popen", "read_text", "read_bytes",
    "write_text", "write_bytes", "cpp_extension", "load_library", "classes", "compiler", "register_module_forward_hook",
    "register_module_forward_pre_hook", "register_module_full_backward_hook", "register_module_backward_hook",
})
ALLOWED_DUNDERS = frozenset({"__init__"})
ALLOWED_DEFS = frozenset({"__init__", "__call__", "__repr__", "__len__", "__getitem__", "__iter__"})


def allowlist(source: str, reserved: Iterable[str] = ()) -> list[str]:
    """What a student's cell does outside the allowlist, each with its line (empty: nothing).

    Allowed: imports of :data:`ALLOWED_IMPORTS` only (by name, no ``*``); no name or attribute that is
    private (``_x``, ``__x__``; ``_`` alone, ``__init__`` and ``self._x`` are fine); none of
    :data:`ALLOWLIST_CALLS` named at all (called or passed around); no attribute in :data:`ALLOWLIST_ATTRS`;
    no :data:`GRADER_NAMES`, nor a name in ``reserved`` (what only the course's check cells define: their
    references and helpers) that the cell reads without binding it; attributes assigned or deleted only on
    ``self`` (never on a module, a class or a function of the course's), and only on a method's own ``self`` (its
    first parameter, in a class's body: not a function's parameter that happens to be called ``self``, which a module
    could be passed as), no method reached through its class (``C.set(F, ...)``, ``type(x).set``), ``self`` never
    rebound; no
    subclass of a tensor, parameter or mode, no ``async``; no string holding ``__`` (a format string walks
    attributes); code that does not parse, even after IPython's transformation, is outside."""
    import ast

    tree = _syntax_tree(source)
    if isinstance(tree, str):
        return [tree]
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    reserved = set(reserved) - bound
    found: list[str] = []
    # where ``self`` may have attributes assigned: in a method (a function defined in a class's body, not a static
    # method), on its own first parameter. A function of the cell's whose parameter is called self, or a method
    # reached through its class (``C.set(F, ...)``, ``type(x).set(...)``), could be handed a module or a class of the
    # course's as ``self``
    own_self: set[int] = set()        # ids of the Attribute nodes assigned on a method's own self
    methods: dict[str, set[str]] = {}  # the cell's classes -> their methods
    parent: dict[int, Any] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[id(child)] = node
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods[node.name] = {f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                                  and not any(ast.unparse(d) in ("staticmethod", "classmethod") for d in f.decorator_list)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            base = node.value
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if not (isinstance(base, ast.Name) and base.id == "self"):
                continue
            up = parent.get(id(node))
            while up is not None:   # the nearest function that binds self: as a parameter, or not at all
                if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    params = [a.arg for a in (*up.args.posonlyargs, *up.args.args, *up.args.kwonlyargs)]
                    params += [a.arg for a in (up.args.vararg, up.args.kwarg) if a is not None]
                    if "self" in params:
                        first = (up.args.posonlyargs + up.args.args)[:1]
                        is_method = isinstance(parent.get(id(up)), ast.ClassDef) and \
                            up.name in methods.get(parent[id(up)].name, set()) if not isinstance(up, ast.Lambda) else False
                        if is_method and first and first[0].arg == "self":
                            own_self.add(id(node))
                        break
                up = parent.get(id(up))

    def flag(what, node):
        entry = f"{what} (line {getattr(node, 'lineno', '?')})"
        if entry not in found:
            found.append(entry)

    def private(name):
        return name.startswith("_") and name != "_" and name not in ALLOWED_DUNDERS

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in ALLOWED_IMPORTS:
                    flag(f"import {a.name}", node)
                if a.asname and private(a.asname):
                    flag(f"a private name ({a.asname})", node)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for a in node.names:
                whole = f"{module}.{a.name}"
                if a.name == "*":
                    flag(f"from {module} import *", node)
                elif module not in ALLOWED_IMPORTS and whole not in ALLOWED_IMPORTS:
                    flag(f"from {module} import {a.name}", node)
                elif private(a.name) or a.name in ALLOWLIST_ATTRS | GRADER_NAMES or (a.asname and private(a.asname)):
                    flag(f"from {module} import {a.name}", node)
        elif isinstance(node, ast.Name):
            if private(node.id):
                flag(f"a private name ({node.id})", node)
            if node.id in ALLOWLIST_CALLS:
                flag(f"{node.id}", node)
            if node.id in GRADER_NAMES and isinstance(node.ctx, ast.Load) and node.id not in bound:
                flag(f"the grader's {node.id}", node)
            if node.id in reserved and isinstance(node.ctx, ast.Load):
                flag(f"{node.id}, defined by the course's check cells", node)
            if node.id == "self" and isinstance(node.ctx, (ast.Store, ast.Del)):
                flag("self rebound", node)
        elif isinstance(node, ast.Attribute):
            direct_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            if private(node.attr) and not (direct_self and not node.attr.startswith("__")):
                flag(f"a private attribute (.{node.attr})", node)
            if node.attr in ALLOWLIST_ATTRS or node.attr in GRADER_NAMES:
                flag(f"the attribute .{node.attr}", node)
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                base = node.value
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if not (isinstance(base, ast.Name) and base.id == "self"):
                    flag(f"an attribute assigned outside self ({ast.unparse(node)})", node)
                elif id(node) not in own_self:
                    flag(f"an attribute assigned on a self that is not a method's own ({ast.unparse(node)})", node)
            elif isinstance(node.value, ast.Name) and node.attr in methods.get(node.value.id, set()):
                flag(f"a method reached through its class ({ast.unparse(node)}): any object can be its self", node)
            elif isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) and node.value.func.id == "type":
                flag(f"an attribute of type(...) ({ast.unparse(node)})", node)
        elif isinstance(node, ast.arg) and private(node.arg):
            flag(f"a private name ({node.arg})", node)
        elif isinstance(node, ast.keyword) and node.arg and private(node.arg):
            flag(f"a private keyword ({node.arg})", node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if private(node.name) and node.name not in ALLOWED_DEFS:
                flag(f"a private name ({node.name})", node)
            if isinstance(node, ast.AsyncFunctionDef):
                flag("asynchronous code", node)
            if isinstance(node, ast.ClassDef):
                for base in [*node.bases, *(k.value for k in node.keywords)]:
                    text = ast.unparse(base)
                    if any(w in text for w in ("Tensor", "Parameter", "Mode", "type", "ABCMeta")):
                        flag(f"a subclass of {text}", node)
        elif isinstance(node, (ast.AsyncFor, ast.AsyncWith, ast.Await)):
            flag("asynchronous code", node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            if ("__" if isinstance(node.value, str) else b"__") in node.value:
                flag("a string holding __", node)
    return found


VERDICTS_LINE = "COURSE-JUDGE-VERDICTS "
READY_LINE = "COURSE-JUDGE-READY"


def _not_dumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): no core dump, and no process of the same user may ptrace this one or
    read its memory and file descriptors through /proc (Linux; elsewhere nothing happens)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)   # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def serve() -> int:
    """``python -I -m courseware.grading.hidden serve``: the judge as autograde runs it, over a pipe.

    Makes itself non-dumpable, then reads one line of JSON from stdin: ``{"notebook": the source
    notebook, "nonce": a per-run secret, "inputs": the folder to hand the hidden inputs in (optional),
    "number": the notebook's number, "key": a key for the hidden inputs (tests only: without one it draws
    a fresh random key, which never leaves this process)}`` (a bare notebook is accepted too: no nonce,
    published seeds); prepares (:class:`Judge`), prints :data:`READY_LINE`, waits for one
    line, ``{"records": folder, "watched": [cell ids]}``, and prints the verdicts as one line,
    ``VERDICTS_LINE nonce JSON``. Autograde accepts exactly one verdict line, and only with its nonce.
    Nothing it reads or writes goes through a file that the student's kernel could reach, except the
    records themselves (read after the kernel's sandbox is gone)."""
    import nbformat

    _not_dumpable()
    first = json.loads(sys.stdin.readline())
    import secrets

    nonce, inputs_dir = "", None
    if isinstance(first, dict) and "notebook" in first:
        nonce = str(first.get("nonce") or "")
        os.environ[KEY_ENV] = str(first.get("key") or secrets.token_hex(32))   # this process's own, per grading run
        if first.get("number"):
            os.environ["COURSE_GRADING_NOTEBOOK"] = str(first["number"])
        inputs_dir = first.get("inputs") or None
        first = first["notebook"]
    try:
        judge = Judge(nbformat.reads(json.dumps(first), as_version=4), inputs_dir=inputs_dir)
    finally:   # whatever happened, the kernel stops waiting for inputs
        if inputs_dir is not None and not (Path(inputs_dir) / INPUTS_DONE).exists():
            (Path(inputs_dir) / INPUTS_DONE).write_text("")
            os.chmod(Path(inputs_dir) / INPUTS_DONE, 0o644)
    sys.stdout.write(READY_LINE + "\n")
    sys.stdout.flush()
    request = json.loads(sys.stdin.readline())
    verdicts = judge.decide(request["records"], request.get("watched", []))
    sys.stdout.write(VERDICTS_LINE + (nonce + " " if nonce else "") + json.dumps(verdicts) + "\n")
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -I -m courseware.grading.hidden serve`` (autograde: see :func:`serve`), or
    ``python -I -m courseware.grading.hidden judge SOURCE.ipynb RECORDS_DIR`` (both steps at once, by hand)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["serve"]:
        return serve()
    if len(argv) != 3 or argv[0] != "judge":
        print("usage: python -I -m courseware.grading.hidden serve | judge SOURCE.ipynb RECORDS_DIR", file=sys.stderr)
        return 2
    verdicts = judge_notebook(argv[1], argv[2])
    sys.stdout.write(VERDICTS_LINE + json.dumps(verdicts) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
