"""The exercises' checks measured by mutation (issue 50): each model answer's mutants, generated
mechanically, run against the exercise's visible checks, then its hidden tests.

A mutant is the model answer with one small change of the kind a learner makes: an arithmetic or comparison
operator swapped, a constant off by one or doubled, another ``dim=``, a dropped ``.transpose``/``.T``, two
arguments swapped, a term dropped, a statement deleted, a ``torch.zeros``/``ones`` without its ``dtype``/``device``
(``x.new_zeros`` as ``torch.zeros``), a set-up cell's global in place of an argument or a size read from one,
a ``.detach()`` inserted. Only the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` change; the
change is spliced into the cell's text, so the rest of the cell stays as written.

The runner starts one course kernel per notebook, runs the ``## Exercises`` section once with the model
answers (every check must pass there, visible and hidden: the baseline), then for each mutant runs the
mutated answer cell and the exercise's check cells' visible parts in order, stopping at the first failure
(*killed by a visible check*; an answer cell that fails to run counts there too, as the learner sees it);
a mutant that passes every visible part has the hidden parts run as under autograde (recorded in the
kernel, judged by ``courseware.grading.hidden.Judge`` prepared on the source notebook): *killed only by the hidden
tests*, or *surviving*. The model answer is run again after each mutant. A cell that runs past its time
(4x the model answer's, at least 60 s) is interrupted and counts as a failure.

A mutant that behaves like the model answer on every input the prompt allows is *equivalent*: it is listed
with a one-line reason in ``tests/mutants_equivalent.json`` (notebook -> mutant key -> reason) and not
counted as surviving; ``tests/courseware/measure/test_mutants.py`` runs the listed ones again with the checks' cases drawn from
other seeds (``COURSE_CASES_SEED``), so a listed mutant that a check can tell apart shows up.

    python -m courseware mutants                         # every notebook: the table
    python -m courseware mutants --notebooks 02 04       # some
    python -m courseware mutants --notebooks 02 --list   # the mutants, not run
    python -m courseware mutants --notebooks 02 --survivors   # and each surviving mutant's change
    make test-mutants MUTANT_NOTEBOOKS="02 04"

It runs one kernel at a time (the machine is shared); ``nice`` it.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import queue
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT = ROOT / "tests" / "mutants_equivalent.json"
BEGIN, END, HIDDEN = "### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS"
KERNEL = "attention-course"
# this checkout's utils, here and in the kernels it starts (not another checkout an editable install points at)
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

ARITH = {ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div], ast.Div: [ast.Mult],
         ast.FloorDiv: [ast.Div], ast.Mod: [ast.FloorDiv], ast.Pow: [ast.Mult], ast.MatMult: [ast.Mult]}
COMPARE = {ast.Lt: [ast.LtE, ast.Gt], ast.LtE: [ast.Lt], ast.Gt: [ast.GtE, ast.Lt], ast.GtE: [ast.Gt],
           ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.Is: [ast.IsNot], ast.IsNot: [ast.Is],
           ast.In: [ast.NotIn], ast.NotIn: [ast.In]}
TRANSPOSING = {"transpose", "t", "permute", "swapaxes", "movedim", "contiguous"}
FACTORIES = {"zeros", "ones", "full", "empty", "arange", "eye", "tensor", "zeros_like", "ones_like",
             "full_like", "rand", "randn", "linspace"}
NEW = {"new_zeros": "zeros", "new_ones": "ones", "new_full": "full", "new_empty": "empty", "new_tensor": "tensor"}
DIM_KEYWORDS = {"dim", "axis", "dims"}


@dataclass
class Mutant:
    exercise: str   # the answer cell's grade_id
    op: str         # the kind of change
    old: str        # the text replaced
    new: str        # what replaces it
    line: int       # its line in the answer cell (1-based)
    source: str     # the mutated answer cell
    key: str = ""   # "ex3 arith L5: a + b -> a - b" (#2 ... when the same change repeats): the equivalents' key


@dataclass
class Result:
    mutant: Mutant
    outcome: str                  # "visible", "hidden", "survived"
    where: str = ""               # the check (or "answer cell") that failed, and its message
    seconds: float = 0.0


@dataclass
class Table:
    notebook: str
    rows: dict = field(default_factory=dict)   # exercise -> counts


# ---------------------------------------------------------------------------------------------
# Generation.

def solution_lines(source: str) -> list[tuple[int, int]]:
    """The 1-based line ranges strictly between each BEGIN and END SOLUTION marker."""
    spans, start = [], None
    for i, line in enumerate(source.splitlines(), 1):
        if BEGIN in line:
            start = i + 1
        elif END in line and start is not None:
            spans.append((start, i - 1))
            start = None
    return spans


def _offsets(source: str) -> list[int]:
    out, n = [], 0
    for line in source.splitlines(keepends=True):
        out.append(n)
        n += len(line.encode())
    return out + [n]


def _splice(source: str, node: ast.AST, text: str) -> str:
    raw = source.encode()
    off = _offsets(source)
    a = off[node.lineno - 1] + node.col_offset
    b = off[node.end_lineno - 1] + node.end_col_offset
    return (raw[:a] + text.encode() + raw[b:]).decode()


def _u(node: ast.AST) -> str:
    return ast.unparse(node)


def _in(node: ast.AST, spans) -> bool:
    return hasattr(node, "lineno") and any(a <= node.lineno and node.end_lineno <= b for a, b in spans)


def _parents(tree: ast.AST) -> dict:
    out = {}
    for p in ast.walk(tree):
        for c in ast.iter_child_nodes(p):
            out[c] = p
    return out


def _in_fstring(node, parents) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.JoinedStr):
            return True
    return False


def _is_shape_like(node: ast.AST) -> bool:
    """``x.shape[i]``, ``x.size(i)``, ``len(x)``: a size read from an argument."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" and node.args:
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"


