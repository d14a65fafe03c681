"""Find the notebooks' asserts whose operands come from a measured time or memory, by their syntax trees.

Each notebook's code cells are read in order, as its kernel runs them, and every value is followed from
where it is measured (``time.perf_counter()`` and its kin, ``timeit``, a profiler, ``tracemalloc``,
``resource.getrusage``, ``torch.cuda.max_memory_allocated``, ``utils.scale.peak_memory``, an attribute
such as ``history.seconds``) through assignments, ``.append``, loops, comprehensions and the notebook's
own functions. Each value carries what it measures: ``seconds``; a ``ratio`` of two measurements;
an ``exponent`` (the slope of a log-log fit, ``np.polyfit``); ``bytes`` (memory counted at run time).

An assert is a timing assert when a comparison in it has a measured operand. Its ``form`` says against
what:

- ``two arms``: both sides measured in the same run (``t_dot < t_add``): load, kernels and caches
  slow both arms of one cell together;
- ``fit``: an exponent fitted over all lengths against a bound, the bound set from measured margins
  (``make test-flaky``);
- ``bytes``: memory counted at run time (tensor allocations), which load does not change;
- ``time vs bound`` and ``ratio vs bound``: one measured time, or a ratio of two taken from a single
  pair of measurements (one doubling of T), against a fixed number. These are what flake on a busy or
  another computer; ``tests/measure/test_timing_asserts.py`` allows none.

``python -m courseware timing-asserts`` prints the list; the test keeps it in
``tests/timing_asserts.json``.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# calls that return a measurement, by the last two parts of their dotted name (or the last one)
TIME_CALLS = {"perf_counter", "perf_counter_ns", "process_time", "process_time_ns", "thread_time",
              "thread_time_ns", "monotonic", "monotonic_ns", "time.time", "time.time_ns", "timeit.timeit",
              "timeit.repeat", "timeit.default_timer", "getrusage", "elapsed_time", "profile.key_averages",
              "profiler.profile", "prof.key_averages"}
MEMORY_CALLS = {"peak_memory", "max_memory_allocated", "memory_allocated", "max_memory_reserved",
                "tracemalloc.get_traced_memory", "get_traced_memory", "ru_maxrss"}
# calls that read a saved run (a manifest, a results file): the times in them were measured once, elsewhere
RECORDED_CALLS = {"load_pretrained", "load_run_results", "load_fast_runs", "json.load", "json.loads",
                  "read_json", "load_results"}
# attributes and keys that hold a measurement (``history.seconds``, ``run["cpu_seconds"]``)
TIME_NAMES = re.compile(r"(^|_)(seconds|elapsed|wall|cpu_time|time_s)$")
FORBIDDEN_FORMS = ("time vs bound", "per-step ratios")


@dataclass(frozen=True)
class TimingAssert:
    notebook: str      # file name
    cell: int          # index among all cells
    cell_id: str       # nbformat cell id
    line: int          # line within the cell, 1-based
    source: str        # the assert, one line
    measures: str      # seconds / ratio / exponent / bytes
    form: str          # two arms / fit / bytes / time vs bound / ratio vs bound


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


Kind = "str | dict | None"     # a measurement's kind, or a record {key: kind} ("*": any other key)
PRIORITY = ("seconds", "bytes", "exponent", "ratio", "recorded")


def _flat(kind):
    """A record's fields joined into one kind (a record used as a number)."""
    return _join(*kind.values()) if isinstance(kind, dict) else kind


def _join(*kinds):
    kinds = [k for k in kinds if k]
    if not kinds:
        return None
    records, numbers = [k for k in kinds if isinstance(k, dict)], [k for k in kinds if not isinstance(k, dict)]
    if records:                                                  # records: field by field; a number joined
        keys = {key for k in records for key in k}               # to a record taints each of its fields
        merged = {key: _join(*(k.get(key) for k in records), *numbers) for key in keys | ({"*"} if numbers else set())}
        return {key: v for key, v in merged.items() if v} or None
    flat = set(numbers)
    for k in PRIORITY:                                           # the most telling kind a value carries
        if k in flat:
            return k
    return None


def _record(pairs) -> dict | None:
    record = {key: kind for key, kind in pairs if kind}
    return record or None


