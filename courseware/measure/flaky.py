"""Run the notebooks that assert anything about time, again and again, and print each such assert's margin.

The asserts are those ``courseware/measure/timing_asserts.py`` finds. Each notebook is executed whole, in a
fresh kernel, ``--runs`` times in each of four conditions: this CPU's kernels and PyTorch's portable ones
(``ATEN_CPU_CAPABILITY=default``), on a quiet computer and beside ``--busy`` CPU-bound processes. In the
executed copy (never written back) each timing assert is replaced by a call that evaluates the same
condition and its **margin**, the factor by which it cleared its bound: for ``a > b`` it is ``a / b``, for
``a < b`` it is ``b / a``, for a chain or an ``and`` the smallest of its parts, for ``all(...)`` the
smallest over its items (a difference instead of a ratio where a side is not positive). A margin of 1 is
the bound itself. Every other assert runs as written, so a run also fails if anything else fails.

    python -m courseware flaky                      # every condition, 5 runs each
    python -m courseware flaky --runs 1 --conditions portable-busy --notebooks 10

It prints, per timing assert, the smallest margin in each condition and over all of them, and exits
non-zero if any run failed. ``make test-flaky`` calls it; TESTING.md records its result.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from courseware.measure.timing_asserts import scan_notebook  # noqa: E402

CONDITIONS = ("native-quiet", "native-busy", "portable-quiet", "portable-busy")
RECORDS_ENV = "COURSE_FLAKY_RECORDS"   # the file each timing assert's record is appended to

RECORDER = f'''
def __flaky_margin(op, a, b):
    a, b = float(a), float(b)
    if op in (">", ">="):
        return a / b if a > 0 and b > 0 else 1 + a - b
    if op in ("<", "<="):
        return b / a if a > 0 and b > 0 else 1 + b - a
    return None

def __flaky_min(values, largest=False):
    values = [v for v in values if v is not None]
    return (max if largest else min)(values) if values else None

def __flaky_record(key, test, margin):
    import json as _json, os as _os
    try:
        ok = bool(test())
    except Exception as e:
        ok = False
    try:
        m = margin()
    except Exception:
        m = None
    with open(_os.environ["{RECORDS_ENV}"], "a") as _f:
        _f.write(_json.dumps({{"key": key, "ok": ok, "margin": m}}) + "\\n")
'''


def _margin_expr(node: ast.AST) -> ast.AST:
    """An expression for the margin of a test (see the module's docstring); ``None`` where it has none."""
    if isinstance(node, ast.Compare):
        symbols = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}
        operands = [node.left, *node.comparators]
        parts = [ast.Call(ast.Name("__flaky_margin", ast.Load()),
                          [ast.Constant(symbols.get(type(op), "?")), a, b], [])
                 for op, a, b in zip(node.ops, operands, operands[1:])]
        return _min(parts)
    if isinstance(node, ast.BoolOp):
        return _min([_margin_expr(v) for v in node.values], largest=isinstance(node.op, ast.Or))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("all", "any")
            and len(node.args) == 1 and isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp))):
        gen = node.args[0]
        items = ast.ListComp(_margin_expr(gen.elt), gen.generators)
        return ast.Call(ast.Name("__flaky_min", ast.Load()), [items],
                        [ast.keyword("largest", ast.Constant(node.func.id == "any"))])
    return ast.Constant(None)


def _min(parts: list[ast.AST], largest: bool = False) -> ast.AST:
    return ast.Call(ast.Name("__flaky_min", ast.Load()), [ast.List(parts, ast.Load())],
                    [ast.keyword("largest", ast.Constant(largest))])


def key_of(a) -> str:
    return f"{a.notebook[:2]} cell {a.cell} line {a.line}"


def instrument(path: Path) -> tuple[dict, list]:
    """The notebook with each timing assert replaced by a recording call, and the asserts found."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = scan_notebook(path)
    for a in found:
        cell = nb["cells"][a.cell]
        source = "".join(cell["source"])
        lines = source.splitlines()
        tree = ast.parse("\n".join("" if l.lstrip().startswith(("%", "!")) else l for l in lines))
        node = next(n for n in ast.walk(tree) if isinstance(n, ast.Assert) and n.lineno == a.line)
        call = ast.Call(ast.Name("__flaky_record", ast.Load()), [
            ast.Constant(key_of(a)),
            ast.Lambda(ast.arguments([], [], None, [], [], None, []), node.test),
            ast.Lambda(ast.arguments([], [], None, [], [], None, []), _margin_expr(node.test)),
        ], [])
        replacement = " " * node.col_offset + ast.unparse(ast.fix_missing_locations(ast.Expr(call)))
        lines[node.lineno - 1:node.end_lineno] = [replacement] + [""] * (node.end_lineno - node.lineno)
        cell["source"] = "\n".join(lines)
    first = {"cell_type": "code", "id": "flaky-recorder", "metadata": {}, "source": RECORDER, "outputs": [],
             "execution_count": None}
    nb["cells"].insert(0, first)
    return nb, found


def execute_one(path: Path, env: dict, timeout: int) -> dict:
    """Execute an instrumented copy of one notebook as ``make test`` does (pytest with nbval, in the
    notebook's own folder, under a hidden name that .gitignore leaves out); its records and whether it failed."""
    nb, found = instrument(path)
    copy = path.parent / f".flaky-{os.getpid()}-{time.time_ns()}-{path.name}"
    with tempfile.TemporaryDirectory(prefix="course-flaky-") as tmp:
        records = Path(tmp) / "records.jsonl"
        records.touch()
        try:
            copy.write_text(json.dumps(nb), encoding="utf-8")
            start = time.time()
            out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                                  "--nbval-current-env", "--nbval-cell-timeout", str(timeout),
                                  "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"), str(copy)],
                                 cwd=ROOT, env=dict(env, **{RECORDS_ENV: str(records)}), capture_output=True,
                                 text=True, check=False)
            seconds = time.time() - start
        finally:
            copy.unlink(missing_ok=True)
        lines = records.read_text().splitlines()
    error = None if out.returncode == 0 else (out.stdout + out.stderr)[-2000:]
    records = [json.loads(line) for line in lines if line.strip()]
    seen = {r["key"] for r in records}
    missing = [key_of(a) for a in found if key_of(a) not in seen]
    return {"notebook": path.name, "seconds": round(seconds, 1), "error": error, "records": records,
            "missing": missing, "asserts": {key_of(a): a.source for a in found}}


