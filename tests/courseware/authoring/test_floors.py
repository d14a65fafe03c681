"""The house's floors (issue 49): ``utils`` is the model code, ``courseware`` the machinery that grades and
builds the editions, ``scripts`` the recipes and benchmarks. Imports run one way (``courseware`` and ``scripts``
import ``utils``; ``utils`` imports neither, ``scripts`` never imports ``courseware``), no module circle exists in
either package, and only the machinery touches nbgrader, bubblewrap, jupyterquiz, nbconvert or Playwright.

An import is any way a module can reach another: ``import``/``from`` at any level (inside functions too),
``__import__("x.y")`` and ``importlib.import_module("x.y")`` with a constant name. The circle that an earlier
layout hid (``grading_registry`` raised ``grading.ForbiddenCall`` through ``__import__("utils.grading")`` while
``grading`` imported the registry) is one of this file's cases.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("utils", "courseware")
# what may use each tool of the machinery (a module path prefix); utils is never among them
TOOLS = {"nbgrader": ("courseware/",), "jupyterquiz": ("courseware/",), "nbconvert": ("courseware/",),
         "playwright": ("courseware/",), "bwrap": ("courseware/grading/", "courseware/setup/")}


def imported_names(source: str, here: tuple[str, ...] = ("x",), is_package: bool = False) -> set[str]:
    """Every dotted module name ``source`` imports, at any level, by statement or by a call with a constant name."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(here[: len(here) - node.level + (1 if is_package else 0)])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in ("__import__", "import_module"):
                found.add(node.args[0].value)
    return found


def modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def import_graph(mods: dict[str, Path] | None = None, sources: dict[str, str] | None = None) -> dict[str, set[str]]:
    """module -> the modules of the two packages it imports (``utils.pkg.name`` counts as ``utils.pkg``)."""
    mods = modules() if mods is None else mods
    sources = sources or {name: path.read_text(encoding="utf-8") for name, path in mods.items()}
    graph = {}
    for name, source in sources.items():
        is_package = mods[name].name == "__init__.py" if name in mods else False
        edges = set()
        for target in imported_names(source, tuple(name.split(".")), is_package):
            while target and target not in sources:
                target = target.rpartition(".")[0]
            if target and target != name and target not in PACKAGES:
                edges.add(target)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("line", [
    'raise __import__("utils.grading").grading.ForbiddenCall("x")',            # the hidden one, as it was
    'import importlib\nmod = importlib.import_module("utils.grading")',
    'def f():\n    from utils import grading\n    return grading',               # inside a function
    'from utils.grading import ForbiddenCall',
])
def test_the_hidden_circle_would_be_found(line):
    """The earlier layout's circle, in each form an import can take: the graph sees it and the test fails."""
    mods = {"utils.grading": Path("utils/grading.py"), "utils.grading_registry": Path("utils/grading_registry.py")}
    sources = {"utils.grading": "from utils.grading_registry import exercise_of\n",
               "utils.grading_registry": line + "\n"}
    assert circles(import_graph(mods, sources)) == [["utils.grading", "utils.grading_registry"]]


def test_no_import_circle_in_either_package():
    graph = import_graph()
    assert len(graph) > 40, "the graph read the two packages"
    found = circles(graph)
    assert not found, f"import circles: {found}; the lower module must own what both use"


def test_utils_never_imports_the_machinery():
    """The model code knows nothing of grading, editions, quizzes or set-up."""
    bad = {name: sorted(t for t in edges if t.startswith("courseware"))
           for name, edges in import_graph().items() if name.startswith("utils")}
    assert not {k: v for k, v in bad.items() if v}


def test_scripts_use_utils_only():
    """The recipes and benchmarks stand on the model code alone (their tests are in tests/scripts/)."""
    offenders = {}
    for path in sorted((ROOT / "scripts").rglob("*.py")):
        names = imported_names(path.read_text(encoding="utf-8"))
        wrong = sorted(n for n in names if n.split(".")[0] in ("courseware", "tests"))
        if wrong:
            offenders[path.relative_to(ROOT).as_posix()] = wrong
    assert not offenders


def test_only_the_machinery_touches_its_tools():
    """nbgrader, jupyterquiz, nbconvert, Playwright and bubblewrap are the machinery's; utils holds none."""
    users: dict[str, list[str]] = {tool: [] for tool in TOOLS}
    for package in ("utils", "courseware", "scripts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            source = path.read_text(encoding="utf-8")
            names = {n.split(".")[0] for n in imported_names(source)}
            for tool in TOOLS:
                if tool in names or (tool == "bwrap" and '"bwrap"' in source):
                    users[tool].append(rel)
    for tool, allowed in TOOLS.items():
        outside = [u for u in users[tool] if not u.startswith(allowed)]
        assert not outside, f"{tool} used outside {allowed}: {outside}"
    assert users["nbgrader"] and users["bwrap"], "the scan finds the tools where they are used"