def _builds_module(node: ast.AST) -> bool:
    """``nn.Linear(...)``, ``Foo(...)``: a constructor (a class name), where ``.detach()`` means nothing."""
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return name[:1].isupper()


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def sites(source: str, int_globals: list[str], all_globals: list[str]):
    """(node, new text, op) for every mutation of the answer cell's solution lines."""
    tree = ast.parse(source)
    spans = solution_lines(source)
    parents = _parents(tree)
    out = []

    def expr(node, new, op):
        simple = re.fullmatch(r"[\w.]+|globals\(\)\['\w+'\]", new)
        out.append((node, new if simple else f"({new})", op))   # parentheses: the precedence stays

    # the functions' parameters, and which of them size a module (nn.Embedding(vocab_size, ...)) or have int defaults
    params, int_params = {}, set()
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = f.args.posonlyargs + f.args.args + f.args.kwonlyargs
            defaults = [None] * (len(f.args.posonlyargs + f.args.args) - len(f.args.defaults)) + list(f.args.defaults) \
                + list(f.args.kw_defaults)
            for a, d in zip(args, defaults):
                if a.arg in ("self", "cls"):
                    continue
                params.setdefault(a.arg, f)
                if isinstance(d, ast.Constant) and _number(d.value):
                    int_params.add(a.arg)
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and _in(call, spans):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            if name[:1].isupper():
                for a in list(call.args) + [k.value for k in call.keywords]:
                    if isinstance(a, ast.Name) and a.id in params:
                        int_params.add(a.id)

    for node in ast.walk(tree):
        if not _in(node, spans) or _in_fstring(node, parents):
            continue
        if isinstance(node, ast.BinOp):
            for new_op in ARITH.get(type(node.op), []):
                expr(node, _u(ast.BinOp(node.left, new_op(), node.right)), "arith")
            if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
                expr(node, _u(node.left), "term")
                expr(node, _u(node.right), "term")
            elif isinstance(node.op, (ast.Div, ast.FloorDiv, ast.MatMult, ast.Pow)):
                expr(node, _u(node.left), "term")
            if isinstance(node.op, (ast.Sub, ast.Div, ast.MatMult, ast.Pow, ast.FloorDiv)):
                expr(node, _u(ast.BinOp(node.right, node.op, node.left)), "swap")
        elif isinstance(node, ast.UnaryOp):
            if isinstance(node.op, (ast.USub, ast.Not, ast.Invert)):
                expr(node, _u(node.operand), "arith" if isinstance(node.op, ast.USub) else "logic")
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            expr(node, _u(ast.BoolOp(other, node.values)), "logic")
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            for new_op in COMPARE.get(type(node.ops[0]), []):
                expr(node, _u(ast.Compare(node.left, [new_op()], node.comparators)), "compare")
        elif isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                expr(node, repr(not v), "const")
            elif _number(v):
                news = []
                for w in (v + 1, v - 1, v * 2):
                    if w != v and w not in news:
                        news.append(w)
                for w in news:
                    expr(node, repr(w), "const")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr in ("T", "mT", "mH"):
            expr(node, _u(node.value), "transpose")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in params:
            # a set-up global in place of the argument: the same name, or an int size
            if node.id in all_globals:
                expr(node, f"globals()[{node.id!r}]", "global")
            if node.id in int_params:
                for g in int_globals:
                    if g != node.id:
                        expr(node, g, "global")
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in TRANSPOSING:
                expr(node, _u(f.value), "transpose")
            pos = [a for a in node.args if not isinstance(a, ast.Starred)]
            if len(pos) == len(node.args):
                for i in range(len(pos) - 1):
                    if _u(pos[i]) != _u(pos[i + 1]):
                        args = list(pos)
                        args[i], args[i + 1] = args[i + 1], args[i]
                        expr(node, _u(ast.Call(f, args, node.keywords)), "swap")
            for k in node.keywords:
                if k.arg in DIM_KEYWORDS:
                    expr(node, _u(ast.Call(f, node.args, [x for x in node.keywords if x is not k])), "dim")
                    if not isinstance(k.value, ast.Constant):
                        for d in (-1, 0):
                            kws = [x if x is not k else ast.keyword(k.arg, ast.Constant(d)) for x in node.keywords]
                            expr(node, _u(ast.Call(f, node.args, kws)), "dim")
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in FACTORIES:
                dropped = [k for k in node.keywords if k.arg in ("dtype", "device")]
                for k in dropped:
                    expr(node, _u(ast.Call(f, node.args, [x for x in node.keywords if x is not k])), "dtype")
                if len(dropped) > 1:
                    expr(node, _u(ast.Call(f, node.args, [x for x in node.keywords if x not in dropped])), "dtype")
            if isinstance(f, ast.Attribute) and f.attr in NEW:
                torch_f = ast.Attribute(ast.Name("torch", ast.Load()), NEW[f.attr], ast.Load())
                expr(node, _u(ast.Call(torch_f, node.args, [k for k in node.keywords if k.arg not in ("dtype", "device")])),
                     "dtype")
        if _is_shape_like(node) and isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            for g in int_globals:
                expr(node, g, "global")
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.Return, ast.FunctionDef, ast.ClassDef,
                                                                 ast.AsyncFunctionDef, ast.Pass)):
            out.append((node, "pass", "delete"))
        if isinstance(node, ast.Call) and all(not isinstance(a, ast.Starred) for a in node.args):
            for a in node.args:   # a list or tuple of operands in another order: torch.cat([c, s]) for [s, c]
                if isinstance(a, (ast.List, ast.Tuple)) and len(a.elts) > 1:
                    for i in range(len(a.elts) - 1):
                        elts = list(a.elts)
                        elts[i], elts[i + 1] = elts[i + 1], elts[i]
                        if _u(elts[i]) != _u(elts[i + 1]):
                            expr(a, _u(type(a)(elts, ast.Load())), "swap")
        if isinstance(node, (ast.Assign, ast.Return, ast.AugAssign)) and isinstance(
                node.value, (ast.Call, ast.BinOp, ast.Subscript)) and not _builds_module(node.value):
            out.append((node.value, f"({_u(node.value)}).detach()", "detach"))
    return out