def run_condition(condition: str, notebooks: list[Path], runs: int, jobs: int, busy: int, timeout: int) -> list:
    env = dict(os.environ, COURSE_THREADS="1", MPLBACKEND=os.environ.get("MPLBACKEND", "Agg"))
    if condition.startswith("portable"):
        env["ATEN_CPU_CAPABILITY"] = "default"
    else:
        env.pop("ATEN_CPU_CAPABILITY", None)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(busy if condition.endswith("busy") else 0)]
    results = []
    try:
        for run in range(1, runs + 1):
            with ThreadPoolExecutor(jobs) as pool:
                for r in pool.map(lambda p: execute_one(p, env, timeout), notebooks):
                    r.update(condition=condition, run=run)
                    results.append(r)
                    failed = [x["key"] for x in r["records"] if not x["ok"]]
                    status = "ERROR " + r["error"].strip().splitlines()[-1][:150] if r["error"] else (
                        f"FAILED {failed}" if failed else "ok")
                    print(f"[{condition} run {run}] {r['notebook'][:2]}: {r['seconds']:.0f} s, {status}", flush=True)
    finally:
        for h in hogs:
            h.kill()
    return results


def report(results: list, conditions: list[str]) -> tuple[str, bool]:
    asserts = {}
    for r in results:
        asserts.update(r["asserts"])
    rows = [f"| assert | {' | '.join(conditions)} | smallest | failed runs |", "|---|" + "---|" * (len(conditions) + 2)]
    bad = False
    for key, source in asserts.items():
        per, fails = {}, 0
        for r in results:
            for x in r["records"]:
                if x["key"] == key:
                    if x["margin"] is not None:
                        per.setdefault(r["condition"], []).append(x["margin"])
                    fails += not x["ok"]
            fails += key in r["missing"]
        bad |= fails > 0
        cells = [f"{min(per[c]):.2f}" if c in per else "-" for c in conditions]
        smallest = min((min(v) for v in per.values()), default=None)
        rows.append(f"| {key}: `{source[:70]}` | {' | '.join(cells)} | "
                    f"{'-' if smallest is None else f'{smallest:.2f}'} | {fails} |")
    errors = [f"{r['condition']} run {r['run']} {r['notebook']}: {r['error']}" for r in results if r["error"]]
    bad |= bool(errors)
    return "\n".join(rows + ([""] + ["errors:"] + errors if errors else [])), bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per condition (default 5)")
    parser.add_argument("--conditions", default=",".join(CONDITIONS),
                        help=f"comma-separated, from {', '.join(CONDITIONS)}")
    parser.add_argument("--notebooks", nargs="*", default=None,
                        help="numbers or paths (default: every notebook with a timing assert)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks at a time (default 2, as make test)")
    parser.add_argument("--busy", type=int, default=3, help="CPU-bound processes in a busy condition (default 3)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "flaky.json", help="every record, as JSON")
    args = parser.parse_args(argv)
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = set(conditions) - set(CONDITIONS)
    if unknown:
        parser.error(f"unknown condition(s) {sorted(unknown)}; choose from {CONDITIONS}")
    all_nbs = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.notebooks:
        notebooks = [Path(n) if n.endswith(".ipynb") else next(p for p in all_nbs if p.name.startswith(n.zfill(2)))
                     for n in args.notebooks]
    else:
        notebooks = [p for p in all_nbs if scan_notebook(p)]
    print("timing asserts in: " + ", ".join(p.name for p in notebooks), flush=True)
    start, results = time.time(), []
    for condition in conditions:
        results += run_condition(condition, notebooks, args.runs, args.jobs, args.busy, args.timeout)
    table, bad = report(results, conditions)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"\nsmallest margin of each timing assert ({args.runs} run(s) per condition; 1.00 is the bound):\n")
    print(table)
    print(f"\ntest-flaky wall time: {time.time() - start:.0f} s; {'FAILED' if bad else 'every run passed'}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