class _Tracker:
    """What each name of a notebook's namespace measures, cell after cell."""

    def __init__(self) -> None:
        self.env: dict = {}         # name -> kind
        self.defs: dict = {}        # the notebook's functions and named lambdas, by name
        self._depth = 0
        self.aliases: dict = {}     # a name imported as another: clock -> perf_counter

    # -- expressions -------------------------------------------------------------------------------------
    def _field(self, base, key: str | None):
        """``base[key]`` (or ``base.key``), ``key`` a string constant or None when not constant."""
        if base == "recorded":
            return "recorded"
        if isinstance(base, dict):
            if key is not None and key in base:
                return base[key]
            if "*" in base:
                return base["*"]
            if key is None:
                return _join(*base.values())
        elif base:
            return base
        return "seconds" if key is not None and TIME_NAMES.search(key) else None

    def _call(self, fn, call, env):
        """What the notebook's function ``fn`` returns when called as ``call``: its body run with each
        parameter bound to what its argument measures."""
        local = {n: v for n, v in env.items() if n not in _params(fn)}
        params = [a.arg for a in fn.args.args]
        for name, arg in zip(params, call.args):
            if self.kind(arg, env):
                local[name] = self.kind(arg, env)
        for kw in call.keywords:
            if kw.arg in params and self.kind(kw.value, env):
                local[kw.arg] = self.kind(kw.value, env)
        self._depth += 1
        try:
            if isinstance(fn, ast.Lambda):
                return self.kind(fn.body, local)
            self.run(fn.body, local)
            return _join(*(self.kind(r.value, local) for r in ast.walk(fn) if isinstance(r, ast.Return)))
        finally:
            self._depth -= 1

    def _element(self, iterable, env):
        """What ``for x in iterable`` binds x to: a mapping's keys are not measured, a list's records are
        (``.values()`` and ``.items()`` are calls, already their values)."""
        kind = self.kind(iterable, env)
        if isinstance(kind, dict) and not isinstance(iterable, ast.Call):
            return None if "*" in kind else kind
        return kind

    def kind(self, node, env=None):
        env = self.env if env is None else env
        k = lambda n: self.kind(n, env)  # noqa: E731
        if node is None or isinstance(node, (ast.Constant, ast.JoinedStr, ast.Compare, ast.BoolOp)):
            return None                                          # a truth value or text, not a measurement
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr in MEMORY_CALLS:
                return "bytes"
            return self._field(k(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            key = node.slice
            base = k(node.value)
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return self._field(base, key.value)
            if isinstance(base, dict) and "*" in base and not isinstance(key, ast.Slice):
                return base["*"]                                 # a mapping's value: times[8]
            if isinstance(key, (ast.Constant, ast.Slice)) or isinstance(base, str):
                return base                                      # a list's element, or a slice of it
            return self._field(base, None)
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            head, _, rest = name.partition(".")
            name = ".".join(filter(None, (self.aliases.get(head, head), rest)))
            last, last2 = name.rsplit(".", 1)[-1], ".".join(name.split(".")[-2:])
            if last in TIME_CALLS or last2 in TIME_CALLS:
                return "seconds"
            if last in MEMORY_CALLS or last2 in MEMORY_CALLS:
                return "bytes"
            if last in RECORDED_CALLS or last2 in RECORDED_CALLS:
                return "recorded"
            if name in self.defs and self._depth < 8:           # the notebook's own: run it on these args
                # what it returns, and a number it was given (steps chosen from a timing change its results)
                return _join(self._call(self.defs[name], node, env),
                             *(kind for a in node.args if isinstance(kind := k(a), str)))
            if name == "dict" and not node.args:
                return _record((kw.arg or "*", k(kw.value)) for kw in node.keywords)
            args = [*node.args, *(kw.value for kw in node.keywords)]
            # a whole record given to a function we cannot read: which field it uses is unknown (not followed)
            inner = _join(*(kind for a in args if not isinstance(kind := k(a), dict)))
            if last == "polyfit" and inner:
                return "exponent"
            if isinstance(node.func, ast.Attribute):
                base = k(node.func.value)
                if last in ("values", "items", "copy"):
                    return self._field(base, None) if last != "copy" else base
                if last == "get" and node.args and isinstance(node.args[0], ast.Constant):
                    return self._field(base, str(node.args[0].value))
                if last not in ("append", "extend"):
                    inner = _join(inner, _flat(base))            # runs.mean(), t.item()
            return inner
        if isinstance(node, ast.BinOp):
            a, b = _flat(k(node.left)), _flat(k(node.right))
            if isinstance(node.op, ast.Div) and a and b and "recorded" not in (a, b):
                if a == b == "bytes":
                    return "bytes"                               # a ratio of counted bytes is still a count
                return "exponent" if "exponent" in (a, b) else "ratio" if a == b else _join(a, b)
            return _join(a, b)
        if isinstance(node, ast.UnaryOp):
            return k(node.operand)
        if isinstance(node, ast.IfExp):
            return _join(k(node.body), k(node.orelse))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return _join(*(k(e) for e in node.elts))
        if isinstance(node, ast.Dict):
            if all(isinstance(key, ast.Constant) and isinstance(key.value, str) for key in node.keys):
                return _record((key.value, k(v)) for key, v in zip(node.keys, node.values))
            return _record([("*", _join(*(k(v) for v in node.values)))])
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = dict(env)
            for gen in node.generators:
                for name in _names(gen.target):
                    inner[name] = self._element(gen.iter, inner)
            if isinstance(node, ast.DictComp):
                return _record([("*", self.kind(node.value, inner))])
            return self.kind(node.elt, inner)
        if isinstance(node, ast.Lambda):
            return self.kind(node.body, {n: v for n, v in env.items() if n not in _params(node)})
        if isinstance(node, ast.Starred):
            return k(node.value)
        return None

    # -- statements --------------------------------------------------------------------------------------
    def _assign(self, target, kind, env, value=None) -> None:
        if isinstance(target, ast.Name):
            if kind:
                env[target.id] = kind
            else:
                env.pop(target.id, None)                           # a new, unmeasured value
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(
                target.elts) else None
            for i, t in enumerate(target.elts):
                self._assign(t, self.kind(values[i], env) if values else kind, env)
        elif isinstance(target, (ast.Subscript, ast.Attribute)) and kind:
            key = target.slice if isinstance(target, ast.Subscript) else ast.Constant(target.attr)
            field = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else "*"
            base = target.value
            if isinstance(base, ast.Name):
                old = env.get(base.id)
                if isinstance(old, dict) or old is None:
                    env[base.id] = _join(old, {field: kind})
                else:
                    env[base.id] = _join(old, kind)
            else:                                                  # a[i][j] = ...: mark the outer name
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name):
                    env[base.id] = _join(env.get(base.id), _flat(kind))

    def run(self, stmts, env=None) -> None:
        env = self.env if env is None else env
        for _ in range(2):                                        # twice: loops feed values back
            for s in stmts:
                self._stmt(s, env)

    def _stmt(self, s, env) -> None:
        if isinstance(s, ast.Assign):
            if isinstance(s.value, ast.Lambda) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                self.defs[s.targets[0].id] = s.value
            kind = self.kind(s.value, env)
            for t in s.targets:
                self._assign(t, kind, env, s.value)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self._assign(s.target, self.kind(s.value, env), env, s.value)
        elif isinstance(s, ast.AugAssign):
            kind = self.kind(s.value, env)
            self._assign(s.target, _join(self.kind(s.target, env), kind) if isinstance(s.target, ast.Name)
                         else kind, env)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            call = s.value
            if isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "extend", "add", "update",
                                                                           "insert", "setdefault"):
                kind = _join(*(self.kind(a, env) for a in call.args))
                if kind and isinstance(call.func.value, ast.Name):
                    name = call.func.value.id
                    env[name] = _join(env.get(name), kind)
                elif kind:
                    self._assign(call.func.value, kind, env)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self._assign(s.target, self._element(s.iter, env), env)
            self.run(s.body, env)
            self.run(s.orelse, env)
        elif isinstance(s, (ast.While, ast.If)):
            self.run(s.body, env)
            self.run(s.orelse, env)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, self.kind(item.context_expr, env), env)
            self.run(s.body, env)
        elif isinstance(s, ast.Try):
            for block in (s.body, *(h.body for h in s.handlers), s.orelse, s.finalbody):
                self.run(block, env)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.defs[s.name] = s
        elif isinstance(s, ast.ImportFrom):                       # from time import perf_counter as clock
            for alias in s.names:
                for table in (TIME_CALLS, MEMORY_CALLS, RECORDED_CALLS):
                    if alias.name in table or f"{s.module}.{alias.name}" in table:
                        self.aliases[alias.asname or alias.name] = f"{s.module}.{alias.name}"
        elif isinstance(s, ast.Import):                           # import time as clock
            for alias in s.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name