def _keys(mutants: list[Mutant]) -> None:
    seen: dict[str, int] = {}
    for m in mutants:
        base = f"{m.exercise} {m.op} L{m.line}: {' '.join(m.old.split())[:80]} -> {' '.join(m.new.split())[:80]}"
        seen[base] = seen.get(base, 0) + 1
        m.key = base if seen[base] == 1 else f"{base} #{seen[base]}"


def generate(exercise: str, source: str, int_globals=(), all_globals=()) -> list[Mutant]:
    """Every mutant of one answer cell, in a fixed order, each with a stable key; duplicates removed."""
    out, trees = [], {ast.dump(ast.parse(source))}
    for node, new, op in sites(source, list(int_globals), list(all_globals)):
        old = ast.get_source_segment(source, node) or _u(node)
        mutated = _splice(source, node, new)
        try:
            tree = ast.dump(ast.parse(mutated))
        except SyntaxError:
            continue
        if tree in trees:   # the same program as the answer or as an earlier mutant
            continue
        trees.add(tree)
        out.append(Mutant(exercise, op, old, new, node.lineno, mutated))
    _keys(out)
    return out


def setup_names(section_cells) -> list[str]:
    """The names the section's set-up cells (code cells that are neither answers nor checks) define."""
    names = []
    for c in section_cells:
        meta = c.metadata.get("nbgrader", {})
        if c.cell_type != "code" or meta.get("solution") or meta.get("grade"):
            continue
        try:
            tree = ast.parse(c.source)
        except SyntaxError:
            continue
        for n in tree.body:
            targets = []
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    targets += [e for e in ast.walk(t) if isinstance(e, ast.Name)]
                names += [t.id for t in targets]
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                names.append(n.name)
    return list(dict.fromkeys(names))


# ---------------------------------------------------------------------------------------------
# Running.

class Kernel:
    """A course kernel run cell by cell; ``run`` returns None or "ErrorName: message" and keeps stdout."""

    def __init__(self, cwd: Path):
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name=KERNEL, cwd=str(cwd))
        self.stdout = ""

    def run(self, code: str, timeout: float = 600) -> str | None:
        error, out = [], []

        def hook(msg):
            if msg["msg_type"] == "error":
                error.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
            elif msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])

        try:
            reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=hook, allow_stdin=False)
        except (TimeoutError, queue.Empty):
            self.km.interrupt_kernel()
            try:   # the interrupted cell's reply, then a fresh prompt
                self.kc.execute_interactive("pass", timeout=120, output_hook=lambda m: None, allow_stdin=False)
            except (TimeoutError, queue.Empty):
                pass
            return f"Timeout: the cell ran past {timeout:.0f} s"
        self.stdout = "".join(out)
        if reply["content"]["status"] != "ok":
            return error[0] if error else f"{reply['content'].get('ename')}: {reply['content'].get('evalue')}"
        return None

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def notebook_path(number: str) -> Path:
    return next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))


def prepare(number: str):
    """The notebook, its Exercises section, its answer cells and their check cells."""
    import nbformat

    from courseware.editions.nbgrader_course import exercise_section_start
    from courseware.sections import exercise_cells

    nb = nbformat.read(notebook_path(number), as_version=4)
    section = exercise_cells(nb.cells[exercise_section_start(nb):])
    answers = {_grade_id(c): c.source for c in section if c.cell_type == "code"
               and c.metadata.get("nbgrader", {}).get("solution")}
    checks = {ex: [c for c in section if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
                   and (_grade_id(c) or "").startswith(f"{ex}_check")] for ex in answers}
    return nb, section, answers, checks


def equivalents() -> dict[str, dict[str, str]]:
    return json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}