def _params(fn) -> set[str]:
    a = fn.args
    return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}


def _names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _comparisons(test: ast.AST, tracker: _Tracker) -> list[tuple]:
    """(kind of left, kind of right, inside all()/any() over measured ratios) for every pair of every
    comparison in an assert's test, the names a comprehension binds (``all(g > 2 for g in growth)``)
    given their iterable's kind."""
    pairs = []

    def visit(node: ast.AST, env: dict, each: bool) -> None:
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            inner = dict(env)
            for gen in node.generators:
                for name in _names(gen.target):
                    inner[name] = tracker._element(gen.iter, inner)
                each = each or tracker.kind(gen.iter, inner) == "ratio"
            visit(node.elt, inner, each)
            return
        if isinstance(node, ast.Compare):
            number = lambda n: None if isinstance(kind := tracker.kind(n, env), dict) else kind  # noqa: E731
            operands = [node.left, *node.comparators]
            for a, b in zip(operands, operands[1:]):
                pairs.append((number(a), number(b), each))
            return
        for child in ast.iter_child_nodes(node):
            visit(child, env, each)

    visit(test, tracker.env, False)
    return pairs


def _form(pairs) -> tuple[str, str] | None:
    measured = [(a, b, each) for a, b, each in pairs if {a, b} - {None, "recorded"}]
    if not measured:
        return None
    forms, kinds = [], []
    for a, b, each in measured:
        kind = _join(a, b)
        kinds.append(kind)
        if kind == "bytes":
            forms.append("bytes")
        elif each and kind == "ratio":
            forms.append("per-step ratios")
        elif a and b:
            forms.append("two arms")
        elif kind == "exponent":
            forms.append("fit")
        elif kind == "ratio":
            forms.append("ratio")
        else:
            forms.append("time vs bound")
    for bad in FORBIDDEN_FORMS:                                  # the worst pair names the assert
        if bad in forms:
            return bad, kinds[forms.index(bad)]
    return forms[0], kinds[0]