def run_notebook(number: str, *, exercises=None, stride: int = 1, keys=None, env=None, log=None) -> list[Result]:
    """Run every mutant of the notebook's answers (``exercises``: only these; ``stride``: every n-th;
    ``keys``: only these mutant keys) against its checks; one kernel, one process."""
    from courseware.grading.hidden import RECORDS_ENV, Judge

    nb, section, answers, checks = prepare(number)
    log = log or (lambda s: None)
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})    # the judge draws its cases here, the kernel its own: the same seeds
    judge = Judge(nb)
    kernel = Kernel(notebook_path(number).parent)
    results = []
    try:
        if env:
            kernel.run("import os\n" + "".join(f"os.environ[{k!r}] = {v!r}\n" for k, v in env.items()))
        names = setup_names(section)
        # an exercise's mutants run where the section stands after its last check cell: the globals as the
        # learner's kernel holds them there (a later cell may rebind a set-up name)
        last_check = {id(cs[-1]): ex for ex, cs in checks.items() if cs}

        def int_globals() -> list[str]:
            kernel.run("import json as _j\nprint(_j.dumps([n for n in %r if isinstance(globals().get(n), int) "
                       "and not isinstance(globals().get(n), bool)]))" % names)
            return json.loads(kernel.stdout.strip().splitlines()[-1])

        with tempfile.TemporaryDirectory(prefix="mutants-") as root:
            def attempt(ex: str, source: str, tag: str, limits: dict[str, float] | None):
                """(outcome, where, seconds per cell)"""
                times = {}
                t0 = time.perf_counter()
                err = kernel.run(source, timeout=(limits or {}).get("answer", 600))
                times["answer"] = time.perf_counter() - t0
                if err:
                    return "visible", f"answer cell: {err}", times
                for check in checks[ex]:
                    shown, _, rest = check.source.partition(HIDDEN)
                    t0 = time.perf_counter()
                    err = kernel.run(shown, timeout=(limits or {}).get(_grade_id(check), 600))
                    times[_grade_id(check)] = time.perf_counter() - t0
                    if err:
                        return "visible", f"{_grade_id(check)}: {err}", times
                records = Path(root) / tag
                records.mkdir()
                failed = None
                for check in checks[ex]:
                    shown, _, rest = check.source.partition(HIDDEN)
                    if not rest:
                        continue
                    kernel.run(f"import os\nos.environ[{RECORDS_ENV!r}] = {str(records)!r}")
                    t0 = time.perf_counter()
                    err = kernel.run(HIDDEN + rest, timeout=(limits or {}).get(_grade_id(check) + " hidden", 600))
                    times[_grade_id(check) + " hidden"] = time.perf_counter() - t0
                    kernel.run(f"import os\nos.environ.pop({RECORDS_ENV!r}, None)")
                    if err and not failed:
                        failed = f"{_grade_id(check)} hidden: {err}"
                verdicts = judge.decide(records)
                for gid, reason in verdicts.items():
                    if reason and not failed and gid.startswith(f"{ex}_check"):
                        failed = f"{gid} judged: {str(reason)[:200]}"
                return ("hidden", failed, times) if failed else ("survived", "", times)

            for cell in section:
                if cell.cell_type != "code":
                    continue
                err = kernel.run(cell.source)
                assert err is None, f"{number}: the model answers' section fails at\n{cell.source[:300]}\n{err}"
                ex = last_check.get(id(cell))
                if ex is None or (exercises and ex not in exercises):
                    continue
                outcome, where, times = attempt(ex, answers[ex], f"{ex}-model", None)
                assert outcome == "survived", f"{number} {ex}: the model answer fails its own checks: {where}"
                limits = {k: max(60.0, 4 * v) for k, v in times.items()}
                mutants = generate(ex, answers[ex], int_globals(), names)[::stride]
                if keys is not None:
                    mutants = [m for m in mutants if m.key in keys]
                for i, m in enumerate(mutants):
                    t0 = time.perf_counter()
                    outcome, where, _ = attempt(ex, m.source, f"{ex}-{i}", limits)
                    results.append(Result(m, outcome, where, time.perf_counter() - t0))
                    log(f"  {number} {m.key}: {outcome}{' (' + where[:100] + ')' if where else ''}")
                    err = kernel.run(answers[ex])
                    assert err is None, f"{number}: the model answer {ex} fails when run again: {err}"
                for check in checks[ex]:   # the globals the checks bind, as the model answer leaves them
                    kernel.run(check.source.partition(HIDDEN)[0])
    finally:
        kernel.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return results


def tabulate(number: str, results: list[Result], marked: dict[str, str]) -> list[dict]:
    rows = {}
    for r in results:
        row = rows.setdefault(r.mutant.exercise, dict(notebook=number, exercise=r.mutant.exercise, generated=0,
                                                      equivalent=0, visible=0, hidden=0, surviving=0))
        row["generated"] += 1
        if r.outcome == "visible":
            row["visible"] += 1
        elif r.outcome == "hidden":
            row["hidden"] += 1
        elif r.mutant.key in marked:
            row["equivalent"] += 1
        else:
            row["surviving"] += 1
    return list(rows.values())


def print_table(rows: list[dict]) -> None:
    head = f"{'notebook':<9}{'exercise':<9}{'generated':>10}{'equivalent':>11}{'killed visible':>15}" \
           f"{'killed only hidden':>19}{'surviving':>10}{'visible %':>10}"
    print(head)
    by_nb: dict[str, list[dict]] = {}
    for r in rows:
        by_nb.setdefault(r["notebook"], []).append(r)
    for nb, rs in by_nb.items():
        total = {k: sum(r[k] for r in rs) for k in ("generated", "equivalent", "visible", "hidden", "surviving")}
        for r in rs + [dict(total, notebook=nb, exercise="all")]:
            live = r["generated"] - r["equivalent"]
            pct = f"{100 * r['visible'] / live:.1f}" if live else "-"
            print(f"{r['notebook']:<9}{r['exercise']:<9}{r['generated']:>10}{r['equivalent']:>11}{r['visible']:>15}"
                  f"{r['hidden']:>19}{r['surviving']:>10}{pct:>10}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", nargs="*", help="two-digit numbers (default: every notebook)")
    parser.add_argument("--exercises", nargs="*", help="grade_ids, e.g. ex3")
    parser.add_argument("--stride", type=int, default=1, help="run every n-th mutant only")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--survivors", action="store_true", help="print each surviving and hidden-only mutant")
    parser.add_argument("--verbose", action="store_true", help="a line per mutant as it runs")
    parser.add_argument("--json", type=Path, help="write every result here")
    args = parser.parse_args(argv)
    env_nbs = os.environ.get("MUTANT_NOTEBOOKS", "").split()
    numbers = args.notebooks or env_nbs or [p.name[:2] for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    marked_all = equivalents()
    if args.list:
        for n in numbers:
            _, _, answers, _ = prepare(n)
            for ex, src in answers.items():
                if args.exercises and ex not in args.exercises:
                    continue
                for m in generate(ex, src, [], [])[::args.stride]:
                    print(f"{n} {m.key}")
        return 0
    rows, dump, bad = [], [], 0
    for n in numbers:
        t0 = time.perf_counter()
        results = run_notebook(n, exercises=args.exercises, stride=args.stride,
                               log=print if args.verbose else None)
        marked = marked_all.get(n, {})
        rows += tabulate(n, results, marked)
        print(f"{n}: {len(results)} mutants in {time.perf_counter() - t0:.0f} s", flush=True)
        for r in results:
            dump.append(dict(notebook=n, key=r.mutant.key, op=r.mutant.op, outcome=r.outcome, where=r.where,
                             seconds=round(r.seconds, 2)))
            if args.survivors and (r.outcome == "hidden" or (r.outcome == "survived" and r.mutant.key not in marked)):
                print(f"  {r.outcome:<9}{n} {r.mutant.key}  {r.where[:160]}")
        stale = [k for k in marked if k not in {r.mutant.key for r in results}]
        killed = [r.mutant.key for r in results if r.mutant.key in marked and r.outcome != "survived"]
        for k in killed:
            print(f"  {n} marked equivalent but killed: {k}")
        if stale and args.stride == 1 and not args.exercises:
            print(f"  {n} marked equivalent but no longer generated: {stale}")
        bad += len(killed)
    print()
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1) + "\n")
    live = sum(r["generated"] - r["equivalent"] for r in rows)
    return 1 if bad or any(r["surviving"] for r in rows) or live and \
        sum(r["visible"] for r in rows) < 0.95 * live else 0


if __name__ == "__main__":
    sys.exit(main())