def _code(source: str) -> str:
    """A cell's source as Python: IPython's magics and shell lines blanked (kept as lines, for numbering)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def scan_cells(cells: list[dict], notebook: str = "") -> list[TimingAssert]:
    tracker, found = _Tracker(), []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", ""))
        try:
            tree = ast.parse(_code(source))
        except SyntaxError:
            continue
        tracker.run(tree.body)
        lines = source.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert):
                form = _form(_comparisons(node.test, tracker))
                if form:
                    text = " ".join(l.strip() for l in lines[node.lineno - 1:node.end_lineno])
                    found.append(TimingAssert(notebook, index, cell.get("id", ""), node.lineno,
                                              re.sub(r"\s+", " ", text), form[1], form[0]))
    return found


def scan_notebook(path: Path) -> list[TimingAssert]:
    return scan_cells(json.loads(Path(path).read_text(encoding="utf-8"))["cells"], Path(path).name)


def scan_all(folder: Path = ROOT / "notebooks") -> list[TimingAssert]:
    return [a for nb in sorted(Path(folder).glob("*.ipynb")) for a in scan_notebook(nb)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.add_argument("--kept", action="store_true", help="print the list that tests/timing_asserts.json keeps")
    args = parser.parse_args(argv)
    found = [a for nb in args.notebooks for a in scan_notebook(nb)] if args.notebooks else scan_all()
    if args.kept:
        kept = [{"notebook": a.notebook, "cell_id": a.cell_id, "source": a.source, "form": a.form} for a in found]
        print(json.dumps(kept, indent=1, ensure_ascii=False))
    elif args.json:
        print(json.dumps([asdict(a) for a in found], indent=1, ensure_ascii=False))
    else:
        for a in found:
            print(f"{a.notebook[:2]} cell {a.cell:3d} [{a.form:>14}, {a.measures:>8}]  {a.source}")
    return 1 if any(a.form in FORBIDDEN_FORMS for a in found) else 0


if __name__ == "__main__":
    raise SystemExit(main())
